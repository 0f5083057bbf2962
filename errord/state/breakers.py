"""Circuit breakers, per tool and scope, as the trace recorded them.

Every event that changes a breaker carries the breaker's state right after it
(a decision's ``breaker``, an outcome's, a transition's), computed by
errord.decide.health.breaker when the event was decided. Folding takes the last one:
replaying the trace ends exactly where the decisions left the breaker,
whatever the manifests say today.
"""

from __future__ import annotations

from collections.abc import Sequence

from errord.decide.model import BreakerState
from errord.decide.model.events import BreakerChanged, FailureEvent, OutcomeEvent, TraceEvent
from errord.state.projection import EachEvent


def breaker_after(event: TraceEvent) -> BreakerState | None:
    """The breaker state ``event`` records for its tool, if it records one."""
    detail = event.detail
    if isinstance(detail, FailureEvent):
        return detail.decision.breaker
    if isinstance(detail, OutcomeEvent | BreakerChanged):
        return detail.breaker
    return None


class BreakerFold(EachEvent[str, BreakerState]):
    """Folds breaker states, keyed by tool and scope (errord.decide.model.scope)."""

    name = "breaker"
    version = 1
    key_type = str
    state_type = BreakerState

    def keys(self, event: TraceEvent) -> Sequence[str]:
        detail = event.detail
        if type(detail) is FailureEvent:  # the kinds are final: type() is the quickest test
            return (detail.report.tool_key,) if detail.decision.breaker is not None else ()
        if type(detail) is OutcomeEvent:
            return (detail.report.tool_key,) if detail.breaker is not None else ()
        if type(detail) is BreakerChanged:
            return (detail.tool_key,)
        return ()

    def apply(self, key: str, state: BreakerState | None, event: TraceEvent) -> BreakerState:
        after = breaker_after(event)
        assert after is not None, "keys() names no tool for an event without a breaker"
        if state is not None and state == after:
            return state  # unchanged: no state row to write
        return after
