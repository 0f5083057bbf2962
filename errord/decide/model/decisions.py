"""What errord decides of a failure (``Decision``): what the executor does next, why no
retry was granted, what it means for the turn's other calls, what the model must
correct, the memory it read, and the texts for the model, the user and the logs.
"""

from __future__ import annotations

from datetime import datetime

from msgspec import Struct

from errord.decide.model.failures import Classification, ClosedEnum, JSONValue, Record, ReportKey
from errord.decide.model.tool_state import BreakerState


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
