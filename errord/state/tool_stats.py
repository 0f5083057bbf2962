"""Statistics per tool and scope, folded from the trace: outcomes, errors by kind, durations.

They are counted two ways. Per attempt: an attempt errord learns of is a reported
failure (but not an attempt its breaker or rate-limit window refused, which never ran),
or a successful outcome (a failed outcome repeats a failure already reported, or about to
be). Per execution: a call's execution of the tool is its attempts of it, from the first
to the one that ends it: a success, or a decision other than RETRY (the engine marks the
event that ends one, with the execution's time: FailureEvent.execution,
OutcomeEvent.execution). A call that succeeded at its fourth attempt is four attempts,
three of them failed, and one execution, which succeeded.

Durations are those the executor reported (a failure's elapsed time, a success's
duration; an execution's, its attempts' and the retry delays granted between them); one
reported as zero is taken as not measured.
They go into a histogram with fixed bounds, from which the mean and the 95th
percentile are read as Prometheus reads them. Recent figures are kept per
minute of event time for the last hour, for windowed alerts.

Stored as a projection, so the counters survive restarts and are rebuilt from
the trace when this fold changes.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from msgspec import Struct, field

from errord.decide.health.admission import was_refused
from errord.decide.model import Action, BreakerChange, ErrorClass, ErrorCode, Outcome
from errord.decide.model.events import BreakerChanged, FailureEvent, OutcomeEvent, TraceEvent

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
_COUNTED_CHANGES = _OPENINGS | {BreakerChange.RESET}


class Durations(Struct, frozen=True, omit_defaults=True, gc=False):
    """A histogram of durations: counts per bucket of DURATION_BOUNDS, the last for larger."""

    buckets: tuple[int, ...] = (0,) * (len(DURATION_BOUNDS) + 1)
    count: int = 0
    total: float = 0.0
    """Sum of the durations, in seconds."""

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


class Executions(Struct, frozen=True, omit_defaults=True, gc=False):
    """A tool's executions by calls that ended, and how each ended."""

    count: int = 0
    successes: int = 0
    errors: int = 0
    """Executions that ended without a success: the tool failed them."""
    timeouts: int = 0
    """Errors whose last attempt timed out."""
    durations: Durations = Durations()
    """How long each took: its attempts and the retry delays between them."""

    @property
    def failure_rate(self) -> float:
        """Errors per execution; 0 without executions."""
        return self.errors / self.count if self.count else 0.0


class ToolStats(Struct, frozen=True, omit_defaults=True, gc=False):
    """One tool's counters since errord first saw it."""

    executions: int = 0
    """Attempts (see the module's docstring); ``per_execution`` counts executions."""
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
    succeeded_at: datetime | None = None
    """When an attempt of the tool last succeeded."""
    reset_at: datetime | None = None
    """When an operator last reset the tool's breaker."""
    per_execution: Executions = Executions()
    """The executions by calls that ended (the module's docstring)."""

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
    # 2: a refused attempt is not an execution; 3: the last success and reset; 4: executions
    version = 4
    key_type = str
    state_type = ToolStats

    def keys(self, event: TraceEvent) -> Sequence[str]:
        detail = event.detail
        if type(detail) is FailureEvent:  # the kinds are final: type() is the quickest test
            return (detail.report.tool_key,)
        if type(detail) is OutcomeEvent:
            return (detail.report.tool_key,) if detail.report.outcome is Outcome.SUCCESS else ()
        if type(detail) is BreakerChanged:
            return (detail.tool_key,) if detail.change in _COUNTED_CHANGES else ()
        return ()

    def apply(self, key: str, state: ToolStats | None, event: TraceEvent) -> ToolStats:
        return self.apply_all(key, state, (event,))

    def apply_all(
        self, key: str, state: ToolStats | None, events: Sequence[TraceEvent]
    ) -> ToolStats:
        # A batch's events of one tool go into one mutable tally: a copy per batch, not per event.
        tally = _Tally(state or ToolStats())
        for event in events:
            detail = event.detail
            if isinstance(detail, FailureEvent):
                tally.failed(detail, event.time)
            elif isinstance(detail, OutcomeEvent):
                tally.succeeded(detail, event.time)
            elif isinstance(detail, BreakerChanged):
                if detail.change is BreakerChange.RESET:
                    tally.reset_at = event.time
                else:
                    tally.counts["breaker_opens"] += 1
        return tally.stats()


_EXECUTION_COUNTERS = ("count", "successes", "errors", "timeouts")
_COUNTERS = (
    "executions",
    "successes",
    "transient_errors",
    "permanent_errors",
    "timeouts",
    "retry_successes",
    "breaker_opens",
)


class _Tally:
    """ToolStats being added to."""

    def __init__(self, stats: ToolStats) -> None:
        self.counts = {name: getattr(stats, name) for name in _COUNTERS}
        self.decisions = dict(stats.decisions)
        self.errors_by_code = dict(stats.errors_by_code)
        self.errors_by_exception = dict(stats.errors_by_exception)
        self.buckets = list(stats.durations.buckets)
        self.duration_count = stats.durations.count
        self.duration_total = stats.durations.total
        self.recent = list(stats.recent)
        self.succeeded_at = stats.succeeded_at
        self.reset_at = stats.reset_at
        ran = stats.per_execution
        self.ran = {name: getattr(ran, name) for name in _EXECUTION_COUNTERS}
        self.ran_buckets = list(ran.durations.buckets)
        self.ran_count = ran.durations.count
        self.ran_total = ran.durations.total

    def failed(self, event: FailureEvent, time: datetime) -> None:
        report, decision = event.report, event.decision
        counts, code = self.counts, decision.classification.code
        self.decisions[decision.action] = self.decisions.get(decision.action, 0) + 1
        self.errors_by_code[code] = self.errors_by_code.get(code, 0) + 1
        refused = was_refused(report)
        ended = event.execution
        if ended is None and decision.action is not Action.RETRY and not refused:
            ended = report.elapsed  # recorded before executions were marked: as long as this
        if ended is not None:
            self._executed(ended, error=True, timeout=code is ErrorCode.TIMEOUT)
        if refused:
            return  # refused by its breaker or its window (AdmitCall): the tool did not run
        counts["executions"] += 1
        if decision.classification.error_class is ErrorClass.TRANSIENT:
            counts["transient_errors"] += 1
        else:
            counts["permanent_errors"] += 1
        if code is ErrorCode.TIMEOUT:
            counts["timeouts"] += 1
        exception = report.error.exception_type
        if exception:
            known = self.errors_by_exception
            if exception not in known and len(known) >= MAX_EXCEPTION_TYPES:
                exception = OTHER_EXCEPTIONS
            known[exception] = known.get(exception, 0) + 1
        self._observe(time, report.elapsed, error=True)

    def succeeded(self, event: OutcomeEvent, time: datetime) -> None:
        report = event.report
        self.counts["executions"] += 1
        self.counts["successes"] += 1
        if report.attempt > 1:
            self.counts["retry_successes"] += 1
        self.succeeded_at = time
        self._observe(time, report.duration, error=False)
        ended = event.execution
        self._executed(report.duration if ended is None else ended, error=False, timeout=False)

    def _executed(self, seconds: float, *, error: bool, timeout: bool) -> None:
        """Count an execution that ended, ``error`` when the tool failed it."""
        ran = self.ran
        ran["count"] += 1
        ran["errors" if error else "successes"] += 1
        ran["timeouts"] += timeout
        if seconds > 0:
            self.ran_buckets[bisect.bisect_left(DURATION_BOUNDS, seconds)] += 1
            self.ran_count += 1
            self.ran_total += seconds

    def _observe(self, time: datetime, seconds: float, *, error: bool) -> None:
        measured = seconds > 0
        if measured:
            self.buckets[bisect.bisect_left(DURATION_BOUNDS, seconds)] += 1
            self.duration_count += 1
            self.duration_total += seconds
        start = _minute(time)
        recent = self.recent
        if recent and recent[-1].start >= start:  # this minute, or (clock went back) a later one
            start = recent[-1].start
            last = recent.pop()
        else:
            last = Minute(start)
            while recent and recent[0].start <= start - RECENT_MINUTES:
                recent.pop(0)
        recent.append(
            Minute(
                start,
                last.executions + 1,
                last.errors + error,
                last.duration_total + (seconds if measured else 0.0),
                last.durations + measured,
            )
        )

    def stats(self) -> ToolStats:
        return ToolStats(
            **self.counts,
            decisions=self.decisions,
            errors_by_code=self.errors_by_code,
            errors_by_exception=self.errors_by_exception,
            durations=Durations(tuple(self.buckets), self.duration_count, self.duration_total),
            recent=tuple(self.recent),
            succeeded_at=self.succeeded_at,
            reset_at=self.reset_at,
            per_execution=Executions(
                **self.ran,
                durations=Durations(tuple(self.ran_buckets), self.ran_count, self.ran_total),
            ),
        )


def _minute(time: datetime) -> int:
    """Unix time in whole minutes."""
    return int(time.timestamp() // 60)


def summed(stats: Sequence[ToolStats]) -> ToolStats:
    """The counters of ``stats`` added up (as one series of several scopes' metrics):
    counts, decisions, errors and durations; not the recent minutes nor the moments."""
    counts = {name: sum(getattr(each, name) for each in stats) for name in _COUNTERS}
    decisions: Counter[Action] = Counter()
    by_code: Counter[ErrorCode] = Counter()
    by_exception: Counter[str] = Counter()
    for each in stats:
        decisions.update(each.decisions)
        by_code.update(each.errors_by_code)
        by_exception.update(each.errors_by_exception)
    return ToolStats(
        **counts,
        decisions=dict(decisions),
        errors_by_code=dict(by_code),
        errors_by_exception=dict(by_exception),
        durations=_summed_durations([each.durations for each in stats]),
        per_execution=Executions(
            **{
                name: sum(getattr(each.per_execution, name) for each in stats)
                for name in _EXECUTION_COUNTERS
            },
            durations=_summed_durations([each.per_execution.durations for each in stats]),
        ),
    )


def _summed_durations(histograms: Sequence[Durations]) -> Durations:
    buckets = [0] * (len(DURATION_BOUNDS) + 1)
    for histogram in histograms:
        for index, count in enumerate(histogram.buckets):
            buckets[index] += count
    return Durations(
        tuple(buckets),
        sum(histogram.count for histogram in histograms),
        sum(histogram.total for histogram in histograms),
    )
