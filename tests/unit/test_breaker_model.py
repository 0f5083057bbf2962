"""One breaker against a small reference model, under random histories.

The model is the breaker's rules written out plainly, one probe at a time: a closed
breaker opens on consecutive transient failures of two calls at least while nearly all
the recent attempts failed (80 %), or on a failure rate over enough recent attempts; what came
before a quiet spell is forgotten; failures that do not count (permanent, rate limits,
refusals) never change it; an open breaker ignores everything; the first failure
reported after its break half-opens it and its retry is the one probe; in half-open only
the probe's failure reopens the breaker, for a longer break, and enough consecutive
successes close it. A probe whose result never comes is released after its time, and
one that fails permanently is simply over. An operator's reset starts it all over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from errord.decide.health import breaker as breakers
from errord.decide.manifest import BreakerPolicy
from errord.decide.model import CLOSED_BREAKER, BreakerChange, BreakerPhase, BreakerState, Probe

START = datetime(2026, 1, 1, tzinfo=UTC)
PROBE_TIME = 5.0


@dataclass
class ReferenceBreaker:
    """Opening on evidence, a growing break, one probe at a time in half-open."""

    policy: BreakerPolicy
    phase: BreakerPhase = BreakerPhase.CLOSED
    run: list[str] = field(default_factory=list)
    """The calls of the consecutive failures counted while closed."""
    recent: list[bool] = field(default_factory=list)
    """The recent attempts since the last quiet spell, oldest first: True failed."""
    last_failure: datetime | None = None
    successes: int = 0
    opened_at: datetime | None = None
    half_opens_at: datetime | None = None
    opens: int = 0
    streak: int = 0
    closed_at: datetime | None = None
    probe: int | None = None
    probe_until: datetime | None = None

    def _forget(self) -> None:
        self.run, self.recent, self.last_failure = [], [], None

    def _quiet(self, now: datetime) -> bool:
        last = self.last_failure
        return last is None or (now - last).total_seconds() >= self.policy.cooldown

    def _outage(self) -> bool:
        policy, recent = self.policy, self.recent
        run = len(self.run) >= policy.failure_threshold and len(set(self.run)) >= 2
        dead = run and sum(recent) >= 0.8 * len(recent)
        sick = len(recent) >= policy.min_calls and sum(recent) >= policy.failure_rate * len(recent)
        return dead or sick

    def _open(self, now: datetime) -> None:
        closed = self.closed_at
        grows = self.phase is not BreakerPhase.CLOSED or (
            closed is not None and (now - closed).total_seconds() < self.policy.cooldown
        )
        self.streak = self.streak + 1 if grows else 1
        self.phase, self.opened_at, self.opens = BreakerPhase.OPEN, now, self.opens + 1
        self.half_opens_at = now + timedelta(seconds=self.policy.break_for(self.streak))
        self.probe = None

    def failure(self, now: datetime, call: str) -> None:
        """A transient failure of an attempt that is not the probe."""
        if self.phase is BreakerPhase.CLOSED:
            if self._quiet(now):
                self._forget()
            self.run.append(call)
            self.recent = [*self.recent, True][-self.policy.window :]
            self.last_failure = now
            if self._outage():
                self._open(now)
        elif self.phase is BreakerPhase.OPEN and self.break_over(now):
            self.phase, self.successes = BreakerPhase.HALF_OPEN, 0

    def break_over(self, now: datetime) -> bool:
        return self.half_opens_at is not None and now >= self.half_opens_at

    def success(self, now: datetime) -> None:
        """A success of an attempt that is not the probe."""
        if self.phase is BreakerPhase.CLOSED:
            if (not self.run and not self.recent) or self._quiet(now):
                return
            self.run = []
            self.recent = [*self.recent, False][-self.policy.window :]
            if not any(self.recent):
                self.recent = []
        elif self.phase is BreakerPhase.HALF_OPEN:
            self._count_success(now)

    def _count_success(self, now: datetime) -> None:
        self.successes += 1
        if self.successes >= self.policy.success_threshold:
            self.phase, self.successes, self.probe = BreakerPhase.CLOSED, 0, None
            self.closed_at = now
            self._forget()

    def probe_free(self, now: datetime) -> bool:
        return self.probe is None or (self.probe_until is not None and now >= self.probe_until)

    def probe_failed(self, now: datetime) -> None:
        self._open(now)

    def probe_succeeded(self, now: datetime) -> None:
        self.probe = None
        self._count_success(now)


class BreakerAgainstTheReference(RuleBasedStateMachine):
    @initialize(
        failure_threshold=st.integers(1, 6),
        success_threshold=st.integers(1, 3),
        cooldown=st.sampled_from((0.5, 30.0, 60.0)),
        first_cooldown=st.sampled_from((0.25, 1.0, 30.0)),
        multiplier=st.sampled_from((1.0, 1.5, 2.0)),
        failure_rate=st.sampled_from((0.5, 0.8, 1.0)),
        window=st.integers(1, 8),
        min_calls=st.integers(1, 8),
    )
    def configure(
        self,
        failure_threshold: int,
        success_threshold: int,
        cooldown: float,
        first_cooldown: float,
        multiplier: float,
        failure_rate: float,
        window: int,
        min_calls: int,
    ) -> None:
        self.policy = BreakerPolicy(
            failure_threshold,
            cooldown,
            success_threshold,
            first_cooldown=first_cooldown,
            cooldown_multiplier=multiplier,
            failure_rate=failure_rate,
            min_calls=min(min_calls, window),
            window=window,
        )
        self.model = ReferenceBreaker(self.policy)
        self.state: BreakerState | None = None
        self.now = START
        self.transitions: list[BreakerChange] = []
        self.probes = 0

    def _take(self, stepped: breakers.Stepped) -> None:
        self.state = stepped.state
        self.transitions += [change for change, _ in stepped.changes]

    def _probe_attempt(self) -> tuple[str, str, int]:
        return ("turn", f"probe-{self.probes}", 2)

    @rule(call=st.sampled_from(("a", "b", "c")))
    def transient_failure(self, call: str) -> None:
        attempt = ("turn", call, 1)
        self._take(
            breakers.on_failure(self.state, self.policy, self.now, counts=True, attempt=attempt)
        )
        self.model.failure(self.now, call)

    @rule()
    def failure_that_does_not_count(self) -> None:
        """A permanent error, a rate limit, an attempt errord refused."""
        before = self.state
        stepped = breakers.on_failure(
            self.state, self.policy, self.now, counts=False, attempt=("turn", "a", 1)
        )
        assert stepped.changes == ()
        assert stepped.state == (before or CLOSED_BREAKER)

    @rule()
    def success(self) -> None:
        attempt = ("turn", "a", 1)
        self._take(
            breakers.on_outcome(self.state, self.policy, self.now, succeeded=True, attempt=attempt)
        )
        self.model.success(self.now)

    @rule()
    def grant_probe(self) -> None:
        """What the engine does when a half-open breaker's retry is granted."""
        state = self.state or CLOSED_BREAKER
        if state.phase is not BreakerPhase.HALF_OPEN or state.probe_in_flight(self.now):
            assert not (
                self.model.phase is BreakerPhase.HALF_OPEN and self.model.probe_free(self.now)
            )
            return
        assert self.model.phase is BreakerPhase.HALF_OPEN
        assert self.model.probe_free(self.now)
        self.probes += 1
        turn, call, attempt = self._probe_attempt()
        until = self.now + timedelta(seconds=PROBE_TIME)
        self.state = breakers.with_probe(state, Probe(turn, call, attempt, until))
        self.model.probe, self.model.probe_until = self.probes, until

    @rule(succeeded=st.booleans(), as_failure_report=st.booleans(), permanent=st.booleans())
    def probe_result(self, succeeded: bool, as_failure_report: bool, permanent: bool) -> None:
        if self.model.probe is None or self.model.phase is not BreakerPhase.HALF_OPEN:
            return
        if permanent and not succeeded:
            stepped = breakers.on_failure(
                self.state, self.policy, self.now, counts=False, attempt=self._probe_attempt()
            )
            assert stepped.changes == ()
            self.model.probe = None
        elif succeeded:
            stepped = breakers.on_outcome(
                self.state, self.policy, self.now, succeeded=True, attempt=self._probe_attempt()
            )
            self.model.probe_succeeded(self.now)
        else:
            if as_failure_report:
                stepped = breakers.on_failure(
                    self.state, self.policy, self.now, counts=True, attempt=self._probe_attempt()
                )
            else:
                stepped = breakers.on_outcome(
                    self.state,
                    self.policy,
                    self.now,
                    succeeded=False,
                    attempt=self._probe_attempt(),
                )
            self.model.probe_failed(self.now)
        self._take(stepped)

    @rule()
    def operator_reset(self) -> None:
        self._take(breakers.reset(self.state, self.now))
        model = self.model
        model.phase, model.successes, model.probe = BreakerPhase.CLOSED, 0, None
        model.streak, model.closed_at = 0, self.now
        model.opened_at = model.half_opens_at = None
        model._forget()

    @rule(seconds=st.sampled_from((0.1, 0.5, 1.0, 5.0, 29.0, 31.0, 61.0)))
    def time_passes(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    @invariant()
    def agrees_with_the_reference(self) -> None:
        state = self.state or CLOSED_BREAKER
        model = self.model
        # The recorded phase lags the model only by an open breaker whose break is over
        # and that no failure report has touched since: it is half-open in effect.
        assert state.effective_phase(self.now) is _effective(model, self.now)
        assert state.opens == model.opens
        assert state.opened_at == model.opened_at
        assert state.streak == model.streak
        assert state.closed_at == model.closed_at
        if model.phase is BreakerPhase.CLOSED:
            assert state.failures == len(model.run)
            assert state.seen == len(model.recent)
            assert state.recent_failures == sum(model.recent)
        if state.phase is BreakerPhase.HALF_OPEN:
            assert state.successes == model.successes
            assert (state.probe_in_flight(self.now) is None) == model.probe_free(self.now)
        if state.phase is not BreakerPhase.CLOSED:
            assert state.half_opens_at == model.half_opens_at
            length = state.break_length
            assert length is not None
            assert length <= self.policy.cooldown
        assert state.generation == len(self.transitions)


def _effective(model: ReferenceBreaker, now: datetime) -> BreakerPhase:
    if model.phase is BreakerPhase.OPEN and model.break_over(now):
        return BreakerPhase.HALF_OPEN
    return model.phase


BreakerAgainstTheReference.TestCase.settings = settings(max_examples=300, stateful_step_count=40)
test_the_breaker_follows_the_reference_model = BreakerAgainstTheReference.TestCase
