"""Trace events: one stream, ordered by sequence, of events of several kinds.

Call events (a failure and its decision, an attempt's outcome) belong to one
attempt of one call; other events (a turn began or ended, a breaker changed) do
not. Each kind is a tagged record (``kind`` in its stored form) with its own
idempotency key: recording an event whose kind and key are recorded already is a
repeat, not a new event.

A kind is only ever added; a record's fields only grow, with defaults.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, TypeAlias

from msgspec import Struct

from errord.decide.model.decisions import Decision
from errord.decide.model.failures import CallKey, ClosedEnum, FailureReport, ReportKey
from errord.decide.model.outcomes import ClosedEpisode, Episode, MemoryKey, OutcomeReport
from errord.decide.model.scope import tool_key
from errord.decide.model.tool_state import BreakerChange, BreakerState, RateWindow
from errord.decide.model.turns import PlannedCall, RetryBudget, TurnSummary


class EventKind(ClosedEnum):
    """The closed set of trace event kinds; the value is the stored tag."""

    FAILURE = "failure"
    OUTCOME = "outcome"
    TURN_BEGAN = "turn_began"
    BREAKER = "breaker"
    TURN_ENDED = "turn_ended"
    MEMORY_FORGOTTEN = "memory_forgotten"
    MANIFESTS_RELOADED = "manifests_reloaded"
    RATE_LIMITED = "rate_limited"


class _Event(Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="kind", gc=False):
    kind: ClassVar[EventKind]


class _OfAnAttempt:
    """A call event names its turn, its call and, as its key, the attempt it reports on."""

    __slots__ = ()
    report: FailureReport | OutcomeReport

    @property
    def turn_id(self) -> str:
        return self.report.turn_id

    @property
    def call(self) -> CallKey:
        return CallKey(self.report.turn_id, self.report.call_id)

    @property
    def dedup_key(self) -> ReportKey:
        return self.report.key


class FailureEvent(_Event, _OfAnAttempt, frozen=True, tag=EventKind.FAILURE.value):
    """A reported failure (arguments redacted) with the decision given."""

    kind = EventKind.FAILURE
    report: FailureReport
    decision: Decision
    opens: Episode | None = None
    """The episode the decision begins: a RETRY, or the alternative tool."""
    closes: ClosedEpisode | None = None
    """The episode this failure ends: the attempt an earlier decision's recovery made."""
    mistake: str = ""
    """The model's mistake a RETURN_TO_MODEL hands back to it (errord.decide.texts.correction), as
    the turn counts it; empty for any other decision, and in events recorded before."""
    execution: float | None = None
    """When the decision ends the call's execution of the tool (anything but RETRY, after
    an attempt of it ran): seconds the execution took, its attempts' run time and the
    retry delays granted between them. None otherwise, and in events recorded before
    errord counted executions."""


class OutcomeEvent(_Event, _OfAnAttempt, frozen=True, tag=EventKind.OUTCOME.value):
    """A reported outcome of one attempt."""

    kind = EventKind.OUTCOME
    report: OutcomeReport
    breaker: BreakerState | None = None
    """The tool's circuit breaker after this outcome, when the outcome changed it."""
    closes: ClosedEpisode | None = None
    """The episode this outcome ends, when the attempt was an earlier decision's recovery."""
    execution: float | None = None
    """For a success, which ends the call's execution of the tool: seconds the execution
    took, as FailureEvent.execution. None for a failure, and in events recorded before
    errord counted executions."""


class _OfATurn:
    """A turn event names its turn and no call; the turn is its key (one of each kind)."""

    __slots__ = ()
    turn_id: str

    @property
    def call(self) -> None:
        return None

    @property
    def dedup_key(self) -> tuple[str]:
        return (self.turn_id,)


class TurnBegan(_Event, _OfATurn, frozen=True, tag=EventKind.TURN_BEGAN.value):
    """A turn began: with BeginTurn, or with its first report when the executor did not
    begin it explicitly."""

    kind = EventKind.TURN_BEGAN
    turn_id: str
    implicit: bool = True
    """True when the turn began with its first report rather than being begun explicitly."""
    deadline: datetime | None = None
    """When the turn must be done; None in turns recorded before deadlines existed."""
    retry_budget: RetryBudget | None = None
    """The turn's own retry budget; None for the daemon's."""
    plan: tuple[PlannedCall, ...] = ()
    """The calls the turn will make and what they depend on; empty when not given."""


class TurnEnded(_Event, _OfATurn, frozen=True, tag=EventKind.TURN_ENDED.value):
    """EndTurn closed a turn; how it ended."""

    kind = EventKind.TURN_ENDED
    turn_id: str
    summary: TurnSummary


class BreakerChanged(_Event, frozen=True, tag=EventKind.BREAKER.value):
    """A tool's circuit breaker changed phase: by the report of the turn ``turn_id``, or
    by an operator (``turn_id`` empty)."""

    kind = EventKind.BREAKER
    tool: str
    change: BreakerChange
    breaker: BreakerState
    """The breaker right after the change."""
    turn_id: str = ""
    by: str = ""
    """Who changed it by hand (reset, forced open), as the operator said."""
    scope: str = ""
    """The scope whose breaker it is (errord.decide.model.scope); empty: the tool's own."""

    @property
    def call(self) -> None:
        return None

    @property
    def tool_key(self) -> str:
        return tool_key(self.tool, self.scope)

    @property
    def dedup_key(self) -> tuple[str, int]:
        return (self.tool_key, self.breaker.generation)


class RateLimited(_Event, frozen=True, tag=EventKind.RATE_LIMITED.value):
    """A tool's rate-limit window opened, or grew longer: by the rate-limited failure the
    turn ``turn_id`` reported."""

    kind = EventKind.RATE_LIMITED
    tool: str
    window: RateWindow
    turn_id: str = ""
    scope: str = ""
    """The scope whose window it is (errord.decide.model.scope); empty: the tool's own."""

    @property
    def call(self) -> None:
        return None

    @property
    def tool_key(self) -> str:
        return tool_key(self.tool, self.scope)

    @property
    def dedup_key(self) -> tuple[str, int]:
        return (self.tool_key, self.window.generation)


class ForgetReason(ClosedEnum):
    """Why episodic memory forgot an error."""

    AGE = "age"
    """Not seen for memory_max_age_seconds."""
    CAPACITY = "capacity"
    """Among the least recently seen when memory held more than memory_max_errors."""


class _OfTheDaemon:
    """An event of the daemon itself, of no turn and no call; its own id is its key."""

    __slots__ = ()
    event_id: str

    @property
    def turn_id(self) -> str:
        return ""

    @property
    def call(self) -> None:
        return None

    @property
    def dedup_key(self) -> tuple[str]:
        return (self.event_id,)


class MemoryForgotten(_Event, _OfTheDaemon, frozen=True, tag=EventKind.MEMORY_FORGOTTEN.value):
    """Episodic memory forgot errors, each with every episode it held of it."""

    kind = EventKind.MEMORY_FORGOTTEN
    event_id: str
    """Unique to this event: its idempotency key."""
    reason: ForgetReason
    errors: tuple[MemoryKey, ...]


class ManifestsReloaded(_Event, _OfTheDaemon, frozen=True, tag=EventKind.MANIFESTS_RELOADED.value):
    """The manifests directory was read again; applied, or invalid and the set in force
    kept."""

    kind = EventKind.MANIFESTS_RELOADED
    event_id: str
    """Unique to this event: its idempotency key."""
    applied: bool
    tools: int
    """Tools with a manifest in force after the reload."""
    problems: tuple[str, ...] = ()
    by: str = ""


EventDetail: TypeAlias = (
    FailureEvent
    | OutcomeEvent
    | TurnBegan
    | BreakerChanged
    | TurnEnded
    | MemoryForgotten
    | ManifestsReloaded
    | RateLimited
)


class TraceEvent(Struct, frozen=True, gc=False):
    """One entry of the trace: an event with its place in the sequence."""

    sequence: int
    """Position in the trace, increasing in commit order."""
    time: datetime
    detail: EventDetail

    @property
    def kind(self) -> EventKind:
        return self.detail.kind

    @property
    def turn_id(self) -> str:
        return self.detail.turn_id
