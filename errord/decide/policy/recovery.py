"""Composable recovery policy: a proposed retry, gates that may refuse it, fallbacks.

A decision is reached in three steps over one immutable ``DecisionContext``
(errord.decide.policy.context):

1. a ``Backoff`` proposes the delay before the next attempt (errord.decide.policy.backoff);
2. ``RetryGate``s may refuse that retry, each with a typed ``Refusal``; gates
   combine with ``|`` and the first refusal wins (errord.decide.policy.gates);
3. when the retry is refused, ``Fallback``s are tried in order and the first
   that applies decides (errord.decide.policy.fallbacks).

The policy writes no prose: errord.decide.texts.messages words a ``Verdict``
(errord.decide.policy.verdict) from its action and refusal. Breakers are a context part,
a gate and two fallbacks; turn deadlines and episodic memory join the same way. A
verdict that leaves its call without a result carries its consequences for the calls of
the turn's plan that wait on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from errord.decide.model import WITHOUT_RESULT, Action, RefusalKind, RetryBudget
from errord.decide.policy.backoff import Backoff, ExponentialBackoff, HonourRetryAfter, Jitter
from errord.decide.policy.context import DecisionContext
from errord.decide.policy.fallbacks import (
    AwaitHalfOpen,
    AwaitProbe,
    ContinuePartial,
    Escalate,
    FailForNow,
    FailUnrecoverable,
    Fallback,
    ReturnToModel,
    SkipOptional,
    SkipOutOfTime,
    UseAlternative,
    UseDefault,
)
from errord.decide.policy.gates import (
    AttemptsExhausted,
    BreakerOpen,
    DeadlineTooClose,
    NotIdempotent,
    PermanentError,
    RetriesNeverFix,
    RetryAfterTooLong,
    RetryGate,
    TotalRetryTimeExceeded,
    TurnRetryBudgetSpent,
)
from errord.decide.policy.plan import cascade
from errord.decide.policy.verdict import Verdict


class RecoveryPolicy:
    """Backoff, gates and fallbacks put together into one decision."""

    def __init__(self, backoff: Backoff, gate: RetryGate, fallbacks: Sequence[Fallback]) -> None:
        if not fallbacks or not isinstance(fallbacks[-1], Escalate):
            raise ValueError("the last fallback must be Escalate, so that every failure is decided")
        self.backoff = backoff
        self.gate = gate
        self.fallbacks = tuple(fallbacks)

    def decide(self, context: DecisionContext) -> Verdict:
        proposed, paced = self.backoff.proposal(context)
        delay = round(proposed, 3)  # whole milliseconds
        refusal = self.gate(context, delay)
        if refusal is None:
            return Verdict(Action.RETRY, delay=delay, paced=paced)
        for fallback in self.fallbacks:
            verdict = fallback(context, refusal)
            if verdict is not None:
                return with_cascade(context, verdict)
        raise AssertionError("unreachable: Escalate always decides")


def with_cascade(context: DecisionContext, verdict: Verdict) -> Verdict:
    """``verdict`` with what it means for the calls waiting on this one, when the call
    ends without a result: they are skipped or given their defaults, and a required one
    that cannot run makes a SKIP (or the FAIL of an optional call out of corrections) an
    ESCALATE."""
    if not context.plan.waiting or verdict.action not in WITHOUT_RESULT:
        return verdict
    refusal = verdict.refusal
    out_of_time = refusal is not None and refusal.kind is RefusalKind.DEADLINE
    consequences = cascade(context.report.call_id, context.plan.waiting, out_of_time=out_of_time)
    blocked = next((c.call_id for c in consequences if c.action is Action.ESCALATE), "")
    if blocked and can_do_without(verdict):
        return replace(
            verdict, action=Action.ESCALATE, consequences=consequences, escalated_for=blocked
        )
    return replace(verdict, consequences=consequences)


def can_do_without(verdict: Verdict) -> bool:
    """True for a verdict that ends the call without a result because the turn can go on
    without it: a SKIP, or the FAIL of an optional call the model could not correct."""
    if verdict.action is Action.SKIP:
        return True
    return verdict.action is Action.FAIL and verdict.corrections_spent is not None


def default_policy(
    jitter: Jitter | None = None,
    budget: RetryBudget | None = None,
    corrections: int = 2,
    min_episodes: float = 5,
) -> RecoveryPolicy:
    """errord's policy: backoff honouring Retry-After, else exponential (its jitter from
    ``jitter``, else seeded by the decision's id: errord.decide.policy.backoff), halved
    or doubled when retries of this error mostly or rarely recovered it (episodic memory,
    over ``min_episodes``); retry unless permanent, not idempotent, the breaker open (or
    its half-open probe taken), retries of this error never having fixed it, too close to
    the turn's deadline, the turn's retry budget spent (its own, else ``budget``), out of
    attempts, asked to wait too long or out of retry time; else, for a failure the model
    caused, back to the model (``corrections`` times per call and per mistake in a turn,
    within the turn's retry budget; then escalate, or fail an optional call); else an
    alternative, else wait for the open breaker to half-open or for its probe, else the
    partial result, the default result or (out of time, or for an optional call) no
    result, else fail what nothing can recover, and a transient failure for now (nobody
    can act on an outage), else escalate; and the calls waiting on one that ends without
    a result are skipped, given their defaults, or escalate."""
    limits = (
        DeadlineTooClose()
        | TurnRetryBudgetSpent(budget)
        | AttemptsExhausted()
        | RetryAfterTooLong()
        | TotalRetryTimeExceeded()
    )
    return RecoveryPolicy(
        backoff=HonourRetryAfter(ExponentialBackoff(jitter, min_episodes)),
        gate=PermanentError()
        | NotIdempotent()
        | BreakerOpen()
        | RetriesNeverFix(min_episodes)
        | limits,
        fallbacks=(
            ReturnToModel(corrections, budget),
            UseAlternative(min_episodes),
            AwaitHalfOpen(limits),
            AwaitProbe(limits),
            ContinuePartial(),
            UseDefault(),
            SkipOutOfTime(),
            SkipOptional(),
            FailUnrecoverable(),
            FailForNow(),
            Escalate(),
        ),
    )
