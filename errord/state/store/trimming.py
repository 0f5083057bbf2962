"""What trace retention reads and deletes: the oldest events, a turn's last one, a turn
whole (its events and its turn and call state rows), the daemon's own events up to a
sequence, and how many pages the database holds.

Each function runs on errord's one connection, under the store's lock (errord.state.store
calls them), one short transaction each, so that the writer's batches queue behind a
deletion for a few milliseconds at most.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import aiosqlite

from errord.decide.model import CallKey, ReportKey
from errord.state import codec
from errord.state.store.connection import pragma
from errord.state.store.rows import state_key

_OLDEST: Final = (
    "SELECT sequence, turn_id, recorded_at FROM events WHERE sequence > ? ORDER BY sequence LIMIT ?"
)
_LAST_OF_TURN: Final = (
    "SELECT sequence, recorded_at FROM events WHERE turn_id = ? ORDER BY sequence DESC LIMIT 1"
)
_CALL_EVENTS: Final = (
    "SELECT dedup_key FROM events WHERE turn_id = ? AND kind IN ('failure', 'outcome')"
)
_DELETE_EVENTS: Final = "DELETE FROM events WHERE turn_id = ?"
_DELETE_DAEMON_EVENTS: Final = "DELETE FROM events WHERE turn_id = '' AND sequence <= ?"
_DELETE_STATE: Final = "DELETE FROM state WHERE projection = ? AND key = ?"
_report_key = codec.decoder(ReportKey)


@dataclass(frozen=True, slots=True)
class OldEvent:
    """An event as retention reads it: where it is, whose, and when."""

    sequence: int
    turn_id: str
    """Empty for an event of the daemon (a breaker's change, a reload, memory forgetting)."""
    at: datetime


@dataclass(frozen=True, slots=True)
class Pages:
    """How large the database is, in SQLite's pages."""

    size: int
    """Bytes a page."""
    count: int
    """Pages in the file."""
    free: int
    """Pages in the file that hold nothing (reused before the file grows)."""

    @property
    def used_bytes(self) -> int:
        """Bytes of the pages that hold rows: what retention keeps within its bound."""
        return (self.count - self.free) * self.size

    @property
    def file_bytes(self) -> int:
        return self.count * self.size


async def oldest_events(db: aiosqlite.Connection, after: int, limit: int) -> list[OldEvent]:
    """At most ``limit`` events after sequence ``after``, oldest first."""
    rows = await db.execute_fetchall(_OLDEST, (after, limit))
    return [OldEvent(seq, turn, codec.time_from_text(at)) for seq, turn, at in rows]


async def last_event_at(db: aiosqlite.Connection, turn_id: str) -> datetime | None:
    """When the last event of ``turn_id`` was recorded; None when it has none."""
    rows = list(await db.execute_fetchall(_LAST_OF_TURN, (turn_id,)))
    return codec.time_from_text(rows[0][1]) if rows else None


async def remove_turns(
    db: aiosqlite.Connection, turns: Sequence[str], turn_projection: str, call_projection: str
) -> tuple[int, list[CallKey]]:
    """Delete every event of ``turns`` and their turn and call state rows, in one
    transaction; how many events, and the calls whose state rows went with them."""
    calls: list[CallKey] = []
    events = 0
    await db.execute("BEGIN IMMEDIATE")
    try:
        for turn_id in turns:
            keys = await db.execute_fetchall(_CALL_EVENTS, (turn_id,))
            turn_calls = {
                CallKey(turn_id, report.call_id) for report in (_report_key(key) for (key,) in keys)
            }
            cursor = await db.execute(_DELETE_EVENTS, (turn_id,))
            events += max(0, cursor.rowcount)
            await db.execute(_DELETE_STATE, (turn_projection, state_key(turn_id)))
            await db.executemany(
                _DELETE_STATE, [(call_projection, state_key(call)) for call in turn_calls]
            )
            calls.extend(turn_calls)
        await db.commit()
    except BaseException:
        if db.in_transaction:
            await db.rollback()
        raise
    return events, calls


async def remove_daemon_events(db: aiosqlite.Connection, through: int) -> int:
    """Delete the daemon's own events up to sequence ``through``; how many."""
    cursor = await db.execute(_DELETE_DAEMON_EVENTS, (through,))
    await db.commit()
    return max(0, cursor.rowcount)


async def pages(db: aiosqlite.Connection) -> Pages:
    size, count, free = (
        await pragma(db, "page_size"),
        await pragma(db, "page_count"),
        await pragma(db, "freelist_count"),
    )
    return Pages(int(size), int(count), int(free))


async def release_free_pages(db: aiosqlite.Connection, limit: int) -> None:
    """Give back to the file system up to ``limit`` free pages (a database made with
    incremental auto-vacuum; on another, nothing happens)."""
    await db.execute_fetchall(f"PRAGMA incremental_vacuum({int(limit)})")
