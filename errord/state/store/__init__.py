"""The trace database: errord's one SQLite connection, its migrations, its group-commit writer.

Appends are queued; one writer task takes everything queued at once, inserts
it with one ``executemany`` and one commit, and only then answers each
append. Reads share the connection and a lock with the writer, so they never
see half a batch. Event bodies are JSON written by ``errord.state.codec``.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import aiosqlite

from errord.clock import Clock
from errord.decide.model import EventDetail, ReportKey, TraceEvent
from errord.errors import StoreError
from errord.state.codec import (
    EventKind,
    event_detail_from_dict,
    event_detail_to_dict,
    event_kind,
    time_from_text,
    time_to_text,
)

LOG = logging.getLogger(__name__)

MIGRATIONS: Final[tuple[str, ...]] = (
    # 1: the per-turn trace.
    """
    CREATE TABLE trace_events (
        sequence    INTEGER PRIMARY KEY,
        kind        TEXT    NOT NULL,
        turn_id     TEXT    NOT NULL,
        call_id     TEXT    NOT NULL,
        tool        TEXT    NOT NULL,
        attempt     INTEGER NOT NULL,
        recorded_at TEXT    NOT NULL,
        body        TEXT    NOT NULL,
        UNIQUE (kind, turn_id, call_id, tool, attempt)
    );
    CREATE INDEX trace_events_by_turn ON trace_events (turn_id, sequence);
    """,
)
"""Schema scripts; ``MIGRATIONS[n - 1]`` brings a database to ``user_version`` n."""

BUSY_TIMEOUT_MS: Final = 5000

_COLUMNS: Final = "(sequence, kind, turn_id, call_id, tool, attempt, recorded_at, body)"
_ROW_PLACEHOLDERS: Final = "(?, ?, ?, ?, ?, ?, ?, ?)"
MAX_BATCH: Final = 1000
"""Events committed by one statement: 8000 bound variables, within SQLite's 32766."""
_SELECT: Final = "SELECT sequence, recorded_at, body FROM trace_events"
_BY_KEY: Final = (
    f"{_SELECT} WHERE kind = ? AND turn_id = ? AND call_id = ? AND tool = ? AND attempt = ?"
)
_BY_TURN: Final = f"{_SELECT} WHERE turn_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
_AFTER: Final = f"{_SELECT} WHERE sequence > ? ORDER BY sequence LIMIT ?"
_FAILURES_OF_CALL: Final = (
    f"{_SELECT} WHERE kind = 'failure' AND turn_id = ? AND call_id = ? ORDER BY sequence"
)
_SEQUENCES_FROM: Final = "SELECT sequence FROM trace_events WHERE sequence >= ?"

_Row = tuple[int, str, str, str, str, int, str, str]
_Appended = tuple[TraceEvent, bool]
CommitListener = Callable[[Sequence[TraceEvent]], None]


@dataclass(frozen=True)
class _Pending:
    """One queued append: the event, its row, and the append waiting for it."""

    event: TraceEvent
    row: _Row
    done: asyncio.Future[_Appended]


class TraceStore:
    """The trace database, open; build it with ``await TraceStore.open(...)``."""

    def __init__(
        self,
        db: aiosqlite.Connection,
        clock: Clock,
        next_sequence: int,
        on_commit: CommitListener | None,
        owner: OwnerLock,
    ) -> None:
        self._db = db
        self._owner = owner
        self._clock = clock
        self._next_sequence = next_sequence
        self._on_commit = on_commit
        self._lock = asyncio.Lock()
        self._queue: asyncio.Queue[_Pending | None] = asyncio.Queue()
        self._closed = False
        self._closing: asyncio.Task[None] | None = None
        self._batches_committed = 0
        self._writer = asyncio.create_task(self._write_batches(), name="errord-trace-writer")

    @classmethod
    async def open(
        cls, path: Path, clock: Clock, *, on_commit: CommitListener | None = None
    ) -> TraceStore:
        """Open (creating if needed) and migrate the database at ``path``.

        Raises StoreError naming ``path`` when it cannot be opened or migrated, or
        when another errord has it open.
        """
        owner = OwnerLock.acquire(path)
        try:
            db = await _connect(path)
        except BaseException:
            owner.release()
            raise
        try:
            await _configure(db, path)
            await _migrate(db, path)
            next_sequence = await _next_sequence(db)
        except BaseException as exc:
            await db.close()
            owner.release()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{path}: cannot open the trace database: {exc}") from exc
            raise
        return cls(db, clock, next_sequence, on_commit, owner)

    @property
    def batches_committed(self) -> int:
        """How many write batches have been committed since open."""
        return self._batches_committed

    async def append(self, detail: EventDetail) -> tuple[TraceEvent, bool]:
        """Record ``detail``; return once it is committed.

        Returns the new event and True, or, when an event with the same kind and
        report key is stored already, that stored event and False.
        Raises StoreError when the store is closed or the write fails.
        Cancelling the wait does not withdraw the event; it is still committed.
        """
        self._check_open()
        event = TraceEvent(self._take_sequence(), self._clock.now(), detail)
        pending = _Pending(event, _row_of(event), asyncio.get_running_loop().create_future())
        self._queue.put_nowait(pending)
        return await pending.done

    async def find(self, kind: EventKind, key: ReportKey) -> TraceEvent | None:
        """The stored event of ``kind`` for ``key``, if any."""
        events = await self._read(_BY_KEY, (kind, *_key_columns(key)))
        return events[0] if events else None

    async def turn_events(
        self, turn_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[TraceEvent]:
        """The trace of one turn in sequence order: events after sequence ``after``,
        at most ``limit`` of them."""
        return await self._read(_BY_TURN, (turn_id, after, -1 if limit is None else limit))

    async def events_after(
        self, sequence: int, *, turn_id: str = "", limit: int | None = None
    ) -> list[TraceEvent]:
        """Events after ``sequence`` in sequence order, of one turn if ``turn_id``."""
        if turn_id:
            return await self.turn_events(turn_id, after=sequence, limit=limit)
        return await self._read(_AFTER, (sequence, -1 if limit is None else limit))

    async def call_failures(self, turn_id: str, call_id: str) -> list[TraceEvent]:
        """The failure events of one call, every tool's, in commit order."""
        return await self._read(_FAILURES_OF_CALL, (turn_id, call_id))

    async def close(self) -> None:
        """Refuse new appends, commit those queued, stop the writer, close the database."""
        if self._closing is None:
            self._closed = True
            self._queue.put_nowait(None)
            self._closing = asyncio.create_task(self._shut_down())
        await asyncio.shield(self._closing)

    async def __aenter__(self) -> TraceStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def _shut_down(self) -> None:
        try:
            await self._writer
        finally:
            await self._db.close()
            self._owner.release()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("store is closed")

    def _take_sequence(self) -> int:
        sequence = self._next_sequence
        self._next_sequence += 1
        return sequence

    async def _read(self, sql: str, parameters: Iterable[Any]) -> list[TraceEvent]:
        self._check_open()
        try:
            async with self._lock:
                rows = await self._db.execute_fetchall(sql, parameters)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read trace events: {exc}") from exc
        return [_event_of(row) for row in rows]

    # The writer.

    async def _write_batches(self) -> None:
        """Commit batches until the stop marker (None) that close() queues last."""
        while True:
            items = await self._next_batch()
            batch = [item for item in items if item is not None]
            if batch:
                await self._commit(batch)
            if len(batch) < len(items):
                return

    async def _next_batch(self) -> list[_Pending | None]:
        """Wait for one queued item, then take the others already queued, up to MAX_BATCH."""
        items = [await self._queue.get()]
        while not self._queue.empty() and len(items) < MAX_BATCH:
            items.append(self._queue.get_nowait())
        return items

    async def _commit(self, batch: list[_Pending]) -> None:
        try:
            async with self._lock:
                results = await self._write(batch)
        except sqlite3.Error as exc:
            _fail(batch, StoreError(f"cannot commit {len(batch)} trace events: {exc}"))
            return
        except Exception as exc:  # a bug: fail this batch, keep the writer for the next
            LOG.exception("unexpected error committing trace events")
            _fail(batch, exc)
            return
        self._batches_committed += 1
        self._notify([event for event, created in results if created])
        for item, result in zip(batch, results, strict=True):
            if not item.done.done():
                item.done.set_result(result)

    async def _write(self, batch: list[_Pending]) -> list[_Appended]:
        """Insert and commit ``batch`` with one statement.

        The connection is in autocommit mode, so the statement is its own
        transaction: one thread hop and one fsync a batch. Two hops (insert,
        then commit) cost milliseconds under load, waiting for a busy event loop.
        """
        parameters = [value for item in batch for value in item.row]
        cursor = await self._db.execute(_insert_statement(len(batch)), parameters)
        if cursor.rowcount < len(batch):
            return await self._resolve_duplicates(batch)
        return [(item.event, True) for item in batch]

    async def _resolve_duplicates(self, batch: list[_Pending]) -> list[_Appended]:
        """Pair each appended event with the stored one when its key existed already.

        The batch's sequences are the highest in the table (this is the only
        writer), so the rows at or after its first sequence are the ones inserted.
        """
        rows = await self._db.execute_fetchall(_SEQUENCES_FROM, (batch[0].event.sequence,))
        inserted = {row[0] for row in rows}
        return [
            (item.event, True)
            if item.event.sequence in inserted
            else (await self._stored(item), False)
            for item in batch
        ]

    async def _stored(self, item: _Pending) -> TraceEvent:
        kind = item.row[1]
        rows = list(await self._db.execute_fetchall(_BY_KEY, (kind, *_key_columns(item.event.key))))
        if not rows:
            raise StoreError(f"trace event {item.event.sequence} was neither inserted nor found")
        return _event_of(rows[0])

    def _notify(self, created: list[TraceEvent]) -> None:
        if self._on_commit is None or not created:
            return
        try:
            self._on_commit(created)
        except Exception:  # the events are durable; a listener's bug must not undo that
            LOG.exception("on_commit listener failed")


def _fail(batch: list[_Pending], error: Exception) -> None:
    for item in batch:
        if not item.done.done():
            item.done.set_exception(error)


def _key_columns(key: ReportKey) -> tuple[str, str, str, int]:
    return (key.turn_id, key.call_id, key.tool, key.attempt)


def _row_of(event: TraceEvent) -> _Row:
    body = json.dumps(event_detail_to_dict(event.detail), separators=(",", ":"))
    kind = event_kind(event.detail)
    return (event.sequence, kind, *_key_columns(event.key), time_to_text(event.time), body)


def _event_of(row: Any) -> TraceEvent:
    sequence, recorded_at, body = row
    try:
        return TraceEvent(
            sequence, time_from_text(recorded_at), event_detail_from_dict(json.loads(body))
        )
    except (TypeError, ValueError) as exc:
        raise StoreError(f"trace event {sequence} cannot be read: {exc}") from exc


# Opening.


class OwnerLock:
    """An exclusive lock on ``DB.lock``: one daemon per database.

    The store's sequence numbers and group commits assume a single writer.
    """

    def __init__(self, descriptor: int) -> None:
        self._descriptor: int | None = descriptor

    @classmethod
    def acquire(cls, path: Path) -> OwnerLock:
        lock = path.with_name(path.name + ".lock")
        try:
            # The trace holds tool inputs (redacted, still private): a new directory is owner-only.
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreError(f"{path}: cannot open the trace database: {exc}") from exc
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(descriptor)
            raise StoreError(f"{path}: in use by another errord (it holds {lock})") from exc
        return cls(descriptor)

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


@functools.cache
def _insert_statement(rows: int) -> str:
    values = ", ".join([_ROW_PLACEHOLDERS] * rows)
    return f"INSERT OR IGNORE INTO trace_events {_COLUMNS} VALUES {values}"


async def _connect(path: Path) -> aiosqlite.Connection:
    if sqlite3.sqlite_version_info < (3, 32):
        raise StoreError(f"{path}: SQLite {sqlite3.sqlite_version} is too old; errord needs 3.32")
    try:
        # Autocommit: errord writes whole batches as single statements, and
        # migrations as explicit transactions.
        return await aiosqlite.connect(path, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"{path}: cannot open the trace database: {exc}") from exc


async def _configure(db: aiosqlite.Connection, path: Path) -> None:
    mode = await _pragma(db, "journal_mode = WAL")
    if mode != "wal":
        raise StoreError(f"{path}: cannot use WAL journal mode (got {mode!r})")
    await _pragma(db, "synchronous = FULL")
    await _pragma(db, "foreign_keys = ON")
    await _pragma(db, f"busy_timeout = {BUSY_TIMEOUT_MS}")


async def _migrate(db: aiosqlite.Connection, path: Path) -> None:
    version = await _pragma(db, "user_version")
    if version > len(MIGRATIONS):
        raise StoreError(
            f"{path}: database schema version {version} is newer than this errord knows "
            f"({len(MIGRATIONS)}); upgrade errord or use another database file"
        )
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        await _apply_migration(db, number, script)


async def _apply_migration(db: aiosqlite.Connection, version: int, script: str) -> None:
    """Run ``script`` and set ``user_version`` to ``version`` in one transaction."""
    try:
        await db.executescript(
            f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {version};\nCOMMIT;"
        )
    except BaseException:
        await db.rollback()
        raise


async def _next_sequence(db: aiosqlite.Connection) -> int:
    rows = list(
        await db.execute_fetchall("SELECT COALESCE(MAX(sequence), 0) + 1 FROM trace_events")
    )
    next_sequence: int = rows[0][0]
    return next_sequence


async def _pragma(db: aiosqlite.Connection, statement: str) -> Any:
    """Run ``PRAGMA statement``; its first value, or None when it returns none."""
    rows = list(await db.execute_fetchall(f"PRAGMA {statement}"))
    return rows[0][0] if rows else None
