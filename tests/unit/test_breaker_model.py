"""One breaker against a small reference model, under random histories.

The model is the breaker's rules written out plainly, one probe at a time:
consecutive transient failures open the breaker, permanent errors never count,
an open breaker ignores everything; the first failure reported after the
cooldown half-opens it and its retry is the one probe; in half-open only the
probe's failure reopens the breaker, and enough consecutive successes close it.
A probe whose result never comes is released after its time, and one that
fails permanently is simply over.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from errord.decide import breaker as breakers
from errord.decide.manifest import BreakerPolicy
from errord.decide.model import CLOSED_BREAKER, BreakerChange, BreakerPhase, BreakerState, Probe

START = datetime(2026, 1, 1, tzinfo=UTC)
OTHER = ("turn", "other", 1)
PROBE_TIME = 5.0


@dataclass
class ReferenceBreaker:
    """Opening, half-opening and closing, with one probe at a time in half-open."""

    policy: BreakerPolicy
    phase: BreakerPhase = BreakerPhase.CLOSED
    failures: int = 0
    successes: int = 0
    opened_at: datetime | None = None
    opens: int = 0
    probe: int | None = None
    probe_until: datetime | None = None

    def cooldown_over(self, now: datetime) -> bool:
        assert self.opened_at is not None
        return now >= self.opened_at + timedelta(seconds=self.policy.cooldown)

    def _open(self, now: datetime) -> None:
        self.phase, self.opened_at, self.opens = BreakerPhase.OPEN, now, self.opens + 1
        self.probe = None

    def failure(self, now: datetime) -> None:
        """A transient failure of an attempt that is not the probe."""
        if self.phase is BreakerPhase.CLOSED:
            self.failures += 1
            if self.failures >= self.policy.failure_threshold:
                self._open(now)
        elif self.phase is BreakerPhase.OPEN and self.cooldown_over(now):
            self.phase, self.successes = BreakerPhase.HALF_OPEN, 0

    def success(self) -> None:
        """A success of an attempt that is not the probe."""
        if self.phase is BreakerPhase.CLOSED:
            self.failures = 0
        elif self.phase is BreakerPhase.HALF_OPEN:
            self._count_success()

    def _count_success(self) -> None:
        self.failures, self.successes = 0, self.successes + 1
        if self.successes >= self.policy.success_threshold:
            self.phase, self.successes, self.probe = BreakerPhase.CLOSED, 0, None

    def probe_free(self, now: datetime) -> bool:
        return self.probe is None or (self.probe_until is not None and now >= self.probe_until)

    def probe_failed(self, now: datetime) -> None:
        self._open(now)

    def probe_succeeded(self) -> None:
        self.probe = None
        self._count_success()


class BreakerAgainstTheReference(RuleBasedStateMachine):
    @initialize(
        failure_threshold=st.integers(1, 6),
        success_threshold=st.integers(1, 3),
        cooldown=st.sampled_from((0.5, 30.0, 60.0)),
    )
    def configure(self, failure_threshold: int, success_threshold: int, cooldown: float) -> None:
        self.policy = BreakerPolicy(failure_threshold, cooldown, success_threshold)
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

    @rule()
    def transient_failure(self) -> None:
        self._take(
            breakers.on_failure(self.state, self.policy, self.now, transient=True, attempt=OTHER)
        )
        self.model.failure(self.now)

    @rule()
    def permanent_failure(self) -> None:
        before = self.state
        stepped = breakers.on_failure(
            self.state, self.policy, self.now, transient=False, attempt=OTHER
        )
        assert stepped.changes == ()
        assert stepped.state == (before or CLOSED_BREAKER)

    @rule()
    def success(self) -> None:
        self._take(
            breakers.on_outcome(self.state, self.policy, self.now, succeeded=True, attempt=OTHER)
        )
        self.model.success()

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
                self.state, self.policy, self.now, transient=False, attempt=self._probe_attempt()
            )
            assert stepped.changes == ()
            self.model.probe = None
        elif succeeded:
            stepped = breakers.on_outcome(
                self.state, self.policy, self.now, succeeded=True, attempt=self._probe_attempt()
            )
            self.model.probe_succeeded()
        else:
            if as_failure_report:
                stepped = breakers.on_failure(
                    self.state, self.policy, self.now, transient=True, attempt=self._probe_attempt()
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

    @rule(seconds=st.sampled_from((0.1, 0.5, 1.0, 5.0, 29.0, 31.0, 61.0)))
    def time_passes(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    @invariant()
    def agrees_with_the_reference(self) -> None:
        state = self.state or CLOSED_BREAKER
        model = self.model
        # The recorded phase lags the model only by an open breaker whose cooldown is over
        # and that no failure report has touched since: it is half-open in effect.
        assert state.effective_phase(self.now) is _effective(model, self.now)
        assert state.opens == model.opens
        assert state.opened_at == model.opened_at
        if model.phase is BreakerPhase.CLOSED:
            assert state.failures == model.failures
        if state.phase is BreakerPhase.HALF_OPEN:
            assert state.successes == model.successes
            assert (state.probe_in_flight(self.now) is None) == model.probe_free(self.now)
        if state.opened_at is not None:
            assert state.half_opens_at == state.opened_at + timedelta(seconds=self.policy.cooldown)
        assert state.generation == len(self.transitions)


def _effective(model: ReferenceBreaker, now: datetime) -> BreakerPhase:
    if model.phase is BreakerPhase.OPEN:
        assert model.opened_at is not None
        if now >= model.opened_at + timedelta(seconds=model.policy.cooldown):
            return BreakerPhase.HALF_OPEN
    return model.phase


BreakerAgainstTheReference.TestCase.settings = settings(max_examples=300, stateful_step_count=40)
test_the_breaker_follows_the_reference_model = BreakerAgainstTheReference.TestCase
