"""Composable recovery policy: a proposed retry, gates that may refuse it, fallbacks.

A decision is reached in three steps over one immutable ``DecisionContext``:

1. a ``Backoff`` proposes the delay before the next attempt;
2. ``RetryGate``s may refuse that retry, each with a typed ``Refusal``; gates
   combine with ``|`` and the first refusal wins (as tenacity's ``stop_any``);
3. when the retry is refused, ``Fallback``s are tried in order and the first
   that applies decides (an alternative tool, ..., escalation to the user).

The policy writes no prose: errord.decide.messages words a verdict from its action and
refusal. Breakers are a context part, a gate and two fallbacks; turn deadlines and
episodic memory join the same way. A verdict that leaves its call without a result
carries its consequences for the calls of the turn's plan that wait on it.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from typing import Protocol

from errord.decide.manifest import ToolManifest
from errord.decide.memory import Evidence
from errord.decide.model import (
    CLOSED_BREAKER,
    WITHOUT_RESULT,
    Action,
    BreakerPhase,
    BreakerState,
    Classification,
    Consequence,
    DefaultValue,
    ErrorClass,
    ErrorCode,
    FailureReport,
    ParameterProblem,
    Refusal,
    RefusalKind,
    RetryBudget,
)
from errord.decide.plan import Waiting, cascade
from errord.decide.validate import CallValidator


class Jitter(Protocol):
    """The randomness a backoff needs; ``random.Random`` is one."""

    def uniform(self, a: float, b: float) -> float: ...


@dataclass(frozen=True, slots=True)
class ToolPart:
    """What is known of the failing tool."""

    manifest: ToolManifest
    """The tool's manifest, or the default one when it has none."""
    default_policy: bool
    """True when the tool has no manifest."""
    known_tools: frozenset[str] = frozenset()
    """Names of every tool with a manifest."""
    alternative_timeouts: Mapping[str, float] = field(default_factory=dict)
    """The timeout of each of the tool's alternatives."""
    validator: CallValidator | None = None
    """The tool's argument schema, compiled; None when it has none."""


@dataclass(frozen=True, slots=True)
class CallPart:
    """What the call went through before this failure."""

    retry_time_spent: float = 0.0
    """Seconds of retry delay errord already granted this call for this tool."""
    failed_tools: frozenset[str] = frozenset()
    """Tools that failed on this call, the failing one included."""
    corrections: int = 0
    """Times the model was already handed this call's error to correct it."""


@dataclass(frozen=True, slots=True)
class TurnPart:
    """What is known of the turn the call belongs to."""

    began_at: datetime | None = None
    """When errord saw the turn begin; None when this report begins it."""
    calls: int = 1
    """Calls of the turn with a reported failure, this one's included."""
    retries: int = 0
    """RETRY decisions the turn's calls were granted so far."""
    deadline: datetime | None = None
    """When the turn must be done; None when it has no deadline."""
    retry_budget: RetryBudget | None = None
    """The turn's own retry budget; None for the daemon's."""
    corrections: int = 0
    """RETURN_TO_MODEL decisions the turn's calls were given so far: each spends the
    turn's retry budget as a retry does."""
    told: int = 0
    """Times the model was already handed this failure's mistake (errord.decide.mistake)
    in this turn, under any call id; 0 for a failure the model did not cause."""


@dataclass(frozen=True, slots=True)
class BreakerPart:
    """The circuit breakers the decision reads."""

    state: BreakerState = CLOSED_BREAKER
    """The failing tool's breaker, with this failure counted."""
    open_tools: frozenset[str] = frozenset()
    """The tool's alternatives whose breaker is open."""


@dataclass(frozen=True, slots=True)
class PlanPart:
    """What the turn's plan says of the call: what stands in for its result, and which
    calls wait on it. For a call outside any plan, its tool manifest's fallbacks."""

    optional: bool = False
    """True when the turn can go on without the call's result."""
    default: DefaultValue | None = None
    """The call's default result."""
    waiting: tuple[Waiting, ...] = ()
    """The calls that wait on it, directly or through others, in execution order."""


@dataclass(frozen=True, slots=True)
class DecisionContext:
    """Everything known about one failure when deciding on it; built by the engine."""

    report: FailureReport
    classification: Classification
    tool: ToolPart
    call: CallPart
    turn: TurnPart
    now: datetime
    breaker: BreakerPart = BreakerPart()
    plan: PlanPart = PlanPart()
    problems: tuple[ParameterProblem, ...] = ()
    """How the reported arguments break the tool's JSON Schema, when the failure says
    they were invalid and the tool has one."""
    memory: Mapping[str, Evidence] = field(default_factory=dict)
    """What episodic memory knows of this tool's error, per recovery (errord.decide.memory)."""

    @property
    def manifest(self) -> ToolManifest:
        return self.tool.manifest

    @property
    def retries_left(self) -> int:
        """Attempts of this tool still allowed after the one that failed."""
        return max(0, self.manifest.retry_policy.max_attempts - self.report.attempt)


@dataclass(frozen=True, slots=True)
class Verdict:
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


class CorrectionsSpent(Enum):
    """Why the model may not correct its call again; the value names the variant of the
    decision's texts (errord.decide.wording.reason_detail)."""

    CALL = "corrections"
    """The call had its corrections."""
    MISTAKE = "repeated"
    """The model was told of the same mistake of the tool in this turn as often as
    allowed, under any call id: a model that re-issues the bad call under fresh ids."""
    BUDGET = "budget"
    """The turn's retry budget is spent, and a correction spends it as a retry does."""


# Backoff: the delay before the next attempt.


class Pacing(Enum):
    """How episodic memory changed a retry's delay; the value is the factor."""

    SHORTER = 0.5
    """Retries of this error mostly recover it: waiting long buys nothing."""
    LONGER = 2.0
    """Retries of this error rarely recover it: give the tool more time."""


def pacing(evidence: Evidence | None, min_episodes: float) -> Pacing | None:
    """The pacing the evidence of retries calls for, once there is enough of it."""
    if evidence is None or evidence.told < min_episodes:
        return None
    if evidence.success_rate >= 0.8:
        return Pacing.SHORTER
    if evidence.success_rate < 0.5:
        return Pacing.LONGER
    return None


class Backoff(abc.ABC):
    """Proposes the delay before the next attempt."""

    @abc.abstractmethod
    def __call__(self, context: DecisionContext) -> float: ...

    def pacing(self, context: DecisionContext) -> Pacing | None:
        """How episodic memory changed the delay; None when it did not."""
        return None


class ExponentialBackoff(Backoff):
    """initial * multiplier^(attempt-1), capped at max_delay, halved or doubled by episodic
    memory (over ``min_episodes``; never beyond initial_delay and max_delay), then
    +-jitter."""

    def __init__(self, jitter: Jitter, min_episodes: float | None = None) -> None:
        self._jitter = jitter
        self._min_episodes = min_episodes

    def __call__(self, context: DecisionContext) -> float:
        delay, _ = self._paced_delay(context)
        jitter = context.manifest.retry_policy.jitter
        return delay * (1 + self._jitter.uniform(-jitter, jitter))

    def pacing(self, context: DecisionContext) -> Pacing | None:
        return self._paced_delay(context)[1]

    def _paced_delay(self, context: DecisionContext) -> tuple[float, Pacing | None]:
        policy = context.manifest.retry_policy
        exponent = context.report.attempt - 1
        try:
            grown = policy.initial_delay * policy.multiplier**exponent
        except OverflowError:  # attempts in the thousands: far beyond any cap
            grown = policy.max_delay
        delay = min(grown, policy.max_delay)
        if self._min_episodes is None or not context.memory:
            return delay, None
        paced = pacing(context.memory.get(Action.RETRY.value), self._min_episodes)
        if paced is None:
            return delay, None
        bounded = min(max(delay * paced.value, policy.initial_delay), policy.max_delay)
        return (bounded, paced) if bounded != delay else (delay, None)


class HonourRetryAfter(Backoff):
    """The tool's own Retry-After replaces the computed delay; RetryAfterTooLong
    refuses a wait longer than the policy allows."""

    def __init__(self, computed: Backoff) -> None:
        self._computed = computed

    def __call__(self, context: DecisionContext) -> float:
        asked = requested_delay(context)
        return self._computed(context) if asked is None else asked

    def pacing(self, context: DecisionContext) -> Pacing | None:
        return self._computed.pacing(context) if requested_delay(context) is None else None


def requested_delay(context: DecisionContext) -> float | None:
    """Seconds the tool asked to wait, from retry_after or retry_at; None if it did not ask."""
    error = context.report.error
    if error.retry_after is not None:
        return max(0.0, error.retry_after)
    if error.retry_at is not None:
        return max(0.0, (error.retry_at - context.now).total_seconds())
    return None


# Gates: reasons to refuse a retry.


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
        return AnyGate((*self.gates, other))


class PermanentError(RetryGate):
    """Permanent errors are never retried."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        if context.classification.error_class is ErrorClass.PERMANENT:
            return Refusal(kind=RefusalKind.PERMANENT_ERROR)
        return None


class NotIdempotent(RetryGate):
    """A tool whose calls have side effects is never repeated."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        if not context.manifest.idempotent:
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
    """No retry of an error that retries have not fixed once in ``min_episodes`` similar
    failures or more (episodic memory, decayed: the evidence fades, and then retries are
    tried again)."""

    def __init__(self, min_episodes: float = 5) -> None:
        self.min_episodes = min_episodes

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        evidence = context.memory.get(Action.RETRY.value)
        if evidence is None or evidence.told < self.min_episodes or evidence.succeeded >= 0.5:
            return None
        return Refusal(
            kind=RefusalKind.RETRIES_NEVER_FIX,
            recovered=evidence.succeeded,
            tried=evidence.told,
        )


class DeadlineTooClose(RetryGate):
    """No retry that could still be running at the turn's deadline: the delay plus the
    tool's timeout must end before it."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        left = time_left(context)
        if left is not None and delay + context.manifest.timeout > left:
            return Refusal(kind=RefusalKind.DEADLINE, limit=max(0.0, left), wait=delay)
        return None


def time_left(context: DecisionContext) -> float | None:
    """Seconds until the turn's deadline (negative once past); None without one."""
    deadline = context.turn.deadline
    return None if deadline is None else (deadline - context.now).total_seconds()


class AttemptsExhausted(RetryGate):
    """At most max_attempts attempts of one tool per call."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        if context.retries_left == 0:
            limit = context.manifest.retry_policy.max_attempts
            return Refusal(
                kind=RefusalKind.ATTEMPTS_EXHAUSTED, limit=limit, attempt=context.report.attempt
            )
        return None


class RetryAfterTooLong(RetryGate):
    """A retry is never sooner than the tool asked; a wait the policy does not allow
    (``max_retry_after``) means no retry."""

    def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
        asked = requested_delay(context)
        limit = context.manifest.retry_policy.longest_retry_after
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


# Fallbacks: what to do when the retry is refused.


class Fallback(abc.ABC):
    """Decides instead of a refused retry, or passes with None."""

    @abc.abstractmethod
    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None: ...


MODEL_CAUSED = frozenset({ErrorCode.INVALID_INPUT, ErrorCode.TOOL_NOT_FOUND})
"""Codes of failures the model's call caused: its arguments, or the tool it named."""


def model_caused(context: DecisionContext) -> bool:
    """True for a permanent failure of the model's own making: invalid arguments, a tool
    that does not exist, or a schema violation that the reported arguments show."""
    classification = context.classification
    if classification.error_class is not ErrorClass.PERMANENT:
        return False
    code = classification.code
    return code in MODEL_CAUSED or (code is ErrorCode.SCHEMA_VIOLATION and bool(context.problems))


class ReturnToModel(Fallback):
    """A failure the model caused goes back to it to correct its call, at most ``limit``
    times per call and ``limit`` times per mistake in a turn (the same mistake of the same
    tool under any call id), each spending the turn's retry budget (its own, else
    ``budget``) as a retry does. Then it escalates, or fails when the call is optional:
    an alternative tool, a default or a skip does not fix the model's own call (seed 003),
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
        if evidence is None or evidence.told < self.min_episodes:
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


def probe_role(context: DecisionContext, verdict: Verdict) -> str:
    """What a RETRY is to a half-open breaker: "probe" when it is the one probe,
    "awaits_probe" when it waits for the probe in flight; "" otherwise."""
    breaker, now = context.breaker.state, context.now
    if (
        verdict.action is not Action.RETRY
        or breaker.effective_phase(now) is not BreakerPhase.HALF_OPEN
    ):
        return ""
    return "awaits_probe" if breaker.probe_in_flight(now) else "probe"


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
    """Near or past the turn's deadline, go on without the call's result (seed 004
    section 4.2: keep what completed, skip the rest)."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        return Verdict(Action.SKIP, refusal) if refusal.kind is RefusalKind.DEADLINE else None


class SkipOptional(Fallback):
    """Go on without the result of a call its plan, or its tool's manifest, calls optional."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        return Verdict(Action.SKIP, refusal) if context.plan.optional else None


UNRECOVERABLE = frozenset({ErrorCode.NOT_FOUND, ErrorCode.UNSUPPORTED})
"""Codes of permanent failures that nothing anyone can do now would recover: what the
call asked for does not exist, or its tool cannot do it."""


class FailUnrecoverable(Fallback):
    """Fail gracefully (seed 004 section 6.1) when nothing anyone can do now would recover
    the call: a permanent NOT_FOUND or UNSUPPORTED. A person can act on every other
    failure (credentials, permissions, an exhausted quota, a transient trouble to try again
    later, a tool whose effects must be checked): it escalates."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict | None:
        classification = context.classification
        if classification.error_class is not ErrorClass.PERMANENT:
            return None
        return Verdict(Action.FAIL, refusal) if classification.code in UNRECOVERABLE else None


class Escalate(Fallback):
    """Hand the failure to the user; always applies."""

    def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict:
        return Verdict(Action.ESCALATE, refusal)


# The policy.


class RecoveryPolicy:
    """Backoff, gates and fallbacks put together into one decision."""

    def __init__(self, backoff: Backoff, gate: RetryGate, fallbacks: Sequence[Fallback]) -> None:
        if not fallbacks or not isinstance(fallbacks[-1], Escalate):
            raise ValueError("the last fallback must be Escalate, so that every failure is decided")
        self.backoff = backoff
        self.gate = gate
        self.fallbacks = tuple(fallbacks)

    def decide(self, context: DecisionContext) -> Verdict:
        delay = round(self.backoff(context), 3)  # whole milliseconds
        refusal = self.gate(context, delay)
        if refusal is None:
            return Verdict(Action.RETRY, delay=delay, paced=self.backoff.pacing(context))
        for fallback in self.fallbacks:
            verdict = fallback(context, refusal)
            if verdict is not None:
                return with_cascade(context, verdict)
        raise AssertionError("unreachable: Escalate always decides")


def with_cascade(context: DecisionContext, verdict: Verdict) -> Verdict:
    """``verdict`` with what it means for the calls waiting on this one, when the call
    ends without a result: they are skipped or given their defaults, and a required one
    that cannot run makes a SKIP (or the FAIL of an optional call out of corrections) an
    ESCALATE (seed 004 section 5)."""
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
    jitter: Jitter,
    budget: RetryBudget | None = None,
    corrections: int = 2,
    min_episodes: float = 5,
) -> RecoveryPolicy:
    """The policy of the seeds: backoff honouring Retry-After, else exponential, halved
    or doubled when retries of this error mostly or rarely recovered it (episodic memory,
    over ``min_episodes``); retry unless permanent, not idempotent, the breaker open (or
    its half-open probe taken), retries of this error never having fixed it, too close to
    the turn's deadline, the turn's retry budget spent (its own, else ``budget``), out of
    attempts, asked to wait too long or out of retry time; else, for a failure the model
    caused, back to the model (``corrections`` times per call and per mistake in a turn,
    within the turn's retry budget; then escalate, or fail an optional call); else an
    alternative, else wait for the probe, else the partial result, the default result or
    (out of time, or for an optional call) no result, else fail what nothing can recover,
    else escalate; and the calls waiting on one that ends without a result are skipped,
    given their defaults, or escalate."""
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
            AwaitProbe(limits),
            ContinuePartial(),
            UseDefault(),
            SkipOutOfTime(),
            SkipOptional(),
            FailUnrecoverable(),
            Escalate(),
        ),
    )
