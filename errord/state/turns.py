"""Per-turn state: when errord saw each turn begin.

A turn begins with TurnBegan; a turn whose events predate that kind (a
migrated database) begins with its first event.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from msgspec import Struct

from errord.decide.events import TraceEvent, TurnBegan
from errord.state.projection import EachEvent


class TurnState(Struct, frozen=True, omit_defaults=True, gc=False):
    """One turn as errord knows it."""

    began_at: datetime
    implicit: bool = True
    """True when the turn began with its first report, not explicitly."""


class TurnFold(EachEvent[str, TurnState]):
    """Folds a turn's events into its state."""

    name = "turn"
    version = 1
    key_type = str
    state_type = TurnState

    def keys(self, event: TraceEvent) -> Sequence[str]:
        turn_id = event.detail.turn_id
        return (turn_id,) if turn_id else ()

    def apply(self, state: TurnState | None, event: TraceEvent) -> TurnState:
        detail = event.detail
        if isinstance(detail, TurnBegan):
            return TurnState(began_at=event.time, implicit=detail.implicit)
        return state or TurnState(began_at=event.time)
