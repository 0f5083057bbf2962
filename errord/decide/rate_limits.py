"""Rate limits: a tool limiting its callers' rate is not down.

A rate-limited failure (a 429, a rate-limit error: RATE_LIMITED, transient) never counts
towards opening the tool's breaker. It opens the tool's rate-limit window instead, or
makes it longer: until the wait the tool asked for (its Retry-After) is over, else until
the failed call's own retry. While the window holds, every call of the tool waits for
its end: an attempt about to run is refused (AdmitCall) and decided as if it had been
rate-limited itself, and no retry of the tool is granted sooner (``requested_delay``),
so that nobody calls into the limit. Executors hear of the window (WatchTools) and ask
before running an attempt while it holds.

A call waiting as the tool asked is not failing: the backend rations its callers, and a
call may meet its limit more often than max_attempts while its turn comes. Such a retry is
bounded by the call's total retry time (and the turn's deadline), not by its attempts
(``waits_its_turn``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from errord.decide.context import DecisionContext, own_request, requested_delay
from errord.decide.model import Action, Decision, ErrorClass, ErrorCode, RateWindow


def is_rate_limit(context: DecisionContext) -> bool:
    """True for a failure in which the tool's backend limited the call's rate: transient
    RATE_LIMITED, and not errord's own refusal of an attempt."""
    classification = context.classification
    return (
        classification.code is ErrorCode.RATE_LIMITED
        and classification.error_class is ErrorClass.TRANSIENT
        and not context.call.was_refused
    )


def waits_its_turn(context: DecisionContext) -> bool:
    """True for a rate limit that says how long to wait: the tool's own (a Retry-After, a
    time), or errord's refusal while the tool's rate-limit window holds. Its attempts do
    not count against max_attempts."""
    classification = context.classification
    return (
        classification.code is ErrorCode.RATE_LIMITED
        and classification.error_class is ErrorClass.TRANSIENT
        and requested_delay(context) is not None
    )


def window_after(context: DecisionContext, decision: Decision) -> RateWindow | None:
    """The tool's rate-limit window once the rate limit ``context`` reports is counted: until
    the wait the tool asked for, else the retry's delay (the longest computed delay when
    it is not retried); None when the window in force already lasts as long."""
    asked = own_request(context)
    if asked is not None:
        wait = asked
    elif decision.action is Action.RETRY:
        wait = decision.delay
    else:
        wait = context.manifest.retry_policy.max_delay
    return lengthened(context.breaker.window, context.now, wait, asked)


def lengthened(
    window: RateWindow | None, now: datetime, wait: float, asked: float | None
) -> RateWindow | None:
    """A window until ``wait`` seconds after ``now``; None when ``window`` ends no sooner."""
    until = now + timedelta(seconds=wait)
    if window is not None and window.until >= until:
        return None
    generation = window.generation + 1 if window is not None else 1
    return RateWindow(opened_at=now, until=until, asked=asked, generation=generation)
