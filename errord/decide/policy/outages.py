"""Fallbacks for an outage: a refused retry of a tool that is down, or limiting its rate,
is a wait while one fits the call, else the model goes on without the tool for now.

Nobody can act on an outage: not the user, not an administrator. So a call refused by
an open breaker waits for its half-open probe (a RETRY with that delay) when the wait
fits its limits (its total retry time, the turn's deadline); a transient failure that
nothing else recovers fails with words saying the tool is unavailable for now, and
ESCALATE stays for what a person can act on.
"""

from __future__ import annotations

from errord.decide.classify import fault_of
from errord.decide.model import Action, ErrorClass, Fault, Refusal, RefusalKind
from errord.decide.policy.context import DecisionContext
from errord.decide.policy.fallbacks import Fallback
from errord.decide.policy.gates import RetryGate
from errord.decide.policy.verdict import Verdict


class AwaitHalfOpen(Fallback):
    """While the tool's breaker is open for a known time: RETRY once it half-opens, if
    ``limits`` allow a delay that long. The retry then asks to be admitted (AdmitCall):
    one caller probes, the others wait for the probe."""

    def __init__(self, limits: RetryGate) -> None:
        self.limits = limits

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        if refusal.kind is not RefusalKind.BREAKER_OPEN:
            return None
        if context.breaker.state.half_opens_at is None:
            return None  # forced open until an operator resets it
        delay = round(max(0.0, refusal.wait), 3)
        if self.limits(context, delay) is not None:
            return None
        return Verdict(Action.RETRY, delay=delay)


NEEDS_A_PERSON = frozenset({RefusalKind.NOT_IDEMPOTENT})
"""Refusals of a transient failure that a person must look at: a tool with side effects
failed, and whether its effect happened must be checked."""


class FailForNow(Fallback):
    """A failure of the tool's backend (transient: time can fix it) that no retry,
    alternative, partial result, default or skip recovers: the tool is unavailable for
    now. FAIL, telling the model to go on without
    it or try later, not ESCALATE: no one can act on an outage. A failure whose side
    effect a person must check (a tool that is not idempotent) still escalates. (An
    optional call was skipped before this: SkipOptional.)"""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        classification = context.classification
        if classification.error_class is not ErrorClass.TRANSIENT:
            return None
        if fault_of(classification) is not Fault.BACKEND:
            return None  # a person's (an expired credential) escalates
        if refusal.kind in NEEDS_A_PERSON:
            return None
        return Verdict(Action.FAIL, refusal)
