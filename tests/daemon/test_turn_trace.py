"""GetTurnTrace pages through a turn's events, oldest first."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc
from google.protobuf import struct_pb2

from errord.wire.budget import FIELD_OVERHEAD, RESPONSE_BUDGET, grouped
from tests.helpers import InProcessDaemon, operator_channel


@pytest.fixture
async def stub(daemon: InProcessDaemon) -> AsyncIterator[Any]:
    async with operator_channel(daemon.address, daemon.token) as channel:
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


async def report_large(stub: Any, count: int, argument_bytes: int) -> list[str]:
    """``count`` failures of one turn, each with an argument of ``argument_bytes`` characters."""
    arguments = struct_pb2.Struct()
    arguments.update({"document": "x" * argument_bytes})
    decisions = []
    for call in range(count):
        response = await stub.ReportFailure(
            pb.ReportFailureRequest(
                turn_id="large",
                call_id=f"call_{call}",
                tool="upload",
                attempt=1,
                error=pb.ToolError(code=pb.ERROR_CODE_INVALID_INPUT, message="too large"),
                arguments=arguments,
            )
        )
        decisions.append(response.decision.decision_id)
    return decisions


async def test_a_turn_of_large_events_is_read_in_pages_a_default_client_accepts(
    stub: Any,
) -> None:
    """40 failures with 200 KB of arguments each (8 MB): one page of the default 1,000
    events would pass the 4 MiB a grpc client accepts by default (RESOURCE_EXHAUSTED).
    Each page holds the events that fit RESPONSE_BUDGET bytes instead, and the tokens lead
    through the whole turn."""
    decisions = await report_large(stub, 40, argument_bytes=200_000)
    pages: list[pb.GetTurnTraceResponse] = []
    token = ""
    while not pages or token:
        page = await stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="large", page_token=token))
        pages.append(page)
        token = page.next_page_token
    events = [event for page in pages for event in page.events]
    assert [event.failure.decision.decision_id for event in events] == ["", *decisions]
    assert [event.sequence for event in events] == sorted({event.sequence for event in events})
    costs = [[event.ByteSize() + FIELD_OVERHEAD for event in page.events] for page in pages]
    assert all(sum(cost) <= RESPONSE_BUDGET for cost in costs)
    for cost, after in itertools.pairwise(costs):
        assert sum(cost) + after[0] > RESPONSE_BUDGET  # full: the next event did not fit


def test_an_event_larger_than_the_budget_makes_a_page_alone() -> None:
    sizes = [300, 800, 2000, 100, 100]
    assert list(grouped(sizes, int, budget=1000)) == [[300], [800], [2000], [100, 100]]
    assert list(grouped([], int, budget=1000)) == []
