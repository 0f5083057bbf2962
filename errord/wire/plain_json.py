"""Struct and Value messages walked into plain JSON, within errord's bounds.

protobuf's own conversion (json_format.MessageToDict) is slow and takes any depth and
size; this walk is a fraction of its cost and stops with NotJSON at MAX_JSON_DEPTH
levels, MAX_JSON_MEMBERS members and at numbers JSON cannot hold.

Most of the walk's cost is upb making a Python object of each Value it is handed, so
the walk asks for each one once, by key (a map's ``items()`` is collections.abc's,
several times slower), and tries the common kinds first.
"""

from __future__ import annotations

import math

from google.protobuf import struct_pb2

from errord.decide.model import JSONValue

MAX_JSON_DEPTH = 32
"""Levels of objects and arrays in one JSON value (protobuf decodes about as many)."""
MAX_JSON_MEMBERS = 10_000
"""Object members and array items in one JSON value, in all."""


class NotJSON(ValueError):
    """A Struct or Value plain JSON cannot hold, or one beyond errord's bounds."""


class JSONBudget:
    """What is left of MAX_JSON_MEMBERS while one value is converted."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_JSON_MEMBERS

    def spend(self, members: int, depth: int) -> None:
        self.left -= members
        if self.left < 0:
            raise NotJSON(f"at most {MAX_JSON_MEMBERS} object members and array items in all")
        if depth > MAX_JSON_DEPTH:
            raise NotJSON(f"at most {MAX_JSON_DEPTH} levels of nested objects and arrays")


def plain_struct(
    message: struct_pb2.Struct, budget: JSONBudget | None = None, depth: int = 1
) -> dict[str, JSONValue]:
    """A Struct as a dict, as json_format.MessageToDict gives it, in a fraction of the time;
    NotJSON beyond MAX_JSON_DEPTH levels and MAX_JSON_MEMBERS members."""
    budget = budget or JSONBudget()
    fields = message.fields
    budget.spend(len(fields), depth)
    plain = {}
    for key in fields:
        value = fields[key]
        kind = value.WhichOneof("kind")
        # A string, the most common member, without a call.
        plain[key] = (
            value.string_value if kind == "string_value" else _plain(value, kind, budget, depth)
        )
    return plain


def plain_value(
    message: struct_pb2.Value, budget: JSONBudget | None = None, depth: int = 0
) -> JSONValue:
    """A Value as plain JSON; NotJSON for NaN and Infinity, which JSON cannot hold, and
    beyond MAX_JSON_DEPTH levels and MAX_JSON_MEMBERS members."""
    return _plain(message, message.WhichOneof("kind"), budget or JSONBudget(), depth)


def _plain(
    message: struct_pb2.Value, kind: str | None, budget: JSONBudget, depth: int
) -> JSONValue:
    """The Value ``message`` holding its ``kind``, as plain JSON."""
    if kind == "string_value":
        return message.string_value
    if kind == "number_value":
        number = message.number_value
        if not math.isfinite(number):
            raise NotJSON("numbers must be finite (NaN and Infinity are not JSON)")
        return number
    if kind == "bool_value":
        return message.bool_value
    if kind == "struct_value":
        return plain_struct(message.struct_value, budget, depth + 1)
    if kind == "list_value":
        items = message.list_value.values
        budget.spend(len(items), depth + 1)
        return [_plain(item, item.WhichOneof("kind"), budget, depth + 1) for item in items]
    return None
