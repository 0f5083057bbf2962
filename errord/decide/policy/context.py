"""What a decision reads: one immutable ``DecisionContext`` of a failure, built by the
engine from its parts (the tool, the call, the turn, the breakers, the plan), and the
readings of it that backoff, gates and fallbacks share.

The parts are frozen ``msgspec.Struct``s rather than frozen dataclasses: every decision
builds several, and a Struct is built in C (a frozen dataclass sets each field through
``object.__setattr__``). They hold no references back, so they stay out of the cyclic
garbage collector (``gc=False``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from msgspec import Struct, field

from errord.decide.manifest import ToolManifest, ToolPart
from errord.decide.memory import Evidence
from errord.decide.model import (
    CLOSED_BREAKER,
    BreakerState,
    Classification,
    DefaultValue,
    ErrorClass,
    ErrorCode,
    FailureReport,
    ParameterProblem,
    RateWindow,
    RetryBudget,
)
from errord.decide.policy.plan import Waiting


class CallPart(Struct, frozen=True, gc=False):
    """What the call went through before this failure."""

    retry_time_spent: float = 0.0
    """Seconds of retry delay errord already granted this call for this tool."""
    failed_tools: frozenset[str] = frozenset()
    """Tools that failed on this call, the failing one included."""
    corrections: int = 0
    """Times the model was already handed this call's error to correct it."""
    refused: int = 0
    """Attempts of the tool on this call that errord refused before they ran (an open
    breaker, a rate-limit window), this one included when it is one: they do not count
    against the call's attempts."""
    was_refused: bool = False
    """True when the failure is errord's own refusal of the attempt: it never ran."""


class TurnPart(Struct, frozen=True, gc=False):
    """What is known of the turn the call belongs to."""

    began_at: datetime | None = None
    """When errord saw the turn begin; None when this report begins it."""
    calls: int = 1
    """Calls of the turn with a reported failure, this one's included."""
    retries: int = 0
    """RETRY decisions the turn's calls were granted so far."""
    deadline: datetime | None = None
    """When the turn must be done; None when it has no deadline."""
    retry_budget: RetryBudget | None = None
    """The turn's own retry budget; None for the daemon's."""
    corrections: int = 0
    """RETURN_TO_MODEL decisions the turn's calls were given so far: each spends the
    turn's retry budget as a retry does."""
    told: int = 0
    """Times the model was already handed this failure's mistake (errord.decide.texts.correction)
    in this turn, under any call id; 0 for a failure the model did not cause."""


class BreakerPart(Struct, frozen=True, gc=False):
    """The circuit breakers the decision reads."""

    state: BreakerState = CLOSED_BREAKER
    """The failing tool's breaker, with this failure counted."""
    open_tools: frozenset[str] = frozenset()
    """The tool's alternatives whose breaker is open."""
    window: RateWindow | None = None
    """The tool's rate-limit window, if it ever had one: while it holds, no retry is
    sooner than its end."""
    probe_time: float = 0.0
    """Seconds a half-open breaker's probe may take: the timeout the executor enforces
    (the manifest's, else the one the executor declared, else the default)."""


class ToolHistory(Struct, frozen=True, gc=False):
    """What the tool did lately for any call: what weakens episodic memory's verdicts."""

    succeeded_at: datetime | None = None
    """When an attempt of the tool last succeeded."""
    reset_at: datetime | None = None
    """When an operator last reset its breaker."""


class PlanPart(Struct, frozen=True, gc=False):
    """What the turn's plan says of the call: what stands in for its result, and which
    calls wait on it. For a call outside any plan, its tool manifest's fallbacks."""

    optional: bool = False
    """True when the turn can go on without the call's result."""
    default: DefaultValue | None = None
    """The call's default result."""
    waiting: tuple[Waiting, ...] = ()
    """The calls that wait on it, directly or through others, in execution order."""


class DecisionContext(Struct, frozen=True, gc=False):
    """Everything known about one failure when deciding on it; built by the engine."""

    report: FailureReport
    classification: Classification
    tool: ToolPart
    call: CallPart
    turn: TurnPart
    now: datetime
    breaker: BreakerPart = BreakerPart()
    plan: PlanPart = PlanPart()
    problems: tuple[ParameterProblem, ...] = ()
    """How the reported arguments break the tool's JSON Schema, when the failure says
    they were invalid and the tool has one."""
    memory: Mapping[str, Evidence] = field(default_factory=dict)
    """What episodic memory knows of this tool's error, per recovery (errord.decide.memory)."""
    history: ToolHistory = ToolHistory()
    """What the tool did lately for other calls."""
    decision_id: str = ""
    """The id the decision will have: what seeds its jitter (errord.decide.policy.backoff)."""

    @property
    def manifest(self) -> ToolManifest:
        return self.tool.manifest

    @property
    def attempts_run(self) -> int:
        """Attempts of this tool that ran on this call, the failed one included (a refused
        attempt did not run)."""
        return self.report.attempt - self.call.refused  # refused ones are among the attempts

    @property
    def retries_left(self) -> int:
        """Attempts of this tool still allowed after the one that failed."""
        return max(0, self.manifest.retry_policy.max_attempts - self.attempts_run)


def requested_delay(context: DecisionContext) -> float | None:
    """Seconds the tool asked to wait: from retry_after or retry_at, and no sooner than
    its rate-limit window ends; None if it did not ask and no window holds it."""
    asked = own_request(context)
    window = context.breaker.window
    if window is None or not window.holds(context.now):
        return asked
    return max(asked or 0.0, window.left(context.now))


def own_request(context: DecisionContext) -> float | None:
    """Seconds the failure itself asked to wait, from retry_after or retry_at; None if it
    did not ask."""
    error = context.report.error
    if error.retry_after is not None:
        return max(0.0, error.retry_after)
    if error.retry_at is not None:
        return max(0.0, (error.retry_at - context.now).total_seconds())
    return None


def time_left(context: DecisionContext) -> float | None:
    """Seconds until the turn's deadline (negative once past); None without one."""
    deadline = context.turn.deadline
    return None if deadline is None else (deadline - context.now).total_seconds()


def waits_its_turn(context: DecisionContext) -> bool:
    """True for a rate limit that says how long to wait: the tool's own (a Retry-After, a
    time), or errord's refusal while the tool's rate-limit window holds. Its attempts do
    not count against max_attempts."""
    classification = context.classification
    return (
        classification.code is ErrorCode.RATE_LIMITED
        and classification.error_class is ErrorClass.TRANSIENT
        and requested_delay(context) is not None
    )
