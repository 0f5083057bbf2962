"""Episodic memory stays within its bounds: at most max_errors errors, none unseen for
max_age; forgetting is a trace event, so a rebuild forgets what the daemon forgot, and
the background pass commits in small units between decisions."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from errord.decide.memory import MemoryKey
from errord.decide.model import ErrorCode, FailureReport, Outcome, OutcomeReport, ToolFailure
from errord.decide.model.events import ForgetReason, MemoryForgotten
from errord.state.memory_retention import FORGET_CHUNK, MemoryBounds
from tests.harness import Harness, failure_report

MAX_ERRORS = 10
MAX_AGE = 7_200.0


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    harness = Harness(tmp_path)
    harness.memory_bounds = MemoryBounds(max_errors=MAX_ERRORS, max_age=MAX_AGE)
    await harness.start()
    yield harness
    await harness.close()


def failure(number: int, attempt: int = 1, turn: str = "") -> FailureReport:
    """A timeout of its own tool, in a turn of its own (never out of time): a new error for
    memory, whose RETRY opens an episode."""
    error = ToolFailure(code=ErrorCode.TIMEOUT, message=f"timeout after {number}s")
    return failure_report(
        f"call-{number}",
        f"tool{number}",
        attempt=attempt,
        turn=turn or f"turn-{number}",
        error=error,
    )


def memory_rows(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        [(count,)] = connection.execute("SELECT COUNT(*) FROM state WHERE projection = 'memory'")
    return int(count)


def forgotten_events(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT body FROM events WHERE kind = 'memory_forgotten' ORDER BY sequence"
        )
        return [body.decode() if isinstance(body, bytes) else body for (body,) in rows]


async def test_memory_never_holds_more_errors_than_its_bound(harness: Harness) -> None:
    for number in range(200):
        await harness.handler.report_failure(failure(number))
        assert len(harness.state.memory) <= MAX_ERRORS
        assert memory_rows(harness.db) <= MAX_ERRORS
    remembered = set(harness.state.memory.snapshot())
    assert {key.tool for key in remembered} == {f"tool{n}" for n in range(190, 200)}
    assert harness.handler.retention.forgotten == 190


async def test_the_bound_holds_under_concurrent_reports_of_new_errors(harness: Harness) -> None:
    for wave in range(5):
        numbers = range(wave * 40, wave * 40 + 40)
        await asyncio.gather(*(harness.handler.report_failure(failure(n)) for n in numbers))
        assert len(harness.state.memory) <= MAX_ERRORS
        assert memory_rows(harness.db) <= MAX_ERRORS
    assert len(harness.state.memory) == MAX_ERRORS


async def test_what_memory_forgot_a_rebuild_from_the_trace_forgets_too(harness: Harness) -> None:
    for number in range(40):
        await harness.handler.report_failure(failure(number))
        if number % 3 == 0:  # some episodes are told, and an old error comes back
            await harness.handler.report_outcome(
                OutcomeReport(
                    f"turn-{number}", f"call-{number}", f"tool{number}", 2, Outcome.SUCCESS
                )
            )
            await harness.handler.report_failure(failure(number % 7, 3, f"again-{number}"))
        harness.clock.advance(30.0)
    live = harness.state.memory.snapshot()
    assert forgotten_events(harness.db)
    [rebuilt] = [
        states
        for projection, states in zip(
            harness.state.all, await harness.store.fold_trace(harness.state.all), strict=True
        )
        if projection is harness.state.memory
    ]
    assert rebuilt == live
    await harness.restart()
    assert harness.state.memory.snapshot() == live


async def test_errors_not_seen_for_max_age_are_forgotten_in_small_units(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    count = FORGET_CHUNK * 2 + 10
    harness.memory_bounds = MemoryBounds(max_errors=10_000, max_age=MAX_AGE)
    await harness.start()
    try:
        await asyncio.gather(*(harness.handler.report_failure(failure(n)) for n in range(count)))
        harness.clock.advance(MAX_AGE - 60)
        await harness.handler.report_failure(failure(count))  # seen later: kept
        harness.clock.advance(61)
        assert await harness.handler.retention.forget_old() == count
        assert set(harness.state.memory.snapshot()) == {
            key for key in harness.state.memory.snapshot() if key.tool == f"tool{count}"
        }
        assert len(harness.state.memory) == 1
        assert memory_rows(harness.db) == 1
        bodies = forgotten_events(harness.db)
        assert len(bodies) == 3  # FORGET_CHUNK, FORGET_CHUNK, 10
        assert all('"reason":"age"' in body for body in bodies)
        assert await harness.handler.retention.forget_old() == 0
    finally:
        await harness.close()


async def test_a_large_age_pass_lets_decisions_commit_between_its_units(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    harness.memory_bounds = MemoryBounds(max_errors=10_000, max_age=MAX_AGE)
    await harness.start()
    try:
        count = FORGET_CHUNK * 8
        await asyncio.gather(*(harness.handler.report_failure(failure(n)) for n in range(count)))
        harness.clock.advance(MAX_AGE + 1)
        forgetting = asyncio.create_task(harness.handler.retention.forget_old())
        await asyncio.sleep(0)  # the pass has submitted its first unit
        decision, _ = await harness.handler.report_failure(failure(count + 1, turn="late"))
        assert not forgetting.done()  # the decision did not wait for the whole pass
        assert await forgetting == count
        trace = await harness.handler.turn_trace("late")
        decided_at = trace[-1].sequence
        with sqlite3.connect(harness.db) as connection:
            sequences = [
                sequence
                for (sequence,) in connection.execute(
                    "SELECT sequence FROM events WHERE kind = 'memory_forgotten' ORDER BY sequence"
                )
            ]
        assert len(sequences) == 8
        assert sequences[0] < decided_at < sequences[-1]
        assert decision.action.value == "RETRY"
    finally:
        await harness.close()


async def test_a_forgotten_error_starts_afresh(harness: Harness) -> None:
    await harness.handler.report_failure(failure(1))
    [key] = harness.state.memory.snapshot()
    for number in range(2, 2 + MAX_ERRORS):
        await harness.handler.report_failure(failure(number))
    assert harness.state.memory.view(key) is None
    await harness.handler.report_failure(failure(1, attempt=2, turn="again"))
    stats = harness.state.memory.view(key)
    assert stats is not None
    assert stats.tallies["RETRY"].opened == pytest.approx(1.0)


def test_a_forgetting_event_names_its_errors_and_reason() -> None:
    event = MemoryForgotten(
        event_id="f1", reason=ForgetReason.CAPACITY, errors=(MemoryKey("a", "TIMEOUT:1"),)
    )
    assert event.turn_id == ""
    assert event.dedup_key == ("f1",)
