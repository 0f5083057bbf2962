"""The database: errord's one SQLite connection, its schema, its writer, its reads.

``Store.open`` migrates the schema, rebuilds stale projections, loads the state
rows into the projections (some of them after open, in the background:
errord.state.store.loading), and starts the group-commit writer. Requests then
``submit`` units of work (reserved at once, durable when their ``done``
resolves) and read the trace. Reads share the connection and a lock with the
writer, so they never see half a batch. What follows each commit (watchers, the log
of decisions) is the store's ``after_commit``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar

import aiosqlite

from errord.clock import Clock
from errord.decide.model.events import EventDetail, EventKind, TraceEvent
from errord.errors import CorruptDatabase, StoreError
from errord.state import codec
from errord.state.after_commit import AfterCommit
from errord.state.projection import Projection
from errord.state.store import trimming
from errord.state.store.connection import (
    OwnerLock,
    check_path,
    check_sound,
    check_writable,
    closed_cleanly,
    connect,
    mark_closed_cleanly,
)
from errord.state.store.loading import load_in_background, load_now
from errord.state.store.rows import event_of, state_key
from errord.state.store.salvage import Salvage, salvage
from errord.state.store.schema import fold_trace, migrate, rebuild_stale
from errord.state.store.writer import (
    DuplicateEvent,
    GroupCommitWriter,
    StateModel,
    Unit,
    WriteHealthListener,
)

__all__ = ["DuplicateEvent", "Salvage", "Store", "Unit"]

LOG = logging.getLogger("errord")
T = TypeVar("T")

_SELECT: Final = "SELECT sequence, recorded_at, body FROM events"
_BY_KEY: Final = f"{_SELECT} WHERE kind = ? AND dedup_key = ?"
_BY_TURN: Final = f"{_SELECT} WHERE turn_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
_AFTER: Final = f"{_SELECT} WHERE sequence > ? ORDER BY sequence LIMIT ?"
_STATE_ROW: Final = "SELECT body FROM state WHERE projection = ? AND key = ?"


class Store:
    """The database, open; build it with ``await Store.open(...)``."""

    def __init__(
        self,
        db: aiosqlite.Connection,
        owner: OwnerLock,
        clock: Clock,
        state: StateModel,
        next_sequence: int,
        after_commit: AfterCommit,
        path: Path,
    ) -> None:
        self.path = path
        self.after_commit = after_commit
        """What follows each commit: the watchers told, the decisions logged."""
        self.salvage: Salvage | None = None
        """What became of a corrupt database found at open; None when none was."""
        self._db = db
        self._owner = owner
        self._clock = clock
        self._next_sequence = next_sequence
        self._lock = asyncio.Lock()
        self._writer = GroupCommitWriter(db, self._lock, state, after_commit)
        self._closed = False
        self._closing: asyncio.Task[None] | None = None
        self._loading: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        path: Path,
        clock: Clock,
        state: StateModel,
        *,
        after_commit: AfterCommit | None = None,
        load_later: Sequence[Projection[Any, Any]] = (),
    ) -> Store:
        """Open (creating if needed), migrate and load the database at ``path``.

        The projections of ``state`` are loaded from their state rows (rebuilt from
        the trace first if their fold changed); units of work reserve and commit in
        ``state``; each committed batch is then followed by ``after_commit`` (a new
        AfterCommit unless given: errord.state.after_commit). Raises StoreError naming
        ``path`` when the database cannot be opened, migrated or read, or when another
        errord has it open.

        A database that fails SQLite's integrity check, or is no database, is
        salvaged: its readable trace events go into a fresh database that takes its
        place, the damaged file is moved aside, and ``salvage`` says what was saved,
        so that the daemon serves, and says so, rather than crash-looping on it.

        The projections of ``load_later`` are loaded after open, in the background (their
        keys read back meanwhile: errord.state.store.loading); ``loaded`` waits for them.
        Only for projections whose readers read every key through errord.state.holding.
        """
        check_path(path)
        owner = OwnerLock.acquire(path)
        LOG.debug("opening the database %s", path)
        try:
            db, salvaged = await _sound_connection(path, clock)
        except BaseException:
            owner.release()
            raise
        try:
            await check_writable(db, path)
            await migrate(db, path)
            await rebuild_stale(db, state.all)
            LOG.debug("database schema migrated, projections current")
            for projection in state.all:
                if projection in load_later:
                    projection.begin_loading()
                else:
                    await load_now(db, projection)
            next_sequence = await _next_sequence(db)
        except BaseException as exc:
            await db.close()
            owner.release()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{path}: cannot open the trace database: {exc}") from exc
            raise
        after_commit = after_commit or AfterCommit()
        store = cls(db, owner, clock, state, next_sequence, after_commit, path)
        store.salvage = salvaged
        if load_later:
            store._loading = asyncio.create_task(
                load_in_background(db, store._lock, load_later), name="loading"
            )
        return store

    async def loaded(self) -> None:
        """Return once every projection is loaded (at once, but for those loaded later)."""
        if self._loading is not None:
            await asyncio.shield(self._loading)

    @property
    def set_aside(self) -> Path | None:
        """Where a corrupt database found at open was moved; None when none was."""
        return None if self.salvage is None else self.salvage.aside

    @property
    def batches_committed(self) -> int:
        """How many write batches have been committed since open."""
        return self._writer.batches_committed

    @property
    def batches_failed(self) -> int:
        """How many write batches the database refused since open."""
        return self._writer.batches_failed

    @property
    def failing(self) -> StoreError | None:
        """The last write's error while writes fail; None while they succeed."""
        return self._writer.failing

    def watch_writes(self, listener: WriteHealthListener) -> None:
        """Tell ``listener`` when writes start failing (the error) and succeed again (None)."""
        self._writer.on_write_health = listener

    async def probe_write(self) -> bool:
        """Try a write transaction that changes nothing; True when it commits. While writes
        fail, a success tells the listener they succeed again."""
        self._check_open()
        async with self._lock:
            try:
                await check_writable(self._db, self.path)
            except StoreError as error:
                self._writer.wrote(error)
                return False
        self._writer.wrote(None)
        return True

    def submit(self, details: Iterable[EventDetail], at: datetime | None = None) -> Unit:
        """Record ``details`` as one unit of work, in this order.

        The events get their sequence and time (``at``, the time they were decided
        at, else now) and are reserved in the state at once; ``await unit.wait()``
        returns when they are committed, or raises StoreError (the write failed),
        DuplicateEvent (an event's kind and key were recorded already) or StoreError
        when the store is closed.
        Cancelling that wait does not withdraw the unit.
        """
        self._check_open()
        now = at or self._clock.now()
        events = [TraceEvent(self._take_sequence(), now, detail) for detail in details]
        return self._writer.submit(events)

    async def find(self, kind: EventKind, key: object) -> TraceEvent | None:
        """The recorded event of ``kind`` with idempotency key ``key``, if any."""
        events = await self._read(_BY_KEY, (kind.value, codec.encode(key).decode()))
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

    async def state(self, projection: Projection[Any, Any], key: object) -> Any:
        """The committed state row of ``key``, or None; for keys memory no longer holds."""
        self._check_open()
        try:
            async with self._lock:
                rows = list(
                    await self._db.execute_fetchall(_STATE_ROW, (projection.name, state_key(key)))
                )
            return codec.decoder(projection.fold.state_type)(rows[0][0]) if rows else None
        except (sqlite3.Error, *codec.DecodeErrors) as exc:
            raise StoreError(f"cannot read the {projection.name} state of {key!r}: {exc}") from exc

    async def fold_trace(self, projections: Sequence[Projection[Any, Any]]) -> list[dict[Any, Any]]:
        """Each projection's state, folded from the whole trace: what a rebuild would give."""
        self._check_open()
        async with self._lock:
            return await fold_trace(self._db, projections)

    # Trace retention (errord.state.trace_retention): each one short transaction.

    async def oldest_events(self, after: int, limit: int) -> list[trimming.OldEvent]:
        """At most ``limit`` events after sequence ``after``, oldest first."""
        return await self._locked(
            "read the oldest trace events", trimming.oldest_events, after, limit
        )

    async def last_event_at(self, turn_id: str) -> datetime | None:
        """When the last event of ``turn_id`` was recorded; None when it has none."""
        return await self._locked("read a turn's last event", trimming.last_event_at, turn_id)

    async def remove_turns(
        self, turns: Sequence[str], turn: Projection[Any, Any], call: Projection[Any, Any]
    ) -> tuple[int, list[Any]]:
        """Delete every event of ``turns`` and their states in ``turn`` and ``call`` (the
        turns and calls projections); how many events, and the calls deleted."""
        return await self._locked(
            "remove turns", trimming.remove_turns, turns, turn.name, call.name
        )

    async def remove_daemon_events(self, through: int) -> int:
        """Delete the daemon's own events up to sequence ``through``; how many."""
        return await self._locked(
            "remove old daemon events", trimming.remove_daemon_events, through
        )

    async def pages(self) -> trimming.Pages:
        """How large the database is."""
        return await self._locked("read the database's size", trimming.pages)

    async def release_free_pages(self, limit: int) -> None:
        """Give up to ``limit`` free pages back to the file system, where the database
        allows it (one made since errord uses incremental auto-vacuum)."""
        await self._locked("release free pages", trimming.release_free_pages, limit)

    async def _locked(self, what: str, work: Callable[..., Awaitable[T]], *args: Any) -> T:
        self._check_open()
        try:
            async with self._lock:
                return await work(self._db, *args)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot {what}: {exc}") from exc

    async def close(self) -> None:
        """Refuse new units, commit those queued, stop the writer, close the database."""
        if self._closing is None:
            self._closed = True
            self._closing = asyncio.create_task(self._shut_down())
        await asyncio.shield(self._closing)

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def _shut_down(self) -> None:
        clean = False
        if self._loading is not None:
            self._loading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loading
        try:
            await self._writer.close()
            clean = True
        finally:
            await self._db.close()
            if clean:
                mark_closed_cleanly(self.path)
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
        return [event_of(row) for row in rows]


async def _sound_connection(
    path: Path, clock: Clock
) -> tuple[aiosqlite.Connection, Salvage | None]:
    """A connection to a sound database at ``path``; a corrupt one is salvaged first
    (what became of it is the second value)."""
    unchanged = closed_cleanly(path)
    try:
        db = await connect(path)
        try:
            if not unchanged:
                await check_sound(db, path)
                LOG.debug("database checked: it was not closed cleanly since last checked")
        except BaseException:
            await db.close()
            raise
    except CorruptDatabase as error:
        salvaged = await salvage(path, clock.now())
        LOG.error("%s; salvaged what could be read into a fresh database: %s", error, salvaged)
        return await connect(path), salvaged
    return db, None


async def _next_sequence(db: aiosqlite.Connection) -> int:
    rows = list(await db.execute_fetchall("SELECT COALESCE(MAX(sequence), 0) + 1 FROM events"))
    next_sequence: int = rows[0][0]
    return next_sequence
