"""Records <-> stored bytes: msgspec JSON, driven by the records' type annotations.

Trace event bodies are tagged by kind::

    {"kind":"failure","report":{...},"decision":{...}}
    {"kind":"outcome","report":{...}}
    {"kind":"turn_began","turn_id":"..."}

Enums are stored by value, datetimes as RFC 3339 text, fields equal to their
default are left out. Keys the code does not know are ignored and missing keys
take the field's default, so a field added later with a default still reads
older rows; the bodies written by errord 0.1's own codec decode unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import msgspec

from errord.decide.model.events import EventDetail

T = TypeVar("T")

_encoder = msgspec.json.Encoder()
_detail_decoder = msgspec.json.Decoder(EventDetail)

encode: Callable[[Any], bytes] = _encoder.encode
"""Any record (or key) as compact JSON bytes."""


def decode_detail(body: bytes | str) -> EventDetail:
    """The event detail stored as ``body``; msgspec.ValidationError or DecodeError if not one."""
    detail: EventDetail = _detail_decoder.decode(body)
    return detail


_decoders: dict[type[Any], Callable[[bytes | str], Any]] = {}


def decoder(kind: type[T]) -> Callable[[bytes | str], T]:
    """A decoding function for records of ``kind``, built once per kind."""
    decode = _decoders.get(kind)
    if decode is None:
        decode = _decoders[kind] = msgspec.json.Decoder(kind).decode
    return decode


def time_to_text(moment: datetime) -> str:
    """``moment`` as RFC 3339 text; a naive datetime is refused (ValueError)."""
    if moment.utcoffset() is None:
        raise ValueError(f"naive datetime {moment.isoformat()} has no time zone")
    return _encoder.encode(moment).decode()[1:-1]


_time_decoder = msgspec.json.Decoder(datetime)


def time_from_text(text: str) -> datetime:
    """The datetime stored as ``text``."""
    return _time_decoder.decode(f'"{text}"')


DecodeErrors = (msgspec.DecodeError, msgspec.ValidationError)
"""What decoding a stored body that is not what its reader expects raises."""
