"""What a failure is: its cause, whether a retry can help and whose fault it is, as the
executor reports a failed attempt (``FailureReport``, ``ToolFailure``) and as errord
classifies it (``Classification``); and the bases of the domain's values (``Record``,
``ClosedEnum``).
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, TypeAlias

from msgspec import Struct, field

from errord.decide.model.scope import tool_key

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
    """The scope the attempt ran in (errord.decide.model.scope); empty: the tool alone."""

    @property
    def key(self) -> ReportKey:
        return ReportKey(self.turn_id, self.call_id, self.tool, self.attempt)

    @property
    def tool_key(self) -> str:
        """The key of the tool's state in the report's scope (errord.decide.model.scope)."""
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
