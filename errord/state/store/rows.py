"""Trace events and projection states <-> database rows."""

from __future__ import annotations

from typing import Any, TypeAlias

from errord.decide.events import TraceEvent
from errord.errors import StoreError
from errord.state import codec

EventRow: TypeAlias = tuple[int, str, str, str, str, bytes]
"""(sequence, kind, turn_id, dedup_key, recorded_at, body): a row of ``events``."""
StateRow: TypeAlias = tuple[str, str, int, bytes]
"""(projection, key, sequence, body): a row of ``state``."""


def event_row(event: TraceEvent) -> EventRow:
    detail = event.detail
    return (
        event.sequence,
        detail.kind.value,
        detail.turn_id,
        dedup_key(event),
        codec.time_to_text(event.time),
        codec.encode(detail),
    )


def dedup_key(event: TraceEvent) -> str:
    """The event's idempotency key as stored: JSON, unique within its kind."""
    return codec.encode(event.detail.dedup_key).decode()


def event_of(row: Any) -> TraceEvent:
    """The event of a ``(sequence, recorded_at, body)`` row."""
    sequence, recorded_at, body = row
    try:
        return TraceEvent(sequence, codec.time_from_text(recorded_at), codec.decode_detail(body))
    except (*codec.DecodeErrors, ValueError) as exc:
        raise StoreError(f"trace event {sequence} cannot be read: {exc}") from exc


def state_row(projection: str, key: Any, state: Any, sequence: int) -> StateRow:
    return (projection, state_key(key), sequence, codec.encode(state))


def state_key(key: Any) -> str:
    return codec.encode(key).decode()
