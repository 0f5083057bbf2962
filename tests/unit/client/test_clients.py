"""The sync and async clients are one shape on one base, and the executor reaches errord
through an AsyncErrordClient (its token, its channel options) rather than a stub of its own."""

from __future__ import annotations

import inspect

import grpc
import pytest
from errord_client import AsyncErrordClient, ErrordClient, Executor
from errord_client.client import BaseClient
from errord_client.executor.link import CHANNEL_OPTIONS


def public_methods(kind: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(kind, inspect.isfunction) if name[0] != "_"}


def test_the_sync_and_async_clients_share_one_base_and_the_same_methods() -> None:
    assert issubclass(ErrordClient, BaseClient)
    assert issubclass(AsyncErrordClient, BaseClient)
    assert public_methods(ErrordClient) == public_methods(AsyncErrordClient)
    assert {"report_failure", "watch_tools", "close"} <= public_methods(ErrordClient)


def test_a_client_takes_channel_options_for_the_channel_it_opens_only() -> None:
    with (
        grpc.insecure_channel("127.0.0.1:1") as channel,
        pytest.raises(ValueError, match="pass options= or channel=, not both"),
    ):
        ErrordClient(channel=channel, options=CHANNEL_OPTIONS)


async def test_the_executor_reaches_errord_through_an_async_client_with_its_token() -> None:
    executor = Executor(token="t0ken", watch_tools=False)
    try:
        client = executor._started().client
        assert isinstance(client, AsyncErrordClient)
        assert client.metadata == (("authorization", "Bearer t0ken"),)
    finally:
        await executor.close(patience=0)
