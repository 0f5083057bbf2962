"""The trace as the console reads it: through a read-only connection of its own.

The store's one connection and its lock belong to the writer: a page read there would
hold up group commits, and so decisions. The console reads through another connection,
opened read-only on the same file; in WAL mode each read sees the last committed batch,
and neither blocks the writer nor waits for it. Its methods block: the console calls
them from its one worker thread, never from the event loop.

Every read follows an index, so that a page costs the same at a thousand recorded
decisions as at millions:

- the recent turns, by their last change: the state rows of the ``turn`` projection by
  ``state_by_recency`` (projection, sequence), paged by the key (sequence, turn);
- a turn and its events: the state row by its primary key, the events by
  ``events_by_turn`` (turn_id, sequence), paged by sequence;
- the sequence recorded at a time: a binary search of the primary key, a few dozen
  lookups (sequences are given in commit order, and so are times, but for a clock
  that went back).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from msgspec import Struct

from errord.decide.model.events import TraceEvent
from errord.errors import StoreError
from errord.state import codec
from errord.state.store.rows import event_of, state_key
from errord.state.turns import TurnFold, TurnState

TURN: Final = TurnFold.name
_TURNS: Final = (
    "SELECT key, sequence, body FROM state WHERE projection = ? AND sequence >= ? "
    "AND sequence < ? AND (sequence, key) < (?, ?) ORDER BY sequence DESC, key DESC LIMIT ?"
)
_TURN: Final = "SELECT key, sequence, body FROM state WHERE projection = ? AND key = ?"
_TURN_EVENTS: Final = (
    "SELECT sequence, recorded_at, body FROM events WHERE turn_id = ? AND sequence > ? "
    "ORDER BY sequence LIMIT ?"
)
_EVENT: Final = "SELECT sequence, recorded_at, body FROM events WHERE sequence = ?"
_FIRST_REPORT: Final = (
    "SELECT body FROM events WHERE turn_id = ? AND kind IN ('failure', 'outcome') "
    "ORDER BY sequence LIMIT 1"
)
_AT_OR_BEFORE: Final = (
    "SELECT recorded_at FROM events WHERE sequence <= ? ORDER BY sequence DESC LIMIT 1"
)
_AT_OR_AFTER: Final = (
    "SELECT sequence, recorded_at FROM events WHERE sequence >= ? ORDER BY sequence LIMIT 1"
)
_LAST: Final = "SELECT COALESCE(MAX(sequence), 0) FROM events"
NEWEST: Final = (1 << 63) - 1
"""A sequence after every recorded one."""
CHUNK: Final = 200
"""Turn rows one query reads while a scan goes on."""

_turn_state = codec.decoder(TurnState)
_turn_id = codec.decoder(str)


class _Caller(Struct, gc=False):
    user_id: str = ""


class _Report(Struct, gc=False):
    """The part of a failure or an outcome body that names who the call was for."""

    report: _Caller


_report = codec.decoder(_Report)


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """A turn's state as committed, and the batch that last changed it."""

    turn_id: str
    sequence: int
    """The last sequence of the batch that last changed the turn."""
    state: TurnState

    @property
    def cursor(self) -> tuple[int, str]:
        """Where a page of turns after this one (older) begins."""
        return (self.sequence, self.turn_id)


class TraceReader:
    """A read-only connection to the trace database; for one thread at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            # check_same_thread off: opened on the loop, used in the console's thread only.
            self._db = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
            self._db.execute("PRAGMA query_only = ON")
        except sqlite3.Error as error:
            raise StoreError(f"{path}: cannot open the trace for reading: {error}") from error

    def close(self) -> None:
        self._db.close()

    def turns(
        self,
        *,
        before: tuple[int, str] | None = None,
        since: int = 0,
        until: int = NEWEST,
    ) -> Iterator[TurnRecord]:
        """The turns, the most recently changed first: those changed by a batch whose last
        sequence is from ``since`` up to, not including, ``until``, after the cursor
        ``before`` (a TurnRecord's). Lazy, a chunk of rows a query: stop when done."""
        # (NEWEST, "") comes after every row: no batch has that sequence.
        sequence, key = (NEWEST, "") if before is None else (before[0], state_key(before[1]))
        while True:
            # The cursor's sequence bounds the index range too: a page deep in the list
            # starts there, not at the newest row.
            below = min(until, sequence + 1)
            rows = self._rows(_TURNS, (TURN, since, below, sequence, key, CHUNK))
            for row in rows:
                yield self._turn_record(row)
            if len(rows) < CHUNK:
                return
            sequence, key = rows[-1][1], rows[-1][0]

    def turns_since(self, sequence: int, limit: int) -> list[TurnRecord]:
        """At most ``limit`` turns changed after ``sequence``, the most recent first."""
        rows = self._rows(_TURNS, (TURN, sequence + 1, NEWEST, NEWEST, "", limit))
        return [self._turn_record(row) for row in rows]

    def turn(self, turn_id: str) -> TurnRecord | None:
        """The turn's committed state, or None for a turn the trace does not hold."""
        rows = self._rows(_TURN, (TURN, state_key(turn_id)))
        return self._turn_record(rows[0]) if rows else None

    def turn_events(self, turn_id: str, *, after: int = 0, limit: int = 500) -> list[TraceEvent]:
        """At most ``limit`` events of the turn after sequence ``after``, in order."""
        return [event_of(row) for row in self._rows(_TURN_EVENTS, (turn_id, after, limit))]

    def event(self, sequence: int) -> TraceEvent | None:
        rows = self._rows(_EVENT, (sequence,))
        return event_of(rows[0]) if rows else None

    def user_of(self, turn_id: str) -> str:
        """The user id the turn's first report named ('' for none), as recorded: hashed
        when the daemon hashes them."""
        rows = self._rows(_FIRST_REPORT, (turn_id,))
        if not rows:
            return ""
        try:
            return _report(rows[0][0]).report.user_id
        except codec.DecodeErrors:
            return ""

    def time_of(self, sequence: int) -> datetime | None:
        """When the event ``sequence`` (or the last one before it) was recorded."""
        rows = self._rows(_AT_OR_BEFORE, (sequence,))
        return codec.time_from_text(rows[0][0]) if rows else None

    def sequence_at(self, moment: datetime) -> int:
        """The first sequence recorded at ``moment`` or later; one past the last when none
        is. A binary search of the primary key."""
        low, high = 0, self.last_sequence() + 1
        while low < high:
            middle = (low + high) // 2
            rows = self._rows(_AT_OR_AFTER, (middle,))
            if rows and codec.time_from_text(rows[0][1]) < moment:
                low = rows[0][0] + 1  # every sequence up to that one is earlier
            else:
                high = middle
        return low

    def last_sequence(self) -> int:
        return int(self._rows(_LAST, ())[0][0])

    def _turn_record(self, row: Any) -> TurnRecord:
        key, sequence, body = row
        try:
            return TurnRecord(_turn_id(key), sequence, _turn_state(body))
        except codec.DecodeErrors as error:
            raise StoreError(f"the state of turn {key} cannot be read: {error}") from error

    def _rows(self, sql: str, parameters: tuple[object, ...]) -> list[Any]:
        try:
            return self._db.execute(sql, parameters).fetchall()
        except sqlite3.Error as error:
            raise StoreError(f"{self.path}: cannot read the trace: {error}") from error
