"""WatchTrace: a live tail of committed events, optionally for one turn, with history.

A watch with history subscribes before it reads the history, so receiving the
history proves the live subscription exists: the tests need no sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, TypeAlias

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.decide.model import Outcome, OutcomeReport
from errord.decide.model.events import OutcomeEvent, TraceEvent
from errord.errors import WatcherFellBehind
from errord.state.feed import Subscription, TraceFeed
from tests.helpers import InProcessDaemon, operator_channel

Stub: TypeAlias = Any  # the generated grpc stubs are untyped


@pytest.fixture
async def stub(daemon: InProcessDaemon) -> AsyncIterator[Stub]:
    async with operator_channel(daemon.address, daemon.token) as channel:
        yield errord_pb2_grpc.ErrorHandlerServiceStub(channel)


def report(turn_id: str, attempt: int = 1, call: str = "c") -> pb.ReportFailureRequest:
    return pb.ReportFailureRequest(
        turn_id=turn_id,
        call_id=call,
        tool="search",
        attempt=attempt,
        error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT),
    )


async def take(stream: Any, count: int) -> list[pb.TraceEvent]:
    """The next ``count`` events of a WatchTrace stream at least (fewer if it ends): a
    response may hold several."""
    events: list[pb.TraceEvent] = []
    while len(events) < count:
        response = await asyncio.wait_for(stream.read(), 10)
        if response is grpc.aio.EOF:
            break
        events += [response.event] if response.HasField("event") else response.events
    return events


def decision_ids(events: list[pb.TraceEvent]) -> list[str]:
    """The decision of each event; "" for an event that is not a failure."""
    return [event.failure.decision.decision_id for event in events]


def kinds(events: list[pb.TraceEvent]) -> list[tuple[str, str]]:
    return [(event.turn_id, event.WhichOneof("event") or "") for event in events]


async def test_watch_with_history_replays_the_turn_then_follows_it_only(stub: Stub) -> None:
    before = await stub.ReportFailure(report("watched"))
    stream = stub.WatchTrace(pb.WatchTraceRequest(turn_id="watched", include_history=True))
    assert decision_ids(await take(stream, 2)) == ["", before.decision.decision_id]
    await stub.ReportFailure(report("other"))
    after = await stub.ReportFailure(report("watched", attempt=2))
    assert decision_ids(await take(stream, 1)) == [after.decision.decision_id]
    stream.cancel()


async def test_watch_ends_cleanly_when_the_daemon_shuts_down(
    daemon: InProcessDaemon, stub: Stub
) -> None:
    await stub.ReportFailure(report("t"))
    stream = stub.WatchTrace(pb.WatchTraceRequest(turn_id="t", include_history=True))
    assert len(await take(stream, 2)) == 2
    daemon.stop.set()
    assert await take(stream, 1) == []
    assert await stream.code() is grpc.StatusCode.OK


async def test_watch_with_history_needs_a_turn(stub: Stub) -> None:
    stream = stub.WatchTrace(pb.WatchTraceRequest(include_history=True))
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await take(stream, 1)
    assert failed.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "turn_id: required" in (failed.value.details() or "")


def outcome_event(sequence: int, turn_id: str = "t") -> TraceEvent:
    report = OutcomeReport(
        turn_id=turn_id, call_id="c", tool="search", attempt=1, outcome=Outcome.SUCCESS
    )
    return TraceEvent(sequence, datetime(2026, 1, 1, tzinfo=UTC), OutcomeEvent(report=report))


async def drain(subscription: Subscription, into: list[TraceEvent]) -> None:
    async for event in subscription.events():
        into.append(event)


async def test_a_feed_delivers_only_the_subscribed_turn() -> None:
    feed = TraceFeed()
    subscription = feed.subscribe("t")
    events = [outcome_event(1), outcome_event(2, turn_id="u"), outcome_event(3)]
    feed.publish(events)
    feed.close()
    received: list[TraceEvent] = []
    await drain(subscription, received)
    assert received == [events[0], events[2]]


async def test_a_watcher_that_falls_behind_is_told_so() -> None:
    """It is dropped at once, keeping nothing, and told the sequence to watch again after."""
    feed = TraceFeed(backlog=2)
    subscription = feed.subscribe()
    events = [outcome_event(n) for n in (5, 6, 7)]
    feed.publish(events)
    received: list[TraceEvent] = []
    with pytest.raises(
        WatcherFellBehind, match="fell more than 2 events behind; watch again with after_sequence=4"
    ):
        await drain(subscription, received)
    assert received == []


async def test_watch_resumes_after_a_sequence_across_turns_without_gaps(stub: Stub) -> None:
    """Call events and the events of no call (a turn began) share one stream in sequence
    order: resuming after turn a's failure yields b's beginning, b's failure, c's..."""
    first = await stub.ReportFailure(report("a"))
    second = await stub.ReportFailure(report("b"))
    third = await stub.ReportFailure(report("c"))
    trace = await stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="a"))
    after = trace.events[-1].sequence
    stream = stub.WatchTrace(pb.WatchTraceRequest(after_sequence=after))
    resumed = await take(stream, 4)
    assert kinds(resumed) == [
        ("b", "turn_began"),
        ("b", "failure"),
        ("c", "turn_began"),
        ("c", "failure"),
    ]
    assert decision_ids(resumed)[1::2] == [second.decision.decision_id, third.decision.decision_id]
    await stub.ReportOutcome(
        pb.ReportOutcomeRequest(
            turn_id="a", call_id="c", tool="search", attempt=1, outcome=pb.OUTCOME_FAILURE
        )
    )
    fourth = await stub.ReportFailure(report("a", attempt=2))
    live = await take(stream, 2)
    assert kinds(live) == [("a", "outcome"), ("a", "failure")]
    assert decision_ids(live)[1] == fourth.decision.decision_id
    stream.cancel()
    assert kinds(list(trace.events)) == [("a", "turn_began"), ("a", "failure")]
    assert decision_ids(list(trace.events))[1] == first.decision.decision_id
    sequences = [event.sequence for event in [*trace.events, *resumed, *live]]
    assert sequences == sorted(sequences)


async def test_watch_rejects_a_sequence_sqlite_cannot_hold(stub: Stub) -> None:
    stream = stub.WatchTrace(pb.WatchTraceRequest(after_sequence=2**63))
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await take(stream, 1)
    assert failed.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert (failed.value.details() or "").startswith("after_sequence: at most ")


async def test_watch_shows_breaker_transitions_of_reports_and_of_operators(
    daemon: InProcessDaemon, stub: Stub
) -> None:
    """The fifth consecutive timeout, the first of a second call, opens the breaker (in that
    report's turn); a reset by an operator belongs to no turn and reaches watchers of every
    turn."""
    stream = stub.WatchTrace(pb.WatchTraceRequest(after_sequence=1))
    for call, attempt in [("c", 1), ("c", 2), ("c", 3), ("c", 4), ("d", 1)]:
        await stub.ReportFailure(report("w", attempt=attempt, call=call))
    async with operator_channel(daemon.address, daemon.token) as channel:
        operators = errord_pb2_grpc.OperatorServiceStub(channel)
        await operators.ResetBreaker(pb.ResetBreakerRequest(tool="search", by="test"))
    # After the turn's beginning: four failures, the opening, the fifth failure, the reset.
    events = await take(stream, 7)
    breaker_events = [e for e in events if e.WhichOneof("event") == "breaker"]
    assert [
        (e.turn_id, e.tool, pb.BreakerChange.Name(e.breaker.change)) for e in breaker_events
    ] == [
        ("w", "search", "BREAKER_CHANGE_OPENED"),
        ("", "search", "BREAKER_CHANGE_RESET"),
    ]
    assert breaker_events[1].breaker.by == "test"
    assert breaker_events[1].breaker.breaker.phase == pb.BREAKER_PHASE_CLOSED
    stream.cancel()


async def test_a_watch_with_a_batch_interval_gets_every_event_once_in_fewer_messages(
    stub: Stub,
) -> None:
    first = await stub.ReportFailure(report("coalesced"))
    request = pb.WatchTraceRequest(turn_id="coalesced", include_history=True)
    request.batch_interval.FromMilliseconds(50)
    stream = stub.WatchTrace(request)
    history = await take(stream, 2)  # one per response; the watch is live once it is read
    assert decision_ids(history) == ["", first.decision.decision_id]
    answers = await asyncio.gather(
        *(stub.ReportFailure(report("coalesced", attempt=n)) for n in range(2, 42))
    )
    expected = {answer.decision.decision_id for answer in answers}
    received: list[pb.TraceEvent] = []
    messages = 0
    while not expected <= set(decision_ids(received)):
        response = await asyncio.wait_for(stream.read(), 10)
        messages += 1
        received += [response.event] if response.HasField("event") else response.events
    sequences = [event.sequence for event in received]
    assert sequences == sorted(set(sequences))  # in commit order, each once
    assert sequences[0] > history[-1].sequence
    assert sorted(d for d in decision_ids(received) if d) == sorted(expected)  # once each
    assert messages < len(received)  # coalesced
    stream.cancel()


async def test_a_batch_interval_out_of_range_is_invalid_argument(stub: Stub) -> None:
    request = pb.WatchTraceRequest()
    request.batch_interval.FromSeconds(20)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await asyncio.wait_for(stub.WatchTrace(request).read(), 10)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "batch_interval: must be from 1 ms to 10 s" in str(raised.value.details())


async def test_the_client_package_flattens_batched_responses(
    daemon: InProcessDaemon, stub: Stub
) -> None:
    from errord_client import AsyncErrordClient

    first = await stub.ReportFailure(report("flattened"))
    async with AsyncErrordClient(daemon.address, token=daemon.token) as client:
        stream = client.watch_trace("flattened", include_history=True, batch_interval=0.05)
        history = [await anext(stream), await anext(stream)]  # TurnBegan, the failure
        assert decision_ids(history) == ["", first.decision.decision_id]
        answers = await asyncio.gather(
            *(stub.ReportFailure(report("flattened", attempt=n)) for n in range(2, 12))
        )
        expected = {answer.decision.decision_id for answer in answers}
        live: list[pb.TraceEvent] = []
        while not expected <= set(decision_ids(live)):
            live.append(await asyncio.wait_for(anext(stream), 10))
        await stream.aclose()
    assert [event.sequence for event in live] == sorted({event.sequence for event in live})
