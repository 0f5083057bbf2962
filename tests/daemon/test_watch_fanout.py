"""WatchTrace fan-out: every committed event is encoded once and its bytes are shared by
every watcher; a watcher that does not keep up is dropped with RESOURCE_EXHAUSTED and
the sequence to watch again after; publishing never waits for a watcher.

Nothing here measures time: that reports are not slowed is pinned by structure (the
publisher is a plain function whose work per event does not grow with the watchers,
and a watcher's event is encoded once whatever their number). The throughput with
200 watchers against none is measured by ``python -m tests.benchmarks.watchers``.

A watcher that never reads is a stream on a channel without BDP probing: HTTP/2 flow
control then stops the daemon's writes to it after about 64 KB (grpc's default client
would keep reading into its own buffers, several MB a stream, before pushing back).
"""

from __future__ import annotations

import asyncio
import inspect
import re
import signal
import urllib.request
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeAlias

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.config import Settings
from errord.decide.model import Outcome, OutcomeReport
from errord.decide.model.events import OutcomeEvent, TraceEvent
from errord.errors import WatcherFellBehind
from errord.state import after_commit
from errord.state.feed import Subscription, TraceFeed
from errord.wire import turn_responses
from tests.helpers import (
    DaemonProcess,
    InProcessDaemon,
    operator_channel,
    start_in_process,
    start_process,
)

Stub: TypeAlias = Any  # the generated grpc stubs are untyped

NEVER_READING = [("grpc.http2.bdp_probe", 0)]
"""A channel whose streams the daemon can fill: HTTP/2's initial window is all it gets."""
WAIT = 30.0
"""A bound on a hang, never a measure."""
RESUME = re.compile(r"watch again with after_sequence=(\d+)")
METRICS_URL = re.compile(r"metrics on (http://\S+),")
WATCHERS_GAUGE = re.compile(r"^errord_watchers (\S+)$", re.MULTILINE)


# The feed alone.


def outcome_event(sequence: int, turn_id: str = "t") -> TraceEvent:
    report = OutcomeReport(
        turn_id=turn_id, call_id="c", tool="search", attempt=1, outcome=Outcome.SUCCESS
    )
    return TraceEvent(sequence, datetime(2026, 1, 1, tzinfo=UTC), OutcomeEvent(report=report))


class CountingEncoder:
    """An encoding that counts its calls and makes a new bytes object each time."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, event: TraceEvent) -> bytes:
        self.calls.append(event.sequence)
        return f"{event.sequence}:{event.turn_id}".encode()


async def encoded_until_closed(subscription: Subscription, encode: CountingEncoder) -> list[bytes]:
    return [data async for batch in subscription.batched(encode) for data in batch]


async def test_the_feed_encodes_each_event_once_and_every_watcher_sends_the_same_bytes() -> None:
    feed = TraceFeed()
    everything = [feed.subscribe() for _ in range(30)]
    of_turn_t = [feed.subscribe("t") for _ in range(30)]
    events = [outcome_event(1), outcome_event(2, turn_id="u"), outcome_event(3)]
    feed.publish(events)
    feed.close()
    encode = CountingEncoder()
    sent = [await encoded_until_closed(s, encode) for s in everything + of_turn_t]
    assert sorted(encode.calls) == [1, 2, 3]
    assert sent[0] == [b"1:t", b"2:u", b"3:t"]
    assert sent[-1] == [b"1:t", b"3:t"]
    firsts = {id(data[0]) for data in sent}
    assert len(firsts) == 1  # one bytes object, shared by all 60 watchers


async def test_an_event_no_watcher_asked_for_is_neither_kept_nor_encoded() -> None:
    feed = TraceFeed()
    feed.publish([outcome_event(1)])  # no watcher at all: nothing to do
    assert feed.audiences == 0
    assert feed.kept == 0
    watcher = feed.subscribe("t")
    feed.publish([outcome_event(2, turn_id="u"), outcome_event(3, turn_id="v")])
    assert feed.kept == 0
    feed.publish([outcome_event(4)])
    assert feed.kept == 1
    feed.close()
    encode = CountingEncoder()
    assert await encoded_until_closed(watcher, encode) == [b"4:t"]
    assert encode.calls == [4]


async def test_publishing_never_waits_for_a_watcher_and_keeps_at_most_the_backlog() -> None:
    """A watcher that never reads costs the publisher nothing once dropped: the feed lets
    go of what it kept for it, while a watcher that reads gets every event once, in order."""
    assert not inspect.iscoroutinefunction(TraceFeed.publish)
    feed = TraceFeed(backlog=8)
    never = feed.subscribe()
    reader = feed.subscribe()
    received: list[int] = []

    async def read() -> None:
        async for event in reader.events():
            received.append(event.sequence)

    reading = asyncio.create_task(read())
    for first in range(11, 110, 3):
        feed.publish([outcome_event(n) for n in range(first, first + 3)])
        assert feed.kept <= 8
        await asyncio.sleep(0)  # the reader's turn to read what it was woken for
    feed.close()
    await reading
    assert received == list(range(11, 110))
    assert feed.kept == 0
    told = "fell more than 8 events behind; watch again with after_sequence=10"
    with pytest.raises(WatcherFellBehind, match=told):
        [event async for event in never.events()]


async def test_a_watcher_dropped_after_reading_resumes_after_its_last_event() -> None:
    feed = TraceFeed(backlog=2)
    watcher = feed.subscribe()
    feed.publish([outcome_event(10), outcome_event(11)])
    events = watcher.events()
    assert (await anext(events)).sequence == 10
    assert (await anext(events)).sequence == 11
    feed.publish([outcome_event(n) for n in (12, 13, 14)])
    with pytest.raises(WatcherFellBehind, match="watch again with after_sequence=11"):
        await anext(events)


async def test_a_watch_that_replayed_past_live_events_gets_none_of_them_twice() -> None:
    feed = TraceFeed()
    watcher = feed.subscribe(after=5)
    feed.publish([outcome_event(n) for n in (4, 5, 6)])
    watcher.after = 6  # the replay from the store sent 6 too
    feed.publish([outcome_event(7)])
    feed.close()
    assert [event.sequence async for event in watcher.events()] == [7]


# The daemon: in process, with a counting converter or a small backlog.


def failures(turn_id: str, count: int) -> pb.ReportFailuresRequest:
    """The parallel calls of one new turn, each failing for good (no breaker opens)."""
    return pb.ReportFailuresRequest(
        failures=[
            pb.ReportFailureRequest(
                turn_id=turn_id,
                call_id=f"c{number}",
                tool="search",
                attempt=1,
                error=pb.ToolError(code=pb.ERROR_CODE_INVALID_INPUT, message="bad query"),
            )
            for number in range(count)
        ]
    )


async def report_probe(stub: Stub, turn_id: str) -> int:
    """Report a turn's failure; the sequence just before its last event (the failure)."""
    await stub.ReportFailures(failures(turn_id, 1))
    trace = await stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id=turn_id))
    return int(trace.events[-1].sequence) - 1


async def watch_from(stub: Stub, after: int) -> tuple[Any, int]:
    """A watch of every turn after ``after`` and its first event's sequence: with one
    event recorded after ``after``, receiving it proves the watch is subscribed."""
    stream = stub.WatchTrace(pb.WatchTraceRequest(after_sequence=after))
    response = await asyncio.wait_for(stream.read(), WAIT)
    assert response is not grpc.aio.EOF
    return stream, int(response.event.sequence)


class Reader:
    """Reads a WatchTrace stream as fast as events come, keeping their sequences."""

    def __init__(self, stream: Any, first: int) -> None:
        self.sequences = [first]
        self.stream = stream
        self._arrived = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            while (response := await self.stream.read()) is not grpc.aio.EOF:
                events = [response.event] if response.HasField("event") else response.events
                self.sequences += [event.sequence for event in events]
                self._arrived.set()
        finally:
            self._arrived.set()

    async def through(self, last: int) -> list[int]:
        """The sequences read once the one of ``last`` is among them."""
        while self.sequences[-1] < last:
            if self._task.done():
                self._task.result()  # raises what ended the stream
                raise AssertionError(f"the stream ended after {self.sequences[-1]}")
            self._arrived.clear()
            await asyncio.wait_for(self._arrived.wait(), WAIT)
        return self.sequences

    async def stop(self) -> None:
        self.stream.cancel()
        await asyncio.wait([self._task])


async def recorded(stub: Stub, after: int, last: int) -> list[int]:
    """The sequences of every event recorded after ``after`` up to ``last``, from the store."""
    stream, first = await watch_from(stub, after)
    reader = Reader(stream, first)
    try:
        return [n for n in await reader.through(last) if n <= last]
    finally:
        await reader.stop()


@pytest.fixture
def converted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sequence of every event the daemon converts to its wire form."""
    calls: list[int] = []
    real = turn_responses.trace_event_to_proto

    def counting(event: TraceEvent) -> pb.TraceEvent:
        calls.append(event.sequence)
        return real(event)

    monkeypatch.setattr(turn_responses, "trace_event_to_proto", counting)
    return calls


@pytest.fixture
async def small_backlog_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[InProcessDaemon, TraceFeed]]:
    """The daemon in process, its feed's backlog 64 events instead of 10,000."""
    made: list[TraceFeed] = []

    def small_feed() -> TraceFeed:
        made.append(TraceFeed(backlog=64))
        return made[-1]

    monkeypatch.setattr(after_commit, "TraceFeed", small_feed)
    running = await start_in_process(Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db"))
    yield running, made[0]
    running.stop.set()
    await asyncio.wait_for(running.task, WAIT)


@pytest.mark.parametrize("watchers", [1, 50])
async def test_each_event_is_converted_once_whatever_the_number_of_watchers(
    daemon: InProcessDaemon, converted: list[int], watchers: int
) -> None:
    async with operator_channel(daemon.address, daemon.token) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        after = await report_probe(stub, "probe")
        readers = [Reader(*await watch_from(stub, after)) for _ in range(watchers)]
        converted.clear()  # the replays so far: each watcher's own, not shared
        await stub.ReportFailures(failures("watched", 20))
        live = list(range(after + 2, after + 23))  # the turn's beginning and 20 failures
        for reader in readers:
            assert await reader.through(live[-1]) == [after + 1, *live]
        assert sorted(converted) == live
        for reader in readers:
            await reader.stop()


async def test_a_watcher_that_never_reads_is_dropped_and_told_where_to_resume(
    small_backlog_daemon: tuple[InProcessDaemon, TraceFeed],
) -> None:
    """While the others read every event once and in order, the daemon's writes to a
    watcher that never reads block, its backlog (64 here) fills and it is dropped: when it
    reads at last it gets what the network held, then RESOURCE_EXHAUSTED naming the last
    sequence it got, and a watch after that sequence goes on without a gap."""
    daemon, feed = small_backlog_daemon
    async with (
        operator_channel(daemon.address, daemon.token) as channel,
        operator_channel(daemon.address, daemon.token, NEVER_READING) as never_channel,
    ):
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        after = await report_probe(stub, "probe")
        never, first = await watch_from(
            errord_pb2_grpc.ErrorHandlerServiceStub(never_channel), after
        )
        readers = [Reader(*await watch_from(stub, after)) for _ in range(3)]
        for turn in range(1, 41):  # 40 x 51 events: far more than the window and the backlog
            await stub.ReportFailures(failures(f"load-{turn}", 50))
            assert feed.kept <= 64
            for reader in readers:  # they keep up: never more than a turn (51) behind
                await reader.through(after + 1 + turn * 51)
        last = after + 1 + 40 * 51
        everything = await recorded(stub, after, last)
        assert everything == list(range(after + 1, last + 1))
        for reader in readers:
            assert reader.sequences == everything
        never_reader = Reader(never, first)
        with pytest.raises(grpc.aio.AioRpcError) as dropped:
            await never_reader.through(last)
        got = never_reader.sequences
        assert dropped.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        resume = RESUME.search(dropped.value.details() or "")
        assert resume is not None, dropped.value.details()
        assert int(resume[1]) == got[-1] < last
        assert got == everything[: len(got)]
        assert await recorded(stub, got[-1], last) == everything[len(got) :]
        for reader in readers:
            await reader.stop()
        assert feed.kept == 0


# The daemon as a process: the acceptance's 200 watchers.


@pytest.fixture
def process(tmp_path: Path) -> Iterator[DaemonProcess]:
    running = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    yield running
    running.terminate()


async def test_two_hundred_watchers_some_never_reading_while_reports_run(
    process: DaemonProcess,
) -> None:
    """20 watchers read every event once and in order, 180 never read; every report of
    the load is answered meanwhile, and the daemon serves on after they go."""
    async with (
        operator_channel(process.address, process.token) as channel,
        operator_channel(process.address, process.token, NEVER_READING) as never_channel,
    ):
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        never_stub = errord_pb2_grpc.ErrorHandlerServiceStub(never_channel)
        after = await report_probe(stub, "probe")
        readers = [Reader(*await watch_from(stub, after)) for _ in range(20)]
        never = [(await watch_from(never_stub, after))[0] for _ in range(180)]

        async def load(worker: int) -> None:
            for turn in range(10):
                answer = await stub.ReportFailures(failures(f"load-{worker}-{turn}", 10))
                assert [r.WhichOneof("result") for r in answer.results] == ["answer"] * 10

        await asyncio.wait_for(asyncio.gather(*(load(worker) for worker in range(16))), WAIT)
        last = after + 1 + 16 * 10 * 11
        everything = await recorded(stub, after, last)
        assert everything == list(range(after + 1, last + 1))
        for reader in readers:
            assert await reader.through(last) == everything
            await reader.stop()
        for stream in never:
            stream.cancel()
        assert await report_probe(stub, "after") > last


async def test_the_daemon_drops_a_watcher_that_never_reads_once_10000_events_wait(
    process: DaemonProcess,
) -> None:
    """The daemon's own backlog: a watcher that never reads is dropped once more than
    10,000 events wait for it, while reports go on being answered."""
    async with (
        operator_channel(process.address, process.token) as channel,
        operator_channel(process.address, process.token, NEVER_READING) as never_channel,
    ):
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        after = await report_probe(stub, "probe")
        never_stub = errord_pb2_grpc.ErrorHandlerServiceStub(never_channel)
        stream, first = await watch_from(never_stub, after)
        for turn in range(110):  # 110 x 101 events
            answer = await stub.ReportFailures(failures(f"load-{turn}", 100))
            assert [r.WhichOneof("result") for r in answer.results] == ["answer"] * 100
        last = after + 1 + 110 * 101
        reader = Reader(stream, first)
        with pytest.raises(grpc.aio.AioRpcError) as dropped:
            await reader.through(last)
        assert dropped.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "fell more than 10000 events behind" in (dropped.value.details() or "")
        resume = RESUME.search(dropped.value.details() or "")
        assert resume is not None
        assert int(resume[1]) == reader.sequences[-1] < last - 10_000
        assert reader.sequences == list(range(after + 1, reader.sequences[-1] + 1))


# Watchers whose clients go away.


@pytest.fixture
def metered(tmp_path: Path) -> Iterator[DaemonProcess]:
    """The daemon as a process, serving metrics."""
    running = start_process(
        "--listen",
        "127.0.0.1:0",
        "--db",
        str(tmp_path / "errord.db"),
        "--metrics-listen",
        "127.0.0.1:0",
    )
    yield running
    running.terminate(signal.SIGKILL)


def watchers_open(daemon: DaemonProcess) -> int:
    """errord_watchers, scraped from the daemon's metrics over HTTP."""
    url = METRICS_URL.findall(daemon.stderr)[0]
    with urllib.request.urlopen(url, timeout=WAIT) as response:
        scraped = response.read().decode()
    return int(float(WATCHERS_GAUGE.findall(scraped)[0]))


async def until_watchers_open(daemon: DaemonProcess, count: int) -> int:
    """errord_watchers once it is ``count``, or after WAIT seconds whatever it is."""
    deadline = asyncio.get_running_loop().time() + WAIT
    found = await asyncio.to_thread(watchers_open, daemon)
    while found != count and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
        found = await asyncio.to_thread(watchers_open, daemon)
    return found


async def test_watchers_their_clients_cancel_leave_no_error_and_no_count_behind(
    metered: DaemonProcess,
) -> None:
    """200 watchers whose clients read nothing, the daemon's writes to them waiting on
    flow control, are cancelled by their clients, 100 then 100: a client going away is
    normal, so the daemon logs no error and no traceback for it, and errord_watchers
    drops by one for each."""
    async with (
        operator_channel(metered.address, metered.token) as channel,
        operator_channel(metered.address, metered.token, NEVER_READING) as never_channel,
    ):
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        never_stub = errord_pb2_grpc.ErrorHandlerServiceStub(never_channel)
        after = await report_probe(stub, "probe")
        streams = [(await watch_from(never_stub, after))[0] for _ in range(200)]
        assert await until_watchers_open(metered, 200) == 200
        for turn in range(20):  # 1020 events to each: far more than 64 KB
            await stub.ReportFailures(failures(f"load-{turn}", 50))
        for stream in streams[:100]:
            stream.cancel()
        assert await until_watchers_open(metered, 100) == 100
        for stream in streams[100:]:
            stream.cancel()
        assert await until_watchers_open(metered, 0) == 0
        assert await report_probe(stub, "after") > after
    assert metered.terminate() == 0
    assert "Traceback" not in metered.stderr
    assert [line for line in metered.lines if line.startswith("level=error")] == []
