"""The database schema: versioned migrations, and projections rebuilt from the trace.

``user_version`` counts the migrations applied. Each runs in one transaction
with the version bump, so a database is at one version or the next, never
between. The state rows of a projection are derived data: when the code's
``Fold.version`` differs from the one recorded in ``projections``, they are
rebuilt by folding every event of the trace.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import aiosqlite

from errord.decide.model import ReportKey
from errord.errors import StoreError
from errord.state import codec
from errord.state.projection import Projection
from errord.state.store.connection import pragma
from errord.state.store.rows import WRITE_COLUMNS, event_of, state_row

Migration = str | Callable[[aiosqlite.Connection], Awaitable[None]]

CREATE_TRACE_EVENTS: Final = """
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
"""
"""Version 1 (errord 0.1): every event is an attempt of a call."""


CREATE_EVENTS_AND_STATE: Final = """
    CREATE TABLE events (
        sequence    INTEGER PRIMARY KEY,
        kind        TEXT    NOT NULL,
        turn_id     TEXT    NOT NULL,  -- '' for an event of no turn
        dedup_key   TEXT    NOT NULL,  -- the kind's idempotency key, JSON
        recorded_at TEXT    NOT NULL,
        body        BLOB    NOT NULL,
        UNIQUE (kind, dedup_key)
    );
    CREATE INDEX events_by_turn ON events (turn_id, sequence);
    CREATE TABLE state (
        projection TEXT    NOT NULL,
        key        TEXT    NOT NULL,
        sequence   INTEGER NOT NULL,  -- the last batch that changed the row
        body       BLOB    NOT NULL,
        PRIMARY KEY (projection, key)
    ) WITHOUT ROWID;
    CREATE INDEX state_by_recency ON state (projection, sequence);
    CREATE TABLE projections (
        name    TEXT    PRIMARY KEY,
        version INTEGER NOT NULL
    ) WITHOUT ROWID;
    -- A batch of units of work is one INSERT into this view: its trigger routes each
    -- row to events (projection NULL) or to state. One statement is one transaction,
    -- all or nothing, so a batch costs one round trip to SQLite and one fsync.
    CREATE VIEW writes (sequence, kind, turn_id, key, recorded_at, body, projection) AS
        SELECT sequence, kind, turn_id, dedup_key, recorded_at, body, NULL FROM events WHERE 0;
    CREATE TRIGGER writes_route INSTEAD OF INSERT ON writes BEGIN
        INSERT INTO events (sequence, kind, turn_id, dedup_key, recorded_at, body)
            SELECT NEW.sequence, NEW.kind, NEW.turn_id, NEW.key, NEW.recorded_at, NEW.body
            WHERE NEW.projection IS NULL;
        INSERT OR REPLACE INTO state (projection, key, sequence, body)
            SELECT NEW.projection, NEW.key, NEW.sequence, NEW.body
            WHERE NEW.projection IS NOT NULL;
    END;
"""


async def events_of_several_kinds(db: aiosqlite.Connection) -> None:
    """Version 2: events of any kind, each with its own idempotency key, and state rows.

    Every version-1 row moves over with its sequence, time and body unchanged;
    its key becomes the JSON ``[turn_id, call_id, tool, attempt]``.
    """
    for statement in _statements(CREATE_EVENTS_AND_STATE):
        await db.execute(statement)
    rows = await db.execute_fetchall(
        "SELECT sequence, kind, turn_id, call_id, tool, attempt, recorded_at, body "
        "FROM trace_events ORDER BY sequence"
    )
    await db.executemany(
        "INSERT INTO events (sequence, kind, turn_id, dedup_key, recorded_at, body) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (
            (sequence, kind, turn, _report_key(turn, call, tool, attempt), recorded_at, body)
            for sequence, kind, turn, call, tool, attempt, recorded_at, body in rows
        ),
    )
    await db.execute("DROP TABLE trace_events")


STATE_ROWS_CAN_BE_DELETED: Final = """
    DROP TRIGGER writes_route;
    CREATE TRIGGER writes_route INSTEAD OF INSERT ON writes BEGIN
        INSERT INTO events (sequence, kind, turn_id, dedup_key, recorded_at, body)
            SELECT NEW.sequence, NEW.kind, NEW.turn_id, NEW.key, NEW.recorded_at, NEW.body
            WHERE NEW.projection IS NULL;
        INSERT OR REPLACE INTO state (projection, key, sequence, body)
            SELECT NEW.projection, NEW.key, NEW.sequence, NEW.body
            WHERE NEW.projection IS NOT NULL AND NEW.body IS NOT NULL;
        DELETE FROM state
            WHERE NEW.projection IS NOT NULL AND NEW.body IS NULL
            AND projection = NEW.projection AND key = NEW.key;
    END;
"""
"""Version 3: a state row with no body deletes the key's state (a fold ended it, as
episodic memory does when it forgets an error)."""


MIGRATIONS: Final[tuple[Migration, ...]] = (
    CREATE_TRACE_EVENTS,
    events_of_several_kinds,
    STATE_ROWS_CAN_BE_DELETED,
)
"""``MIGRATIONS[n - 1]`` brings a database to ``user_version`` n."""


async def migrate(db: aiosqlite.Connection, path: Path) -> None:
    version = await pragma(db, "user_version")
    if version > len(MIGRATIONS):
        raise StoreError(
            f"{path}: database schema version {version} is newer than this errord knows "
            f"({len(MIGRATIONS)}); upgrade errord or use another database file"
        )
    for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
        await _in_transaction(db, functools.partial(_run, db, migration, number))


async def rebuild_stale(
    db: aiosqlite.Connection, projections: Sequence[Projection[Any, Any]]
) -> None:
    """Rebuild the state rows of every projection whose fold changed since they were written."""
    rows = await db.execute_fetchall("SELECT name, version FROM projections")
    recorded: dict[str, int] = dict(rows)  # type: ignore[arg-type]  # (name, version) rows
    stale = [p for p in projections if recorded.get(p.name) != p.fold.version]
    if stale:
        await _in_transaction(db, functools.partial(_rebuild, db, stale))


async def fold_trace(
    db: aiosqlite.Connection, projections: Sequence[Projection[Any, Any]], page: int = 10_000
) -> list[dict[Any, Any]]:
    """The state of every key of each projection, folded from every event of the trace."""
    folded: list[dict[Any, Any]] = [{} for _ in projections]
    after = 0
    while rows := list(
        await db.execute_fetchall(
            "SELECT sequence, recorded_at, body FROM events WHERE sequence > ? "
            "ORDER BY sequence LIMIT ?",
            (after, page),
        )
    ):
        for row in rows:
            event = event_of(row)
            for projection, states in zip(projections, folded, strict=True):
                fold = projection.fold
                for key in fold.keys(event):
                    state = fold.apply(key, states.get(key), event)
                    if state is None:
                        states.pop(key, None)
                    else:
                        states[key] = state
        after = rows[-1][0]
    return folded


async def _rebuild(db: aiosqlite.Connection, stale: Sequence[Projection[Any, Any]]) -> None:
    [(last,)] = await db.execute_fetchall("SELECT COALESCE(MAX(sequence), 0) FROM events")
    for projection, states in zip(stale, await fold_trace(db, stale), strict=True):
        await db.execute("DELETE FROM state WHERE projection = ?", (projection.name,))
        await db.executemany(
            f"INSERT INTO writes {WRITE_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?)",
            (state_row(projection.name, key, state, last) for key, state in states.items()),
        )
        await db.execute(
            "INSERT OR REPLACE INTO projections (name, version) VALUES (?, ?)",
            (projection.name, projection.fold.version),
        )


async def _run(db: aiosqlite.Connection, migration: Migration, number: int) -> None:
    if isinstance(migration, str):
        for statement in _statements(migration):
            await db.execute(statement)
    else:
        await migration(db)
    await db.execute(f"PRAGMA user_version = {number}")


async def _in_transaction(db: aiosqlite.Connection, work: Callable[[], Awaitable[None]]) -> None:
    await db.execute("BEGIN IMMEDIATE")
    try:
        await work()
        await db.commit()
    except BaseException:
        if db.in_transaction:
            await db.rollback()
        raise


def _statements(script: str) -> Iterator[str]:
    """The complete SQL statements of ``script``, triggers' bodies kept whole."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending
            pending = ""


def _report_key(turn_id: str, call_id: str, tool: str, attempt: int) -> str:
    return codec.encode(ReportKey(turn_id, call_id, tool, attempt)).decode()
