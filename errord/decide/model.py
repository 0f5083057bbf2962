"""Domain values: what a failure, a classification and a decision are.

Frozen ``msgspec.Struct`` records and closed enums; no gRPC and no SQL. The
records cross one boundary, the trace database, where ``errord.state.codec``
encodes them from these type annotations. Durations are float seconds,
timestamps timezone-aware UTC datetimes. The enum values are the names used in
storage, logs and rule names (``default:code:TIMEOUT``).

Fields are only ever added, with a default, so that older stored records decode.
"""

from __future__ import annotations

import math
from datetime import datetime
from enum import Enum
from typing import Any, TypeAlias

from msgspec import Struct, field

from errord.decide.scope import tool_key

JSONValue: TypeAlias = Any
"""A value that JSON can hold: dict, list, str, int, float, bool or None."""


class ClosedEnum(Enum):
    """Base of errord's closed sets: members hash by identity, as they compare.

    Enum's own ``__hash__`` hashes the member's name in Python code, a call that every
    dict or set lookup keyed by a member pays; a decision makes a dozen.
    """

    __hash__ = object.__hash__


class ErrorCode(ClosedEnum):
    """The normalized cause of a tool failure."""

    TIMEOUT = "TIMEOUT"
    CONNECTION = "CONNECTION"
    RATE_LIMITED = "RATE_LIMITED"
    UNAVAILABLE = "UNAVAILABLE"
    INVALID_INPUT = "INVALID_INPUT"
    AUTH = "AUTH"
    NOT_FOUND = "NOT_FOUND"
    UNSUPPORTED = "UNSUPPORTED"
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    SCHEMA_VIOLATION = "SCHEMA_VIOLATION"
    UNKNOWN = "UNKNOWN"
    CIRCUIT_OPEN = "CIRCUIT_OPEN"
    """errord's breaker refused the attempt before it ran (AdmitCall): the tool never ran."""
    INTERNAL = "INTERNAL"
    """The tool's own code failed: an exception of its own making (a bug)."""


class Fault(ClosedEnum):
    """Who can act on a failure, and so how errord recovers from it."""

    ARGUMENTS = "ARGUMENTS"
    """The call's arguments: the model can fix them."""
    TOOL = "TOOL"
    """The tool's own code: nobody can fix it within the turn."""
    BACKEND = "BACKEND"
    """The tool's backend or the network: time may fix it."""
    PERSON = "PERSON"
    """Something only a person can fix: credentials, billing, a permission policy."""


class ErrorClass(ClosedEnum):
    """Whether retrying the same call can help."""

    TRANSIENT = "TRANSIENT"
    PERMANENT = "PERMANENT"


class Action(ClosedEnum):
    """What the executor should do next."""

    RETRY = "RETRY"
    USE_ALTERNATIVE = "USE_ALTERNATIVE"
    CONTINUE_PARTIAL = "CONTINUE_PARTIAL"
    USE_DEFAULT = "USE_DEFAULT"
    SKIP = "SKIP"
    ESCALATE = "ESCALATE"
    FAIL = "FAIL"
    RETURN_TO_MODEL = "RETURN_TO_MODEL"
    """Hand the error back to the model to correct its call: its arguments, or the tool
    it named."""


class Outcome(ClosedEnum):
    """How an attempt ended."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"


class RefusalKind(ClosedEnum):
    """Why a retry was not granted."""

    PERMANENT_ERROR = "PERMANENT_ERROR"
    NOT_IDEMPOTENT = "NOT_IDEMPOTENT"
    ATTEMPTS_EXHAUSTED = "ATTEMPTS_EXHAUSTED"
    RETRY_TIME_EXHAUSTED = "RETRY_TIME_EXHAUSTED"
    RETRY_AFTER_TOO_LONG = "RETRY_AFTER_TOO_LONG"
    BREAKER_OPEN = "BREAKER_OPEN"
    """The tool's circuit breaker is open."""
    BREAKER_PROBING = "BREAKER_PROBING"
    """The breaker is half-open and its one probe is taken."""
    RETRY_BUDGET_SPENT = "RETRY_BUDGET_SPENT"
    """The turn was granted as many retries as its budget allows."""
    DEADLINE = "DEADLINE"
    """The retry would not end before the turn's deadline."""
    RETRIES_NEVER_FIX = "RETRIES_NEVER_FIX"
    """Episodic memory: retries of this error have not fixed it once, over enough episodes."""


class BreakerPhase(ClosedEnum):
    """Where a tool's circuit breaker stands: closed, open or half-open."""

    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


class BreakerChange(ClosedEnum):
    """A transition of a circuit breaker, recorded as a trace event."""

    OPENED = "OPENED"
    HALF_OPENED = "HALF_OPENED"
    CLOSED = "CLOSED"
    RESET = "RESET"
    """An operator closed it."""
    FORCED_OPEN = "FORCED_OPEN"
    """An operator opened it, for maintenance."""
    PROBE_CLAIMED = "PROBE_CLAIMED"
    """An executor claimed the half-open breaker's probe before running it (AdmitCall)."""


class Record(Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Base of the domain records: immutable, compared by value, stored without defaults.

    Records hold only values and other records, never a reference back, so they are
    left out of the cyclic garbage collector (``gc=False``): the daemon allocates
    several per report, and the projections hold many for long.
    """


class ToolFailure(Record, frozen=True):
    """How a tool call failed, as the executor saw it."""

    code: ErrorCode | None = None
    """The normalized cause if the executor knows it; None to let errord infer it."""
    http_status: int | None = None
    """The backend's HTTP status, if there was one."""
    exception_type: str = ""
    """The exception's type name, such as ``TimeoutError``."""
    message: str = ""
    """The technical error message."""
    retry_after: float | None = None
    """Seconds the tool asked to wait before a retry."""
    retry_at: datetime | None = None
    """The time the tool asked to retry at (an HTTP-date Retry-After)."""
    partial_result: JSONValue | None = None
    """What the tool produced before it failed; None when nothing."""
    api_message: str = ""
    """What the API's error response body said, when its backend answered with one."""
    api_parameter: str = ""
    """The parameter the API's error body names (Stripe's ``param``, pydantic's ``loc``)."""
    api_code: str = ""
    """The API's own error code, from its error body (``resource_missing``)."""


class ToolDeclaration(Record, frozen=True):
    """What an executor knows of a tool, for a tool errord has no manifest of."""

    parameters: dict[str, JSONValue] | None = None
    """The JSON Schema of the tool's arguments; None when the executor has none."""
    timeout: float | None = None
    """Seconds the executor lets each attempt of the tool run; None when it does not say."""


class CallKey(Struct, frozen=True, array_like=True, gc=False):
    """One tool call of one turn: the model's tool_call id within its turn."""

    turn_id: str
    call_id: str


class ReportKey(Struct, frozen=True, array_like=True, gc=False):
    """The idempotency key of a failure report or an outcome."""

    turn_id: str
    call_id: str
    tool: str
    attempt: int

    @property
    def call(self) -> CallKey:
        return CallKey(self.turn_id, self.call_id)


class FailureReport(Record, frozen=True):
    """One failed attempt of a tool call."""

    turn_id: str
    call_id: str
    tool: str
    attempt: int
    """Which attempt of ``tool`` for this call failed, starting at 1."""
    error: ToolFailure
    arguments: dict[str, JSONValue] = field(default_factory=dict)
    """The tool input (redacted before it is stored)."""
    elapsed: float = 0.0
    """Seconds the failed attempt ran."""
    user_id: str = ""
    """Who the agent acts for, for telemetry (hashed when the settings say); never logged."""
    session_id: str = ""
    """The agent's session, for telemetry, as ``user_id``."""
    declaration: ToolDeclaration | None = None
    """What the executor knows of the tool (its schema, its timeout); None when nothing. A
    tool without a manifest is decided with them (its half-open probe bounded by the
    timeout the executor enforces)."""
    scope: str = ""
    """The scope the attempt ran in (errord.decide.scope); empty: the tool alone."""

    @property
    def key(self) -> ReportKey:
        return ReportKey(self.turn_id, self.call_id, self.tool, self.attempt)

    @property
    def tool_key(self) -> str:
        """The key of the tool's state in the report's scope (errord.decide.scope)."""
        return tool_key(self.tool, self.scope)


class Classification(Struct, frozen=True, omit_defaults=True, gc=False):
    """errord's verdict on a failure and the rule that reached it."""

    error_class: ErrorClass
    code: ErrorCode
    rule: str
    """Which rule decided, such as ``default:code:TIMEOUT`` or
    ``manifest:flight_search:classification[0]``."""
    fault: Fault | None = None
    """Who can act on it; None in decisions recorded before errord said (read as the
    code's default: errord.decide.classify.fault)."""
    parameter: str = ""
    """The call's parameter the failure is about, when errord can tell; empty otherwise."""


class Probe(Record, frozen=True):
    """The one attempt a half-open breaker lets through."""

    turn_id: str
    call_id: str
    attempt: int
    """The attempt that probes: the one after the failure that was granted the retry."""
    until: datetime
    """When the probe is released if its outcome has not arrived: the retry's delay plus
    the tool's timeout after it was granted."""

    def is_attempt(self, turn_id: str, call_id: str, attempt: int) -> bool:
        return (self.turn_id, self.call_id, self.attempt) == (turn_id, call_id, attempt)


class BreakerState(Record, frozen=True):
    """One tool's circuit breaker, as recorded: with each decision, and as a projection."""

    phase: BreakerPhase = BreakerPhase.CLOSED
    failures: int = 0
    """Consecutive transient failures counted while closed (or by the failed probe)."""
    successes: int = 0
    """Consecutive successes counted while half-open."""
    opened_at: datetime | None = None
    """When it last opened."""
    half_opens_at: datetime | None = None
    """When an open breaker lets its probe through; None while open means until an
    operator resets it."""
    opens: int = 0
    """Times it opened, forced openings included."""
    generation: int = 0
    """Transitions so far; numbers the transition events."""
    probe: Probe | None = None
    """The half-open breaker's probe in flight, if any."""
    streak: int = 0
    """Openings in a row: since the breaker last stayed closed for its policy's cooldown.
    The break of the next one grows with it (BreakerPolicy.break_for)."""
    closed_at: datetime | None = None
    """When it last closed, or an operator reset it."""
    run_call: CallKey | None = None
    """The call whose failure began the run of ``failures``."""
    run_calls: int = 0
    """Distinct calls among the run of ``failures``, counted up to 2: one call's own
    retries are no evidence of an outage."""
    recent: int = 0
    """The recent attempts' outcomes, a bit each, the newest lowest: 1 failed, 0 succeeded.
    Only transient failures and successes count, from the first failure after a quiet
    spell on; the policy's ``window`` of them at most."""
    seen: int = 0
    """How many attempts ``recent`` holds."""
    failed_at: datetime | None = None
    """When the last transient failure was counted: the end of a quiet spell is read
    from it."""

    def effective_phase(self, now: datetime) -> BreakerPhase:
        """The phase at ``now``: an open breaker whose cooldown is over is half-open, even
        before the transition is recorded (by the next report of the tool)."""
        if self.phase is BreakerPhase.OPEN and self.cooldown_over(now):
            return BreakerPhase.HALF_OPEN
        return self.phase

    def cooldown_over(self, now: datetime) -> bool:
        return self.half_opens_at is not None and now >= self.half_opens_at

    def probe_in_flight(self, now: datetime) -> Probe | None:
        """The probe, unless its time ran out."""
        probe = self.probe
        return probe if probe is not None and now < probe.until else None

    @property
    def recent_failures(self) -> int:
        """Failures among the ``seen`` recent attempts."""
        return self.recent.bit_count()

    @property
    def break_length(self) -> float | None:
        """Seconds the current (or last) opening lasts; None when it never opened, or an
        operator opened it until a reset."""
        if self.opened_at is None or self.half_opens_at is None:
            return None
        return (self.half_opens_at - self.opened_at).total_seconds()


CLOSED_BREAKER = BreakerState()


class RateWindow(Record, frozen=True):
    """A tool's rate-limit window: its backend refused a call for its rate (a 429, a
    rate-limit error) and asked for a wait; until it ends errord holds every call of the
    tool, so that nobody calls into the limit. A rate limit is no outage: the breaker
    does not count it."""

    opened_at: datetime
    """When the rate limit that opened (or last lengthened) it was reported."""
    until: datetime
    """When calls may go again: the wait the tool asked for, else the retry's delay."""
    asked: float | None = None
    """Seconds the tool asked to wait (its Retry-After); None when it did not say."""
    generation: int = 0
    """Windows of the tool so far, this one included; numbers its events."""

    def holds(self, now: datetime) -> bool:
        """True while calls of the tool must wait."""
        return now < self.until

    def left(self, now: datetime) -> float:
        """Seconds until the window ends; 0 once it has."""
        return max(0.0, (self.until - now).total_seconds())


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
            raise ValueError("max_retries must not be negative")
        if self.max_share is not None and not 0 <= self.max_share <= 1000:
            raise ValueError("max_share must be from 0 to 1000")

    def allows(self, calls: int) -> int | None:
        """Retries allowed to a turn of ``calls`` calls; None when unlimited."""
        limits = []
        if self.max_retries is not None:
            limits.append(self.max_retries)
        if self.max_share is not None:
            limits.append(math.ceil(self.max_share * calls))
        return min(limits) if limits else None


class Refusal(Record, frozen=True):
    """A gate's reason to refuse a retry, with the figures that decided it."""

    kind: RefusalKind
    limit: float = 0.0
    """The policy's limit that was hit: attempts, or seconds."""
    spent: float = 0.0
    """Seconds already spent retrying (RETRY_TIME_EXHAUSTED)."""
    wait: float = 0.0
    """Seconds of the delay that would have been granted, or the tool asked for."""
    attempt: int = 0
    """The attempt that failed (ATTEMPTS_EXHAUSTED)."""
    granted: int = 0
    """Retries the turn was granted already, corrections included (RETRY_BUDGET_SPENT)."""
    corrected: int = 0
    """Of those, corrections: failures handed back to the model (RETRY_BUDGET_SPENT)."""
    recovered: float = 0.0
    """Similar failures retries recovered, decayed (RETRIES_NEVER_FIX)."""
    tried: float = 0.0
    """Similar failures retried with a known outcome, decayed (RETRIES_NEVER_FIX)."""


class DefaultValue(Struct, frozen=True, gc=False):
    """A tool's or a planned call's fallback result; wrapped so that a JSON null default
    is expressible."""

    value: JSONValue


class Consequence(Record, frozen=True):
    """What a decision means for another call of the same turn (a cascade): a call that
    waits, directly or through others, on the decided call, which ends without a result."""

    call_id: str
    action: Action
    """What that call does instead of running: SKIP, USE_DEFAULT or ESCALATE."""
    reason: str = ""
    tool: str = ""
    blocked_by: str = ""
    """The call it depends on that ends without a result: the decided call, or one of
    the calls skipped with it."""
    default_value: JSONValue | None = None
    """The call's default result (USE_DEFAULT)."""


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


class ParameterProblem(Record, frozen=True):
    """One way a call's arguments break the tool's JSON Schema."""

    kind: str
    """missing_parameter, invalid_type, invalid_value, out_of_range, invalid_length,
    invalid_format, unexpected_parameter, not_unique or schema_mismatch."""
    parameter: str
    """Its path in the arguments, such as ``passengers[1].age``."""
    message: str


class Correction(Record, frozen=True):
    """What the model needs to correct its own call, as structured fields."""

    kind: str
    """A ParameterProblem kind; ``unknown_tool`` for a tool that does not exist;
    ``invalid_arguments`` when errord cannot tell which argument is wrong."""
    message: str
    parameter: str = ""
    """The parameter to correct first, when known."""
    required_parameters: tuple[str, ...] = ()
    example: dict[str, JSONValue] | None = None
    """Arguments that satisfy the tool's JSON Schema, built from it."""
    retry_hint: str = ""
    problems: tuple[ParameterProblem, ...] = ()
    """Every violation of the schema found in the reported arguments."""
    known_tools: tuple[str, ...] = ()
    """For an unknown tool: the known tools closest to the name asked for, closest first."""
    corrections_left: int = 0
    """Further corrections of this call the policy allows after this one."""


class Recalled(Record, frozen=True):
    """One recovery's evidence as a decision read it (decayed counts)."""

    recovery: str
    """``RETRY``, or ``USE_ALTERNATIVE:<tool>``."""
    succeeded: float
    failed: float
    unknown: float
    from_fleet: float = 0.0
    """Of these bursts, how many other hosts of the fleet counted (errord.fleet); 0 alone."""


class Decision(Record, frozen=True):
    """One recovery decision, answering one failure report."""

    decision_id: str
    turn_id: str
    call_id: str
    tool: str
    attempt: int
    action: Action
    classification: Classification
    reason: str
    """Why, in a sentence a human can read."""
    llm_message: str
    """What to tell the model so it can act on the failure."""
    user_message: str
    """What to tell the user, without internals."""
    technical_message: str
    """The technical detail, for logs."""
    decided_at: datetime
    delay: float = 0.0
    """Seconds to wait before the retry (RETRY)."""
    next_attempt_timeout: float | None = None
    """Timeout in seconds for the next attempt (RETRY, USE_ALTERNATIVE)."""
    alternative_tool: str | None = None
    """The tool to call instead (USE_ALTERNATIVE)."""
    attempts_left: int = 0
    """More attempts of this tool the policy allows for this call."""
    default_policy: bool = False
    """True when the tool has no manifest and the default policy applied."""
    refusal: Refusal | None = None
    """Why no retry was granted; None for RETRY."""
    consequences: tuple[Consequence, ...] = ()
    """What the decision means for other calls of the turn."""
    breaker: BreakerState | None = None
    """The tool's circuit breaker once this failure was counted;
    None in decisions recorded before breakers existed."""
    probe: bool = False
    """True when this RETRY is the half-open breaker's one probe."""
    default_value: JSONValue | None = None
    """The tool's default result (USE_DEFAULT)."""
    correction: Correction | None = None
    """What the model must correct (RETURN_TO_MODEL, and an ESCALATE or FAIL after the
    last correction allowed)."""
    recalled: tuple[Recalled, ...] = ()
    """The episodic-memory evidence the decision read, per recovery of this error."""

    @property
    def key(self) -> ReportKey:
        return ReportKey(self.turn_id, self.call_id, self.tool, self.attempt)


class OutcomeReport(Record, frozen=True):
    """How one attempt of a tool call ended."""

    turn_id: str
    call_id: str
    tool: str
    attempt: int
    outcome: Outcome
    duration: float = 0.0
    """Seconds the attempt ran."""
    decision_id: str = ""
    """The decision the attempt followed, if any."""
    user_id: str = ""
    """As FailureReport's: for telemetry, never logged."""
    session_id: str = ""
    scope: str = ""
    """As FailureReport's: the scope the attempt ran in."""

    @property
    def key(self) -> ReportKey:
        return ReportKey(self.turn_id, self.call_id, self.tool, self.attempt)

    @property
    def tool_key(self) -> str:
        """The key of the tool's state in the report's scope (errord.decide.scope)."""
        return tool_key(self.tool, self.scope)


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


class EpisodeOutcome(ClosedEnum):
    """How a recovery errord decided on turned out."""

    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class Episode(Record, frozen=True):
    """A recovery whose outcome says whether it worked, for episodic memory: a RETRY of
    the failing tool, or the alternative tool used instead. The
    attempt that tells is attempt ``attempt`` of ``via`` on the same call."""

    tool: str
    """The tool that failed."""
    signature: str
    """Which error it was: errord.decide.signature.Signature.key."""
    action: Action
    decision_id: str
    decided_at: datetime
    via: str
    """The tool whose next attempt tells: the failing tool for RETRY, the alternative."""
    attempt: int
    """The attempt of ``via`` that tells."""
    until: datetime
    """When the telling attempt is over at the latest (the delay plus its timeout); an
    episode still open then has an unknown outcome."""
    fingerprint: str = ""
    """The error's message with its varying details replaced, for people to read."""
    scope: str = ""
    """The scope the failing tool ran in: memory is per tool and scope."""

    @property
    def tool_key(self) -> str:
        """The key of the failing tool's state in its scope (errord.decide.scope)."""
        return tool_key(self.tool, self.scope)


class ClosedEpisode(Record, frozen=True):
    """An episode with its outcome, as the report that told it records it."""

    episode: Episode
    outcome: EpisodeOutcome
    at: datetime
