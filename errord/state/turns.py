"""Per-turn state: when errord saw each turn begin, its calls, the retries it was granted.

A turn begins with TurnBegan; a turn whose events predate that kind (a
migrated database) begins with its first event.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from msgspec import Struct, structs

from errord.decide.events import FailureEvent, TraceEvent, TurnBegan
from errord.decide.model import Action, RetryBudget
from errord.state.projection import EachEvent


class TurnState(Struct, frozen=True, omit_defaults=True, gc=False):
    """One turn as errord knows it."""

    began_at: datetime
    implicit: bool = True
    """True when the turn began with its first report, not explicitly."""
    calls: tuple[str, ...] = ()
    """The calls with a reported failure, in the order of their first one. (A tuple of
    strings, unlike a frozenset, is left alone by the garbage collector.)"""
    retries: int = 0
    """RETRY decisions granted to the turn's calls: what its retry budget counts."""
    deadline: datetime | None = None
    """When the turn must be done; None for a turn recorded before deadlines existed."""
    retry_budget: RetryBudget | None = None
    """The turn's own retry budget; None for the daemon's."""


class TurnFold(EachEvent[str, TurnState]):
    """Folds a turn's events into its state."""

    name = "turn"
    version = 3
    key_type = str
    state_type = TurnState

    def keys(self, event: TraceEvent) -> Sequence[str]:
        turn_id = event.detail.turn_id
        return (turn_id,) if turn_id else ()

    def apply(self, state: TurnState | None, event: TraceEvent) -> TurnState:
        detail = event.detail
        if isinstance(detail, TurnBegan):
            return TurnState(
                began_at=event.time,
                implicit=detail.implicit,
                deadline=detail.deadline,
                retry_budget=detail.retry_budget,
            )
        state = state or TurnState(began_at=event.time)
        if isinstance(detail, FailureEvent):
            call_id = detail.report.call_id
            calls = state.calls if call_id in state.calls else (*state.calls, call_id)
            retried = detail.decision.action is Action.RETRY
            if calls is not state.calls or retried:
                return structs.replace(state, calls=calls, retries=state.retries + retried)
        return state
