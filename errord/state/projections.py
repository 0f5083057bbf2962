"""The projections decisions read, as one state model for the writer.

Calls, turns, breakers, rate-limit windows, tool statistics and episodic memory, each a
``Fold`` over the same trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from errord.decide.memory import MemoryKey, MemoryStats
from errord.decide.model import BreakerState, CallKey, RateWindow
from errord.decide.model.events import TraceEvent
from errord.limits import STATE_CAPACITY
from errord.state.breakers import BreakerFold
from errord.state.calls import CallFold, CallState
from errord.state.memory import MemoryFold
from errord.state.projection import Projection, Staged
from errord.state.rate_windows import RateWindowFold
from errord.state.result_checks import ResultChecks
from errord.state.store.rows import WriteRow, state_row
from errord.state.tool_stats import ToolStats, ToolStatsFold
from errord.state.turns import TurnFold, TurnState

DEFAULT_CAPACITY = STATE_CAPACITY
"""Keys each projection holds in memory; beyond it, the least recently changed are read
back from the database when needed."""


MEMORY_HEADROOM = 1_024
"""Errors memory's projection holds beyond its bound: those of the units in flight."""


@dataclass(frozen=True, slots=True)
class StagedBatch:
    """Every projection's staged states for one batch."""

    staged: tuple[Staged[Any, Any], ...]

    def rows(self, sequence: int) -> list[WriteRow]:
        return [
            state_row(part.projection.name, key, state, sequence)
            for part in self.staged
            for key, state in part.states.items()
        ]


class Projections:
    """Calls, turns, breakers, rate-limit windows, tool statistics and episodic memory,
    reserved, staged and committed together."""

    def __init__(
        self, capacity: int = DEFAULT_CAPACITY, memory_errors: int = 0, max_tools: int = 0
    ) -> None:
        """``memory_errors``: the most errors episodic memory may hold (its bound), which it
        then holds in memory whole, whatever ``capacity``; ``max_tools``: the most tools
        reports may create (errord.handler), whose breakers and statistics are then held in
        memory whole, whatever ``capacity``, so that ``tools_tracked`` counts every one."""
        tool_capacity = max(capacity, max_tools)
        self.calls: Projection[CallKey, CallState] = Projection(CallFold(), capacity)
        self.turns: Projection[str, TurnState] = Projection(TurnFold(), capacity)
        self.breakers: Projection[str, BreakerState] = Projection(BreakerFold(), tool_capacity)
        self.windows: Projection[str, RateWindow] = Projection(RateWindowFold(), tool_capacity)
        self.tool_stats: Projection[str, ToolStats] = Projection(ToolStatsFold(), tool_capacity)
        memory_capacity = (
            max(capacity, memory_errors + MEMORY_HEADROOM) if memory_errors else capacity
        )
        self.memory: Projection[MemoryKey, MemoryStats] = Projection(MemoryFold(), memory_capacity)
        self.results = ResultChecks()
        """What reconciliations repaired, per tool: counted in memory, not folded."""
        self.all: tuple[Projection[Any, Any], ...] = (
            self.calls,
            self.turns,
            self.breakers,
            self.windows,
            self.tool_stats,
            self.memory,
        )

    def has_tool(self, tool: str) -> bool:
        """True when a report of ``tool`` was recorded (or is being committed)."""
        return self.breakers.view(tool) is not None or self.tool_stats.view(tool) is not None

    def tools_tracked(self) -> int:
        """Tools with statistics as decisions see them, those being committed included: the
        tools reports made state for (a report's first failure or success makes its tool's
        statistics; a breaker changes only after a failure, or by an operator). One step,
        whatever the number of tools."""
        return len(self.tool_stats) + self.tool_stats.reserved_new

    def reserve(self, events: Sequence[TraceEvent]) -> None:
        for projection in self.all:
            projection.reserve(events)

    def release(self, events: Sequence[TraceEvent]) -> None:
        for projection in self.all:
            projection.release(events)

    def stage(self, events: Sequence[TraceEvent]) -> StagedBatch:
        return StagedBatch(tuple(projection.stage(events) for projection in self.all))

    def commit(self, staging: Any, events: Sequence[TraceEvent]) -> None:
        assert isinstance(staging, StagedBatch)
        for part in staging.staged:
            part.projection.commit(part.states, events)
