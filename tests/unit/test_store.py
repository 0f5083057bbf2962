"""The store on real SQLite files: units of work, group commit, durability, lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from errord.decide.model import (
    Action,
    CallKey,
    Classification,
    Decision,
    ErrorClass,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.decide.model.events import (
    EventDetail,
    EventKind,
    FailureEvent,
    OutcomeEvent,
    TraceEvent,
    TurnBegan,
)
from errord.errors import StoreError
from errord.state.after_commit import AfterCommit
from errord.state.projections import Projections
from errord.state.store import DuplicateEvent, Store
from errord.state.store.schema import MIGRATIONS
from errord.state.store.writer import MAX_BATCH
from tests.fakes import FakeClock


def failure(
    call_id: str = "call-1", *, turn_id: str = "turn-1", tool: str = "search", attempt: int = 1
) -> FailureEvent:
    report = FailureReport(
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=attempt,
        error=ToolFailure(
            code=ErrorCode.TIMEOUT,
            exception_type="TimeoutError",
            message="timed out",
            retry_at=datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC),
            partial_result=[{"rank": 1}],
        ),
        arguments={"query": "weather", "limit": 3},
        elapsed=1.25,
    )
    decision = Decision(
        decision_id=f"decision-{turn_id}-{call_id}-{tool}-{attempt}",
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=attempt,
        action=Action.RETRY,
        classification=Classification(
            ErrorClass.TRANSIENT, ErrorCode.TIMEOUT, "default:code:TIMEOUT"
        ),
        reason="timeouts are transient",
        llm_message="retrying search",
        user_message="Still searching.",
        technical_message="timed out",
        decided_at=datetime(2026, 1, 1, tzinfo=UTC),
        delay=0.1,
        next_attempt_timeout=30.0,
        attempts_left=4,
    )
    return FailureEvent(report=report, decision=decision)


def outcome(call_id: str = "call-1", *, turn_id: str = "turn-1", attempt: int = 1) -> OutcomeEvent:
    report = OutcomeReport(
        turn_id=turn_id,
        call_id=call_id,
        tool="search",
        attempt=attempt,
        outcome=Outcome.SUCCESS,
        duration=0.5,
    )
    return OutcomeEvent(report=report)


async def record(store: Store, *details: EventDetail) -> list[TraceEvent]:
    """Submit ``details`` as one unit and wait for its commit."""
    unit = store.submit(details)
    await unit.wait()
    return list(unit.events)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    (tmp_path / "state").mkdir()
    return tmp_path / "state" / "trace.db"


async def open_store(path: Path, clock: FakeClock, **options: object) -> Store:
    return await Store.open(path, clock, Projections(), **options)  # type: ignore[arg-type]


@pytest.fixture
async def store(db_path: Path, clock: FakeClock) -> AsyncIterator[Store]:
    async with await open_store(db_path, clock) as store:
        yield store


def query(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Run ``sql`` on a second, plain sqlite3 connection."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        return db.execute(sql).fetchall()


# Recording and reading.


async def test_a_recorded_event_is_found_by_its_kind_and_key(store: Store) -> None:
    [event] = await record(store, failure())
    assert await store.find(EventKind.FAILURE, failure().dedup_key) == event
    assert await store.find(EventKind.OUTCOME, failure().dedup_key) is None


async def test_each_kind_has_its_own_idempotency_key(store: Store) -> None:
    began, failed, ended = await record(store, TurnBegan(turn_id="turn-1"), failure(), outcome())
    assert await store.find(EventKind.TURN_BEGAN, ("turn-1",)) == began
    assert await store.find(EventKind.FAILURE, failure().dedup_key) == failed
    assert await store.find(EventKind.OUTCOME, outcome().dedup_key) == ended


async def test_a_unit_gets_consecutive_sequences_and_the_clock_time(
    store: Store, clock: FakeClock
) -> None:
    first = await record(store, TurnBegan(turn_id="turn-1"), failure())
    clock.advance(60)
    [later] = await record(store, outcome())
    assert [event.sequence for event in [*first, later]] == [1, 2, 3]
    assert first[0].time == datetime(2026, 1, 1, tzinfo=UTC)
    assert later.time == datetime(2026, 1, 1, 0, 1, tzinfo=UTC)


async def test_turn_events_are_that_turns_events_in_sequence_order(store: Store) -> None:
    await record(store, failure("a"))
    await record(store, failure("x", turn_id="turn-2"))
    await record(store, outcome("a"))
    events = await store.turn_events("turn-1")
    assert [event.kind for event in events] == [EventKind.FAILURE, EventKind.OUTCOME]
    assert [event.sequence for event in await store.events_after(1)] == [2, 3]


async def test_a_repeated_key_fails_its_unit_as_a_duplicate_and_records_nothing_of_it(
    store: Store,
) -> None:
    await record(store, failure())
    with pytest.raises(DuplicateEvent):
        await record(store, outcome("other"), failure())
    assert await store.find(EventKind.OUTCOME, outcome("other").dedup_key) is None


async def test_a_duplicate_fails_only_its_own_unit_of_a_batch(store: Store) -> None:
    results = await asyncio.gather(
        record(store, failure("a")),
        record(store, failure("a")),
        record(store, failure("b")),
        return_exceptions=True,
    )
    assert isinstance(results[1], DuplicateEvent)
    assert [len(result) for result in (results[0], results[2]) if isinstance(result, list)] == [
        1,
        1,
    ]


async def test_events_survive_a_restart_unchanged(db_path: Path, clock: FakeClock) -> None:
    async with await open_store(db_path, clock) as store:
        recorded = await record(store, TurnBegan(turn_id="turn-1"), failure(), outcome())
    async with await open_store(db_path, clock) as store:
        assert await store.turn_events("turn-1") == recorded
        [next_one] = await record(store, outcome("call-2"))
    assert next_one.sequence == 4


async def test_concurrent_units_are_committed_in_a_few_batches(store: Store) -> None:
    before = store.batches_committed
    await asyncio.gather(*(record(store, failure(f"call-{n}")) for n in range(200)))
    assert store.batches_committed - before < 10
    assert len(await store.turn_events("turn-1")) == 200


async def test_more_units_than_a_batch_holds_are_split_and_all_committed(store: Store) -> None:
    count = MAX_BATCH * 2 + 1
    await asyncio.gather(*(record(store, outcome(f"call-{n}")) for n in range(count)))
    assert store.batches_committed == 3
    assert len(await store.turn_events("turn-1")) == count


async def test_a_batch_too_large_for_one_statement_is_one_transaction_all_the_same(
    store: Store, db_path: Path
) -> None:
    """1000 units of 4 events and 4 state rows each (and the one tool's statistics): over
    8000 rows, two statements' worth."""
    query(
        db_path,
        "CREATE TRIGGER reject BEFORE INSERT ON state WHEN NEW.key = '\"turn-999\"'"
        " BEGIN SELECT RAISE(ABORT, 'the last row of the batch'); END",
    )

    def unit(n: int) -> list[EventDetail]:
        turn = f"turn-{n}"
        return [TurnBegan(turn_id=turn), *(outcome(call, turn_id=turn) for call in "abc")]

    results = await asyncio.gather(
        *(record(store, *unit(n)) for n in range(1000)), return_exceptions=True
    )
    assert all(isinstance(result, StoreError) for result in results)
    assert query(db_path, "SELECT COUNT(*) FROM events") == [(0,)]
    query(db_path, "DROP TRIGGER reject")
    await asyncio.gather(*(record(store, *unit(n)) for n in range(1000)))
    assert query(db_path, "SELECT COUNT(*) FROM events") == [(4000,)]
    assert query(db_path, "SELECT COUNT(*) FROM state") == [(4001,)]


async def test_after_commit_sees_the_committed_events_in_sequence_order(
    db_path: Path, clock: FakeClock
) -> None:
    committed: list[TraceEvent] = []

    class Remembered(AfterCommit):
        def __call__(self, events: Sequence[TraceEvent]) -> None:
            committed.extend(events)

    async with await open_store(db_path, clock, after_commit=Remembered()) as store:
        units = await asyncio.gather(*(record(store, failure(f"c{n}")) for n in range(30)))
    assert committed == [event for unit in units for event in unit]
    assert [event.sequence for event in committed] == list(range(1, 31))


async def test_a_failing_after_commit_neither_fails_units_nor_stops_the_writer(
    db_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    class Exploding(AfterCommit):
        def __call__(self, events: Sequence[TraceEvent]) -> None:
            raise RuntimeError("listener bug")

    async with await open_store(db_path, clock, after_commit=Exploding()) as store:
        await record(store, failure("call-1"))
        await record(store, failure("call-2"))
        assert len(await store.turn_events("turn-1")) == 2
    assert "on_commit listener failed" in caplog.text


async def test_a_failed_write_fails_its_whole_batch_and_the_next_batch_commits(
    store: Store, db_path: Path
) -> None:
    query(
        db_path,
        "CREATE TRIGGER reject BEFORE INSERT ON events WHEN NEW.dedup_key LIKE '%rejected%'"
        " BEGIN SELECT RAISE(ABORT, 'rejected by test trigger'); END",
    )
    results = await asyncio.gather(
        record(store, failure("call-1")),
        record(store, failure("call-2", tool="rejected")),
        return_exceptions=True,
    )
    await record(store, failure("call-3"))
    assert all(isinstance(result, StoreError) for result in results)
    assert "rejected by test trigger" in str(results[0])
    events = await store.turn_events("turn-1")
    assert [event.detail.call for event in events] == [CallKey("turn-1", "call-3")]


async def test_a_cancelled_wait_does_not_stop_the_writer_and_the_unit_still_commits(
    store: Store,
) -> None:
    unit = store.submit([failure("call-1")])
    waiter = unit.wait()
    waiter.cancel()
    await record(store, failure("call-2"))
    assert await store.find(EventKind.FAILURE, failure("call-1").dedup_key) is not None


async def test_each_waiter_of_a_unit_is_answered_and_one_cancelled_leaves_the_others_alone(
    store: Store,
) -> None:
    unit = store.submit([failure("call-1")])
    cancelled, first, second = unit.wait(), unit.wait(), unit.wait()
    cancelled.cancel()
    await asyncio.gather(first, second)
    await unit.wait()  # settled: a later waiter is answered at once
    assert cancelled.cancelled()


async def test_a_unit_refused_answers_every_waiter_with_the_error_even_one_that_comes_later(
    store: Store,
) -> None:
    await record(store, failure("call-1"))
    repeat = store.submit([failure("call-1")])
    with pytest.raises(DuplicateEvent):
        await repeat.wait()
    with pytest.raises(DuplicateEvent):
        await repeat.wait()


async def test_a_failing_on_settled_callback_is_logged_and_the_waiters_still_get_their_answer(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    unit = store.submit([failure("call-1")])

    def broken() -> None:
        raise RuntimeError("bookkeeping bug")

    unit.on_settled = broken
    await unit.wait()
    assert "on_settled callback failed" in caplog.text
    await record(store, failure("call-2"))  # the writer goes on


# Opening and migrations.


async def test_open_creates_missing_parent_directories(store: Store, db_path: Path) -> None:
    assert await asyncio.to_thread(db_path.is_file)


async def test_the_database_is_in_wal_mode(store: Store, db_path: Path) -> None:
    assert query(db_path, "PRAGMA journal_mode") == [("wal",)]


async def test_user_version_is_the_number_of_migrations(store: Store, db_path: Path) -> None:
    assert query(db_path, "PRAGMA user_version") == [(len(MIGRATIONS),)]


async def test_a_database_from_a_newer_errord_is_refused(db_path: Path, clock: FakeClock) -> None:
    query(db_path, "PRAGMA user_version = 99")
    with pytest.raises(StoreError) as raised:
        await open_store(db_path, clock)
    message = str(raised.value)
    assert str(db_path) in message
    assert "99" in message
    assert f"({len(MIGRATIONS)})" in message


async def test_a_file_that_is_not_a_database_is_set_aside_for_a_fresh_one(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "trace.db"
    garbage = b"not a database, just some text that is long enough" * 100
    path.write_bytes(garbage)
    store = await open_store(path, clock)
    await store.close()
    assert store.set_aside == tmp_path / "trace.db.corrupt-20260101T000000Z"
    assert store.set_aside.read_bytes() == garbage
    assert query(path, "PRAGMA integrity_check") == [("ok",)]


async def test_a_path_under_a_regular_file_is_refused_by_path(
    tmp_path: Path, clock: FakeClock
) -> None:
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "trace.db"
    with pytest.raises(StoreError, match=re.escape(str(path))):
        await open_store(path, clock)


# Closing.


async def test_close_commits_the_units_still_queued(db_path: Path, clock: FakeClock) -> None:
    store = await open_store(db_path, clock)
    units = [store.submit([failure(f"call-{n}")]) for n in range(20)]
    await store.close()
    await asyncio.gather(*(unit.wait() for unit in units))
    assert query(db_path, "SELECT COUNT(*) FROM events") == [(20,)]


async def test_submit_after_close_raises_store_error(store: Store) -> None:
    await store.close()
    with pytest.raises(StoreError, match="store is closed"):
        store.submit([failure()])


async def test_reads_after_close_raise_store_error(store: Store) -> None:
    await store.close()
    with pytest.raises(StoreError, match="store is closed"):
        await store.turn_events("turn-1")


async def test_close_is_idempotent(store: Store) -> None:
    await asyncio.gather(store.close(), store.close())
    await store.close()


async def test_a_database_directory_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "errord.db"
    with pytest.raises(StoreError, match=r"the directory .*missing does not exist; create it"):
        await open_store(path, FakeClock())
    assert not (tmp_path / "missing").exists()


async def test_a_database_that_cannot_be_written_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "errord.db"
    store = await open_store(path, FakeClock())
    await store.close()
    if chattr("+i", path) != 0:
        pytest.skip("chattr +i is not allowed here")
    try:
        with pytest.raises(StoreError, match="cannot write the trace database: attempt to write"):
            await open_store(path, FakeClock())
    finally:
        chattr("-i", path)


def chattr(flag: str, path: Path) -> int:
    """``chattr FLAG PATH``'s exit status (sync: a test's set-up, not what it measures)."""
    return subprocess.run(["chattr", flag, str(path)], check=False).returncode


async def test_a_database_is_owned_by_one_store_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "errord.db"
    first = await open_store(path, FakeClock())
    with pytest.raises(
        StoreError, match=r"in use by another errord \(it holds .*errord\.db\.lock\)"
    ):
        await open_store(path, FakeClock())
    await first.close()
    second = await open_store(path, FakeClock())
    await second.close()


async def test_state_rows_of_a_changed_fold_are_rebuilt_from_the_trace_at_open(
    db_path: Path, clock: FakeClock
) -> None:
    """A projection whose recorded fold version differs from the code's gets its rows
    rebuilt by folding every event, here after they were lost altogether."""
    async with await open_store(db_path, clock) as store:
        await record(store, TurnBegan(turn_id="turn-1"), failure(), outcome())
        await record(store, failure("call-2", attempt=2))
    rows_before = query(db_path, "SELECT projection, key, body FROM state ORDER BY 1, 2")
    query(db_path, "DELETE FROM state")
    query(db_path, "UPDATE projections SET version = 0")
    state = Projections()
    async with await Store.open(db_path, clock, state) as store:
        assert [p.snapshot() for p in state.all] == await store.fold_trace(state.all)
    assert query(db_path, "SELECT projection, key, body FROM state ORDER BY 1, 2") == rows_before
    assert query(db_path, "SELECT name, version FROM projections ORDER BY 1") == [
        (projection.name, projection.fold.version)
        for projection in sorted(state.all, key=lambda projection: projection.name)
    ]


async def test_a_failed_commit_leaves_no_transaction_open_for_the_next_batch(
    db_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite may keep a transaction open when COMMIT fails (busy, I/O error): the next
    batch must not run inside it and be answered without being durable."""
    store = await open_store(db_path, clock)
    real_commit = store._db.commit  # the store's one connection: the seam of this fault

    async def commit_fails_once() -> None:
        monkeypatch.setattr(store._db, "commit", real_commit)
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(store._db, "commit", commit_fails_once)
    big = [TurnBegan(turn_id=f"turn-{n}") for n in range(5000)]  # two statements' worth
    with pytest.raises(StoreError, match="database is locked"):
        await record(store, *big)
    await record(store, failure("after"))
    await store.close()
    assert query(db_path, "SELECT COUNT(*) FROM events") == [(1,)]
