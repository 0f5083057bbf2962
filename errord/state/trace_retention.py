"""Trace retention: old turns leave the database, and it stays within a size.

Two bounds, each a setting:

- Age (``trace_retention_seconds``, 7 days): a turn whose last event is older is
  removed, with the daemon's own events (breaker changes, reloads, memory forgetting)
  older than that; a pass every ``check_every``.
- Size (``trace_retention_bytes``, 1 GiB): when the pages holding rows pass 90 % of it
  (measured every second), the oldest turns are removed until they are under 80 %,
  however young: an ended turn at once (it takes no more failures), another once its
  deadline passed and its last event is MIN_AGE old.

A turn is removed whole: its events, and its turn and call state rows, in one short
transaction (errord.state.store.trimming), at most CHUNK turns a transaction, PAUSE
apart, so that decisions never queue behind it for long. A turn still open (not ended
and before its deadline) is never removed, nor are the states that outlive turns:
breakers, tool statistics and episodic memory are state rows of their own, which a
restart loads as they are. (A projection whose fold an upgrade changes is rebuilt from
the events retention kept.) A report repeated after its turn was removed is decided
anew. The pages freed go back to the file system in a database created since errord
uses incremental auto-vacuum; in an older one SQLite reuses them before it grows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from errord.clock import Clock
from errord.state.projection import Projection
from errord.state.store import Store
from errord.state.store.trimming import OldEvent
from errord.state.turns import TurnState

log = logging.getLogger(__name__)

DAY = 86_400.0
CHUNK = 64
"""Turns removed by one transaction."""
PAUSE = 0.01
"""Seconds between two transactions of a pass."""
READ_AHEAD = 1_000
"""Events read at a time, oldest first, to find the turns to remove."""
MIN_AGE = 60.0
"""Seconds since its last event before the size bound may remove a turn that was not
ended: a turn is never removed under a report that is still arriving."""
HIGH_WATER, LOW_WATER = 0.9, 0.8
"""Of the size bound: past the first a pass removes turns, down to the second."""
SIZE_CHECK = 1.0
"""Seconds between two looks at the database's size."""
FREE_PAGES_AT_ONCE = 2_048
"""Free pages given back to the file system by one statement."""


@dataclass(frozen=True, slots=True)
class TraceBounds:
    max_age: float = 7 * DAY
    """Seconds after its last event that a turn is removed."""
    max_bytes: int = 1 << 30
    """Bytes the database's pages holding rows may take."""
    turn_deadline: float = 300.0
    """The deadline of a turn that recorded none (from before deadlines were recorded)."""

    @property
    def check_every(self) -> float:
        """Seconds between age passes: a small part of the age, at most five minutes."""
        return min(300.0, self.max_age / 24)


@dataclass
class Removed:
    """What retention removed since the daemon started."""

    turns: int = 0
    events: int = 0
    passes: int = 0
    used_bytes: int = 0
    """The pages holding rows, in bytes, at the last look."""
    file_bytes: int = 0
    """The database file's pages, in bytes, at the last look."""
    short: bool = False
    """True when the last size pass could not get under its bound: every turn left was
    open or younger than MIN_AGE."""


@dataclass
class _Pass:
    """One pass over the oldest events."""

    age_cutoff: datetime
    recent_cutoff: datetime
    """Turns whose last event is later are never removed."""
    over: bool
    """Removing for size: past the age cutoff too."""
    seen: set[str] = field(default_factory=set)
    chosen: list[str] = field(default_factory=list)
    daemon_through: int = 0
    """The daemon's events up to this sequence go."""


class TraceRetention:
    """Keeps the trace within its age and size bounds."""

    def __init__(
        self,
        store: Store,
        turns: Projection[str, TurnState],
        calls: Projection[Any, Any],
        bounds: TraceBounds,
        clock: Clock,
    ) -> None:
        self._store = store
        self._turns = turns
        self._calls = calls
        self.bounds = bounds
        self._clock = clock
        self.removed = Removed()
        self.pause = PAUSE

    async def run(self, stop: asyncio.Event) -> None:
        """Age passes every ``check_every`` and size checks every SIZE_CHECK seconds, until
        ``stop``; a pass that fails is logged and tried again at the next."""
        next_age_pass = self._clock.monotonic()
        while not stop.is_set():
            age_due = self._clock.monotonic() >= next_age_pass
            try:
                if age_due:
                    next_age_pass = self._clock.monotonic() + self.bounds.check_every
                    await self.remove_old()
                await self.keep_within_size()
            except Exception as error:  # a write failure: the store's health reports it
                log.warning("trace retention could not remove turns: %s", error)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SIZE_CHECK)

    async def remove_old(self) -> int:
        """Remove the turns older than ``max_age``; how many."""
        now = self._clock.now()
        cutoff = now - timedelta(seconds=self.bounds.max_age)
        removed = await self._pass(_Pass(cutoff, cutoff, over=False))
        if removed:
            log.info(
                "trace retention removed %d turns older than %g s", removed, self.bounds.max_age
            )
        return removed

    async def keep_within_size(self) -> int:
        """When the database is past 90 % of ``max_bytes``, remove the oldest turns until
        it is under 80 %; how many."""
        if not await self._over(HIGH_WATER):
            return 0
        now = self._clock.now()
        recent = now - timedelta(seconds=MIN_AGE)
        removed = await self._pass(_Pass(now, recent, over=True))
        await self._release_free_pages()
        was_short, self.removed.short = self.removed.short, await self._over(LOW_WATER)
        used, bound = self.removed.used_bytes, self.bounds.max_bytes
        if self.removed.short and not was_short:  # once, not at every look
            log.warning(
                "trace retention removed %d turns, and the database still takes %d bytes of "
                "its %d (trace_retention_bytes): the turns left are open or under %g s old",
                removed,
                used,
                bound,
                MIN_AGE,
            )
        elif removed:
            log.info(
                "trace retention removed %d turns: the database takes %d bytes of its %d",
                removed,
                used,
                bound,
            )
        return removed

    async def _pass(self, found: _Pass) -> int:
        removed = 0
        after = 0
        while events := await self._store.oldest_events(after, READ_AHEAD):
            for event in events:
                after = event.sequence
                if not found.over and event.at >= found.age_cutoff:
                    return removed + await self._remove(found)  # the rest are younger
                await self._consider(event, found)
                if len(found.chosen) == CHUNK:
                    removed += await self._remove(found)
                    if found.over and not await self._over(LOW_WATER):
                        return removed
        return removed + await self._remove(found)

    async def _consider(self, event: OldEvent, found: _Pass) -> None:
        """Choose the turn of ``event`` when it may go; note the daemon's events that may."""
        turn_id = event.turn_id
        if not turn_id:
            if event.at < found.recent_cutoff:
                found.daemon_through = event.sequence
            return
        if turn_id in found.seen:
            return
        found.seen.add(turn_id)
        if await self._may_go(turn_id, found):
            found.chosen.append(turn_id)

    async def _may_go(self, turn_id: str, found: _Pass) -> bool:
        """Whether the turn is done (ended, or past its deadline) and its last event older
        than the pass allows: the age cutoff; for room, an ended turn at once (it takes no
        more failures), another MIN_AGE after its last event."""
        if self._turns.is_reserved(turn_id):
            return False  # a report of it is being recorded
        state = self._turns.committed(turn_id) or await self._store.state(self._turns, turn_id)
        ended = state is not None and state.ended_at is not None
        if state is not None and not ended:
            deadline = state.deadline or state.began_at + timedelta(
                seconds=self.bounds.turn_deadline
            )
            if deadline > self._clock.now():
                return False  # still open
        if found.over and ended:
            return True
        last = await self._store.last_event_at(turn_id)
        limit = found.recent_cutoff if found.over else found.age_cutoff
        return last is not None and last < limit

    async def _remove(self, found: _Pass) -> int:
        chosen, found.chosen = found.chosen, []
        if found.daemon_through:
            self.removed.events += await self._store.remove_daemon_events(found.daemon_through)
            found.daemon_through = 0
        if not chosen:
            return 0
        events, calls = await self._store.remove_turns(chosen, self._turns, self._calls)
        self._turns.forget(chosen)
        self._calls.forget(calls)
        self.removed.turns += len(chosen)
        self.removed.events += events
        self.removed.passes += 1
        await asyncio.sleep(self.pause)
        return len(chosen)

    async def _over(self, share: float) -> bool:
        pages = await self._store.pages()
        self.removed.used_bytes = pages.used_bytes
        self.removed.file_bytes = pages.file_bytes
        return pages.used_bytes > share * self.bounds.max_bytes

    async def _release_free_pages(self) -> None:
        pages = await self._store.pages()
        for _ in range(0, pages.free, FREE_PAGES_AT_ONCE):
            await self._store.release_free_pages(FREE_PAGES_AT_ONCE)
            await asyncio.sleep(self.pause)
        self.removed.file_bytes = (await self._store.pages()).file_bytes
