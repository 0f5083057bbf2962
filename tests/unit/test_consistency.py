"""The projections stay equal to the database: under concurrent reports and outcomes, when
a commit fails, and across restarts (the state rebuilt from the trace is the state in memory)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import tempfile
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from errord.decide.manifest import RetryPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    CallKey,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.errors import ReportConflict, StoreError
from tests.harness import Harness

MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="a", alternatives=("b",), retry_policy=RetryPolicy(max_total_time=0.5)),
        ToolManifest(name="b"),
    ]
)
CODES = (ErrorCode.TIMEOUT, ErrorCode.INVALID_INPUT, ErrorCode.RATE_LIMITED)

failures = st.builds(
    lambda turn, call, tool, attempt, code: FailureReport(
        turn_id=f"t{turn}",
        call_id=f"c{call}",
        tool=tool,
        attempt=attempt,
        error=ToolFailure(code=code),
        elapsed=1.5,
    ),
    st.integers(0, 2),
    st.integers(0, 1),
    st.sampled_from(("a", "b", "c")),
    st.integers(1, 4),
    st.sampled_from(CODES),
)
outcomes = st.builds(
    lambda turn, call, tool, attempt, result: OutcomeReport(
        turn_id=f"t{turn}", call_id=f"c{call}", tool=tool, attempt=attempt, outcome=result
    ),
    st.integers(0, 2),
    st.integers(0, 1),
    st.sampled_from(("a", "b", "c")),
    st.integers(1, 4),
    st.sampled_from(Outcome),
)
waves = st.lists(st.lists(failures | outcomes, min_size=1, max_size=8), min_size=1, max_size=6)


async def send_batch(harness: Harness, reports: list[FailureReport | OutcomeReport]) -> None:
    """The wave's failures in one ReportFailures, its outcomes one by one, at once."""
    batch = [report for report in reports if isinstance(report, FailureReport)]
    singles: list[Awaitable[Any]] = [
        send(harness, report) for report in reports if isinstance(report, OutcomeReport)
    ]
    if batch:
        singles.append(decide_batch(harness, batch))
    await asyncio.gather(*singles)


async def decide_batch(harness: Harness, batch: list[FailureReport]) -> None:
    for result in await harness.handler.report_failures(batch):
        assert isinstance(result, tuple | ReportConflict), result  # never a store error or bug


async def send(harness: Harness, report: FailureReport | OutcomeReport) -> None:
    with contextlib.suppress(ReportConflict):  # a repeat with other content: refused, fine
        if isinstance(report, FailureReport):
            await harness.handler.report_failure(report)
        else:
            await harness.handler.report_outcome(report)


async def memory_and_database(harness: Harness) -> tuple[list[dict[Any, Any]], list[Any]]:
    """Each projection's states in memory, and folded from every event in the database."""
    memory = [projection.snapshot() for projection in harness.state.all]
    folded = await harness.store.fold_trace(harness.state.all)
    return memory, folded


def assert_memory_matches(
    harness: Harness, memory: list[dict[Any, Any]], folded: list[Any]
) -> None:
    for projection, held, rebuilt in zip(harness.state.all, memory, folded, strict=True):
        assert projection.reserved == 0
        assert held == {key: rebuilt[key] for key in held}
        if projection.complete:
            assert held == rebuilt


async def scenario(
    directory: Path, batches: list[list[Any]], capacity: int, *, batched: bool = False
) -> None:
    harness = Harness(directory, MANIFESTS)
    harness.capacity = capacity
    await harness.start()
    try:
        for wave in batches:
            if batched:
                await send_batch(harness, wave)
            else:
                await asyncio.gather(*(send(harness, report) for report in wave))
        memory, folded = await memory_and_database(harness)
        assert_memory_matches(harness, memory, folded)
        harness.capacity = 1_000
        await harness.restart()
        restored = [projection.snapshot() for projection in harness.state.all]
        assert restored == folded
    finally:
        await harness.close()


def timeout(turn: int, call: int, tool: str, attempt: int = 1) -> FailureReport:
    error = ToolFailure(code=ErrorCode.TIMEOUT)
    return FailureReport(
        turn_id=f"t{turn}", call_id=f"c{call}", tool=tool, attempt=attempt, error=error, elapsed=1.5
    )


# Memory read back while a call found in memory was not pinned: a commit meanwhile dropped
# the call, and its report was decided as new (a duplicate event, a wrong state).
MEMORY_READ_BACK_UNPINNED = [
    [
        timeout(0, 1, "a"),
        timeout(0, 1, "a"),
        timeout(1, 0, "a"),
        timeout(0, 0, "c"),
        FailureReport(
            turn_id="t0",
            call_id="c0",
            tool="a",
            attempt=1,
            error=ToolFailure(code=ErrorCode.RATE_LIMITED),
            elapsed=1.5,
        ),
        timeout(2, 0, "b"),
    ],
    [
        timeout(0, 0, "a"),
        timeout(0, 0, "a"),
        timeout(1, 1, "b"),
        timeout(0, 1, "a", attempt=2),
        timeout(1, 1, "c"),
    ],
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(waves, st.sampled_from((1_000, 2, 1)))
@example(MEMORY_READ_BACK_UNPINNED, 2)
def test_projections_equal_the_database_after_any_interleaving_and_a_restart(
    batches: list[list[Any]], capacity: int
) -> None:
    """Concurrent waves of reports and outcomes (repeats, conflicts, alternatives, several
    turns), with room for every key or for only one or two (so keys are dropped and read back):
    memory equals the state folded from the trace, and a restart restores exactly that."""
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(asyncio.wait_for(scenario(Path(directory), batches, capacity), 60))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(waves, st.sampled_from((1_000, 2, 1)))
def test_projections_equal_the_database_when_failures_come_in_batches(
    batches: list[list[Any]], capacity: int
) -> None:
    """The same, with each wave's failures reported in one ReportFailures (repeats and
    conflicts inside a batch included): all its keys are read back before any is decided."""
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(
            asyncio.wait_for(scenario(Path(directory), batches, capacity, batched=True), 60)
        )


def create_trigger(database: Path, sql: str) -> None:
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        db.execute(sql)


def report(turn: str, attempt: int = 1) -> FailureReport:
    error = ToolFailure(code=ErrorCode.TIMEOUT)
    return FailureReport(turn_id=turn, call_id="c", tool="a", attempt=attempt, error=error)


async def test_a_failed_commit_answers_an_error_releases_reservations_and_keeps_memory_true(
    tmp_path: Path,
) -> None:
    """The injected failure hits the state rows, after the events of the same transaction
    were inserted: the whole batch rolls back, its reports fail, nothing of it stays."""
    harness = Harness(tmp_path, MANIFESTS)
    handler = await harness.start()
    await handler.report_failure(report("ok", attempt=1))
    create_trigger(
        harness.db,
        "CREATE TRIGGER poison BEFORE INSERT ON state WHEN NEW.key LIKE '%poison%' "
        "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
    )
    results = await asyncio.gather(
        handler.report_failure(report("ok", attempt=2)),
        handler.report_failure(report("poison")),
        return_exceptions=True,
    )
    assert [type(result) for result in results] == [StoreError, StoreError]
    assert "injected failure" in str(results[1])
    memory, folded = await memory_and_database(harness)
    assert_memory_matches(harness, memory, folded)
    assert harness.state.calls.committed(CallKey("poison", "c")) is None
    assert await harness.store.turn_events("poison") == []

    create_trigger(harness.db, "DROP TRIGGER poison")
    retried, replayed = await handler.report_failure(report("ok", attempt=2))
    assert not replayed  # the failed attempt left no reservation behind
    assert retried.delay == 0.2
    await harness.close()


async def test_memory_dropped_for_room_is_read_back_before_deciding(tmp_path: Path) -> None:
    """With room for one call, a call reported again after others is read from its state
    row: its retry time and its failed tools are still known."""
    harness = Harness(tmp_path, MANIFESTS)
    harness.capacity = 1
    handler = await harness.start()
    await handler.report_failure(report("first", attempt=1))
    await handler.report_failure(report("first", attempt=2))
    await handler.report_failure(report("second"))
    assert harness.state.calls.committed(CallKey("first", "c")) is None
    assert not harness.state.calls.complete
    third, _ = await handler.report_failure(report("first", attempt=3))
    assert third.action.value == "USE_ALTERNATIVE"  # 0.1 + 0.2 granted, + 0.4 > 0.5
    assert "300 ms of retry delay already granted" in third.reason
    await harness.close()


@pytest.mark.parametrize("attempt", [1, 2])
async def test_a_repeat_of_a_report_memory_dropped_answers_the_recorded_decision(
    tmp_path: Path, attempt: int
) -> None:
    harness = Harness(tmp_path, MANIFESTS)
    harness.capacity = 1
    handler = await harness.start()
    originals = [(await handler.report_failure(report("first", n)))[0] for n in (1, 2)]
    await handler.report_failure(report("second"))
    again, replayed = await handler.report_failure(report("first", attempt))
    assert replayed
    assert again == originals[attempt - 1]
    await harness.close()
