"""Recorded and replayed decisions compared, counted by kind of change, with examples.

A re-decided failure changed when its action, its classification, the alternative it
names or (both retries) its delay differ; an attempt AdmitCall refused changed when the
replayed breaker admits it (kind ``admission``). Each kind of change (``action RETRY ->
USE_ALTERNATIVE``) is counted, with the first few decisions that changed so; beside
them, the totals an operator weighs: the retry wait granted, the times breakers opened,
the decisions that reach the user (ESCALATE), as recorded and as replayed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from errord.decide.model import Action, BreakerChange, Classification, Decision
from errord.decide.model.events import BreakerChanged, EventDetail, FailureEvent, TraceEvent

DEFAULT_EXAMPLES = 3
"""Examples kept per kind of change."""

ADMITTED = (
    "The circuit breaker admits the attempt: it would have run (what it would have returned "
    "is not in the trace)."
)
"""The replayed reason of an attempt AdmitCall refused that the replayed breaker admits."""


@dataclass(frozen=True, slots=True)
class Example:
    """One decision that changed: its attempt, and the reason recorded and replayed."""

    turn_id: str
    call_id: str
    tool: str
    attempt: int
    reason_before: str
    reason_after: str
    scope: str = ""
    """The scope the failed tool ran in; empty: none."""


@dataclass(slots=True)
class Change:
    """One kind of change (``kind``: action, classification, alternative or delay), from
    ``before`` (recorded) to ``after`` (replayed), and how often it happened."""

    kind: str
    before: str
    after: str
    count: int = 0
    examples: list[Example] = field(default_factory=list)


@dataclass(slots=True)
class ReplaySummary:
    """What the replayed manifests would have changed, over the failures compared."""

    failures: int = 0
    """Failures compared (re-decided within the scope)."""
    changed: int = 0
    """Of those, decided otherwise."""
    outcomes: int = 0
    """Outcomes folded."""
    events: int = 0
    """Trace events replayed, in all."""
    changes: list[Change] = field(default_factory=list)
    """Each kind of change, most frequent first."""
    retry_wait_before: float = 0.0
    """Seconds of retry delay granted, as recorded."""
    retry_wait_after: float = 0.0
    breaker_openings_before: int = 0
    breaker_openings_after: int = 0
    escalations_before: int = 0
    escalations_after: int = 0
    seconds: float = 0.0
    """How long the replay took."""

    @property
    def rate(self) -> float:
        """Failures re-decided per second."""
        return self.failures / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class ReplayScope:
    """Which failures are compared; the state before them is rebuilt all the same."""

    since: datetime | None = None
    """Only failures recorded at or after this time; None: the whole trace."""
    tool: str = ""
    """Only this tool's failures; empty: every tool."""
    examples: int = DEFAULT_EXAMPLES
    """Examples kept per kind of change."""

    def covers(self, event: TraceEvent, tool: str) -> bool:
        return (self.since is None or event.time >= self.since) and (
            not self.tool or tool == self.tool
        )


class Comparison:
    """Accumulates the comparison of each re-decided failure into a ReplaySummary."""

    def __init__(self, scope: ReplayScope) -> None:
        self.scope = scope
        self.summary = ReplaySummary()
        self._changes: dict[tuple[str, str, str], Change] = {}
        self._shown: tuple[Decision | None, list[tuple[str, str, str]]] = (None, [])
        """The decision ``shows`` was asked about last, and how it differs."""

    def decision(self, event: TraceEvent, recorded: Decision, replayed: Decision | None) -> None:
        """Compare one re-decided failure, if it is in scope; ``replayed`` None for an
        attempt AdmitCall refused that the replay admits."""
        if not self.scope.covers(event, recorded.tool):
            return
        summary = self.summary
        summary.failures += 1
        summary.retry_wait_before += _wait(recorded)
        summary.escalations_before += recorded.action is Action.ESCALATE
        if replayed is None:
            summary.changed += 1
            self._count(("admission", "REFUSED", "ADMITTED"), event, recorded, ADMITTED)
            return
        summary.retry_wait_after += _wait(replayed)
        summary.escalations_after += replayed.action is Action.ESCALATE
        differences = self._differences(recorded, replayed)
        if differences:
            summary.changed += 1
            for difference in differences:
                self._count(difference, event, recorded, replayed.reason)

    def shows(self, event: TraceEvent, recorded: Decision, replayed: Decision) -> bool:
        """Whether ``replayed``, if compared, would be kept as an example of a change (and
        so needs its reason)."""
        wanted = self.scope.examples
        if wanted <= 0 or not self.scope.covers(event, recorded.tool):
            return False
        self._shown = replayed, list(changes_between(recorded, replayed))
        for difference in self._shown[1]:
            change = self._changes.get(difference)
            if change is None or len(change.examples) < wanted:
                return True
        return False

    def recorded_events(self, event: TraceEvent) -> None:
        """Count the breaker openings ``event`` recorded."""
        self.summary.breaker_openings_before += self._openings(event, (event.detail,))

    def replayed_events(self, event: TraceEvent, details: Sequence[EventDetail]) -> None:
        """Count the breaker openings the replay of ``event`` regenerated."""
        self.summary.breaker_openings_after += self._openings(event, details)

    def finished(self, seconds: float) -> ReplaySummary:
        self.summary.seconds = seconds
        self.summary.changes = sorted(
            self._changes.values(), key=lambda change: (-change.count, change.kind)
        )
        return self.summary

    def _differences(self, recorded: Decision, replayed: Decision) -> list[tuple[str, str, str]]:
        shown, differences = self._shown
        return differences if shown is replayed else list(changes_between(recorded, replayed))

    def _openings(self, event: TraceEvent, details: Sequence[EventDetail]) -> int:
        openings = 0
        for detail in details:  # a loop, not a generator: this runs for every event
            if type(detail) is BreakerChanged and detail.change is BreakerChange.OPENED:
                openings += self.scope.covers(event, detail.tool)
        return openings

    def _count(
        self,
        difference: tuple[str, str, str],
        event: TraceEvent,
        recorded: Decision,
        reason: str,
    ) -> None:
        change = self._changes.get(difference)
        if change is None:
            change = self._changes[difference] = Change(*difference)
        change.count += 1
        if len(change.examples) < self.scope.examples:
            change.examples.append(
                Example(
                    recorded.turn_id,
                    recorded.call_id,
                    recorded.tool,
                    recorded.attempt,
                    recorded.reason,
                    reason,
                    _scope_of(event),
                )
            )


def changes_between(recorded: Decision, replayed: Decision) -> Iterator[tuple[str, str, str]]:
    """How ``replayed`` differs from ``recorded``: (kind, before, after) for each kind."""
    if recorded.action is not replayed.action:
        yield "action", recorded.action.name, replayed.action.name
    elif recorded.alternative_tool != replayed.alternative_tool:
        yield "alternative", recorded.alternative_tool or "", replayed.alternative_tool or ""
    elif recorded.action is Action.RETRY and recorded.delay != replayed.delay:
        sooner = replayed.delay < recorded.delay
        yield "delay", "RETRY", "RETRY sooner" if sooner else "RETRY later"
    before, after = recorded.classification, replayed.classification
    if before.error_class is not after.error_class or before.code is not after.code:
        yield "classification", classified(before), classified(after)


def classified(classification: Classification) -> str:
    """``TRANSIENT/UNAVAILABLE``: the class and the code."""
    return f"{classification.error_class.name}/{classification.code.name}"


def _wait(decision: Decision) -> float:
    return decision.delay if decision.action is Action.RETRY else 0.0


def _scope_of(event: TraceEvent) -> str:
    detail = event.detail
    return detail.report.scope if isinstance(detail, FailureEvent) else ""
