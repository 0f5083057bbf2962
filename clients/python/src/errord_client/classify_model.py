"""The records the classification (errord_client._classify, generated from errord's own,
errord/decide/classify) reads and returns, as the executor holds them: the same names and
values as the daemon's (errord/decide/model), in plain Python, so that the local policy
classifies a failure exactly as errord does when errord does not answer.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

JSONValue: TypeAlias = Any
"""A JSON value: None, bool, int, float, str, a list or a dict of them."""


class ErrorCode(enum.Enum):
    """The normalized cause of a tool failure (the daemon's ErrorCode)."""

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
    INTERNAL = "INTERNAL"


class ErrorClass(enum.Enum):
    """Whether retrying the same call can help."""

    TRANSIENT = "TRANSIENT"
    PERMANENT = "PERMANENT"


class Fault(enum.Enum):
    """Who can act on a failure."""

    ARGUMENTS = "ARGUMENTS"
    TOOL = "TOOL"
    BACKEND = "BACKEND"
    PERSON = "PERSON"


@dataclass(frozen=True, slots=True)
class Classification:
    """A failure's classification, and the rule that reached it."""

    error_class: ErrorClass
    code: ErrorCode
    rule: str
    fault: Fault | None = None
    parameter: str = ""


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """What the classification reads of a failure."""

    code: ErrorCode | None = None
    http_status: int | None = None
    exception_type: str = ""
    message: str = ""
    api_message: str = ""
    api_parameter: str = ""
    api_code: str = ""


class ClassificationRule(Protocol):
    """A manifest's rule (the executor has none: errord holds the manifests)."""

    error_class: ErrorClass

    def matches(self, failure: ToolFailure, code: ErrorCode) -> bool: ...
