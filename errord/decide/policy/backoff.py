"""Backoff: the delay a policy proposes before the next attempt, paced by episodic memory.

The jitter of a delay is drawn from the decision's id (``seeded_fraction``) unless a
``Jitter`` is given: a decision is then a function of its report, its state, its time and
its id, and a replay that gives the recorded ids and times re-decides it identically.
"""

from __future__ import annotations

import abc
import zlib
from typing import Protocol

from errord.decide.memory import Evidence
from errord.decide.model import Action, ClosedEnum
from errord.decide.policy.context import DecisionContext, requested_delay


class Jitter(Protocol):
    """The randomness a backoff needs; ``random.Random`` is one."""

    def uniform(self, a: float, b: float) -> float: ...


def seeded_fraction(decision_id: str) -> float:
    """A number in [0, 1) drawn from ``decision_id``: the same for the same id, spread
    evenly over ids (random ones, as errord's are)."""
    return zlib.crc32(decision_id.encode()) / 2**32


class Pacing(ClosedEnum):
    """How episodic memory changed a retry's delay; the value is the factor."""

    SHORTER = 0.5
    """Retries of this error mostly recover it: waiting long buys nothing."""
    LONGER = 2.0
    """Retries of this error rarely recover it: give the tool more time."""


def pacing(evidence: Evidence | None, min_episodes: float) -> Pacing | None:
    """The pacing the evidence of retries calls for, once there is enough of it."""
    if evidence is None or not evidence.enough(min_episodes):
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

    def proposal(self, context: DecisionContext) -> tuple[float, Pacing | None]:
        """The delay and its pacing at once, each as ``__call__`` and ``pacing`` say."""
        return self(context), self.pacing(context)


class ExponentialBackoff(Backoff):
    """initial * multiplier^(attempt-1), capped at max_delay, halved or doubled by episodic
    memory (over ``min_episodes``; never beyond initial_delay and max_delay), then
    +-jitter: drawn from ``jitter`` when given, else from the decision's id."""

    def __init__(self, jitter: Jitter | None = None, min_episodes: float | None = None) -> None:
        self._jitter = jitter
        self._min_episodes = min_episodes

    def __call__(self, context: DecisionContext) -> float:
        return self.proposal(context)[0]

    def pacing(self, context: DecisionContext) -> Pacing | None:
        return self._paced_delay(context)[1]

    def proposal(self, context: DecisionContext) -> tuple[float, Pacing | None]:
        delay, paced = self._paced_delay(context)
        jitter = context.manifest.retry_policy.jitter
        if self._jitter is not None:
            return delay * (1 + self._jitter.uniform(-jitter, jitter)), paced
        return delay * (1 + jitter * (2 * seeded_fraction(context.decision_id) - 1)), paced

    def _paced_delay(self, context: DecisionContext) -> tuple[float, Pacing | None]:
        policy = context.manifest.retry_policy
        exponent = max(0, context.attempts_run - 1)
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

    def proposal(self, context: DecisionContext) -> tuple[float, Pacing | None]:
        asked = requested_delay(context)
        return self._computed.proposal(context) if asked is None else (asked, None)
