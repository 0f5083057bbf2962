"""How long each call has spent retrying each tool, kept in memory, rebuilt from the trace.

The retry budget (``max_total_time``) counts the delays granted and the run time
of every retried attempt. The ledger answers from memory; after a restart or an
eviction it rebuilds a call's total from its recorded failures, one read.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from errord.model import Action, FailureEvent, FailureReport

FailureHistory = Callable[[str, str, str], Awaitable[Sequence[FailureEvent]]]
"""Reads the recorded failures of (turn_id, call_id, tool)."""


@dataclass(frozen=True)
class CallKey:
    turn_id: str
    call_id: str
    tool: str

    @classmethod
    def of(cls, report: FailureReport) -> CallKey:
        return cls(report.turn_id, report.call_id, report.tool)


def retry_time(event: FailureEvent) -> float:
    """Seconds one recorded failure adds to its call's retry time."""
    ran = event.report.elapsed if event.report.attempt > 1 else 0.0
    waited = event.decision.delay if event.decision.action is Action.RETRY else 0.0
    return ran + waited


class RetryLedger:
    """Retry time spent per call and tool, bounded to the most recent ``capacity`` calls."""

    def __init__(self, history: FailureHistory, capacity: int = 100_000) -> None:
        self._history = history
        self._capacity = capacity
        self._spent: OrderedDict[CallKey, float] = OrderedDict()

    async def spent(self, report: FailureReport) -> float:
        """Retry time of the report's call before this failure, plus this attempt if a retry."""
        before = await self._recorded(CallKey.of(report), report.attempt)
        return before + (report.elapsed if report.attempt > 1 else 0.0)

    def record(self, event: FailureEvent) -> None:
        """Account a committed failure."""
        key = CallKey.of(event.report)
        self._remember(key, self._spent.get(key, 0.0) + retry_time(event))

    async def _recorded(self, key: CallKey, attempt: int) -> float:
        if key in self._spent:
            self._spent.move_to_end(key)
            return self._spent[key]
        if attempt == 1:
            return 0.0
        events = await self._history(key.turn_id, key.call_id, key.tool)
        total = sum(retry_time(event) for event in events)
        self._remember(key, total)
        return total

    def _remember(self, key: CallKey, spent: float) -> None:
        self._spent[key] = spent
        self._spent.move_to_end(key)
        while len(self._spent) > self._capacity:
            self._spent.popitem(last=False)
