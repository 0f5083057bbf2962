"""Decisions and the trace are durable: they survive a restart, and repeats are idempotent."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.decide.model import CallKey
from errord.state.projections import Projections
from errord.state.store import Store
from tests.fakes import FakeClock
from tests.helpers import start_process, sync_operator_channel


def timeout_report(attempt: int = 1) -> pb.ReportFailureRequest:
    return pb.ReportFailureRequest(
        turn_id="turn-r",
        call_id="call_1",
        tool="flight_search",
        attempt=attempt,
        error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="Connection timeout after 30s"),
    )


def test_decisions_and_trace_survive_a_restart_and_repeats_return_the_recorded_decision(
    tmp_path: Path,
) -> None:
    database = str(tmp_path / "errord.db")
    first = start_process("--listen", "127.0.0.1:0", "--db", database)
    with sync_operator_channel(first.address, first.token) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        original = stub.ReportFailure(timeout_report())
        again = stub.ReportFailure(timeout_report())
        trace_before = stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="turn-r"))
    assert (original.replayed, again.replayed) == (False, True)
    assert again.decision == original.decision
    assert first.terminate(signal.SIGTERM) == 0

    second = start_process("--listen", "127.0.0.1:0", "--db", database)
    try:
        with sync_operator_channel(second.address, second.token) as channel:
            stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            trace_after = stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="turn-r"))
            repeated = stub.ReportFailure(timeout_report())
            next_attempt = stub.ReportFailure(timeout_report(attempt=2))
    finally:
        assert second.terminate(signal.SIGTERM) == 0
    assert trace_after == trace_before
    assert [event.WhichOneof("event") for event in trace_after.events] == [
        "turn_began",
        "failure",
    ]
    assert repeated.replayed
    assert repeated.decision == original.decision
    assert not next_attempt.replayed
    assert next_attempt.decision.decision_id != original.decision.decision_id
    assert next_attempt.decision.attempts_left == 3


async def test_an_answered_decision_and_its_state_are_durable_even_if_the_daemon_is_killed(
    tmp_path: Path,
) -> None:
    """A decision is acknowledged only after its commit: SIGKILL right after the answers
    (no shutdown, no writer flush) loses none of them, nor the state rows committed with
    them."""
    database = str(tmp_path / "errord.db")
    first = start_process("--listen", "127.0.0.1:0", "--db", database)
    with sync_operator_channel(first.address, first.token) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        answered = [stub.ReportFailure(timeout_report(attempt)).decision for attempt in (1, 2, 3)]
    first.terminate(signal.SIGKILL)

    state = Projections()
    async with await Store.open(Path(database), FakeClock(), state) as store:
        folded = await store.fold_trace(state.all)
    assert [projection.snapshot() for projection in state.all] == folded
    call = state.calls.committed(CallKey("turn-r", "call_1"))
    assert call is not None
    assert call.tools["flight_search"].failed == (1, 2, 3)
    granted = sum(decision.delay.ToTimedelta().total_seconds() for decision in answered)
    assert call.delay_granted("flight_search") == pytest.approx(granted)

    second = start_process("--listen", "127.0.0.1:0", "--db", database)
    try:
        with sync_operator_channel(second.address, second.token) as channel:
            stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            trace = stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="turn-r"))
    finally:
        second.terminate()
    failures = [event for event in trace.events if event.HasField("failure")]
    assert [event.failure.decision for event in failures] == answered
