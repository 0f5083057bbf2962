"""Loading the projections from their state rows: at open, or after it in the background.

At open (``load_now``), a projection holds its most recently changed rows, up to its
capacity, and the keys of the others go into its filter of dropped keys, as stored:
no key of those is decoded. When every row fits, they are read in the table's own
order (one pass over the rows, without an index lookup each) and put in order of
recency in memory.

After open (``load_in_background``), for a projection whose readers read only the keys they
hold through errord.state.holding: it is ``loading`` meanwhile, so every key it does not
hold is read back before a decision reads it. The rows are read newest first, a chunk
at a time under the store's lock, from where the last chunk ended: a row changed since
open has a newer sequence and is never read (memory holds it, or dropped it into the
filter), so every row read is as it was at open and, unless memory holds its key
(read back, the same state), goes in as older than every key held.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import aiosqlite

from errord.errors import StoreError
from errord.state import codec
from errord.state.projection import Projection

LOG = logging.getLogger("errord")

_ALL: Final = "SELECT key, sequence, body FROM state WHERE projection = ? LIMIT ?"
"""Up to ``?`` rows, in the table's order (by key)."""
_OLDER_KEYS: Final = (
    "SELECT key FROM state WHERE projection = ? ORDER BY sequence DESC LIMIT -1 OFFSET ?"
)
"""The keys of the rows beyond the ``capacity`` most recently changed."""
_RECENT: Final = (
    "SELECT key, sequence, body FROM state WHERE projection = ? ORDER BY sequence DESC LIMIT ?"
)
_STATES_BEFORE: Final = (
    "SELECT key, sequence, body FROM state WHERE projection = ? AND (sequence, key) < (?, ?) "
    "ORDER BY sequence DESC, key DESC LIMIT ?"
)
"""The next rows, newest first, after the row last read (by the index on recency)."""
_KEYS_BEFORE: Final = (
    "SELECT key, sequence FROM state WHERE projection = ? AND (sequence, key) < (?, ?) "
    "ORDER BY sequence DESC, key DESC LIMIT ?"
)
"""As _STATES_BEFORE, the keys only: read from the index alone."""
_NEWEST: Final = (2**63 - 1, "")
"""Before every row, for the first chunk."""

STATES_PER_CHUNK: Final = 512
"""States a background chunk reads, decodes and holds: the event loop's longest pause."""
KEYS_PER_CHUNK: Final = 8_192
"""Keys a background chunk reads into the filter, beyond capacity."""


async def load_now(db: aiosqlite.Connection, projection: Projection[Any, Any]) -> None:
    """Hold the most recently changed state rows, up to the projection's capacity; the
    keys of the others go into its filter, as stored."""
    limit = projection.capacity + 1  # one more tells whether they all fit
    rows = list(await db.execute_fetchall(_ALL, (projection.name, limit)))
    complete = len(rows) < limit
    if complete:
        rows.sort(key=_sequence)
        dropped: list[str] = []
    else:
        rows = list(await db.execute_fetchall(_RECENT, (projection.name, projection.capacity)))
        rows.reverse()
        older = await db.execute_fetchall(_OLDER_KEYS, (projection.name, projection.capacity))
        dropped = [key for (key,) in older]
    projection.load(_decoded(projection, rows), complete=complete, dropped=dropped)
    LOG.debug(
        "loaded the %s projection: %d states held, %d only in the database",
        projection.name,
        len(rows),
        len(dropped),
    )


async def load_in_background(
    db: aiosqlite.Connection, lock: asyncio.Lock, projections: Sequence[Projection[Any, Any]]
) -> None:
    """Load ``projections``, each ``loading`` already, a chunk at a time; each ends
    ``loading`` once read whole. A row that cannot be read is logged and leaves its
    projection ``loading``: its keys are then read back when needed, and fail then."""
    for projection in projections:
        started = time.perf_counter()
        try:
            held, dropped = await _load_in_chunks(db, lock, projection)
        except StoreError as error:
            LOG.error("%s; its states are read from the database when needed", error)
            continue
        projection.end_loading()
        LOG.debug(
            "loaded the %s projection in the background in %.2f s: %d states read, "
            "%d more keys only in the database",
            projection.name,
            time.perf_counter() - started,
            held,
            dropped,
        )


async def _load_in_chunks(
    db: aiosqlite.Connection, lock: asyncio.Lock, projection: Projection[Any, Any]
) -> tuple[int, int]:
    """Read the projection's rows newest first into it; how many states, and how many
    keys beyond capacity."""
    held = dropped = 0
    sequence, key = _NEWEST
    while True:
        room = projection.room
        sql, limit = (
            (_STATES_BEFORE, min(room, STATES_PER_CHUNK))
            if room
            else (_KEYS_BEFORE, KEYS_PER_CHUNK)
        )
        async with lock:
            try:
                rows = list(await db.execute_fetchall(sql, (projection.name, sequence, key, limit)))
            except Exception as error:  # sqlite3.Error; aiosqlite re-raises it as it came
                raise StoreError(f"cannot read the {projection.name} states: {error}") from error
        if not rows:
            return held, dropped
        key, sequence = rows[-1][0], rows[-1][1]
        if room:
            projection.hold_older(_decoded(projection, rows))
            held += len(rows)
        else:
            projection.drop_older(row[0] for row in rows)
            dropped += len(rows)


def _decoded(projection: Projection[Any, Any], rows: Sequence[Any]) -> list[tuple[Any, Any]]:
    """The (key, state) of each ``(key, sequence, body)`` row."""
    decode_key: Callable[[str], Any] = codec.decoder(projection.fold.key_type)
    decode_state: Callable[[bytes], Any] = codec.decoder(projection.fold.state_type)
    try:
        return [(decode_key(key), decode_state(body)) for key, _, body in rows]
    except codec.DecodeErrors as exc:
        raise StoreError(f"a {projection.name} state row cannot be read: {exc}") from exc


def _sequence(row: Any) -> int:
    sequence: int = row[1]
    return sequence
