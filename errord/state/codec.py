"""Trace records <-> JSON-compatible dicts: the one place that knows the stored shape.

A record becomes a dict of its dataclass fields, recursively; enums are stored
by value and datetimes as ISO-8601 text in UTC. The top-level dict carries a
``kind`` discriminator::

    {"kind": "failure", "report": {...}, "decision": {...}}
    {"kind": "outcome", "report": {...}}

Decoding is driven by the dataclasses' type hints. Keys the code does not know
are ignored and missing keys take the field's default, so a field added later
with a default can still read older rows.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from errord.decide.model import EventDetail, FailureEvent, OutcomeEvent

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

EventKind: TypeAlias = Literal["failure", "outcome"]
"""The discriminator of a stored trace event."""

_DETAIL_TYPES: dict[str, type[FailureEvent] | type[OutcomeEvent]] = {
    "failure": FailureEvent,
    "outcome": OutcomeEvent,
}


def event_kind(detail: EventDetail) -> EventKind:
    """The discriminator stored with ``detail``."""
    return "failure" if isinstance(detail, FailureEvent) else "outcome"


def event_detail_to_dict(detail: EventDetail) -> dict[str, Any]:
    """``detail`` as a dict that ``json.dumps`` accepts."""
    return {"kind": event_kind(detail), **_encode_record(detail)}


def event_detail_from_dict(data: Mapping[str, Any]) -> EventDetail:
    """The record that ``event_detail_to_dict`` turned into ``data``.

    Raises ValueError for an unknown kind or a bad value, TypeError for a
    missing required field or a wrong shape.
    """
    kind = data.get("kind")
    if kind not in _DETAIL_TYPES:
        raise ValueError(f"unknown trace event kind {kind!r}")
    detail: EventDetail = _decode_record(_DETAIL_TYPES[kind], data)
    return detail


def time_to_text(moment: datetime) -> str:
    """``moment`` as ISO-8601 in UTC; a naive datetime is refused (ValueError)."""
    if moment.utcoffset() is None:
        raise ValueError(f"naive datetime {moment.isoformat()} has no time zone")
    return moment.astimezone(UTC).isoformat()


def time_from_text(text: str) -> datetime:
    """The datetime that ``time_to_text`` wrote."""
    return datetime.fromisoformat(text)


Encoder: TypeAlias = Callable[[Any], Any]


def _encode_record(record: Any) -> dict[str, Any]:
    kind: type[DataclassInstance] = type(record)
    return {name: encode(getattr(record, name)) for name, encode in _encoders(kind)}


@functools.cache
def _encoders(cls: type[DataclassInstance]) -> tuple[tuple[str, Encoder], ...]:
    """How to encode each field of ``cls``, worked out once from its type hints.

    Encoding is on the decision path: a plan per class keeps it to one
    comprehension per record instead of inspecting every value.
    """
    return tuple((name, _encoder(hint)) for name, hint in _field_hints(cls).items())


def _encoder(hint: Any) -> Encoder:
    hint = _without_none(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _unless_none(_encode_record)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return _unless_none(_enum_value)
    if hint is datetime:
        return _unless_none(time_to_text)
    if typing.get_origin(hint) is Mapping:
        return _unless_none(dict)
    return _identity


def _unless_none(encode: Encoder) -> Encoder:
    return lambda value: None if value is None else encode(value)


def _enum_value(member: Enum) -> Any:
    return member.value


def _identity(value: Any) -> Any:
    return value


def _decode_record(cls: type[DataclassInstance], data: Mapping[str, Any]) -> Any:
    hints = _field_hints(cls)
    return cls(**{name: _decode(hint, data[name]) for name, hint in hints.items() if name in data})


def _decode(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    hint = _without_none(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_record(hint, value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if hint is datetime:
        return time_from_text(value)
    return value


def _without_none(hint: Any) -> Any:
    """``X`` for ``X | None``; any other hint unchanged."""
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return hint
    others = [arg for arg in typing.get_args(hint) if arg is not types.NoneType]
    return others[0] if len(others) == 1 else hint


@functools.cache
def _field_hints(cls: type[DataclassInstance]) -> dict[str, Any]:
    """The resolved type hint of each init field of the dataclass ``cls``."""
    hints = typing.get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(cls) if field.init}
