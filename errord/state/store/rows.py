"""Trace events and projection states <-> database rows."""

from __future__ import annotations

from typing import Any, TypeAlias

from errord.decide.model.events import TraceEvent
from errord.errors import StoreError
from errord.state import codec

WriteRow: TypeAlias = tuple[int, str | None, str | None, str, str | None, bytes | None, str | None]
"""A row of the ``writes`` view: (sequence, kind, turn_id, key, recorded_at, body,
projection). An event has no projection; a state row has no kind, turn or time, and no
body when it deletes the key's state."""
WRITE_COLUMNS = "(sequence, kind, turn_id, key, recorded_at, body, projection)"


def event_row(event: TraceEvent) -> WriteRow:
    detail = event.detail
    return (
        event.sequence,
        detail.kind.value,
        detail.turn_id,
        dedup_key(event),
        codec.time_to_text(event.time),
        codec.encode(detail),
        None,
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


def state_row(projection: str, key: Any, state: Any, sequence: int) -> WriteRow:
    """The state of ``key``, as changed last by the batch ending at ``sequence``; a row
    with no body deletes the key's state (the batch ended it)."""
    body = None if state is None else codec.encode(state)
    return (sequence, None, None, state_key(key), None, body, projection)


def state_key(key: Any) -> str:
    return codec.encode(key).decode()
