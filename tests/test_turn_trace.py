"""GetTurnTrace pages through a turn's events, oldest first."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from tests.conftest import InProcessDaemon


@pytest.fixture
async def stub(daemon: InProcessDaemon) -> AsyncIterator[Any]:
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        yield errord_pb2_grpc.ErrorHandlerServiceStub(channel)


async def report_five(stub: Any) -> list[str]:
    decisions = []
    for call in range(5):
        response = await stub.ReportFailure(
            pb.ReportFailureRequest(
                turn_id="paged",
                call_id=f"call_{call}",
                tool=f"search_{call}",  # five tools: no breaker opens
                attempt=1,
                error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT),
            )
        )
        decisions.append(response.decision.decision_id)
    return decisions


async def test_pages_cover_the_turn_in_order_and_the_last_has_no_token(stub: Any) -> None:
    decisions = await report_five(stub)
    seen, token, pages = [], "", 0
    while True:
        page = await stub.GetTurnTrace(
            pb.GetTurnTraceRequest(turn_id="paged", page_size=2, page_token=token)
        )
        seen += [event.failure.decision.decision_id for event in page.events]
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert (seen, pages) == (["", *decisions], 3)  # the turn began, then five failures


async def test_the_default_page_holds_a_small_turn_whole(stub: Any) -> None:
    decisions = await report_five(stub)
    page = await stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="paged"))
    assert [event.failure.decision.decision_id for event in page.events] == ["", *decisions]
    assert page.next_page_token == ""


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({"page_size": -1}, "page_size"),
        ({"page_token": "x1"}, "page_token"),
        ({"page_token": "9" * 30}, "page_token"),
    ],
)
async def test_bad_paging_is_invalid_argument(
    stub: Any, request_fields: dict[str, Any], field: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="paged", **request_fields))
    assert failed.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert (failed.value.details() or "").startswith(f"{field}: ")
