"""Request validation: every field bounded before it is used, every problem named.

Every problem in a request becomes a FieldViolation naming the field by its proto
path, and all of them are reported together (``Violations``). The bounds:
identifiers (at most MAX_ID_LENGTH characters, no control characters), texts,
attempts (1 to MAX_ATTEMPT), durations and timestamps (their protobuf ranges), page
tokens (at most MAX_PAGE_TOKEN_LENGTH digits, never quoted back), JSON values
(MAX_JSON_BYTES, and errord.wire.plain_json's depth and members) and repeated fields
(MAX_BATCH failures, MAX_CALLS calls, dependencies and held results).

A failure report, which every decision starts from, meets the quick checks first
(``plain_*``): they name nothing, and raise NotPlain at a value they cannot vouch
for; only then does ``Violations`` look at the request, naming each problem. What
the quick checks pass, the careful ones pass unchanged.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import Enum
from typing import TypeVar

from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2

from errord.decide.model import JSONValue
from errord.errors import FieldViolation, InvalidRequest
from errord.wire.plain_json import NotJSON, plain_struct, plain_value

MAX_ID_LENGTH = 512
MAX_TEXT_LENGTH = 16_384
"""Characters of an error message; a report must stay far below gRPC's 4 MiB message cap."""
MAX_JSON_BYTES = 262_144
"""Serialized bytes of the arguments, and of a partial result."""
MAX_PAGE_TOKEN_LENGTH = 20
"""Characters of a page token: the digits of a sequence number."""
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
"""What an identifier may not hold: NUL, newlines, escapes (logs and terminals show ids)."""
MAX_ATTEMPT = 10_000
MAX_BATCH = 256
"""Failures in one ReportFailures call."""
MAX_CALLS = 1024
"""Tool calls, and held results, in one ReconcileResults call."""
MAX_SEQUENCE = 2**63 - 1  # SQLite's largest integer
DEFAULT_PAGE_SIZE = 1000
MAX_DURATION_SECONDS = 315_576_000_000  # google.protobuf.Duration's range
TIMESTAMP_SECONDS = range(-62_135_596_800, 253_402_300_800)  # 0001-01-01 to 9999-12-31

E = TypeVar("E", bound=Enum)
"""A domain enum, its members mapped from wire numbers (errord.wire.requests.wire_enum)."""


class NotPlain(Exception):
    """A quick check met a value it cannot vouch for: Violations is to look at it."""


def is_plain_identifier(value: str) -> bool:
    """True when ``value`` is plainly an identifier, as nearly all are: str's own C loops
    instead of a regular expression. A printable string holds no control characters and
    no whitespace but the space, so one that is not all spaces is not blank."""
    return 0 < len(value) <= MAX_ID_LENGTH and value.isprintable() and not value.isspace()


def plain_identifier(value: str) -> str:
    """``value``, plainly an identifier; NotPlain for ``Violations.identifier`` to look at."""
    if is_plain_identifier(value):
        return value
    raise NotPlain


def plain_text(value: str, limit: int = MAX_TEXT_LENGTH) -> str:
    """``value``, at most ``limit`` characters long; NotPlain otherwise."""
    if len(value) <= limit:
        return value
    raise NotPlain


def plain_attempt(value: int) -> int:
    """``value``, an attempt from 1 to MAX_ATTEMPT; NotPlain otherwise."""
    if 1 <= value <= MAX_ATTEMPT:
        return value
    raise NotPlain


def is_plain_duration(duration: duration_pb2.Duration) -> bool:
    """True when ``duration`` is plainly valid for errord: in range and not negative."""
    return 0 <= duration.seconds <= MAX_DURATION_SECONDS and 0 <= duration.nanos < 1_000_000_000


def plain_seconds(duration: duration_pb2.Duration) -> float:
    """A Duration as float seconds, as ``Violations.seconds`` gives it."""
    if is_plain_duration(duration):
        return duration.seconds + duration.nanos / 1e9
    raise NotPlain


def plain_moment(timestamp: timestamp_pb2.Timestamp) -> datetime:
    """A Timestamp as a datetime, as ``Violations.moment`` gives it."""
    if timestamp.seconds in TIMESTAMP_SECONDS and 0 <= timestamp.nanos < 1_000_000_000:
        return timestamp.ToDatetime(UTC)
    raise NotPlain


def plain_json(message: struct_pb2.Struct | struct_pb2.Value) -> JSONValue:
    """A Struct or Value as plain JSON, as ``Violations.json`` gives it."""
    if message.ByteSize() > MAX_JSON_BYTES:
        raise NotPlain
    try:
        if isinstance(message, struct_pb2.Struct):
            return plain_struct(message)
        return plain_value(message)
    except NotJSON:
        raise NotPlain from None


class Violations:
    """Collects field violations; raises them together."""

    def __init__(self, prefix: str = "", found: list[FieldViolation] | None = None) -> None:
        self.prefix = prefix
        """Put before every field named, for a message nested in the request."""
        self.found: list[FieldViolation] = [] if found is None else found

    def within(self, prefix: str) -> Violations:
        """Violations of a nested message (``failures[2].``), collected with these."""
        return Violations(self.prefix + prefix, self.found)

    def add(self, field: str, description: str) -> None:
        self.found.append(FieldViolation(self.prefix + field, description))

    def raise_any(self) -> None:
        if self.found:
            raise InvalidRequest(self.found)

    def identifier(self, field: str, value: str) -> str:
        if is_plain_identifier(value):
            return value
        if not value.strip():
            self.add(field, "required")
        elif len(value) > MAX_ID_LENGTH:
            self.add(field, f"at most {MAX_ID_LENGTH} characters, got {len(value)}")
        elif CONTROL_CHARACTERS.search(value):
            self.add(field, "must not contain control characters (U+0000 to U+001F, U+007F)")
        return value

    def text(self, field: str, value: str, limit: int = MAX_TEXT_LENGTH) -> str:
        if len(value) > limit:
            self.add(field, f"at most {limit} characters, got {len(value)}")
        return value

    def json(self, field: str, message: struct_pb2.Struct | struct_pb2.Value) -> JSONValue:
        """A Struct or Value as plain JSON; must be finite, at most MAX_JSON_BYTES, nest at
        most MAX_JSON_DEPTH levels and hold at most MAX_JSON_MEMBERS members and items."""
        size = message.ByteSize()
        if size > MAX_JSON_BYTES:
            self.add(field, f"at most {MAX_JSON_BYTES} bytes serialized, got {size}")
            return None
        try:
            if isinstance(message, struct_pb2.Struct):
                return plain_struct(message)
            return plain_value(message)
        except NotJSON as error:
            self.add(field, str(error))
            return None

    def moment(self, field: str, timestamp: timestamp_pb2.Timestamp) -> datetime | None:
        if timestamp.seconds not in TIMESTAMP_SECONDS or not 0 <= timestamp.nanos < 1_000_000_000:
            self.add(field, "out of range for a google.protobuf.Timestamp")
            return None
        return timestamp.ToDatetime(UTC)

    def sequence(self, field: str, value: int) -> int:
        if value > MAX_SEQUENCE:
            self.add(field, f"at most {MAX_SEQUENCE}, got {value}")
            return 0
        return value

    def attempt(self, value: int) -> int:
        if not 1 <= value <= MAX_ATTEMPT:
            self.add(
                "attempt", f"must be from 1 to {MAX_ATTEMPT} (attempts count from 1), got {value}"
            )
        return value

    def seconds(self, field: str, duration: duration_pb2.Duration) -> float:
        """A Duration as float seconds; must be valid and not negative."""
        seconds, nanos = duration.seconds, duration.nanos
        if is_plain_duration(duration):
            return seconds + nanos / 1e9
        if abs(seconds) > MAX_DURATION_SECONDS or abs(nanos) >= 1_000_000_000:
            self.add(field, "out of range for a google.protobuf.Duration")
        elif seconds * nanos < 0:
            self.add(field, "seconds and nanos must have the same sign")
        elif seconds < 0 or nanos < 0:
            self.add(field, "must not be negative")
        return seconds + nanos / 1e9

    def enum(self, field: str, number: int, members: dict[int, E]) -> E | None:
        """The domain member for a wire number; None (and a violation) when unknown."""
        if number in members:
            return members[number]
        self.add(field, f"unknown enum value {number}")
        return None
