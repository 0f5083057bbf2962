"""Retry gates: reasons to refuse a retry, each a typed ``Refusal``. Gates combine with
``|`` and the first refusal wins (as tenacity's ``stop_any``)."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from errord.decide.memory import Evidence
from errord.decide.model import (
    Action,
    BreakerPhase,
    ErrorClass,
    Refusal,
    RefusalKind,
    RetryBudget,
)
from errord.decide.policy.context import (
    DecisionContext,
    TurnPart,
    requested_delay,
    time_left,
    waits_its_turn,
)


class RetryGate(abc.ABC):
    """Refuses a retry with a Refusal, or lets it pass with None."""

    @abc.abstractmethod
    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None: ...

    def __or__(self, other: RetryGate) -> RetryGate:
        return AnyGate((self, other))


class AnyGate(RetryGate):
    """Refuses when any of its gates refuses; the first refusal is the reason."""

    def __init__(self, gates: Sequence[RetryGate]) -> None:
        self.gates = tuple(gates)

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        for gate in self.gates:
            refusal = gate(context, delay)
            if refusal is not None:
                return refusal
        return None

    def __or__(self, other: RetryGate) -> RetryGate:
        # Flat: the same first refusal, one call fewer per nested group.
        others = other.gates if isinstance(other, AnyGate) else (other,)
        return AnyGate((*self.gates, *others))


class PermanentError(RetryGate):
    """Permanent errors are never retried."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        if context.classification.error_class is ErrorClass.PERMANENT:
            return Refusal(kind=RefusalKind.PERMANENT_ERROR)
        return None


class NotIdempotent(RetryGate):
    """A tool whose calls have side effects is never repeated; an attempt errord refused
    before it ran had none, and may run."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        if not context.manifest.idempotent and not context.call.was_refused:
            return Refusal(kind=RefusalKind.NOT_IDEMPOTENT)
        return None


class BreakerOpen(RetryGate):
    """No retry while the tool's breaker is open; in half-open, only the one probe."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        breaker, now = context.breaker.state, context.now
        phase = breaker.effective_phase(now)
        if phase is BreakerPhase.OPEN:
            until = breaker.half_opens_at
            wait = 0.0 if until is None else (until - now).total_seconds()
            return Refusal(kind=RefusalKind.BREAKER_OPEN, wait=wait)
        probe = breaker.probe_in_flight(now) if phase is BreakerPhase.HALF_OPEN else None
        if probe is not None:
            wait = (probe.until - now).total_seconds()
            return Refusal(kind=RefusalKind.BREAKER_PROBING, wait=wait)
        return None


class TurnRetryBudgetSpent(RetryGate):
    """No more retries than the turn's retry budget allows, corrections of the model's
    calls counted as retries (reserved before the commit, as every decision's state is, so
    concurrent calls of a turn share one budget)."""

    def __init__(self, budget: RetryBudget | None) -> None:
        self.budget = budget
        """The daemon's budget, for turns without their own; None for none."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        return budget_spent(context.turn, self.budget)


def budget_spent(turn: TurnPart, budget: RetryBudget | None) -> Refusal | None:
    """The refusal of a turn whose retries and corrections spent its retry budget (its own,
    else ``budget``); None while some is left."""
    budget = turn.retry_budget or budget
    allowed = None if budget is None else budget.allows(turn.calls)
    spent = turn.retries + turn.corrections
    if allowed is not None and spent >= allowed:
        return Refusal(
            kind=RefusalKind.RETRY_BUDGET_SPENT,
            limit=allowed,
            granted=spent,
            corrected=turn.corrections,
        )
    return None


class RetriesNeverFix(RetryGate):
    """No retry of an error that retries have not fixed once in ``min_episodes`` bursts
    of it or more (episodic memory: the episodes of one outage or spell count once,
    decayed, so that the evidence fades and then retries are tried again). The verdict
    stands only while the tool has not succeeded, and its breaker was not reset, since
    the last retry that failed: a tool succeeding for other calls, or one an operator
    says is fixed, may well be fixed for this error too."""

    def __init__(self, min_episodes: float = 5) -> None:
        self.min_episodes = min_episodes

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        evidence = context.memory.get(Action.RETRY.value)
        if evidence is None or not evidence.never_fixed(self.min_episodes):
            return None
        if since_failed(context, evidence) is not None:
            return None
        return Refusal(
            kind=RefusalKind.RETRIES_NEVER_FIX,
            recovered=evidence.succeeded,
            tried=evidence.told,
        )


def since_failed(context: DecisionContext, evidence: Evidence) -> str | None:
    """What the tool did after the last retry of this error that failed, that weakens
    memory's verdict: "succeeded" or "reset"; None when nothing did."""
    failed = evidence.failed_at
    history = context.history
    if failed is None:
        return None
    if history.succeeded_at is not None and history.succeeded_at > failed:
        return "succeeded"
    if history.reset_at is not None and history.reset_at > failed:
        return "reset"
    return None


class DeadlineTooClose(RetryGate):
    """No retry that could still be running at the turn's deadline: the delay plus the
    tool's timeout must end before it."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        left = time_left(context)
        if left is not None and delay + context.manifest.timeout > left:
            return Refusal(kind=RefusalKind.DEADLINE, limit=max(0.0, left), wait=delay)
        return None


class AttemptsExhausted(RetryGate):
    """At most max_attempts attempts of one tool per call; attempts errord refused
    before they ran do not count, and a rate limit whose tool asked how long to wait is
    retried past them: the backend rations its callers, it does not fail them, and the
    call's total retry time bounds the wait for its turn (TotalRetryTimeExceeded)."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        if context.retries_left == 0 and not waits_its_turn(context):
            limit = context.manifest.retry_policy.max_attempts
            return Refusal(
                kind=RefusalKind.ATTEMPTS_EXHAUSTED, limit=limit, attempt=context.attempts_run
            )
        return None


class RetryAfterTooLong(RetryGate):
    """A retry is never sooner than the tool asked (or its rate-limit window ends); a
    wait longer than the policy's ``max_retry_after`` means no retry. Without one, the
    wait only has to fit the call's total retry time (TotalRetryTimeExceeded)."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        limit = context.manifest.retry_policy.longest_retry_after
        if limit is None:
            return None
        asked = requested_delay(context)
        if asked is not None and asked > limit:
            return Refusal(kind=RefusalKind.RETRY_AFTER_TOO_LONG, limit=limit, wait=asked)
        return None


class TotalRetryTimeExceeded(RetryGate):
    """The delays granted to a call's retries, the next one included, stay within
    max_total_time. The failed attempts' own run time does not count: bounding a
    call's wall clock is the turn deadline's job."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        limit = context.manifest.retry_policy.max_total_time
        spent = context.call.retry_time_spent
        if spent + delay > limit:
            return Refusal(
                kind=RefusalKind.RETRY_TIME_EXHAUSTED, limit=limit, spent=spent, wait=delay
            )
        return None
