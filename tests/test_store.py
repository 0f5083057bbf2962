"""The trace store on real SQLite files: durability, idempotency, group commit, lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from errord.decide.model import (
    Action,
    Classification,
    Decision,
    ErrorClass,
    ErrorCode,
    FailureEvent,
    FailureReport,
    Outcome,
    OutcomeEvent,
    OutcomeReport,
    ReportKey,
    ToolFailure,
    TraceEvent,
)
from errord.errors import StoreError
from errord.state.store import MAX_BATCH, MIGRATIONS, TraceStore
from tests.fakes import FakeClock


def failure(
    call_id: str = "call-1",
    *,
    turn_id: str = "turn-1",
    tool: str = "search",
    attempt: int = 1,
    message: str = "timed out",
) -> FailureEvent:
    report = FailureReport(
        turn_id,
        call_id,
        tool,
        attempt,
        ToolFailure(
            code=ErrorCode.TIMEOUT,
            exception_type="TimeoutError",
            message=message,
            retry_at=datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC),
            partial_result=[{"rank": 1}],
        ),
        arguments={"query": "weather", "limit": 3},
        elapsed=1.25,
    )
    decision = Decision(
        f"decision-{turn_id}-{call_id}-{tool}-{attempt}",
        turn_id,
        call_id,
        tool,
        attempt,
        Action.RETRY,
        Classification(ErrorClass.TRANSIENT, ErrorCode.TIMEOUT, "default:code:TIMEOUT"),
        reason="timeouts are transient",
        llm_message="retrying search",
        user_message="Still searching.",
        technical_message=message,
        decided_at=datetime(2026, 1, 1, tzinfo=UTC),
        delay=0.1,
        next_attempt_timeout=30.0,
        attempts_left=4,
    )
    return FailureEvent(report, decision)


def outcome(call_id: str = "call-1", *, turn_id: str = "turn-1", attempt: int = 1) -> OutcomeEvent:
    return OutcomeEvent(OutcomeReport(turn_id, call_id, "search", attempt, Outcome.SUCCESS, 0.5))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "trace.db"


@pytest.fixture
async def store(db_path: Path, clock: FakeClock) -> AsyncIterator[TraceStore]:
    async with await TraceStore.open(db_path, clock) as store:
        yield store


def query(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Run ``sql`` on a second, plain sqlite3 connection."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        return db.execute(sql).fetchall()


# Appending and reading.


async def test_an_appended_event_is_found_by_its_kind_and_key(store: TraceStore) -> None:
    event, created = await store.append(failure())

    assert created
    assert event.detail == failure()
    assert await store.find("failure", failure().report.key) == event


async def test_find_returns_none_for_a_key_never_appended(store: TraceStore) -> None:
    await store.append(failure())

    assert await store.find("outcome", failure().report.key) is None
    assert await store.find("failure", ReportKey("turn-1", "call-1", "search", 2)) is None


async def test_sequences_increase_with_each_append(store: TraceStore) -> None:
    sequences = [(await store.append(failure(f"call-{n}")))[0].sequence for n in range(5)]

    assert sequences == sorted(set(sequences))


async def test_event_time_is_the_clock_time_at_append(store: TraceStore, clock: FakeClock) -> None:
    clock.advance(90)

    event, _ = await store.append(failure())

    assert event.time == datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)
    assert await store.find("failure", event.key) == event


async def test_turn_events_are_that_turns_events_in_sequence_order(store: TraceStore) -> None:
    first, _ = await store.append(failure("call-b"))
    await store.append(failure("call-a", turn_id="turn-2"))
    second, _ = await store.append(outcome("call-b"))
    third, _ = await store.append(failure("call-a"))

    assert await store.turn_events("turn-1") == [first, second, third]
    assert await store.turn_events("turn-unknown") == []


async def test_call_failures_are_one_calls_failures_of_every_tool_in_commit_order(
    store: TraceStore,
) -> None:
    first, _ = await store.append(failure(attempt=1))
    second, _ = await store.append(failure(attempt=2))
    await store.append(outcome(attempt=3))
    other_tool, _ = await store.append(failure(attempt=1, tool="other_search"))
    await store.append(failure("call-2", attempt=1))

    assert await store.call_failures("turn-1", "call-1") == [first, second, other_tool]


# Idempotency.


async def test_a_failure_and_an_outcome_with_one_key_are_both_stored(store: TraceStore) -> None:
    _, failure_created = await store.append(failure())
    _, outcome_created = await store.append(outcome())

    assert failure_created
    assert outcome_created


async def test_a_repeated_key_returns_the_stored_event_not_created(
    store: TraceStore, clock: FakeClock
) -> None:
    stored, _ = await store.append(failure(message="first"))
    clock.advance(5)

    again, created = await store.append(failure(message="second"))

    assert not created
    assert again == stored
    assert await store.turn_events("turn-1") == [stored]


async def test_a_repeated_key_in_the_same_batch_returns_the_first_of_the_batch(
    store: TraceStore,
) -> None:
    batches_before = store.batches_committed

    (first, first_created), (second, second_created) = await asyncio.gather(
        store.append(failure(message="first")), store.append(failure(message="second"))
    )

    assert store.batches_committed - batches_before == 1
    assert (first_created, second_created) == (True, False)
    assert second == first
    assert second.detail == failure(message="first")


async def test_a_repeated_key_after_a_restart_returns_the_event_from_before(
    db_path: Path, clock: FakeClock
) -> None:
    async with await TraceStore.open(db_path, clock) as store:
        stored, _ = await store.append(failure(message="before restart"))
    clock.advance(60)

    async with await TraceStore.open(db_path, clock) as store:
        again, created = await store.append(failure(message="after restart"))

    assert not created
    assert again == stored


# Durability.


async def test_events_survive_a_restart_unchanged(db_path: Path, clock: FakeClock) -> None:
    async with await TraceStore.open(db_path, clock) as store:
        await store.append(failure())
        await store.append(outcome())
        before = await store.turn_events("turn-1")

    async with await TraceStore.open(db_path, clock) as store:
        after = await store.turn_events("turn-1")

    assert after == before


async def test_sequences_continue_after_a_restart(db_path: Path, clock: FakeClock) -> None:
    async with await TraceStore.open(db_path, clock) as store:
        last, _ = await store.append(failure())

    async with await TraceStore.open(db_path, clock) as store:
        event, _ = await store.append(failure("call-2"))

    assert event.sequence > last.sequence


# Group commit.


async def test_concurrent_appends_are_committed_in_a_few_batches(store: TraceStore) -> None:
    batches_before = store.batches_committed

    results = await asyncio.gather(*(store.append(failure(f"call-{n}")) for n in range(200)))

    assert all(created for _, created in results)
    assert len({event.sequence for event, _ in results}) == 200
    assert store.batches_committed - batches_before < 10
    assert len(await store.turn_events("turn-1")) == 200


async def test_on_commit_sees_the_created_events_in_sequence_order(
    db_path: Path, clock: FakeClock
) -> None:
    committed: list[TraceEvent] = []

    def remember(events: Sequence[TraceEvent]) -> None:
        committed.extend(events)

    async with await TraceStore.open(db_path, clock, on_commit=remember) as store:
        first = await store.append(failure("call-0"))
        repeats = await asyncio.gather(
            *(store.append(failure(f"call-{n % 30}")) for n in range(60))
        )

    created = [event for event, was_created in [first, *repeats] if was_created]
    assert len(created) == 30
    assert committed == created
    assert [event.sequence for event in committed] == sorted(event.sequence for event in created)


async def test_a_failing_on_commit_listener_neither_fails_appends_nor_stops_the_writer(
    db_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(events: Sequence[TraceEvent]) -> None:
        raise RuntimeError("listener bug")

    async with await TraceStore.open(db_path, clock, on_commit=explode) as store:
        _, first_created = await store.append(failure("call-1"))
        _, second_created = await store.append(failure("call-2"))

    assert first_created
    assert second_created
    assert "on_commit listener failed" in caplog.text


async def test_a_failed_write_fails_its_whole_batch_and_the_next_batch_commits(
    store: TraceStore, db_path: Path
) -> None:
    query(
        db_path,
        "CREATE TRIGGER reject BEFORE INSERT ON trace_events WHEN NEW.tool = 'rejected'"
        " BEGIN SELECT RAISE(ABORT, 'rejected by test trigger'); END",
    )

    results = await asyncio.gather(
        store.append(failure("call-1")),
        store.append(failure("call-2", tool="rejected")),
        return_exceptions=True,
    )
    _, created = await store.append(failure("call-3"))

    assert all(isinstance(result, StoreError) for result in results)
    assert "rejected by test trigger" in str(results[0])
    assert created
    assert [event.key.call_id for event in await store.turn_events("turn-1")] == ["call-3"]


async def test_a_cancelled_append_does_not_stop_the_writer_and_is_still_committed(
    store: TraceStore,
) -> None:
    cancelled = asyncio.create_task(store.append(failure("call-1")))
    await asyncio.sleep(0)
    cancelled.cancel()

    _, created = await store.append(failure("call-2"))

    assert created
    assert cancelled.cancelled()
    assert await store.find("failure", failure("call-1").report.key) is not None


# Opening and migrations.


async def test_open_creates_missing_parent_directories(store: TraceStore, db_path: Path) -> None:
    assert await asyncio.to_thread(db_path.is_file)


async def test_the_database_is_in_wal_mode(store: TraceStore, db_path: Path) -> None:
    assert query(db_path, "PRAGMA journal_mode") == [("wal",)]


async def test_user_version_is_the_number_of_migrations(store: TraceStore, db_path: Path) -> None:
    assert query(db_path, "PRAGMA user_version") == [(len(MIGRATIONS),)]


async def test_reopening_a_current_database_keeps_its_events_and_version(
    db_path: Path, clock: FakeClock
) -> None:
    async with await TraceStore.open(db_path, clock) as store:
        await store.append(failure())

    async with await TraceStore.open(db_path, clock) as store:
        assert len(await store.turn_events("turn-1")) == 1

    assert query(db_path, "PRAGMA user_version") == [(len(MIGRATIONS),)]


async def test_a_database_from_a_newer_errord_is_refused(db_path: Path, clock: FakeClock) -> None:
    db_path.parent.mkdir()
    query(db_path, "PRAGMA user_version = 99")

    with pytest.raises(StoreError) as raised:
        await TraceStore.open(db_path, clock)

    message = str(raised.value)
    assert str(db_path) in message
    assert "99" in message
    assert f"({len(MIGRATIONS)})" in message


async def test_a_file_that_is_not_a_database_is_refused_by_path(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "trace.db"
    path.write_bytes(b"not a database, just some text that is long enough" * 100)

    with pytest.raises(StoreError, match=re.escape(str(path))):
        await TraceStore.open(path, clock)


async def test_a_path_under_a_regular_file_is_refused_by_path(
    tmp_path: Path, clock: FakeClock
) -> None:
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "trace.db"

    with pytest.raises(StoreError, match=re.escape(str(path))):
        await TraceStore.open(path, clock)


# Closing.


async def test_close_commits_the_appends_still_queued(db_path: Path, clock: FakeClock) -> None:
    store = await TraceStore.open(db_path, clock)
    appends = [asyncio.create_task(store.append(failure(f"call-{n}"))) for n in range(20)]
    await asyncio.sleep(0)

    await store.close()

    assert all(created for _, created in await asyncio.gather(*appends))
    assert query(db_path, "SELECT COUNT(*) FROM trace_events") == [(20,)]


async def test_append_after_close_raises_store_error(store: TraceStore) -> None:
    await store.close()

    with pytest.raises(StoreError, match="store is closed"):
        await store.append(failure())


async def test_reads_after_close_raise_store_error(store: TraceStore) -> None:
    await store.close()

    with pytest.raises(StoreError, match="store is closed"):
        await store.turn_events("turn-1")


async def test_close_is_idempotent(store: TraceStore) -> None:
    await asyncio.gather(store.close(), store.close())
    await store.close()


async def test_a_new_database_directory_is_private_to_its_owner(tmp_path: Path) -> None:
    store = await TraceStore.open(tmp_path / "state" / "errord.db", FakeClock())
    await store.close()
    assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700


async def test_a_database_is_owned_by_one_store_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "errord.db"
    first = await TraceStore.open(path, FakeClock())
    with pytest.raises(
        StoreError, match=r"in use by another errord \(it holds .*errord\.db\.lock\)"
    ):
        await TraceStore.open(path, FakeClock())
    await first.close()
    second = await TraceStore.open(path, FakeClock())
    await second.close()


async def test_more_appends_than_a_batch_holds_are_split_and_all_committed(
    store: TraceStore,
) -> None:
    count = MAX_BATCH * 2 + 1
    results = await asyncio.gather(*(store.append(outcome(f"call-{n}")) for n in range(count)))
    assert all(created for _, created in results)
    assert store.batches_committed == 3
    assert len(await store.turn_events("turn-1")) == count
