"""What reconciliation had to repair, per tool: the response-validation figures.

When an executor reconciles a turn's results (ReconcileResults), each call's result is
its own (kept), or errord synthesized one because the executor held none; a second result
for a call is dropped. A result synthesized or dropped means the executor's response did
not match the model's calls: the tool's response-validation alert is raised while such
repairs, per call reconciled, pass the failure-rate threshold (errord.state.health).

Reconciliation records nothing in the trace (it only reads it), so these figures are
counted in memory since the daemon started, per minute for the alert window and in total
for the Prometheus counters. A result for a call the model never made names no tool: it
is left out of these per-tool figures. Tools are counted by name (reconciliation knows no
scope), and at most ``MAX_TOOLS`` of them, the rest dropped: the request names the tools.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime

from errord.decide.texts.tool_results import DropReason, Origin, Reconciliation

MAX_TOOLS = 10_000
"""Tools whose figures are kept; a reconciliation naming more tools counts only those known."""
MINUTES = 60
"""Minutes of figures kept per tool, for the alert window (at most an hour)."""


@dataclass(frozen=True, slots=True)
class ResultCounts:
    """A tool's calls reconciled, and of them, the results errord had to repair."""

    reconciled: int = 0
    synthesized: int = 0
    dropped: int = 0

    @property
    def repaired(self) -> int:
        return self.synthesized + self.dropped

    @property
    def repair_rate(self) -> float:
        """Repairs per call reconciled; 0 without any."""
        return self.repaired / self.reconciled if self.reconciled else 0.0

    def plus(self, other: ResultCounts) -> ResultCounts:
        return ResultCounts(
            self.reconciled + other.reconciled,
            self.synthesized + other.synthesized,
            self.dropped + other.dropped,
        )


NO_RESULTS = ResultCounts()


class ResultChecks:
    """Counts, per tool, the calls reconciliations answered and what they repaired."""

    def __init__(self) -> None:
        self._totals: dict[str, ResultCounts] = {}
        self._minutes: dict[str, deque[tuple[int, ResultCounts]]] = {}

    def count(self, reconciliation: Reconciliation, now: datetime) -> None:
        """Count what ``reconciliation``, made at ``now``, kept, synthesized and dropped."""
        found: dict[str, ResultCounts] = {}
        tool_of = {}
        for result in reconciliation.results:
            tool_of[result.call_id] = result.tool
            synthesized = int(result.origin is Origin.SYNTHESIZED)
            found[result.tool] = found.get(result.tool, ResultCounts()).plus(
                ResultCounts(1, synthesized, 0)
            )
        for dropped in reconciliation.dropped:
            tool = tool_of.get(dropped.call_id)
            if dropped.reason is DropReason.DUPLICATE and tool is not None:
                found[tool] = found[tool].plus(ResultCounts(0, 0, 1))
        minute = int(now.timestamp() // 60)
        for tool, counts in found.items():
            if tool not in self._totals and len(self._totals) >= MAX_TOOLS:
                continue
            self._totals[tool] = self._totals.get(tool, ResultCounts()).plus(counts)
            minutes = self._minutes.setdefault(tool, deque(maxlen=MINUTES))
            if minutes and minutes[-1][0] == minute:
                minutes[-1] = (minute, minutes[-1][1].plus(counts))
            else:
                minutes.append((minute, counts))

    def total(self, tool: str) -> ResultCounts:
        """``tool``'s figures since the daemon started."""
        return self._totals.get(tool, ResultCounts())

    def since(self, tool: str, start: datetime) -> ResultCounts:
        """``tool``'s figures of the minutes from the one holding ``start`` on."""
        first = int(start.timestamp() // 60)
        summed = ResultCounts()
        for minute, counts in self._minutes.get(tool, ()):
            if minute >= first:
                summed = summed.plus(counts)
        return summed
