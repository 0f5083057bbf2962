"""Episodic memory's bounds: at most ``max_errors`` errors, none unseen for ``max_age``.

Forgetting is an event of the trace, MemoryForgotten, folded like any other (it ends the
errors' states), so a rebuild from the trace forgets exactly what the daemon forgot.

- Room: a unit of work whose episodes bring errors memory does not hold, when memory is
  full, carries in the same unit a MemoryForgotten of as many least recently seen errors.
  Memory therefore never holds more than ``max_errors``, and the cost on a decision is
  one dictionary walk of a few steps, only while memory is full.
- Age: a background pass forgets the errors not seen for ``max_age``, least recently
  seen first, in units of at most FORGET_CHUNK errors, each committed by the group-commit
  writer among the decisions, FORGET_PAUSE apart: a large pass is many small batches,
  never one long one (on a history of 1,000,000 episodes, 256 errors a unit with no pause
  tripled the decisions' p99; 32 with the pause leave it as it was). The errors are
  picked from the projection in memory, without reading the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from errord.clock import Clock
from errord.decide.memory import MemoryKey, MemoryStats
from errord.decide.model.events import EventDetail, ForgetReason, MemoryForgotten
from errord.state.memory import episode_keys
from errord.state.projection import Projection
from errord.state.store import Unit

log = logging.getLogger(__name__)

FORGET_CHUNK = 32
"""Errors forgotten by one unit of work of the age pass."""
FORGET_PAUSE = 0.02
"""Seconds the age pass waits between its units: deleting rows scattered through a large
database is slow, and decisions must not queue behind it."""


@dataclass(frozen=True, slots=True)
class MemoryBounds:
    max_errors: int = 100_000
    """Errors (a tool and a signature) memory holds at most."""
    max_age: float = 86_400.0
    """Seconds after which an error memory has not seen is forgotten."""

    @property
    def check_every(self) -> float:
        """Seconds between age passes: a small part of the age, at most five minutes."""
        return min(300.0, self.max_age / 24)


class MemoryRetention:
    """Keeps episodic memory within its bounds."""

    def __init__(
        self,
        memory: Projection[MemoryKey, MemoryStats],
        bounds: MemoryBounds,
        submit: Callable[[Iterable[EventDetail]], Unit],
        clock: Clock,
    ) -> None:
        self._memory = memory
        self.bounds = bounds
        self._submit = submit
        self._clock = clock
        self.forgotten = 0
        """Errors forgotten since start, for either reason."""
        self.pause = FORGET_PAUSE
        """Seconds between two units of the age pass."""

    def with_room(self, events: tuple[EventDetail, ...]) -> tuple[EventDetail, ...]:
        """``events``, followed by a MemoryForgotten of the least recently seen errors when
        the errors they bring that memory does not hold would take it past its bound."""
        memory = self._memory
        new = {key for event in events for key in episode_keys(event) if memory.view(key) is None}
        if not new:
            return events
        # Committed keys and keys with reservations bound the count from above, at once.
        if len(memory) + memory.reserved + len(new) <= self.bounds.max_errors:
            return events
        excess = memory.held_with_reserved() + len(new) - self.bounds.max_errors
        if excess <= 0:
            return events
        oldest = []
        # The least recently changed first; while many units bring new errors at once,
        # the errors other units in flight bring are next.
        candidates = itertools.chain(
            (key for key, _ in memory.least_recent()), memory.reserved_keys()
        )
        for key in candidates:
            if key not in new:
                oldest.append(key)
                if len(oldest) == excess:
                    break
        self.forgotten += len(oldest)
        return (*events, _forgetting(ForgetReason.CAPACITY, oldest))

    async def forget_old(self) -> int:
        """Forget every error not seen for ``max_age``, FORGET_CHUNK at a time; how many."""
        total = 0
        while chunk := self._unseen_since(
            self._clock.now() - timedelta(seconds=self.bounds.max_age)
        ):
            unit = self._submit([_forgetting(ForgetReason.AGE, chunk)])
            await unit.wait()
            total += len(chunk)
            self.forgotten += len(chunk)
            await asyncio.sleep(self.pause)
        return total

    async def run(self, stop: asyncio.Event) -> None:
        """Age passes every ``check_every`` seconds until ``stop`` is set; a pass that fails
        is logged and tried again at the next."""
        while not stop.is_set():
            try:
                forgotten = await self.forget_old()
            except Exception as error:  # a write failure: the health of the store reports it
                log.warning("episodic memory could not forget old errors: %s", error)
            else:
                if forgotten:
                    log.info(
                        "episodic memory forgot %d errors not seen for %g s",
                        forgotten,
                        self.bounds.max_age,
                    )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.bounds.check_every)

    def _unseen_since(self, cutoff: datetime) -> list[MemoryKey]:
        chunk: list[MemoryKey] = []
        for key, stats in self._memory.least_recent():
            seen = stats.seen_at
            if seen is None or seen >= cutoff:
                break  # least recently changed first: the rest were seen later
            chunk.append(key)
            if len(chunk) == FORGET_CHUNK:
                break
        return chunk


def _forgetting(reason: ForgetReason, errors: Sequence[MemoryKey]) -> MemoryForgotten:
    return MemoryForgotten(event_id=uuid.uuid4().hex, reason=reason, errors=tuple(errors))
