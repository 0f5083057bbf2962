"""What a violation of a tool's argument schema is: its kind, path, message and expectation."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ViolationKind(Enum):
    """What is wrong with an argument; the value is the wire's and the messages' name.

    The members' order is the order of violations at one parameter.
    """

    MISSING_PARAMETER = "missing_parameter"
    INVALID_TYPE = "invalid_type"
    INVALID_VALUE = "invalid_value"
    """Not one of the enum, not the const, or empty where it must not be."""
    OUT_OF_RANGE = "out_of_range"
    """minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf."""
    INVALID_LENGTH = "invalid_length"
    """min/maxLength, min/maxItems, min/maxProperties."""
    INVALID_FORMAT = "invalid_format"
    """pattern, format."""
    UNEXPECTED_PARAMETER = "unexpected_parameter"
    """A parameter the schema forbids: additionalProperties or a property schema false."""
    NOT_UNIQUE = "not_unique"
    SCHEMA_MISMATCH = "schema_mismatch"
    """anyOf, oneOf, not, contains, and any other keyword."""


KIND_RANK = {kind: rank for rank, kind in enumerate(ViolationKind)}
"""Each kind's place among the violations at one parameter."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One thing wrong with a call's arguments."""

    kind: ViolationKind
    parameter: str
    """Path of the parameter, such as ``passengers[0].name``; for a missing one, its
    own path; empty for the arguments as a whole."""
    message: str
    """One sentence the model can act on, such as
    ``Parameter 'count' must be an integer, got string.``"""
    expected: str
    """What the schema wants there, briefly: ``integer``, ``one of: a, b``."""
