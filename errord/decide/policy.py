"""Composable recovery policy: a proposed retry, gates that may refuse it, fallbacks.

A decision is reached in three steps over one immutable ``DecisionContext``:

1. a ``Backoff`` proposes the delay before the next attempt;
2. ``RetryGate``s may refuse that retry, each with a reason; gates combine with
   ``|`` and the first refusal wins (as tenacity's ``stop_any``);
3. when the retry is refused, ``Fallback``s are tried in order and the first
   that applies decides (an alternative tool, ..., escalation to the user).

Breakers, turn deadlines and episodic memory join as more gates and fallbacks.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from errord.decide.model import Action, Classification, ErrorClass, FailureReport
from errord.manifests.model import ToolManifest


class Jitter(Protocol):
    """The randomness a backoff needs; ``random.Random`` is one."""

    def uniform(self, a: float, b: float) -> float: ...


@dataclass(frozen=True)
class DecisionContext:
    """Everything known about one failure when deciding on it."""

    report: FailureReport
    classification: Classification
    manifest: ToolManifest
    """The tool's manifest, or the default one when it has none."""
    default_policy: bool
    """True when the tool has no manifest."""
    retry_time_spent: float
    """Seconds this call already spent retrying this tool, this failed attempt included."""
    now: datetime
    failed_tools: frozenset[str] = frozenset()
    """Tools that already failed on this call, the failing one included."""
    manifests: frozenset[str] = frozenset()
    """Names of every tool with a manifest."""

    @property
    def retries_left(self) -> int:
        """Attempts of this tool still allowed after the one that failed."""
        return max(0, self.manifest.retry_policy.max_attempts - self.report.attempt)


@dataclass(frozen=True)
class Verdict:
    """What the policy decided, before messages are written."""

    action: Action
    reason: str
    delay: float = 0.0
    alternative_tool: str | None = None


# Backoff: the delay before the next attempt.


class Backoff(abc.ABC):
    """Proposes the delay before the next attempt."""

    @abc.abstractmethod
    def __call__(self, context: DecisionContext) -> float: ...


class ExponentialBackoff(Backoff):
    """initial * multiplier^(attempt-1), capped at max_delay, then +-jitter."""

    def __init__(self, jitter: Jitter) -> None:
        self._jitter = jitter

    def __call__(self, context: DecisionContext) -> float:
        policy = context.manifest.retry_policy
        exponent = context.report.attempt - 1
        delay = min(policy.initial_delay * policy.multiplier**exponent, policy.max_delay)
        return delay * (1 + self._jitter.uniform(-policy.jitter, policy.jitter))


class HonourRetryAfter(Backoff):
    """The tool's own retry-after replaces the computed delay, capped at max_delay."""

    def __init__(self, computed: Backoff) -> None:
        self._computed = computed

    def __call__(self, context: DecisionContext) -> float:
        asked = requested_delay(context)
        if asked is None:
            return self._computed(context)
        return min(asked, context.manifest.retry_policy.max_delay)


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
    """Refuses a retry with a reason, or lets it pass with None."""

    @abc.abstractmethod
    def __call__(self, context: DecisionContext, delay: float) -> str | None: ...

    def __or__(self, other: RetryGate) -> RetryGate:
        return AnyGate((self, other))


class AnyGate(RetryGate):
    """Refuses when any of its gates refuses; the first refusal is the reason."""

    def __init__(self, gates: Sequence[RetryGate]) -> None:
        self.gates = tuple(gates)

    def __call__(self, context: DecisionContext, delay: float) -> str | None:
        for gate in self.gates:
            refusal = gate(context, delay)
            if refusal is not None:
                return refusal
        return None

    def __or__(self, other: RetryGate) -> RetryGate:
        return AnyGate((*self.gates, other))


class PermanentError(RetryGate):
    """Permanent errors are never retried."""

    def __call__(self, context: DecisionContext, delay: float) -> str | None:
        if context.classification.error_class is ErrorClass.PERMANENT:
            code = context.classification.code.value
            return f"the error is permanent ({code}), so retrying the same call cannot help"
        return None


class NotIdempotent(RetryGate):
    """A tool whose calls have side effects is never repeated."""

    def __call__(self, context: DecisionContext, delay: float) -> str | None:
        if not context.manifest.idempotent:
            return f"{context.report.tool} is not idempotent, so a retry could repeat its effect"
        return None


class AttemptsExhausted(RetryGate):
    """At most max_attempts attempts of one tool per call."""

    def __call__(self, context: DecisionContext, delay: float) -> str | None:
        if context.retries_left == 0:
            limit = context.manifest.retry_policy.max_attempts
            return f"attempt {context.report.attempt} reached the limit of {limit} attempts"
        return None


class TotalRetryTimeExceeded(RetryGate):
    """The time spent retrying, the next delay included, stays within max_total_time."""

    def __call__(self, context: DecisionContext, delay: float) -> str | None:
        limit = context.manifest.retry_policy.max_total_time
        if context.retry_time_spent + delay > limit:
            spent_ms = round(context.retry_time_spent * 1000)
            return (
                f"{spent_ms} ms spent retrying plus a {round(delay * 1000)} ms delay would exceed "
                f"the {round(limit * 1000)} ms retry budget"
            )
        return None


# Fallbacks: what to do when the retry is refused.


class Fallback(abc.ABC):
    """Decides instead of a refused retry, or passes with None."""

    @abc.abstractmethod
    def __call__(self, context: DecisionContext, refusal: str) -> Verdict | None: ...


class UseAlternative(Fallback):
    """Switch to the first alternative the manifest lists that has not failed on this call."""

    def __call__(self, context: DecisionContext, refusal: str) -> Verdict | None:
        untried = [t for t in context.manifest.alternatives if t not in context.failed_tools]
        if not untried:
            return None
        reason = f"No retry: {refusal}; using the alternative tool {untried[0]}."
        return Verdict(Action.USE_ALTERNATIVE, reason, alternative_tool=untried[0])


class Escalate(Fallback):
    """Hand the failure to the user; always applies."""

    def __call__(self, context: DecisionContext, refusal: str) -> Verdict:
        alternatives = ", ".join(context.manifest.alternatives)
        if alternatives:
            return Verdict(
                Action.ESCALATE,
                f"No retry: {refusal}; the alternatives ({alternatives}) already failed on this "
                "call, escalating.",
            )
        return Verdict(Action.ESCALATE, f"No retry: {refusal}; no alternative tool, escalating.")


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
            return Verdict(Action.RETRY, retry_reason(context, delay), delay=delay)
        for fallback in self.fallbacks:
            verdict = fallback(context, refusal)
            if verdict is not None:
                return verdict
        raise AssertionError("unreachable: Escalate always decides")


def retry_reason(context: DecisionContext, delay: float) -> str:
    code = context.classification.code.value
    attempt = context.report.attempt + 1
    limit = context.manifest.retry_policy.max_attempts
    delay_ms = round(delay * 1000)
    return f"Transient error ({code}); retrying in {delay_ms} ms, attempt {attempt} of {limit}."


def default_policy(jitter: Jitter) -> RecoveryPolicy:
    """The policy of the seeds: backoff honouring retry-after; retry unless permanent,
    not idempotent, out of attempts or out of retry time; else an alternative, else escalate."""
    return RecoveryPolicy(
        backoff=HonourRetryAfter(ExponentialBackoff(jitter)),
        gate=PermanentError() | NotIdempotent() | AttemptsExhausted() | TotalRetryTimeExceeded(),
        fallbacks=(UseAlternative(), Escalate()),
    )
