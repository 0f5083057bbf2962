"""The trace, read from a read-only snapshot of the database.

The daemon may be running and writing: the connection is read-only (``mode=ro``) and
reads in one transaction, which in WAL mode sees the database as it was when the
transaction began, whatever is committed after.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from errord.decide.model.events import TraceEvent
from errord.errors import StoreError
from errord.state.store.rows import event_of

PAGE = 10_000
"""Rows read from SQLite at a time."""


class TraceSnapshot:
    """The trace as it was when the snapshot was taken."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self._path = path
        self.total = self._count()
        """How many events the snapshot holds."""

    def events(self) -> Iterator[TraceEvent]:
        """Every event, in trace order."""
        try:
            cursor = self._db.execute(
                "SELECT sequence, recorded_at, body FROM events ORDER BY sequence"
            )
            while rows := cursor.fetchmany(PAGE):
                for row in rows:
                    yield event_of(row)
        except sqlite3.Error as exc:
            raise StoreError(f"{self._path}: cannot read the trace: {exc}") from exc

    def _count(self) -> int:
        try:
            (count,) = self._db.execute("SELECT COUNT(*) FROM events").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self._path}: cannot read the trace: {exc}") from exc
        total: int = count
        return total


@contextmanager
def trace_snapshot(path: Path) -> Iterator[TraceSnapshot]:
    """A read-only snapshot of the trace database at ``path``.

    Raises StoreError naming ``path`` when it cannot be opened or is not errord's.
    """
    if not path.is_file():
        raise StoreError(f"{path}: no trace database there")
    try:
        db = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro",
            uri=True,
            isolation_level=None,
            check_same_thread=False,  # opened by the caller, read in a worker thread
        )
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the trace database: {exc}") from exc
    try:
        db.execute("BEGIN")  # one read transaction: one snapshot for the count and the events
        yield TraceSnapshot(db, path)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot read the trace database: {exc}") from exc
    finally:
        db.close()
