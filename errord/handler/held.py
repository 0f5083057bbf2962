"""The state a report reads or changes, held in memory while it is decided and answered.

``ReportsHeld.reports`` names every state of a report: its call and turn, its tool's
statistics, rate-limit window and breaker, the breakers its decision reads (of the
tool's alternatives), and the episodic-memory keys it may change (of the episode its
call awaits, and of its error). Entering it holds them all (errord.state.holding): at
once, without awaiting, while memory holds every one, as it does in the steady state;
else the missing ones are read back first, and everything held stays pinned until the
block ends. A report is decided, submitted and answered inside the block.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TypeAlias

from errord.decide.engine.views import Reads
from errord.decide.memory import MemoryKey
from errord.decide.model import FailureReport, OutcomeReport
from errord.state.holding import NOTHING_HELD, Holder, Key
from errord.state.projections import Projections

Held: TypeAlias = tuple[FailureReport | OutcomeReport, Reads | None]
"""A report, and what deciding on it reads (a failure's) or None (an outcome's)."""


class ReportsHeld:
    """Holds the states of reports in memory while they are decided."""

    def __init__(self, holder: Holder, state: Projections) -> None:
        self.holder = holder
        self._state = state

    def reports(self, *reports: Held) -> AbstractAsyncContextManager[None]:
        """An async context that holds every state ``reports`` read or change."""
        keys = self._state_keys(reports)
        held = self.holder.holding(keys)
        if held is NOTHING_HELD:
            return self._memory(reports, keys)
        return self._in_turn(held, reports, keys)

    def turn(self, turn_id: str) -> AbstractAsyncContextManager[None]:
        """An async context that holds the state of ``turn_id``."""
        return self.holder.holding(((self._state.turns, turn_id),))

    @asynccontextmanager
    async def _in_turn(
        self, held: AbstractAsyncContextManager[None], reports: Sequence[Held], keys: list[Key]
    ) -> AsyncIterator[None]:
        """The states read back first, then memory's: which episode a report closes is
        known once its call is held."""
        async with held, self._memory(reports, keys):
            yield

    def _state_keys(self, reports: Sequence[Held]) -> list[Key]:
        state = self._state
        keys: list[Key] = []
        for report, reads in reports:
            keys += [
                (state.calls, report.key.call),
                (state.turns, report.turn_id),
                (state.tool_stats, report.tool_key),
                (state.windows, report.tool_key),
                *(
                    (state.breakers, key)
                    for key in (reads.breakers if reads else (report.tool_key,))
                ),
            ]
        return keys

    def _memory(
        self, reports: Sequence[Held], keys: list[Key]
    ) -> AbstractAsyncContextManager[None]:
        """Hold the episodic-memory keys the reports may change, their calls held: of the
        episode each may close, and (a failure) of the error its decision reads. Costs
        nothing while memory holds every key. When one must be read back, the states of
        ``keys`` are pinned again with it: that await must not let a commit drop a state
        found in memory and not pinned."""
        memory = self._state.memory
        if memory.complete:
            return NOTHING_HELD
        memory_keys: list[Key] = []
        for report, reads in reports:
            call = self._state.calls.view(report.key.call)
            episode = call.awaited_by(report.tool, report.attempt) if call is not None else None
            if episode is not None:
                memory_keys.append((memory, MemoryKey(episode.tool_key, episode.signature)))
            if reads is not None:
                memory_keys.append((memory, reads.memory_key))
        if not any(memory.missing(key) for _, key in memory_keys):
            return NOTHING_HELD
        return self.holder.holding([*keys, *memory_keys])
