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

from errord.decide.model import (
    Action,
    Classification,
    Decision,
    ErrorClass,
    ErrorCode,
    RateWindow,
)


def is_rate_limit(classification: Classification, was_refused: bool) -> bool:
    """True for a failure in which the tool's backend limited the call's rate: transient
    RATE_LIMITED, and not errord's own refusal of an attempt (``was_refused``)."""
    return (
        classification.code is ErrorCode.RATE_LIMITED
        and classification.error_class is ErrorClass.TRANSIENT
        and not was_refused
    )


def window_after(
    window: RateWindow | None,
    now: datetime,
    asked: float | None,
    decision: Decision,
    max_delay: float,
) -> RateWindow | None:
    """The tool's rate-limit window ``window`` once a rate limit reported at ``now`` is
    counted: until the wait the tool asked for (``asked`` seconds, its Retry-After), else
    the retry's delay (``max_delay``, the longest computed delay, when it is not retried);
    None when the window in force already lasts as long."""
    if asked is not None:
        wait = asked
    elif decision.action is Action.RETRY:
        wait = decision.delay
    else:
        wait = max_delay
    return lengthened(window, now, wait, asked)


def lengthened(
    window: RateWindow | None, now: datetime, wait: float, asked: float | None
) -> RateWindow | None:
    """A window until ``wait`` seconds after ``now``; None when ``window`` ends no sooner."""
    until = now + timedelta(seconds=wait)
    if window is not None and window.until >= until:
        return None
    generation = window.generation + 1 if window is not None else 1
    return RateWindow(opened_at=now, until=until, asked=asked, generation=generation)
