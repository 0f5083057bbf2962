"""Domain values: what a failure, a classification, a decision and a trace event are.

Plain frozen dataclasses and closed enums; no gRPC and no SQL. Durations are
float seconds, timestamps timezone-aware UTC datetimes. The enum values are the
names used in storage, logs and rule names (``default:code:TIMEOUT``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, TypeAlias

JSONValue: TypeAlias = Any
"""A value that JSON can hold: dict, list, str, int, float, bool or None."""


class ErrorCode(Enum):
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


class ErrorClass(Enum):
    """Whether retrying the same call can help."""

    TRANSIENT = "TRANSIENT"
    PERMANENT = "PERMANENT"


class Action(Enum):
    """What the executor should do next."""

    RETRY = "RETRY"
    USE_ALTERNATIVE = "USE_ALTERNATIVE"
    CONTINUE_PARTIAL = "CONTINUE_PARTIAL"
    USE_DEFAULT = "USE_DEFAULT"
    SKIP = "SKIP"
    ESCALATE = "ESCALATE"
    FAIL = "FAIL"


class Outcome(Enum):
    """How an attempt ended."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"


@dataclass(frozen=True)
class ToolFailure:
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


@dataclass(frozen=True)
class ReportKey:
    """The idempotency key of a failure report or an outcome."""

    turn_id: str
    call_id: str
    tool: str
    attempt: int


@dataclass(frozen=True)
class FailureReport:
    """One failed attempt of a tool call."""

    turn_id: str
    call_id: str
    tool: str
    attempt: int
    """Which attempt of ``tool`` for this call failed, starting at 1."""
    error: ToolFailure
    arguments: Mapping[str, JSONValue]
    """The tool input (redacted before it is stored)."""
    elapsed: float = 0.0
    """Seconds the failed attempt ran."""

    @property
    def key(self) -> ReportKey:
        return ReportKey(self.turn_id, self.call_id, self.tool, self.attempt)


@dataclass(frozen=True)
class Classification:
    """errord's verdict on a failure and the rule that reached it."""

    error_class: ErrorClass
    code: ErrorCode
    rule: str
    """Which rule decided, such as ``default:code:TIMEOUT`` or
    ``manifest:flight_search:classification[0]``."""


@dataclass(frozen=True)
class Decision:
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

    @property
    def key(self) -> ReportKey:
        return ReportKey(self.turn_id, self.call_id, self.tool, self.attempt)


@dataclass(frozen=True)
class OutcomeReport:
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

    @property
    def key(self) -> ReportKey:
        return ReportKey(self.turn_id, self.call_id, self.tool, self.attempt)


@dataclass(frozen=True)
class FailureEvent:
    """A reported failure (arguments redacted) with the decision given."""

    report: FailureReport
    decision: Decision


@dataclass(frozen=True)
class OutcomeEvent:
    """A reported outcome."""

    report: OutcomeReport


EventDetail: TypeAlias = FailureEvent | OutcomeEvent


@dataclass(frozen=True)
class TraceEvent:
    """One committed entry of a turn's trace."""

    sequence: int
    """Position in the trace, increasing in commit order."""
    time: datetime
    detail: EventDetail

    @property
    def key(self) -> ReportKey:
        return self.detail.report.key
