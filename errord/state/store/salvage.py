"""Salvage: the trace events of a corrupt database that can still be read, kept.

Every other table is derived from the trace (state rows are folds of its
events), so the events are what a damaged database must give back. They are
copied, with their sequence numbers, times, idempotency keys and bodies, into a
fresh database built beside the damaged one; then the damaged one is moved
aside (never changed: it is opened read-only) and the fresh one takes its
place. The projections, which the fresh database lacks, are then rebuilt from
the salvaged trace when the store opens, as after any change of a fold.

Events are read twice over. First through SQLite, by ranges of sequence
numbers, halving a range that meets a damaged page down to single numbers: this
sees the WAL too. Then, for the numbers still unread, from the file's pages
directly (``pages``), which finds rows whose b-tree path is damaged. A row
counts only if its body decodes and its kind, turn and key agree with it.

A crash while salvaging leaves the damaged database where it was, so the next
start salvages again; a salvage that fails (a full disk) leaves it moved aside
and the daemon on an empty database, as before salvage existed.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

from errord.errors import StoreError
from errord.state.store import pages
from errord.state.store.connection import connect, move_database, remove_database, set_aside
from errord.state.store.rows import event_of, event_row
from errord.state.store.schema import migrate

CHUNK: Final = 1000
"""Sequence numbers read by one query while no damage is met."""
_COLUMNS: Final = "sequence, kind, turn_id, dedup_key, recorded_at, body"
_RANGE: Final = f"SELECT {_COLUMNS} FROM events WHERE sequence BETWEEN ? AND ?"
_INSERT: Final = f"INSERT OR IGNORE INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
_HIGHEST: Final = (
    "SELECT max(sequence) FROM events",
    "SELECT max(sequence) FROM events INDEXED BY events_by_turn",
    "SELECT max(sequence) FROM state",
)
"""Places the highest sequence number is kept, each on its own pages."""
EventRow = tuple[int, str, str, str, str, bytes]


@dataclass(frozen=True)
class Salvage:
    """What became of a corrupt database found at start."""

    aside: Path
    """Where the damaged database was moved, unchanged."""
    saved: int = 0
    """Trace events copied into the database errord now serves."""
    lost: int = 0
    """Sequence numbers, up to the highest any sound page records, whose events could
    not be read (a number no event took, as a failed write leaves, counts only on a
    damaged page; events after the highest recorded cannot be counted)."""
    failure: str = ""
    """Why nothing could be saved; empty when the salvage ran."""

    def __str__(self) -> str:
        moved = f"the damaged database was moved aside to {self.aside}"
        if self.failure:
            return f"no trace event saved ({self.failure}); {moved}"
        return f"{self.saved} trace events saved, {self.lost} lost; {moved}"


async def salvage(path: Path, now: datetime) -> Salvage:
    """Replace the corrupt database at ``path`` by one holding its readable events; the
    damaged file is moved aside, named with ``now``."""
    fresh = path.with_name(path.name + ".salvage")
    try:
        remove_database(fresh)  # a salvage a crash cut short
        await _create(fresh)
        saved, lost = await asyncio.to_thread(copy_events, path, fresh)
    except (StoreError, sqlite3.Error, OSError) as exc:
        _discard(fresh)
        return Salvage(set_aside(path, now), failure=f"the salvage failed: {exc}")
    aside = set_aside(path, now)
    move_database(fresh, path)
    return Salvage(aside, saved, lost)


async def _create(path: Path) -> None:
    db = await connect(path)
    try:
        await migrate(db, path)
    finally:
        await db.close()


def _discard(path: Path) -> None:
    with suppress(OSError):  # a leftover is removed by the next salvage
        remove_database(path)


def copy_events(source: Path, target: Path) -> tuple[int, int]:
    """Copy the readable events of the database ``source`` into ``target``, in one
    transaction; how many were saved, and how many lost. Raises StoreError when no
    part of ``source`` reads as a trace."""
    uri = f"{source.absolute().as_uri()}?mode=ro"
    with (
        closing(sqlite3.connect(uri, uri=True)) as damaged,
        closing(sqlite3.connect(target, isolation_level=None)) as fresh,
    ):
        fresh.execute("BEGIN IMMEDIATE")
        highest, unreadable = _highest_sequence(damaged)
        unread = _read_through_sqlite(damaged, 1, highest, fresh)
        found = _read_pages(source, fresh, lambda number: number in unread or number > highest)
        beyond = max(found, default=0)  # above the highest recorded where that was damaged
        unread |= _read_through_sqlite(damaged, highest + 1, beyond, fresh)
        if unreadable is not None and not found:
            raise StoreError(f"no trace event could be read: {unreadable}")
        fresh.execute("COMMIT")
        [(saved,)] = fresh.execute("SELECT count(*) FROM events")
    return saved, len(unread - found)


def _highest_sequence(damaged: sqlite3.Connection) -> tuple[int, sqlite3.Error | None]:
    """The highest sequence number the readable places record (0 when none does), and
    an error when no place could be read."""
    highest, error, read = 0, None, False
    for query in _HIGHEST:
        try:
            [(found,)] = damaged.execute(query).fetchall()
        except sqlite3.DatabaseError as exc:
            error = exc
            continue
        highest, read = max(highest, found or 0), True
    return highest, None if read else error


def _read_through_sqlite(
    damaged: sqlite3.Connection, lowest: int, highest: int, fresh: sqlite3.Connection
) -> set[int]:
    """Copy the sound events numbered ``lowest`` to ``highest``; the numbers not read."""
    unread: set[int] = set()
    for low in range(lowest, highest + 1, CHUNK):
        ranges = [(low, min(low + CHUNK - 1, highest))]
        while ranges:
            first, last = ranges.pop()
            try:
                rows = damaged.execute(_RANGE, (first, last)).fetchall()
            except sqlite3.DatabaseError:
                if first == last:
                    unread.add(first)
                else:
                    middle = (first + last) // 2
                    ranges += [(middle + 1, last), (first, middle)]
                continue
            sound = [event for row in rows if (event := _event_row(row[0], row[1:]))]
            unread.update({row[0] for row in rows} - {event[0] for event in sound})
            fresh.executemany(_INSERT, sound)
    return unread


def _read_pages(source: Path, fresh: sqlite3.Connection, wanted: Callable[[int], bool]) -> set[int]:
    """Copy the sound events of wanted numbers found in the file's pages; their numbers."""
    found: dict[int, EventRow] = {}
    for rowid, values in pages.table_rows(source, wanted):
        if len(values) == 6 and values[0] is None and (event := _event_row(rowid, values[1:])):
            found[rowid] = event
    fresh.executemany(_INSERT, found.values())
    return set(found)


def _event_row(sequence: int, values: Sequence[pages.Value]) -> EventRow | None:
    """The trace event's row, if its body decodes and its kind, turn and key are the
    body's; None otherwise."""
    kind, turn_id, key, recorded_at, body = values
    if not (
        isinstance(kind, str)
        and isinstance(turn_id, str)
        and isinstance(key, str)
        and isinstance(recorded_at, str)
        and isinstance(body, bytes)
    ):
        return None
    try:
        event = event_of((sequence, recorded_at, body))
    except StoreError:
        return None
    if event_row(event)[1:4] != (kind, turn_id, key):
        return None
    return sequence, kind, turn_id, key, recorded_at, body
