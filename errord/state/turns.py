"""Per-turn state: when each turn began and ended, its plan, where each of its calls stands,
the retries and corrections it was granted, and how often the model was handed each of its
mistakes.

A turn begins with TurnBegan; a turn whose events predate that kind (a
migrated database) begins with its first event.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from msgspec import Struct, field, structs

from errord.decide.model import (
    STATUS_AFTER,
    Action,
    CallProgress,
    CallStatus,
    Outcome,
    PlannedCall,
    RetryBudget,
    TakenDecision,
)
from errord.decide.model.events import FailureEvent, OutcomeEvent, TraceEvent, TurnBegan, TurnEnded
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
    corrections: int = 0
    """RETURN_TO_MODEL decisions on the turn's calls: its retry budget counts them too."""
    mistakes: dict[str, int] | None = None
    """Per mistake of the model (errord.decide.texts.correction), the RETURN_TO_MODEL decisions
    that handed it back, under any call id: what the per-turn bound on corrections counts.
    None until the first (most turns have none: no dict for them)."""
    deadline: datetime | None = None
    """When the turn must be done; None for a turn recorded before deadlines existed."""
    retry_budget: RetryBudget | None = None
    """The turn's own retry budget; None for the daemon's."""
    plan: tuple[PlannedCall, ...] = ()
    """The calls BeginTurn announced, as given."""
    progress: dict[str, CallProgress] = field(default_factory=dict)
    """Every call errord knows of, planned or reported: the plan's first, then the others
    in the order of their first event."""
    ended_at: datetime | None = None
    """When EndTurn closed it; None while it is open."""
    events: int = 0
    """Trace events of the turn so far (what max_turn_events bounds)."""

    def told(self, mistake: str) -> int:
        """Times the model was handed ``mistake`` in this turn."""
        return self.mistakes.get(mistake, 0) if self.mistakes else 0


class TurnFold(EachEvent[str, TurnState]):
    """Folds a turn's events into its state."""

    name = "turn"
    version = 6
    key_type = str
    state_type = TurnState

    def keys(self, event: TraceEvent) -> Sequence[str]:
        turn_id = event.detail.turn_id
        return (turn_id,) if turn_id else ()

    def apply(self, key: str, state: TurnState | None, event: TraceEvent) -> TurnState:
        after = self._changed(state, event)
        return structs.replace(after, events=(state.events if state else 0) + 1)

    def _changed(self, state: TurnState | None, event: TraceEvent) -> TurnState:
        detail = event.detail
        if isinstance(detail, TurnBegan):
            return TurnState(
                began_at=event.time,
                implicit=detail.implicit,
                deadline=detail.deadline,
                retry_budget=detail.retry_budget,
                plan=detail.plan,
                progress={call.call_id: CallProgress(call.tool) for call in detail.plan},
            )
        state = state or TurnState(began_at=event.time)
        if isinstance(detail, FailureEvent):
            return _decided(state, detail)
        if isinstance(detail, OutcomeEvent) and detail.report.outcome is Outcome.SUCCESS:
            report = detail.report
            before = state.progress.get(report.call_id)
            after = CallProgress(
                report.tool,
                CallStatus.SUCCEEDED,
                before.decisions if before else (),
            )
            return structs.replace(state, progress={**state.progress, report.call_id: after})
        if isinstance(detail, TurnEnded):
            return structs.replace(state, ended_at=detail.summary.ended_at)
        return state


def _decided(state: TurnState, event: FailureEvent) -> TurnState:
    """``state`` with ``event``'s decision on its call, and its consequences for others."""
    report, decision = event.report, event.decision
    call_id = report.call_id
    calls = state.calls if call_id in state.calls else (*state.calls, call_id)
    before = state.progress.get(call_id)
    taken = TakenDecision(decision.decision_id, report.tool, report.attempt, decision.action)
    progress = {
        **state.progress,
        call_id: CallProgress(
            report.tool,
            STATUS_AFTER[decision.action],
            (*before.decisions, taken) if before else (taken,),
        ),
    }
    for consequence in decision.consequences:
        waiting = progress.get(consequence.call_id)
        progress[consequence.call_id] = CallProgress(
            consequence.tool,
            STATUS_AFTER[consequence.action],
            waiting.decisions if waiting else (),
            blocked_by=consequence.blocked_by,
        )
    retried = decision.action is Action.RETRY
    changed = structs.replace(
        state, calls=calls, retries=state.retries + retried, progress=progress
    )
    return _corrected(changed, event) if decision.action is Action.RETURN_TO_MODEL else changed


def _corrected(state: TurnState, event: FailureEvent) -> TurnState:
    """``state`` with one more correction, of ``event``'s mistake (an event recorded before
    mistakes were is counted in the total only)."""
    mistakes = state.mistakes
    if event.mistake:
        mistakes = {**(mistakes or {}), event.mistake: state.told(event.mistake) + 1}
    return structs.replace(state, corrections=state.corrections + 1, mistakes=mistakes)
