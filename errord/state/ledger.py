"""What each call has been through: retry time per tool, and the tools that failed it.

The retry budget (``max_total_time``) counts the delays granted and the run time
of every retried attempt; alternatives that already failed on the call are not
offered again. The ledger answers from memory. It reads a call's recorded
failures (one query) only when memory cannot answer: the call predates this
process, or was evicted.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from errord.decide.model import Action, FailureEvent, FailureReport

FailureHistory = Callable[[str, str], Awaitable[Sequence[FailureEvent]]]
"""Reads the recorded failures of (turn_id, call_id), every tool's."""


def retry_time(event: FailureEvent) -> float:
    """Seconds one recorded failure adds to its tool's retry time on the call."""
    ran = event.report.elapsed if event.report.attempt > 1 else 0.0
    waited = event.decision.delay if event.decision.action is Action.RETRY else 0.0
    return ran + waited


@dataclass
class CallHistory:
    """One call's recorded failures, summed up per tool."""

    complete: bool
    """Holds every recorded failure of the call; False when it holds only those
    since this process first saw the call, which may have begun before."""
    retry_time: dict[str, float] = field(default_factory=dict)
    """Seconds spent retrying, per tool that failed."""

    def add(self, event: FailureEvent) -> None:
        tool = event.report.tool
        self.retry_time[tool] = self.retry_time.get(tool, 0.0) + retry_time(event)

    def answers(self, report: FailureReport, need_every_tool: bool) -> bool:
        """Whether this history is enough to decide on ``report``."""
        if self.complete:
            return True
        return not need_every_tool and (report.attempt == 1 or report.tool in self.retry_time)


@dataclass(frozen=True)
class CallState:
    """What the policy needs to know of a call to decide on its new failure."""

    retry_time_spent: float
    """Seconds the call spent retrying the failing tool, this failed attempt included."""
    failed_tools: frozenset[str]
    """Tools that failed on this call, the failing one included."""
    complete: bool
    """False when failed_tools may miss tools that failed before this process started."""


class RetryLedger:
    """Call histories in memory, bounded to the most recent ``capacity`` calls."""

    def __init__(self, history: FailureHistory, capacity: int = 100_000) -> None:
        self._history = history
        self._capacity = capacity
        self._calls: OrderedDict[tuple[str, str], CallHistory] = OrderedDict()

    async def state(self, report: FailureReport, *, need_every_tool: bool = False) -> CallState:
        """The report's call as recorded so far, with the report itself added."""
        history = await self._recall(report, need_every_tool)
        spent = history.retry_time.get(report.tool, 0.0)
        return CallState(
            retry_time_spent=spent + (report.elapsed if report.attempt > 1 else 0.0),
            failed_tools=frozenset(history.retry_time) | {report.tool},
            complete=history.complete,
        )

    def record(self, event: FailureEvent) -> None:
        """Account a committed failure; a call not in memory will read it from the trace."""
        history = self._calls.get((event.report.turn_id, event.report.call_id))
        if history is not None:
            history.add(event)

    async def _recall(self, report: FailureReport, need_every_tool: bool) -> CallHistory:
        key = (report.turn_id, report.call_id)
        history = self._calls.get(key)
        if history is None and report.attempt == 1 and not need_every_tool:
            history = CallHistory(complete=False)  # new to this process: nothing to read yet
        elif history is None or not history.answers(report, need_every_tool):
            history = CallHistory(complete=True)
            for event in await self._history(*key):
                history.add(event)
        self._calls[key] = history
        self._calls.move_to_end(key)
        while len(self._calls) > self._capacity:
            self._calls.popitem(last=False)
        return history
