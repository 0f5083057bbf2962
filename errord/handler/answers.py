"""A report's answer once committed: a new report's, a repeat's, or one recorded before.

Every report the handler records is one of three. New: its events are decided and
submitted now, and it is answered once they commit. Repeated while its first is being
committed: it waits for that unit and is answered with what it records. Recorded
before: it is answered from its event in the trace. A failure, an outcome and a turn's
beginning and end are answered alike (``Units.answer``); what differs by kind is
here (``ReportKind``): which event records a report, what that event answers, and how
a repeat is checked against it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeAlias, TypeVar

from errord.decide.health.admission import was_refused
from errord.decide.model import Decision, FailureReport, OutcomeReport, ReportKey, TurnSummary
from errord.decide.model.events import (
    EventDetail,
    EventKind,
    FailureEvent,
    OutcomeEvent,
    TraceEvent,
    TurnBegan,
    TurnEnded,
)
from errord.errors import ReportConflict, StoreError
from errord.state.calls import CallState
from errord.state.memory_retention import MemoryRetention
from errord.state.store import DuplicateEvent, Store, Unit

R = TypeVar("R")
A = TypeVar("A")
Answer: TypeAlias = Coroutine[Any, Any, tuple[A, bool]]
"""What a report is answered with once committed, and whether it was recorded before."""


@dataclass(frozen=True, slots=True)
class ReportKind(Generic[R, A]):
    """How reports of one kind (``R``) are recorded, and answered (``A``) again."""

    kind: EventKind
    detail: type[EventDetail]
    """The event that records such a report: a unit's last one of this type."""
    answer: Callable[[TraceEvent], A]
    """What a report's recorded event answers it with."""
    check: Callable[[R, TraceEvent], None]
    """Raises ReportConflict when a repeat says otherwise than its recorded event."""
    lost: Callable[[R], str]
    """The error of a report recorded whose event cannot be found."""


@dataclass(frozen=True, slots=True)
class CallReportKind(ReportKind[R, A]):
    """Reports of a call's attempts (failures, outcomes), whose call's state says which
    were recorded."""

    recorded: Callable[[CallState, str, int], bool]
    """Whether the call's state holds such a report of a tool's attempt."""


def recorded_event(events: Sequence[TraceEvent], detail: type[EventDetail]) -> TraceEvent | None:
    """The last of ``events`` whose detail is a ``detail``; the events that room for
    episodic memory adds come after it."""
    for event in reversed(events):
        if type(event.detail) is detail:
            return event
    return None


class Units:
    """Units of work being committed, by the kind and key of the report they record,
    and the answers they give."""

    def __init__(self, store: Store, retention: MemoryRetention) -> None:
        self._store = store
        self._retention = retention
        self._in_flight: dict[tuple[EventKind, object], Unit] = {}
        self._claims: dict[ReportKey, Unit] = {}
        """Probe claims being committed, by the attempt that claimed."""

    def in_flight(self, kind: EventKind, key: object) -> Unit | None:
        """The unit recording the report of ``kind`` and ``key``, until it is committed."""
        return self._in_flight.get((kind, key))

    def submit(
        self,
        kind: EventKind,
        key: object,
        events: tuple[EventDetail, ...],
        at: datetime | None = None,
    ) -> Unit:
        """Submit ``events`` (with room made in episodic memory), recorded at ``at`` (the
        time they were decided at, which a replay decides them at again), else now."""
        unit = self._store.submit(self._retention.with_room(events), at)
        in_flight = self._in_flight
        in_flight[(kind, key)] = unit
        unit.on_settled = lambda: in_flight.pop((kind, key), None)
        return unit

    def claim(self, key: ReportKey) -> Unit | None:
        """The unit claiming the half-open breaker's probe for attempt ``key``, until it is
        committed."""
        return self._claims.get(key)

    def submit_claim(self, key: ReportKey, events: tuple[EventDetail, ...], at: datetime) -> Unit:
        """Submit the transitions that claim the probe for attempt ``key``."""
        unit = self._store.submit(events, at)
        self._claims[key] = unit
        unit.on_settled = lambda: self._claims.pop(key, None)
        return unit

    async def answer(
        self, how: ReportKind[R, A], report: R, key: object, unit: Unit | None, new: bool
    ) -> tuple[A, bool]:
        """The answer to ``report`` (whose key is ``key``) and whether it was recorded
        before: once ``unit`` commits, what it records (a ``new`` report's own unit, or
        the first's that a repeat waits for); else, or when the trace held it already,
        what the trace recorded.

        Raises ReportConflict when a repeat says otherwise than what was recorded,
        StoreError when the unit could not be committed or the recorded event not read.
        """
        event = None
        if unit is not None:
            try:
                await unit.wait()
            except DuplicateEvent:  # recorded before this process knew of it: read it
                pass
            else:
                event = recorded_event(unit.events, how.detail)
        if event is None:
            new = False
            event = await self._store.find(how.kind, key)
            if event is None or type(event.detail) is not how.detail:
                raise StoreError(how.lost(report))
        if not new:
            how.check(report, event)
        return how.answer(event), not new


def describe(key: ReportKey) -> str:
    return (
        f"the report (turn_id={key.turn_id!r}, call_id={key.call_id!r}, tool={key.tool!r}, "
        f"attempt={key.attempt})"
    )


def _lost_report(report: FailureReport | OutcomeReport) -> str:
    return f"{describe(report.key)} is recorded, yet its event cannot be found"


def _decision(event: TraceEvent) -> Decision:
    detail = event.detail
    assert isinstance(detail, FailureEvent)
    return detail.decision


def same_failure(report: FailureReport, recorded: TraceEvent) -> None:
    """Raises ReportConflict unless a repeated ``report`` says what was recorded. An
    attempt errord refused is refused once, whatever refuses it when asked again."""
    stored = recorded.detail
    assert isinstance(stored, FailureEvent)
    if stored.report.scope != report.scope:
        raise ReportConflict(
            f"{describe(report.key)} was already recorded in scope {stored.report.scope!r}, "
            f"not {report.scope!r}"
        )
    if stored.report.error != report.error and not (
        was_refused(report) and was_refused(stored.report)
    ):
        recorded_code = stored.decision.classification.code.value
        raise ReportConflict(
            f"{describe(report.key)} was already recorded with a different error "
            f"({recorded_code}); attempts are numbered from 1 per tool and call"
        )


def same_outcome(report: OutcomeReport, recorded: TraceEvent) -> None:
    """Raises ReportConflict unless a repeated ``report`` tells the outcome recorded."""
    stored = recorded.detail
    assert isinstance(stored, OutcomeEvent)
    if stored.report.outcome is not report.outcome:
        raise ReportConflict(
            f"{describe(report.key)} was already recorded as {stored.report.outcome.value}"
        )


def _outcome_recorded(call: CallState, tool: str, attempt: int) -> bool:
    return call.outcome(tool, attempt) is not None


def _event(event: TraceEvent) -> TraceEvent:
    return event


def _summary(event: TraceEvent) -> TurnSummary:
    detail = event.detail
    assert isinstance(detail, TurnEnded)
    return detail.summary


def _checked_before(turn_id: str, event: TraceEvent) -> None:
    """A turn's beginning is checked against the recorded one before it is submitted;
    its end says nothing that could differ."""


def _lost_turn(kind: EventKind) -> Callable[[str], str]:
    return lambda turn_id: f"turn {turn_id!r} has a {kind.value} event that cannot be found"


FAILURE: CallReportKind[FailureReport, Decision] = CallReportKind(
    EventKind.FAILURE,
    FailureEvent,
    _decision,
    same_failure,
    _lost_report,
    CallState.failure_recorded,
)
"""A failure report, answered with its decision."""
OUTCOME: CallReportKind[OutcomeReport, TraceEvent] = CallReportKind(
    EventKind.OUTCOME, OutcomeEvent, _event, same_outcome, _lost_report, _outcome_recorded
)
"""An attempt's outcome, answered with the event that records it."""
TURN_BEGAN: ReportKind[str, TraceEvent] = ReportKind(
    EventKind.TURN_BEGAN, TurnBegan, _event, _checked_before, _lost_turn(EventKind.TURN_BEGAN)
)
"""A turn's beginning (the report is its id), answered with the event that records it."""
TURN_ENDED: ReportKind[str, TurnSummary] = ReportKind(
    EventKind.TURN_ENDED, TurnEnded, _summary, _checked_before, _lost_turn(EventKind.TURN_ENDED)
)
"""A turn's end (the report is its id), answered with the turn's summary."""
