"""Fallbacks: what to do when the retry is refused. A policy tries them in order and the
first that applies decides (an alternative tool, ..., escalation to the user).

Nobody can act on an outage, neither the user nor an administrator. So a call refused
by an open breaker waits for its half-open probe (``AwaitHalfOpen``: a RETRY with that
delay) when the wait fits its limits (its total retry time, the turn's deadline); a
transient failure that nothing else recovers fails with words saying the tool is
unavailable for now (``FailForNow``), and ESCALATE stays for what a person can act on.
"""

from __future__ import annotations

import abc

from errord.decide.classify import fault_of
from errord.decide.model import (
    Action,
    ErrorClass,
    ErrorCode,
    Fault,
    Refusal,
    RefusalKind,
    RetryBudget,
)
from errord.decide.policy.context import DecisionContext, time_left
from errord.decide.policy.gates import RetryGate, budget_spent
from errord.decide.policy.verdict import CorrectionsSpent, Verdict


class Fallback(abc.ABC):
    """Decides instead of a refused retry, or passes with None."""

    @abc.abstractmethod
    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None: ...


def model_caused(context: DecisionContext) -> bool:
    """True for a permanent failure of the model's own making: the call's arguments (a
    value the error quotes, a tool that does not exist: errord.decide.classify.fault), or a
    schema violation that the reported arguments show."""
    classification = context.classification
    if classification.error_class is not ErrorClass.PERMANENT:
        return False
    if fault_of(classification) is Fault.ARGUMENTS:
        return True
    return classification.code is ErrorCode.SCHEMA_VIOLATION and bool(context.problems)


class ReturnToModel(Fallback):
    """A failure the model caused goes back to it to correct its call, at most ``limit``
    times per call and ``limit`` times per mistake in a turn (the same mistake of the same
    tool under any call id), each spending the turn's retry budget (its own, else
    ``budget``) as a retry does. Then it escalates, or fails when the call is optional:
    an alternative tool, a default or a skip does not fix the model's own call,
    yet a turn can go on without an optional call."""

    def __init__(self, limit: int = 2, budget: RetryBudget | None = None) -> None:
        self.limit = limit
        self.budget = budget
        """The daemon's budget, for turns without their own; None for none."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        if not model_caused(context):
            return None
        spent, budget = self.spent(context)
        if spent is None:
            told = max(context.call.corrections, context.turn.told)
            left = self.limit - told - 1
            return Verdict(Action.RETURN_TO_MODEL, refusal, corrections_left=left)
        action = Action.FAIL if context.plan.optional else Action.ESCALATE
        return Verdict(action, budget or refusal, corrections_spent=spent)

    def spent(self, context: DecisionContext) -> tuple[CorrectionsSpent | None, Refusal | None]:
        """Why the model may not correct the call again, with the budget's refusal when
        the budget is why; (None, None) when it may."""
        if context.call.corrections >= self.limit:
            return CorrectionsSpent.CALL, None
        if context.turn.told >= self.limit:
            return CorrectionsSpent.MISTAKE, None
        budget = budget_spent(context.turn, self.budget)
        return (None, None) if budget is None else (CorrectionsSpent.BUDGET, budget)


class UseAlternative(Fallback):
    """Switch to the alternative that has not failed on this call, whose breaker is not
    open, and that recovers this error best: by episodic memory where it has at least
    ``min_episodes`` told episodes, else in the manifest's order (an unproven alternative
    counts as recovering half the time)."""

    def __init__(self, min_episodes: float = 5) -> None:
        self.min_episodes = min_episodes

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        usable = usable_alternatives(context)
        if not usable:
            return None
        best = max(usable, key=lambda tool: self.score(context, tool))  # first of equals
        return Verdict(Action.USE_ALTERNATIVE, refusal, alternative_tool=best)

    def score(self, context: DecisionContext, tool: str) -> float:
        evidence = context.memory.get(f"{Action.USE_ALTERNATIVE.value}:{tool}")
        if evidence is None or not evidence.enough(self.min_episodes):
            return 0.5
        return evidence.success_rate


def usable_alternatives(context: DecisionContext) -> list[str]:
    """The alternatives not failed on this call, whose breaker is not open, and whose
    timeout ends before the turn's deadline."""
    unusable = context.call.failed_tools | context.breaker.open_tools | too_slow(context)
    return [tool for tool in context.manifest.alternatives if tool not in unusable]


def too_slow(context: DecisionContext) -> frozenset[str]:
    """The alternatives that could still be running at the turn's deadline."""
    left = time_left(context)
    if left is None:
        return frozenset()
    timeouts = context.tool.alternative_timeouts
    return frozenset(tool for tool, timeout in timeouts.items() if timeout > left)


class AwaitProbe(Fallback):
    """While a half-open breaker's probe is in flight: RETRY once the probe's outcome is
    due, if ``limits`` allow a delay that long."""

    def __init__(self, limits: RetryGate) -> None:
        self.limits = limits

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        if refusal.kind is not RefusalKind.BREAKER_PROBING:
            return None
        delay = round(refusal.wait, 3)
        if self.limits(context, delay) is not None:
            return None
        return Verdict(Action.RETRY, delay=delay)


class ContinuePartial(Fallback):
    """Go on with the partial result the tool returned, if its manifest accepts one."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        accepted = context.manifest.accepts_partial_results
        if accepted and context.report.error.partial_result is not None:
            return Verdict(Action.CONTINUE_PARTIAL, refusal)
        return None


class UseDefault(Fallback):
    """Go on with the call's default result, if its plan or its tool's manifest has one."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        if context.plan.default is not None:
            return Verdict(Action.USE_DEFAULT, refusal)
        return None


class SkipOutOfTime(Fallback):
    """Near or past the turn's deadline, go on without the call's result (keep what
    completed, skip the rest)."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        return Verdict(Action.SKIP, refusal) if refusal.kind is RefusalKind.DEADLINE else None


class SkipOptional(Fallback):
    """Go on without the result of a call its plan, or its tool's manifest, calls optional."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        return Verdict(Action.SKIP, refusal) if context.plan.optional else None


class FailUnrecoverable(Fallback):
    """Fail gracefully when nobody can recover the call within the turn: the tool's own
    code failed (a bug, an endpoint that does not exist, an operation it cannot do). The
    user cannot fix the tool, so it is not escalated to them; the model is told the tool
    failed, not its call. A person can act on every other failure that gets this far
    (credentials, permissions, an exhausted quota, a backend to look at): it escalates."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        classification = context.classification
        if classification.error_class is not ErrorClass.PERMANENT:
            return None
        return Verdict(Action.FAIL, refusal) if fault_of(classification) is Fault.TOOL else None


class Escalate(Fallback):
    """Hand the failure to the user; always applies."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict:
        return Verdict(Action.ESCALATE, refusal)


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
