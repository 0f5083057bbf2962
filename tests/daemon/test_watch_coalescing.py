"""WatchTrace coalesces by default: while the daemon's write to a watcher is pending,
the events committed meanwhile wait, and go together in the next response (``events``),
built from the shared encodings, within RESPONSE_BUDGET bytes; no batch_interval needed.

A watcher that does not read is a stream on a channel without BDP probing: HTTP/2 flow
control then holds the daemon's write to it after about 64 KB, until it reads.
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
from google.protobuf import struct_pb2

from errord.decide.model import Outcome, OutcomeReport
from errord.decide.model.events import OutcomeEvent, TraceEvent
from errord.state.feed import TraceFeed
from errord.wire.budget import RESPONSE_BUDGET
from tests.helpers import DaemonProcess, operator_channel

Stub: TypeAlias = Any  # the generated grpc stubs are untyped

NEVER_READING = [("grpc.http2.bdp_probe", 0)]
"""A channel whose streams the daemon can fill: HTTP/2's initial window is all it gets."""
WAIT = 30.0
"""A bound on a hang, never a measure."""


# The feed alone.


def outcome_event(sequence: int) -> TraceEvent:
    report = OutcomeReport(
        turn_id="t", call_id="c", tool="search", attempt=1, outcome=Outcome.SUCCESS
    )
    return TraceEvent(sequence, datetime(2026, 1, 1, tzinfo=UTC), OutcomeEvent(report=report))


def encode(event: TraceEvent) -> bytes:
    return str(event.sequence).encode()


async def test_a_watcher_takes_every_event_committed_since_it_last_asked_in_one_batch() -> None:
    feed = TraceFeed()
    batches = feed.subscribe().batched(encode)
    feed.publish([outcome_event(1)])
    assert await anext(batches) == [b"1"]
    feed.publish([outcome_event(2), outcome_event(3)])  # while the watcher sent its last
    feed.publish([outcome_event(4)])
    assert await anext(batches) == [b"2", b"3", b"4"]
    feed.close()
    assert [batch async for batch in batches] == []


# The daemon.


@pytest.fixture
async def stubs(daemon_process: DaemonProcess) -> AsyncIterator[tuple[Stub, Stub]]:
    """Against errord as its own process: a stub of grpc's default channel, and one of a
    channel that never reads by itself."""
    address, token = daemon_process.address, daemon_process.token
    async with (
        operator_channel(address, token) as channel,
        operator_channel(address, token, NEVER_READING) as slow_channel,
    ):
        yield (
            errord_pb2_grpc.ErrorHandlerServiceStub(channel),
            errord_pb2_grpc.ErrorHandlerServiceStub(slow_channel),
        )


def failures(turn_id: str, count: int, argument_bytes: int = 0) -> pb.ReportFailuresRequest:
    """The parallel calls of one new turn, each failing for good (no breaker opens), each
    with an argument of ``argument_bytes`` characters."""
    arguments = struct_pb2.Struct()
    arguments.update({"text": "x" * argument_bytes})
    return pb.ReportFailuresRequest(
        failures=[
            pb.ReportFailureRequest(
                turn_id=turn_id,
                call_id=f"c{number}",
                tool="search",
                attempt=1,
                error=pb.ToolError(code=pb.ERROR_CODE_INVALID_INPUT, message="bad query"),
                arguments=arguments,
            )
            for number in range(count)
        ]
    )


async def watch_live(fast: Stub, slow: Stub) -> tuple[Any, int]:
    """A watch of every turn on ``slow``, proven live: it got the probe's failure, which
    is the only event after the sequence it watches after. That sequence."""
    await fast.ReportFailures(failures("probe", 1))
    trace = await fast.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="probe"))
    after = int(trace.events[-1].sequence)
    stream = slow.WatchTrace(pb.WatchTraceRequest(after_sequence=after - 1))
    first = await asyncio.wait_for(stream.read(), WAIT)
    assert first.event.sequence == after
    return stream, after


async def responses_through(stream: Any, last: int) -> list[pb.WatchTraceResponse]:
    """The stream's responses until one holds the event of sequence ``last``."""
    responses: list[pb.WatchTraceResponse] = []
    while not responses or sequences(responses)[-1] < last:
        response = await asyncio.wait_for(stream.read(), WAIT)
        assert response is not grpc.aio.EOF, f"the stream ended after {sequences(responses)}"
        responses.append(response)
    return responses


def events_of(response: pb.WatchTraceResponse) -> list[pb.TraceEvent]:
    return [response.event] if response.HasField("event") else list(response.events)


def sequences(responses: list[pb.WatchTraceResponse]) -> list[int]:
    return [event.sequence for response in responses for event in events_of(response)]


async def test_a_watcher_that_does_not_read_for_a_while_gets_what_came_meanwhile_together(
    stubs: tuple[Stub, Stub],
) -> None:
    """No batch_interval asked for. 300 failures are reported one by one (one event a
    commit) while the watcher reads nothing: once it reads, it gets every one of them
    once, in commit order, and responses hold several events: the ones that waited."""
    fast, slow = stubs
    stream, after = await watch_live(fast, slow)
    message = "the query was malformed: " + "x" * 1000  # 300 of them: far more than 64 KB
    for call in range(300):
        await fast.ReportFailure(
            pb.ReportFailureRequest(
                turn_id="one-by-one",
                call_id=f"c{call}",
                tool="search",
                attempt=1,
                error=pb.ToolError(code=pb.ERROR_CODE_INVALID_INPUT, message=message),
            )
        )
    last = after + 1 + 300  # the turn's beginning, then its failures
    responses = await responses_through(stream, last)
    assert sequences(responses) == list(range(after + 1, last + 1))
    assert max(len(response.events) for response in responses) > 2  # more than a commit's
    assert len(responses) < 300
    stream.cancel()


async def test_events_that_waited_go_out_in_responses_within_the_budget(
    stubs: tuple[Stub, Stub],
) -> None:
    """24 events of 200 KB (4.8 MB) wait for a watcher that reads nothing: once it reads,
    with grpc's default 4 MiB receive limit, it gets them all, in responses of at most
    RESPONSE_BUDGET bytes of events, several to a response."""
    fast, slow = stubs
    stream, after = await watch_live(fast, slow)
    for turn in range(4):
        await fast.ReportFailures(failures(f"large-{turn}", 5, argument_bytes=200_000))
    last = after + 4 * 6
    responses = await responses_through(stream, last)
    assert sequences(responses) == list(range(after + 1, last + 1))
    for response in responses:
        assert sum(event.ByteSize() for event in events_of(response)) <= RESPONSE_BUDGET
    assert max(len(response.events) for response in responses) > 1
    stream.cancel()
