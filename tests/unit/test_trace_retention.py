"""Trace retention against a real store with a fake clock: turns older than the age leave
the trace whole (events, turn and call state rows, what the daemon held of them), so do the daemon's
own old events; turns still open, breakers, tool statistics and episodic memory stay, also
across a restart; past the size bound the oldest done turns go first."""

from __future__ import annotations

import functools
from datetime import timedelta
from pathlib import Path

import pytest

from errord.decide.model import CallKey, ErrorCode, ToolFailure
from errord.errors import TurnNotFound
from errord.state.trace_retention import TraceBounds, TraceRetention
from tests.harness import Harness, failure_report

HOUR = 3600.0
report = functools.partial(failure_report, tool="search")
BIG = ToolFailure(code=ErrorCode.TIMEOUT, message="read timed out " + "words of an error " * 800)


def retention(
    harness: Harness, *, max_age: float = 30 * 24 * HOUR, max_bytes: int = 1 << 30
) -> TraceRetention:
    """Trace retention of ``harness``'s store and projections, with no pause."""
    state, bounds = harness.state, TraceBounds(max_age, max_bytes)
    trace = TraceRetention(harness.store, state.turns, state.calls, bounds, harness.clock)
    trace.pause = 0.0
    return trace


async def removed(harness: Harness, turn: str) -> bool:
    try:
        await harness.handler.turn_trace(turn)
    except TurnNotFound:
        return True
    return False


async def test_turns_older_than_the_age_leave_whole_and_open_ones_breakers_and_memory_stay(
    harness: Harness,
) -> None:
    handler = harness.handler
    for turn in ("ended", "expired"):
        for call in range(5):  # five timeouts of search: its breaker opens
            await handler.report_failure(report(f"c{call}", turn=turn))
    await handler.end_turn("ended")
    deadline = harness.clock.now() + timedelta(days=3)
    await handler.begin_turn("open", deadline, None)
    await handler.report_failure(report("c1", turn="open", tool="lookup"))
    harness.clock.advance(2 * HOUR)
    await handler.report_failure(report("c1", turn="recent", tool="lookup"))
    breakers = dict(harness.state.breakers.snapshot())
    stats = dict(harness.state.tool_stats.snapshot())
    memory = dict(harness.state.memory.snapshot())
    assert breakers["search"].opens == 1
    assert await retention(harness, max_age=HOUR).remove_old() == 2

    assert await removed(harness, "ended")
    assert await removed(harness, "expired")  # not ended, but its 300 s deadline is long past
    assert not await removed(harness, "open")
    assert not await removed(harness, "recent")
    for turn in ("ended", "expired"):
        assert harness.state.turns.view(turn) is None
        assert await harness.store.state(harness.state.turns, turn) is None
        assert harness.state.calls.view(CallKey(turn, "c0")) is None
        assert await harness.store.state(harness.state.calls, CallKey(turn, "c0")) is None
    assert harness.state.breakers.snapshot()["search"] == breakers["search"]
    assert harness.state.tool_stats.snapshot()["search"] == stats["search"]
    assert harness.state.memory.snapshot() == memory

    await harness.restart()
    assert await removed(harness, "ended")
    assert not await removed(harness, "open")
    assert harness.state.breakers.snapshot()["search"] == breakers["search"]
    assert harness.state.tool_stats.snapshot()["search"] == stats["search"]


async def test_a_second_pass_removes_nothing_more(harness: Harness) -> None:
    await harness.handler.report_failure(report(turn="old"))
    harness.clock.advance(2 * HOUR)
    trace = retention(harness, max_age=HOUR)
    assert await trace.remove_old() == 1
    assert await trace.remove_old() == 0
    assert trace.removed.turns == 1


async def test_the_daemons_own_events_older_than_the_age_go_too(harness: Harness) -> None:
    """An operator's reset is an event of no turn (an opening is of the turn that caused it)."""
    await harness.handler.report_failure(report(turn="t"))
    old = await harness.actions.reset_breaker("search", by="test")
    harness.clock.advance(2 * HOUR)
    young = await harness.actions.reset_breaker("search", by="test")
    await retention(harness, max_age=HOUR).remove_old()
    kept = [e.sequence for e in await harness.store.events_after(0) if not e.detail.turn_id]
    assert kept == [young.sequence]
    assert old.sequence < young.sequence


async def test_a_turn_with_a_report_being_recorded_is_not_removed(harness: Harness) -> None:
    await harness.handler.report_failure(report(turn="busy"))
    harness.clock.advance(2 * HOUR)
    reserved = await harness.store.turn_events("busy")
    harness.state.turns.reserve(reserved)  # as a report of it does, before its commit
    try:
        assert await retention(harness, max_age=HOUR).remove_old() == 0
    finally:
        harness.state.turns.release(reserved)
    assert not await removed(harness, "busy")


@pytest.mark.parametrize("ended", [True, False], ids=["ended", "expired"])
async def test_past_the_size_bound_the_oldest_done_turns_go_until_under_it(
    harness: Harness, ended: bool
) -> None:
    handler = harness.handler
    turns = [f"t{number:03}" for number in range(200)]
    for turn in turns:
        await handler.report_failure(report(turn=turn, error=BIG))
        if ended:
            await handler.end_turn(turn)
    deadline = harness.clock.now() + timedelta(days=3)
    await handler.begin_turn("open", deadline, None)
    await handler.report_failure(report(turn="open", error=BIG))
    harness.clock.advance(2 * HOUR if not ended else 1.0)  # an expired turn: a minute old
    pages = await harness.store.pages()
    bound = int(pages.used_bytes / 0.95)  # past the 90 % high water
    trace = retention(harness, max_bytes=bound)

    removed_turns = await trace.keep_within_size()

    assert 0 < removed_turns < len(turns)
    assert (await harness.store.pages()).used_bytes <= 0.8 * bound
    gone = [turn for turn in turns if await removed(harness, turn)]
    assert gone == turns[: len(gone)]  # the oldest first
    assert not await removed(harness, "open")
    assert not trace.removed.short


async def test_a_turn_not_ended_and_under_a_minute_old_is_never_removed_for_room(
    harness: Harness,
) -> None:
    for turn in range(20):
        await harness.handler.report_failure(report(turn=f"young{turn}", error=BIG))
    harness.clock.advance(400.0)  # past their deadline, but their last event is young...
    await harness.handler.report_failure(report("c2", turn="young0", error=BIG))
    for turn in range(1, 20):
        await harness.handler.report_failure(report("c2", turn=f"young{turn}", error=BIG))
    bound = int((await harness.store.pages()).used_bytes / 0.95)
    trace = retention(harness, max_bytes=bound)
    assert await trace.keep_within_size() == 0
    assert trace.removed.short


async def test_a_database_made_now_gives_freed_pages_back_to_the_file_system(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    await harness.start()
    try:
        for turn in range(40):
            await harness.handler.report_failure(report(turn=f"t{turn}", error=BIG))
            await harness.handler.end_turn(f"t{turn}")
        before = await harness.store.pages()
        trace = retention(harness, max_bytes=int(before.used_bytes / 0.95))
        await trace.keep_within_size()
        after = await harness.store.pages()
        assert after.file_bytes < before.file_bytes
        assert trace.removed.file_bytes == after.file_bytes
    finally:
        await harness.close()
