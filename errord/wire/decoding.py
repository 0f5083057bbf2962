"""Request bytes to messages; bytes that do not decode are answered naming the field.

protobuf's DecodeError names only the message type. When decoding fails, the
bytes are walked in the wire format (each field a tag, then a varint, a fixed
size value or a length-prefixed one) to find the field that explains it: a
string that is not UTF-8, a message nested deeper than protobuf decodes, or a
message field whose own bytes are broken. Only a failed decode pays for the
walk, and it stops after ``WALK_BUDGET`` fields; what it cannot place is
answered as the field ``request``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar, cast

from google.protobuf import descriptor, message

from errord.errors import FieldViolation, InvalidRequest

M = TypeVar("M", bound=message.Message)

MAX_DEPTH = 100
"""Messages nested in one another that protobuf (upb) decodes, the request included."""
WALK_BUDGET = 10_000
"""Fields the walk looks at before it gives up."""
JSON_TYPES = frozenset(
    {
        "google.protobuf.Struct",
        "google.protobuf.Struct.FieldsEntry",
        "google.protobuf.Value",
        "google.protobuf.ListValue",
    }
)
"""Named by the field holding them: their insides have no field names of the request."""
TOO_DEEP = "nested too deeply to decode (JSON values may nest at most 32 levels)"
NOT_UTF8 = "not valid UTF-8 (protobuf strings must be)"
LENGTH_DELIMITED, VARINT, FIXED64, FIXED32 = 2, 0, 1, 5


def decode(kind: type[M], data: bytes) -> M:
    """``data`` as a ``kind``; raises InvalidRequest naming the field when it does not decode."""
    try:
        return kind.FromString(data)
    except message.DecodeError as error:
        name = kind.DESCRIPTOR.name
        # upb's descriptor class, which the stubs type apart, has protobuf's interface.
        found = undecodable_field(cast(descriptor.Descriptor, kind.DESCRIPTOR), data)
        if found is None:
            found = FieldViolation("request", f"cannot decode the bytes as {name}: {error}")
        raise InvalidRequest([found]) from error


def undecodable_field(kind: descriptor.Descriptor, data: bytes) -> FieldViolation | None:
    """The field of ``data``, a ``kind`` that failed to decode, that explains why; None
    when the request's own bytes are broken or the walk gives up."""
    try:
        return _Walk().problem(kind, data, "", 1)
    except (_Malformed, _GaveUp):
        return None


class _Malformed(Exception):
    """The bytes break the wire format at this level."""


class _GaveUp(Exception):
    """The walk looked at WALK_BUDGET fields."""


class _Walk:
    def __init__(self) -> None:
        self.left = WALK_BUDGET

    def problem(
        self, kind: descriptor.Descriptor, data: bytes, holder: str, depth: int
    ) -> FieldViolation | None:
        """The problem in ``data``, a ``kind`` at nesting ``depth`` held by the field
        ``holder`` ("" for the request); raises _Malformed when its bytes are broken."""
        if depth > MAX_DEPTH:
            return FieldViolation(holder or "request", TOO_DEEP)
        seen: dict[int, int] = {}
        for number, chunk in length_delimited(data):
            self.left -= 1
            if self.left < 0:
                raise _GaveUp
            field = kind.fields_by_number.get(number)
            if field is None:
                continue
            index = seen.get(number, 0)
            seen[number] = index + 1
            found = self._field_problem(field, chunk, _name(kind, field, index, holder), depth)
            if found is not None:
                return found
        return None

    def _field_problem(
        self, field: descriptor.FieldDescriptor, chunk: bytes, name: str, depth: int
    ) -> FieldViolation | None:
        if field.type == field.TYPE_STRING:
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError:
                return FieldViolation(name, NOT_UTF8)
            return None
        kind = field.message_type
        if kind is None:
            return None
        try:
            return self.problem(kind, chunk, name, depth + 1)
        except _Malformed:
            return FieldViolation(name, f"cannot decode the bytes as {kind.name}")


def _name(
    kind: descriptor.Descriptor, field: descriptor.FieldDescriptor, index: int, holder: str
) -> str:
    """The field's name in violations: ``holder.field[index]``; inside a JSON value, the
    name of the field holding it."""
    if kind.full_name in JSON_TYPES:
        return holder
    name = f"{field.name}[{index}]" if field.is_repeated else field.name
    return f"{holder}.{name}" if holder else name


def length_delimited(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Each length-delimited field of ``data`` as (field number, bytes), skipping the
    others; raises _Malformed where the bytes break the wire format."""
    position, end = 0, len(data)
    while position < end:
        tag, position = _varint(data, position)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise _Malformed
        if wire_type == VARINT:
            _, position = _varint(data, position)
        elif wire_type == FIXED64:
            position += 8
        elif wire_type == FIXED32:
            position += 4
        elif wire_type == LENGTH_DELIMITED:
            length, position = _varint(data, position)
            start, position = position, position + length
            if position > end:
                raise _Malformed
            yield number, data[start:position]
        else:  # groups (deprecated) and the undefined wire types 6 and 7
            raise _Malformed
        if position > end:
            raise _Malformed


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = 0
    for shift in range(0, 70, 7):
        if position >= len(data):
            raise _Malformed
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
    raise _Malformed  # more than ten bytes
