"""BeginTurn's plan, the consequences a decision carries and EndTurn, over gRPC with the
client package against the real daemon."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import grpc
import pytest
from errord_client import AsyncErrordClient, pb
from errord_client.errors import field_violations
from errord_client.requests import planned_call
from google.protobuf import json_format

from tests.helpers import InProcessDaemon


@pytest.fixture
async def errord(daemon: InProcessDaemon) -> AsyncIterator[AsyncErrordClient]:
    async with AsyncErrordClient(daemon.address, token=daemon.token) as client:
        yield client


async def invalid(errord: AsyncErrordClient, plan: list[pb.PlannedCall]) -> list[tuple[str, str]]:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await errord.begin_turn("bad", plan=plan)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    return field_violations(refused.value)


async def test_a_plan_that_is_no_plan_is_refused_naming_the_field(
    errord: AsyncErrordClient,
) -> None:
    assert await invalid(errord, [planned_call("a", "x"), planned_call("a", "y")]) == [
        ("plan[1].call_id", "repeats plan[0].call_id")
    ]
    assert await invalid(errord, [planned_call("a", "x", depends_on=["a", "zz"])]) == [
        ("plan[0].depends_on[0]", "names the call itself"),
        ("plan[0].depends_on[1]", "'zz' is no call of the plan"),
    ]
    cycle = [
        planned_call("a", "x", depends_on=["c"]),
        planned_call("b", "x", depends_on=["a"]),
        planned_call("c", "x", depends_on=["b"]),
    ]
    [(field, description)] = await invalid(errord, cycle)
    assert re.fullmatch(r"plan\[[012]\]\.depends_on", field)
    assert description.startswith("forms a cycle: ")
    assert await invalid(errord, [planned_call("", "x", default=float("nan"))]) == [
        ("plan[0].call_id", "required"),
        ("plan[0].default_value", "numbers must be finite (NaN and Infinity are not JSON)"),
    ]


async def test_a_planned_turn_over_grpc(errord: AsyncErrordClient) -> None:
    plan = [
        planned_call("a", "geocode", optional=True, arguments={"city": "Paris"}),
        planned_call("b", "weather", depends_on=["a"], default={"forecast": "unknown"}),
        planned_call("c", "advice", depends_on=["a"], optional=True),
    ]
    began = (await errord.begin_turn("t", plan=plan)).event.turn_began
    assert list(began.plan) == plan
    decision = (
        await errord.report_failure(
            turn_id="t",
            call_id="a",
            tool="geocode",
            attempt=1,
            code=pb.ERROR_CODE_NOT_FOUND,
            message="no such city",
        )
    ).decision
    assert decision.action == pb.RECOVERY_ACTION_SKIP
    weather, advice = decision.consequences
    assert (weather.call_id, weather.action, weather.blocked_by) == (
        "b",
        pb.RECOVERY_ACTION_USE_DEFAULT,
        "a",
    )
    assert json_format.MessageToDict(weather.default_value) == {"forecast": "unknown"}
    assert (advice.call_id, advice.action) == ("c", pb.RECOVERY_ACTION_SKIP)
    await errord.report_outcome(turn_id="t", call_id="b", tool="weather", attempt=1, success=True)

    ended = await errord.end_turn("t")
    summary = ended.summary
    assert not ended.replayed
    assert [(c.call_id, pb.CallStatus.Name(c.status)) for c in summary.calls] == [
        ("a", "CALL_STATUS_SKIPPED"),
        ("b", "CALL_STATUS_SUCCEEDED"),  # a default was offered; the executor ran it anyway
        ("c", "CALL_STATUS_SKIPPED"),
    ]
    assert summary.calls[2].blocked_by == "a"
    assert summary.calls[0].decisions[0].decision_id == decision.decision_id
    assert summary.user_notice == "Completed weather, but geocode and advice were skipped."
    assert (await errord.end_turn("t")).replayed

    trace = await errord.get_turn_trace("t")
    assert [e.WhichOneof("event") for e in trace] == [
        "turn_began",
        "failure",
        "outcome",
        "turn_ended",
    ]
    assert trace[-1].turn_ended.summary == summary

    with pytest.raises(grpc.aio.AioRpcError) as closed:
        await errord.report_failure(
            turn_id="t", call_id="d", tool="geocode", attempt=1, code=pb.ERROR_CODE_TIMEOUT
        )
    assert closed.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert "turn 't' ended at" in (closed.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await errord.end_turn("nobody")
    assert unknown.value.code() is grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as empty:
        await errord.end_turn("")
    assert field_violations(empty.value) == [("turn_id", "required")]
