"""Group commit: every unit of work queued while the last batch was written, in one transaction.

A unit of work is the events one request records. Submitting it reserves its
events in the state model at once (synchronously, so that the next decision
sees them), then queues it. The writer takes every queued unit, stages the state
rows their events change, and inserts events and rows in one transaction. Only
when that commits does the state model take the new state and each unit's
waiter learn it is durable; a batch that fails is rolled back, its reservations
are released, and each of its waiters gets the error.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, Protocol, TypeVar

import aiosqlite

from errord.decide.model.events import TraceEvent
from errord.errors import StoreError
from errord.state.projection import Projection
from errord.state.store.rows import WRITE_COLUMNS, WriteRow, event_row

LOG = logging.getLogger(__name__)

ROWS_PER_STATEMENT: Final = 4000
"""Rows written by one statement: at most 28000 bound values, within SQLite's 32766."""
MAX_BATCH: Final = 1000
"""Units of work committed by one transaction."""

CommitListener = Callable[[Sequence[TraceEvent]], None]
WriteHealthListener = Callable[[StoreError | None], None]
"""Told when writes start failing (the error) and when they succeed again (None)."""
T = TypeVar("T")


class Staging(Protocol):
    """A batch's state changes, staged but not yet committed."""

    def rows(self, sequence: int) -> list[WriteRow]:
        """The state rows to write, marked as changed by ``sequence``."""
        ...


class StateModel(Protocol):
    """The projections a unit of work changes (errord.state.projections.Projections)."""

    @property
    def all(self) -> Sequence[Projection[Any, Any]]: ...

    def reserve(self, events: Sequence[TraceEvent]) -> None: ...

    def release(self, events: Sequence[TraceEvent]) -> None: ...

    def stage(self, events: Sequence[TraceEvent]) -> Staging: ...

    def commit(self, staging: Staging, events: Sequence[TraceEvent]) -> None: ...


class DuplicateEvent(Exception):
    """A unit's event has a kind and idempotency key that the trace holds already."""


class Unit:
    """One request's events, committed together or not at all."""

    __slots__ = ("_error", "_loop", "_settled", "_waiters", "events", "on_settled")

    def __init__(self, events: tuple[TraceEvent, ...], loop: asyncio.AbstractEventLoop) -> None:
        self.events = events
        self.on_settled: Callable[[], object] | None = None
        """Called once the unit is committed or refused, at once rather than scheduled:
        its submitter's bookkeeping is current before any waiter wakes."""
        self._loop = loop
        self._waiters: list[asyncio.Future[None]] = []
        self._settled = False
        self._error: BaseException | None = None

    def wait(self) -> asyncio.Future[None]:
        """A future of one waiter's own: done when the events are committed, raising why
        they were not (StoreError, DuplicateEvent). Cancelling it withdraws nothing and
        disturbs no other waiter."""
        waiter = self._loop.create_future()
        if not self._settled:
            self._waiters.append(waiter)
        elif self._error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(self._error)
        return waiter

    def settle(self, error: BaseException | None) -> None:
        """Committed (None) or refused with ``error``: tell ``on_settled``, then each waiter."""
        if self._settled:
            return
        self._settled, self._error = True, error
        if self.on_settled is not None:
            try:
                self.on_settled()
            except Exception:  # a bookkeeping bug must not keep the answers from the waiters
                LOG.exception("a unit of work's on_settled callback failed")
        for waiter in self._waiters:
            if waiter.done():  # its wait was cancelled
                continue
            if error is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(error)
        self._waiters.clear()


class GroupCommitWriter:
    """The single writer of the database: a task committing queued units in batches."""

    def __init__(
        self,
        db: aiosqlite.Connection,
        lock: asyncio.Lock,
        state: StateModel,
        on_commit: CommitListener | None = None,
    ) -> None:
        self._db = db
        self._lock = lock
        self._state = state
        self._on_commit = on_commit
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[Unit | None] = asyncio.Queue()
        self.batches_committed = 0
        self.batches_failed = 0
        """Batches the database refused (disk full, I/O error, read-only file)."""
        self.failing: StoreError | None = None
        """The last write's error while writes fail; None while they succeed."""
        self.on_write_health: WriteHealthListener | None = None
        self._task = asyncio.create_task(self._run(), name="errord-writer")

    def submit(self, events: Sequence[TraceEvent]) -> Unit:
        """Reserve ``events`` and queue them; await ``unit.wait()`` for the commit."""
        unit = Unit(tuple(events), self._loop)
        self._state.reserve(unit.events)
        self._queue.put_nowait(unit)
        return unit

    async def close(self) -> None:
        """Commit what is queued, then stop."""
        self._queue.put_nowait(None)
        await self._task

    async def _run(self) -> None:
        """Commit batches until the stop marker (None) that close() queues last."""
        while True:
            items = await self._next_batch()
            batch = [item for item in items if item is not None]
            if batch:
                await self._commit(batch)
            if len(batch) < len(items):
                return

    async def _next_batch(self) -> list[Unit | None]:
        """Wait for one queued item, then take the others already queued, up to MAX_BATCH."""
        items = [await self._queue.get()]
        while not self._queue.empty() and len(items) < MAX_BATCH:
            items.append(self._queue.get_nowait())
        return items

    async def _commit(self, batch: list[Unit]) -> None:
        events = [event for unit in batch for event in unit.events]
        staging = self._state.stage(events)
        try:
            await self._write(events, staging)
        except sqlite3.IntegrityError as exc:
            if not _is_duplicate(exc):
                self._fail(batch, events, exc)
            elif len(batch) == 1:
                self._fail(batch, events, DuplicateEvent())
            else:  # an event whose key memory did not hold (dropped for room): find which
                for unit in batch:
                    await self._commit([unit])
            return
        except Exception as exc:
            self._fail(batch, events, exc)
            return
        self.batches_committed += 1
        self.wrote(None)
        self._apply(staging, events)
        for unit in batch:
            unit.settle(None)
        # After the answers are on their way: a listener's work (a log write, watchers'
        # fan-out) must not delay them.
        self._notify(events)

    async def _write(self, events: Sequence[TraceEvent], staging: Staging) -> None:
        """Write ``events`` and the state rows they change in one transaction.

        The connection commits each statement on its own (autocommit), so a batch
        that fits one statement is one transaction and one thread hop; a larger one
        is wrapped in BEGIN and COMMIT. Whatever fails, no transaction is left open:
        the next batch must not run inside it.
        """
        rows = [event_row(event) for event in events]
        rows += staging.rows(events[-1].sequence)
        async with self._lock:
            try:
                if len(rows) <= ROWS_PER_STATEMENT:
                    await self._db.execute(_insert_writes(len(rows)), _flat(rows))
                else:
                    await self._db.execute("BEGIN IMMEDIATE")
                    for chunk in _chunks(rows):
                        await self._db.execute(_insert_writes(len(chunk)), _flat(chunk))
                    await self._db.commit()
            except BaseException:
                if self._db.in_transaction:
                    await self._db.rollback()
                raise

    def _apply(self, staging: Staging, events: Sequence[TraceEvent]) -> None:
        """Hand the committed batch to the state. The events are durable whatever happens
        here: a bug is logged, never turned into a failure."""
        try:
            self._state.commit(staging, events)
        except Exception:
            LOG.exception("committed trace events could not be applied to the state")

    def _fail(self, units: list[Unit], events: Sequence[TraceEvent], error: Exception) -> None:
        self._state.release(events)
        if isinstance(error, sqlite3.Error):
            error = StoreError(f"cannot commit {len(events)} trace events: {error}")
            self.batches_failed += 1
            self.wrote(error)
        elif not isinstance(error, DuplicateEvent | StoreError):
            LOG.error("unexpected error committing trace events", exc_info=error)
        for unit in units:
            unit.settle(error)

    def wrote(self, error: StoreError | None) -> None:
        """Record how the last write went; tell the listener when that changes."""
        changed = (error is None) != (self.failing is None)
        self.failing = error
        if changed and self.on_write_health is not None:
            try:
                self.on_write_health(error)
            except Exception:
                LOG.exception("write health listener failed")

    def _notify(self, events: Sequence[TraceEvent]) -> None:
        if self._on_commit is None:
            return
        try:
            self._on_commit(events)
        except Exception:  # the events are durable; a listener's bug must not undo that
            LOG.exception("on_commit listener failed")


def _is_duplicate(error: sqlite3.IntegrityError) -> bool:
    """True when the error is the trace's unique (kind, dedup_key) index refusing a repeat."""
    return getattr(error, "sqlite_errorname", "") == "SQLITE_CONSTRAINT_UNIQUE"


def _chunks(rows: list[T]) -> Iterator[list[T]]:
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        yield rows[start : start + ROWS_PER_STATEMENT]


def _flat(rows: Sequence[tuple[object, ...]]) -> list[object]:
    return [value for row in rows for value in row]


@functools.cache
def _insert_writes(rows: int) -> str:
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * rows)
    return f"INSERT INTO writes {WRITE_COLUMNS} VALUES {values}"
