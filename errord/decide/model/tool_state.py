"""What errord holds of a tool across calls: its circuit breaker (``BreakerState``, with
the half-open breaker's ``Probe``) and its rate-limit window (``RateWindow``), recorded
with the decisions that change them.
"""

from __future__ import annotations

from datetime import datetime

from errord.decide.model.failures import CallKey, ClosedEnum, Record


class BreakerPhase(ClosedEnum):
    """Where a tool's circuit breaker stands: closed, open or half-open."""

    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


class BreakerChange(ClosedEnum):
    """A transition of a circuit breaker, recorded as a trace event."""

    OPENED = "OPENED"
    HALF_OPENED = "HALF_OPENED"
    CLOSED = "CLOSED"
    RESET = "RESET"
    """An operator closed it."""
    FORCED_OPEN = "FORCED_OPEN"
    """An operator opened it, for maintenance."""
    PROBE_CLAIMED = "PROBE_CLAIMED"
    """An executor claimed the half-open breaker's probe before running it (AdmitCall)."""


class Probe(Record, frozen=True):
    """The one attempt a half-open breaker lets through."""

    turn_id: str
    call_id: str
    attempt: int
    """The attempt that probes: the one after the failure that was granted the retry."""
    until: datetime
    """When the probe is released if its outcome has not arrived: the retry's delay plus
    the tool's timeout after it was granted."""

    def is_attempt(self, turn_id: str, call_id: str, attempt: int) -> bool:
        return (self.turn_id, self.call_id, self.attempt) == (turn_id, call_id, attempt)


class BreakerState(Record, frozen=True):
    """One tool's circuit breaker, as recorded: with each decision, and as a projection."""

    phase: BreakerPhase = BreakerPhase.CLOSED
    failures: int = 0
    """Consecutive transient failures counted while closed (or by the failed probe)."""
    successes: int = 0
    """Consecutive successes counted while half-open."""
    opened_at: datetime | None = None
    """When it last opened."""
    half_opens_at: datetime | None = None
    """When an open breaker lets its probe through; None while open means until an
    operator resets it."""
    opens: int = 0
    """Times it opened, forced openings included."""
    generation: int = 0
    """Transitions so far; numbers the transition events."""
    probe: Probe | None = None
    """The half-open breaker's probe in flight, if any."""
    streak: int = 0
    """Openings in a row: since the breaker last stayed closed for its policy's cooldown.
    The break of the next one grows with it (BreakerPolicy.break_for)."""
    closed_at: datetime | None = None
    """When it last closed, or an operator reset it."""
    run_call: CallKey | None = None
    """The call whose failure began the run of ``failures``."""
    run_calls: int = 0
    """Distinct calls among the run of ``failures``, counted up to 2: one call's own
    retries are no evidence of an outage."""
    recent: int = 0
    """The recent attempts' outcomes, a bit each, the newest lowest: 1 failed, 0 succeeded.
    Only transient failures and successes count, from the first failure after a quiet
    spell on; the policy's ``window`` of them at most."""
    seen: int = 0
    """How many attempts ``recent`` holds."""
    failed_at: datetime | None = None
    """When the last transient failure was counted: the end of a quiet spell is read
    from it."""

    def effective_phase(self, now: datetime) -> BreakerPhase:
        """The phase at ``now``: an open breaker whose cooldown is over is half-open, even
        before the transition is recorded (by the next report of the tool)."""
        if self.phase is BreakerPhase.OPEN and self.cooldown_over(now):
            return BreakerPhase.HALF_OPEN
        return self.phase

    def cooldown_over(self, now: datetime) -> bool:
        return self.half_opens_at is not None and now >= self.half_opens_at

    def probe_in_flight(self, now: datetime) -> Probe | None:
        """The probe, unless its time ran out."""
        probe = self.probe
        return probe if probe is not None and now < probe.until else None

    @property
    def recent_failures(self) -> int:
        """Failures among the ``seen`` recent attempts."""
        return self.recent.bit_count()

    @property
    def break_length(self) -> float | None:
        """Seconds the current (or last) opening lasts; None when it never opened, or an
        operator opened it until a reset."""
        if self.opened_at is None or self.half_opens_at is None:
            return None
        return (self.half_opens_at - self.opened_at).total_seconds()


CLOSED_BREAKER = BreakerState()


class RateWindow(Record, frozen=True):
    """A tool's rate-limit window: its backend refused a call for its rate (a 429, a
    rate-limit error) and asked for a wait; until it ends errord holds every call of the
    tool, so that nobody calls into the limit. A rate limit is no outage: the breaker
    does not count it."""

    opened_at: datetime
    """When the rate limit that opened (or last lengthened) it was reported."""
    until: datetime
    """When calls may go again: the wait the tool asked for, else the retry's delay."""
    asked: float | None = None
    """Seconds the tool asked to wait (its Retry-After); None when it did not say."""
    generation: int = 0
    """Windows of the tool so far, this one included; numbers its events."""

    def holds(self, now: datetime) -> bool:
        """True while calls of the tool must wait."""
        return now < self.until

    def left(self, now: datetime) -> float:
        """Seconds until the window ends; 0 once it has."""
        return max(0.0, (self.until - now).total_seconds())
