"""A turn and its calls: its retry budget, its plan (which call waits on which, and what
stands in for a result), where each call stands, and how the turn ended.
"""

from __future__ import annotations

import math
from datetime import datetime

from msgspec import Struct, field

from errord.decide.model.decisions import Action, DefaultValue
from errord.decide.model.failures import ClosedEnum, JSONValue, Record
from errord.errors import InvalidValue


class RetryBudget(Record, frozen=True):
    """How many retries one turn's calls may be granted in all, so that a turn's parallel
    calls failing at once cannot start a retry storm (as Envoy's retry budgets)."""

    max_retries: int | None = None
    """At most this many; None for no count."""
    max_share: float | None = None
    """At most this many per call of the turn (with a reported failure), rounded up;
    None for no share."""

    def __post_init__(self) -> None:
        if self.max_retries is not None and self.max_retries < 0:
            raise InvalidValue("max_retries", "must not be negative")
        if self.max_share is not None and not 0 <= self.max_share <= 1000:
            raise InvalidValue("max_share", "must be from 0 to 1000")

    def allows(self, calls: int) -> int | None:
        """Retries allowed to a turn of ``calls`` calls; None when unlimited."""
        limits = []
        if self.max_retries is not None:
            limits.append(self.max_retries)
        if self.max_share is not None:
            limits.append(math.ceil(self.max_share * calls))
        return min(limits) if limits else None


class CallStatus(ClosedEnum):
    """Where one call of a turn stands; every status but PENDING is final."""

    PENDING = "PENDING"
    """Not run yet, running, or being recovered (a retry or an alternative)."""
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    """Ended without a result: escalated, or failed for good."""
    SKIPPED = "SKIPPED"
    DEFAULTED = "DEFAULTED"
    """Ended with its default result."""
    PARTIAL = "PARTIAL"
    """Ended with the partial result its tool returned."""
    TIMED_OUT = "TIMED_OUT"
    """Still unfinished when the turn ended at or after its deadline."""


STATUS_AFTER: dict[Action, CallStatus] = {
    Action.RETRY: CallStatus.PENDING,
    Action.USE_ALTERNATIVE: CallStatus.PENDING,
    Action.CONTINUE_PARTIAL: CallStatus.PARTIAL,
    Action.USE_DEFAULT: CallStatus.DEFAULTED,
    Action.SKIP: CallStatus.SKIPPED,
    Action.ESCALATE: CallStatus.FAILED,
    Action.FAIL: CallStatus.FAILED,
    Action.RETURN_TO_MODEL: CallStatus.PENDING,
}
"""What a call's status becomes with a decision (or a consequence) of each action."""


WITHOUT_RESULT = frozenset({Action.SKIP, Action.ESCALATE, Action.FAIL})
"""Actions after which a call has no result: the calls waiting on it cannot run as planned."""


class PlannedCall(Record, frozen=True):
    """One call of a turn's plan (BeginTurn): what it waits on, and what stands in for
    its result when it has none."""

    call_id: str
    tool: str
    depends_on: tuple[str, ...] = ()
    """Calls of the plan whose results it needs."""
    optional: bool | None = None
    """True when the turn can go on without it; None: as its tool's manifest says."""
    default: DefaultValue | None = None
    """Its result when it cannot have its own; None: its tool manifest's default."""
    arguments: dict[str, JSONValue] = field(default_factory=dict)
    """The call's input, redacted."""


class TakenDecision(Struct, frozen=True, array_like=True, gc=False):
    """One decision on a call, as a turn's summary lists it."""

    decision_id: str
    tool: str
    attempt: int
    action: Action


class CallProgress(Struct, frozen=True, omit_defaults=True, gc=False):
    """Where one call of a turn stands."""

    tool: str
    """The tool it last ran (or, for a planned call not run yet, the plan's)."""
    status: CallStatus = CallStatus.PENDING
    decisions: tuple[TakenDecision, ...] = ()
    blocked_by: str = ""
    """The call it waited on that ended without a result, when that ended it."""


class CallSummary(Record, frozen=True):
    """How one call of a turn ended."""

    call_id: str
    tool: str
    status: CallStatus
    detail: str = ""
    """Why it ended so, in a sentence a developer reads."""
    blocked_by: str = ""
    """The call it waited on that ended without a result, when that ended it."""
    decisions: tuple[TakenDecision, ...] = ()


class TurnSummary(Record, frozen=True):
    """How a turn ended: each call's final status, and what to tell the user."""

    turn_id: str
    began_at: datetime
    ended_at: datetime
    deadline: datetime | None = None
    calls: tuple[CallSummary, ...] = ()
    """The plan's calls in its order, then the others in the order errord heard of them."""
    user_notice: str = ""
    """What the turn did, in plain words, such as "Completed flight search, but hotel
    search timed out"."""

    @property
    def deadline_passed(self) -> bool:
        return self.deadline is not None and self.ended_at >= self.deadline
