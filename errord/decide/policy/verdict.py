"""What a policy decides of one failure: the ``Verdict``, why the model may not correct its
call again, and what a retry is to a half-open breaker."""

from __future__ import annotations

from msgspec import Struct

from errord.decide.model import Action, BreakerPhase, ClosedEnum, Consequence, Refusal
from errord.decide.policy.backoff import Pacing
from errord.decide.policy.context import DecisionContext


class Verdict(Struct, frozen=True, gc=False):
    """What the policy decided, before messages are written."""

    action: Action
    refusal: Refusal | None = None
    """Why the retry was refused; None for RETRY."""
    delay: float = 0.0
    alternative_tool: str | None = None
    consequences: tuple[Consequence, ...] = ()
    """What the decision means for other calls of the turn."""
    escalated_for: str = ""
    """The required call, waiting on this one, that made the decision ESCALATE rather
    than SKIP (or than FAIL, for an optional call out of corrections)."""
    corrections_spent: CorrectionsSpent | None = None
    """Why a failure the model caused was not handed back to it again (ESCALATE, FAIL)."""
    corrections_left: int = 0
    """Corrections of the call the policy allows after this RETURN_TO_MODEL."""
    paced: Pacing | None = None
    """How episodic memory changed this RETRY's delay."""


class CorrectionsSpent(ClosedEnum):
    """Why the model may not correct its call again; the value names the variant of the
    decision's texts (errord.decide.texts.wording.reason_detail)."""

    CALL = "corrections"
    """The call had its corrections."""
    MISTAKE = "repeated"
    """The model was told of the same mistake of the tool in this turn as often as
    allowed, under any call id: a model that re-issues the bad call under fresh ids."""
    BUDGET = "budget"
    """The turn's retry budget is spent, and a correction spends it as a retry does."""


def probe_role(context: DecisionContext, verdict: Verdict) -> str:
    """What a RETRY is to a breaker that is not closed: "probe" when it is the half-open
    breaker's one probe, "awaits_probe" when it waits for the probe in flight,
    "awaits_half_open" when it waits for an open breaker to half-open; "" otherwise."""
    if verdict.action is not Action.RETRY:
        return ""
    breaker, now = context.breaker.state, context.now
    phase = breaker.effective_phase(now)
    if phase is BreakerPhase.OPEN:
        return "awaits_half_open"
    if phase is not BreakerPhase.HALF_OPEN:
        return ""
    return "awaits_probe" if breaker.probe_in_flight(now) else "probe"
