"""ReportFailures: a turn's parallel failures in one call, decided one after the other,
committed together."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.decide.model import ErrorCode, FailureReport, ToolFailure
from tests.harness import Harness
from tests.helpers import InProcessDaemon, operator_channel, violations


@pytest.fixture
async def stub(daemon: InProcessDaemon) -> AsyncIterator[Any]:
    async with operator_channel(daemon.address, daemon.token) as channel:
        yield errord_pb2_grpc.ErrorHandlerServiceStub(channel)


def failure(
    call: str, tool: str = "search", attempt: int = 1, **error: Any
) -> pb.ReportFailureRequest:
    return pb.ReportFailureRequest(
        turn_id="parallel",
        call_id=call,
        tool=tool,
        attempt=attempt,
        error=pb.ToolError(**(error or {"code": pb.ERROR_CODE_TIMEOUT})),
    )


async def test_each_failure_gets_its_decision_in_request_order(stub: Any) -> None:
    calls = [failure(f"call_{n}", tool=f"tool_{n % 3}") for n in range(8)]
    response = await stub.ReportFailures(pb.ReportFailuresRequest(failures=calls))
    answers = [result.answer for result in response.results]
    assert [a.decision.call_id for a in answers] == [c.call_id for c in calls]
    assert [a.decision.tool for a in answers] == [c.tool for c in calls]
    assert not any(a.replayed for a in answers)
    trace = await stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="parallel"))
    recorded = [e.failure.decision.decision_id for e in trace.events if e.HasField("failure")]
    assert recorded == [a.decision.decision_id for a in answers]


async def test_the_failures_are_decided_as_one_after_the_other(stub: Any) -> None:
    """Six timeouts of one tool, of six calls: the fifth opens its breaker, so the fifth
    and the sixth wait for it to half-open rather than retry at once."""
    calls = [failure(f"call_{n}") for n in range(6)]
    response = await stub.ReportFailures(pb.ReportFailuresRequest(failures=calls))
    decisions = [r.answer.decision for r in response.results]
    assert [pb.RecoveryAction.Name(d.action) for d in decisions] == ["RECOVERY_ACTION_RETRY"] * 6
    assert all("when it half-opens" not in d.reason for d in decisions[:4])
    assert all("is open: retrying in" in d.reason for d in decisions[4:])
    assert decisions[5].breaker.phase == pb.BREAKER_PHASE_OPEN


async def test_a_repeat_within_the_call_or_of_a_recorded_report_is_replayed(stub: Any) -> None:
    first = await stub.ReportFailure(failure("call_0"))
    response = await stub.ReportFailures(
        pb.ReportFailuresRequest(failures=[failure("call_0"), failure("call_1"), failure("call_1")])
    )
    answers = [result.answer for result in response.results]
    assert [a.replayed for a in answers] == [True, False, True]
    assert answers[0].decision == first.decision
    assert answers[1].decision == answers[2].decision


async def test_a_refused_report_gets_its_own_status_and_the_others_are_recorded(
    stub: Any,
) -> None:
    await stub.ReportFailure(failure("call_0"))
    conflicting = failure("call_0", code=pb.ERROR_CODE_AUTH)
    response = await stub.ReportFailures(
        pb.ReportFailuresRequest(failures=[failure("call_1"), conflicting, failure("call_2")])
    )
    assert [r.WhichOneof("result") for r in response.results] == ["answer", "refused", "answer"]
    refused = response.results[1].refused
    assert refused.code == grpc.StatusCode.ALREADY_EXISTS.value[0]
    assert refused.message.startswith(
        "the report (turn_id='parallel', call_id='call_0', tool='search', attempt=1) was "
        "already recorded with a different error"
    )
    again = await stub.ReportFailures(
        pb.ReportFailuresRequest(failures=[failure("call_1"), failure("call_2")])
    )
    assert [r.answer.replayed for r in again.results] == [True, True]


async def test_bad_failures_are_named_by_index_and_nothing_is_recorded(
    daemon: InProcessDaemon, stub: Any
) -> None:
    request = pb.ReportFailuresRequest(
        failures=[failure("call_0"), failure("call_1", attempt=0), failure("", tool="")]
    )
    async with operator_channel(daemon.address, daemon.token) as channel:
        found = await violations(channel, "ReportFailures", request.SerializeToString())
    assert set(found) == {"failures[1].attempt", "failures[2].call_id", "failures[2].tool"}
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="parallel"))
    assert missing.value.code() is grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("count", [0, 257])
async def test_a_call_holds_1_to_256_failures(daemon: InProcessDaemon, count: int) -> None:
    request = pb.ReportFailuresRequest(failures=[failure(f"c{n}") for n in range(count)])
    async with operator_channel(daemon.address, daemon.token) as channel:
        found = await violations(channel, "ReportFailures", request.SerializeToString())
    assert found == {"failures": f"must hold 1 to 256 failures, got {count}"}


async def test_the_failures_of_one_call_are_committed_in_one_transaction(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    handler = await harness.start()
    try:
        before = harness.store.batches_committed
        reports = [
            FailureReport(
                turn_id="t",
                call_id=f"call_{n}",
                tool="search",
                attempt=1,
                error=ToolFailure(code=ErrorCode.TIMEOUT),
            )
            for n in range(8)
        ]
        results = await handler.report_failures(reports)
        assert len(results) == 8
        assert harness.store.batches_committed == before + 1
    finally:
        await harness.close()


async def test_a_failed_commit_refuses_each_failure_as_unavailable(
    daemon: InProcessDaemon, stub: Any
) -> None:
    with contextlib.closing(sqlite3.connect(daemon.settings.db)) as db, db:
        db.execute(
            "CREATE TRIGGER reject BEFORE INSERT ON events WHEN NEW.turn_id = 'parallel'"
            " BEGIN SELECT RAISE(ABORT, 'the disk says no'); END"
        )
    response = await stub.ReportFailures(
        pb.ReportFailuresRequest(failures=[failure("call_0"), failure("call_1")])
    )
    codes = [result.refused.code for result in response.results]
    assert codes == [grpc.StatusCode.UNAVAILABLE.value[0]] * 2
    assert all("the disk says no" in result.refused.message for result in response.results)
