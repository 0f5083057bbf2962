"""Per-tool statistics, folded from the trace: what seeds 000, 002 and 004 count per tool.

An execution is an attempt errord learns of: a reported failure, or a
successful outcome (a failed outcome repeats a failure already reported, or
about to be). Durations are those the executor reported (a failure's elapsed
time, a success's duration); one reported as zero is taken as not measured.
They go into a histogram with fixed bounds, from which the mean and the 95th
percentile are read as Prometheus reads them. Recent figures are kept per
minute of event time for the last hour, for windowed alerts.

Stored as a projection, so the counters survive restarts and are rebuilt from
the trace when this fold changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TypeVar

from msgspec import Struct, field, structs

from errord.decide.events import BreakerChanged, FailureEvent, OutcomeEvent, TraceEvent
from errord.decide.model import (
    Action,
    BreakerChange,
    ErrorClass,
    ErrorCode,
    Outcome,
)

T = TypeVar("T")

DURATION_BOUNDS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
"""Upper bounds in seconds of the duration histogram's buckets; one more holds the rest."""
RECENT_MINUTES = 60
"""Minutes of per-minute figures kept, the longest alert window."""
MAX_EXCEPTION_TYPES = 50
"""Distinct exception type names counted per tool; the rest count as OTHER_EXCEPTIONS,
so that executors sending arbitrary names cannot grow the state (or the metrics' labels)."""
OTHER_EXCEPTIONS = "(other)"
_OPENINGS = frozenset({BreakerChange.OPENED, BreakerChange.FORCED_OPEN})


class Durations(Struct, frozen=True, omit_defaults=True, gc=False):
    """A histogram of durations: counts per bucket of DURATION_BOUNDS, the last for larger."""

    buckets: tuple[int, ...] = (0,) * (len(DURATION_BOUNDS) + 1)
    count: int = 0
    total: float = 0.0
    """Sum of the durations, in seconds."""

    def observe(self, seconds: float) -> Durations:
        index = next(
            (i for i, bound in enumerate(DURATION_BOUNDS) if seconds <= bound),
            len(DURATION_BOUNDS),
        )
        buckets = list(self.buckets)
        buckets[index] += 1
        return Durations(tuple(buckets), self.count + 1, self.total + seconds)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def quantile(self, q: float) -> float:
        """The q-quantile, interpolated linearly within its bucket (Prometheus'
        histogram_quantile); the largest finite bound when it falls in the last bucket."""
        if not self.count:
            return 0.0
        rank = q * self.count
        seen = 0
        for index, count in enumerate(self.buckets):
            if seen + count >= rank and count:
                if index == len(DURATION_BOUNDS):
                    return DURATION_BOUNDS[-1]
                lower = DURATION_BOUNDS[index - 1] if index else 0.0
                upper = DURATION_BOUNDS[index]
                return lower + (upper - lower) * (rank - seen) / count
            seen += count
        return DURATION_BOUNDS[-1]


class Minute(Struct, frozen=True, array_like=True, gc=False):
    """One minute's figures of a tool."""

    start: int
    """Unix time of the minute's start, in minutes."""
    executions: int = 0
    errors: int = 0
    duration_total: float = 0.0
    durations: int = 0


class ToolStats(Struct, frozen=True, omit_defaults=True, gc=False):
    """One tool's counters since errord first saw it."""

    executions: int = 0
    successes: int = 0
    transient_errors: int = 0
    permanent_errors: int = 0
    timeouts: int = 0
    retry_successes: int = 0
    """Successful outcomes of attempts after the first."""
    breaker_opens: int = 0
    decisions: dict[Action, int] = field(default_factory=dict)
    errors_by_code: dict[ErrorCode, int] = field(default_factory=dict)
    errors_by_exception: dict[str, int] = field(default_factory=dict)
    durations: Durations = Durations()
    recent: tuple[Minute, ...] = ()
    """The last RECENT_MINUTES minutes with any execution, oldest first."""

    @property
    def errors(self) -> int:
        return self.transient_errors + self.permanent_errors

    @property
    def retries(self) -> int:
        return self.decisions.get(Action.RETRY, 0)

    def since(self, start: datetime) -> Minute:
        """The figures of the minutes from the one holding ``start`` on, summed."""
        first = _minute(start)
        window = [minute for minute in self.recent if minute.start >= first]
        return Minute(
            first,
            executions=sum(minute.executions for minute in window),
            errors=sum(minute.errors for minute in window),
            duration_total=sum(minute.duration_total for minute in window),
            durations=sum(minute.durations for minute in window),
        )


class ToolStatsFold:
    """Folds failures, outcomes and breaker openings into their tool's statistics."""

    name = "tool_stats"
    version = 1
    key_type = str
    state_type = ToolStats

    def keys(self, event: TraceEvent) -> Sequence[str]:
        detail = event.detail
        if isinstance(detail, FailureEvent):
            return (detail.report.tool,)
        if isinstance(detail, OutcomeEvent):
            return (detail.report.tool,) if detail.report.outcome is Outcome.SUCCESS else ()
        if isinstance(detail, BreakerChanged):
            return (detail.tool,) if detail.change in _OPENINGS else ()
        return ()

    def apply(self, state: ToolStats | None, event: TraceEvent) -> ToolStats:
        state = state or ToolStats()
        detail = event.detail
        if isinstance(detail, FailureEvent):
            return _failed(state, detail, event.time)
        if isinstance(detail, OutcomeEvent):
            return _succeeded(state, detail, event.time)
        if isinstance(detail, BreakerChanged):
            return structs.replace(state, breaker_opens=state.breaker_opens + 1)
        return state


def _failed(state: ToolStats, event: FailureEvent, time: datetime) -> ToolStats:
    report, decision = event.report, event.decision
    classification = decision.classification
    transient = classification.error_class is ErrorClass.TRANSIENT
    code = classification.code
    exception = report.error.exception_type
    errors_by_exception = state.errors_by_exception
    if exception:
        if exception not in errors_by_exception and len(errors_by_exception) >= MAX_EXCEPTION_TYPES:
            exception = OTHER_EXCEPTIONS
        errors_by_exception = _counted(errors_by_exception, exception)
    return structs.replace(
        state,
        executions=state.executions + 1,
        transient_errors=state.transient_errors + transient,
        permanent_errors=state.permanent_errors + (not transient),
        timeouts=state.timeouts + (code is ErrorCode.TIMEOUT),
        decisions=_counted(state.decisions, decision.action),
        errors_by_code=_counted(state.errors_by_code, code),
        errors_by_exception=errors_by_exception,
        durations=_observed(state.durations, report.elapsed),
        recent=_recent(state.recent, time, errors=1, duration=report.elapsed),
    )


def _succeeded(state: ToolStats, event: OutcomeEvent, time: datetime) -> ToolStats:
    report = event.report
    return structs.replace(
        state,
        executions=state.executions + 1,
        successes=state.successes + 1,
        retry_successes=state.retry_successes + (report.attempt > 1),
        durations=_observed(state.durations, report.duration),
        recent=_recent(state.recent, time, errors=0, duration=report.duration),
    )


def _counted(counts: dict[T, int], key: T) -> dict[T, int]:
    return {**counts, key: counts.get(key, 0) + 1}


def _observed(durations: Durations, seconds: float) -> Durations:
    return durations.observe(seconds) if seconds > 0 else durations


def _minute(time: datetime) -> int:
    return int(time.timestamp() // 60)


def _added(minute: Minute, executions: int, errors: int, duration: float) -> Minute:
    measured = duration > 0
    return Minute(
        minute.start,
        minute.executions + executions,
        minute.errors + errors,
        minute.duration_total + (duration if measured else 0.0),
        minute.durations + measured,
    )


def _recent(
    recent: tuple[Minute, ...], time: datetime, *, errors: int, duration: float
) -> tuple[Minute, ...]:
    """``recent`` with one execution added to the minute of ``time``, the minutes older
    than RECENT_MINUTES before it dropped."""
    start = _minute(time)
    kept = [minute for minute in recent if minute.start > start - RECENT_MINUTES]
    if kept and kept[-1].start >= start:  # later than ``start`` only if the clock went back
        kept[-1] = _added(kept[-1], 1, errors, duration)
    else:
        kept.append(_added(Minute(start), 1, errors, duration))
    return tuple(kept)
