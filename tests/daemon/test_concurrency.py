"""Limits that only one report may pass hold under many concurrent clients of the real daemon."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from tests.helpers import DaemonProcess, start_process

CLIENTS = 16


@pytest.fixture
def errord(tmp_path: Path) -> Iterator[DaemonProcess]:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "search.yaml").write_text(
        textwrap.dedent(
            """\
            tools:
              - name: search
                retry_policy: {max_total_time_ms: 500, max_attempts: 8}
                circuit_breaker: {failure_threshold: 1000, failure_rate_percent: 100,
                                  min_calls: 1000, window: 1000}
            """
        )
    )
    # Every retry here fails alike: episodic memory would soon stop granting them, and
    # these tests are about the retry limits under concurrency.
    settings = tmp_path / "errord.toml"
    settings.write_text("memory_min_episodes = 10000\n")
    running = start_process(
        "--listen",
        "127.0.0.1:0",
        "--db",
        str(tmp_path / "errord.db"),
        "--manifests",
        str(tools),
        "--config",
        str(settings),
    )
    yield running
    running.terminate()


def failure(turn: str, call: str, attempt: int) -> pb.ReportFailureRequest:
    return pb.ReportFailureRequest(
        turn_id=turn,
        call_id=call,
        tool="search",
        attempt=attempt,
        error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="timed out"),
    )


async def from_many_clients(
    address: str, requests: list[pb.ReportFailureRequest]
) -> list[pb.ReportFailureResponse]:
    """Send ``requests`` at once, spread over CLIENTS channels (separate connections)."""
    channels = [grpc.aio.insecure_channel(address) for _ in range(CLIENTS)]
    try:
        stubs: list[Any] = [errord_pb2_grpc.ErrorHandlerServiceStub(c) for c in channels]
        return list(
            await asyncio.gather(
                *(
                    stubs[index % CLIENTS].ReportFailure(request)
                    for index, request in enumerate(requests)
                )
            )
        )
    finally:
        await asyncio.gather(*(channel.close() for channel in channels))


async def test_identical_concurrent_reports_get_one_decision(errord: DaemonProcess) -> None:
    responses = await from_many_clients(errord.address, [failure("t", "c", 1)] * 64)
    assert sum(not response.replayed for response in responses) == 1
    assert len({response.decision.SerializeToString() for response in responses}) == 1


async def test_concurrent_attempts_of_a_call_never_get_more_retry_time_than_the_limit(
    errord: DaemonProcess,
) -> None:
    """Each call's eight attempts arrive at once, from different clients: whatever order
    they are decided in, each sees the delay already granted to the others (reserved
    before their commits), so a call's granted retry delay stays within 500 ms."""
    calls = [f"call-{n}" for n in range(24)]
    requests = [failure("t", call, attempt) for attempt in range(1, 9) for call in calls]
    responses = await from_many_clients(errord.address, requests)
    for call in calls:
        decisions = [r.decision for r in responses if r.decision.call_id == call]
        granted = [d.delay.ToTimedelta().total_seconds() for d in decisions if d.action == 1]
        assert len(decisions) == 8
        assert 0 < sum(granted) <= 0.5
        assert all(not response.replayed for response in responses)
