"""Circuit breakers: pybreaker's state machine, run over the state errord records.

The only module that imports pybreaker. Each step loads a tool's recorded
``BreakerState`` into a ``pybreaker.CircuitBreaker`` through a storage of our
own, feeds it one signal (a transient failure, a success), and reads back the
new state and the transitions its listener saw. Nothing here awaits, so
pybreaker's lock is never held across an await, and nothing reads the wall
clock: pybreaker's own time checks (``opened_at``, the open state's timeout)
are replaced by the report's ``now``.

What pybreaker does not do, errord adds here: the cooldown is checked against
``now`` and recorded as ``half_opens_at`` (so that a restart keeps it); half-open
admits one probe at a time (``Probe``), released by its outcome or after the
tool's timeout; operators reset and force breakers open.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pybreaker
from msgspec import structs

from errord.decide.model import (
    CLOSED_BREAKER,
    BreakerChange,
    BreakerPhase,
    BreakerState,
    Probe,
)
from errord.manifests.model import BreakerPolicy

PHASES = {
    BreakerPhase.CLOSED: pybreaker.STATE_CLOSED,
    BreakerPhase.OPEN: pybreaker.STATE_OPEN,
    BreakerPhase.HALF_OPEN: pybreaker.STATE_HALF_OPEN,
}
_PHASES_BY_NAME = {name: phase for phase, name in PHASES.items()}
_PHASE_AFTER = {
    BreakerChange.OPENED: BreakerPhase.OPEN,
    BreakerChange.HALF_OPENED: BreakerPhase.HALF_OPEN,
    BreakerChange.CLOSED: BreakerPhase.CLOSED,
}
_CHANGES = {
    pybreaker.STATE_OPEN: BreakerChange.OPENED,
    pybreaker.STATE_HALF_OPEN: BreakerChange.HALF_OPENED,
    pybreaker.STATE_CLOSED: BreakerChange.CLOSED,
}


@dataclass(frozen=True, slots=True)
class Stepped:
    """A breaker after one signal, and the transitions the signal caused, in order."""

    state: BreakerState
    changes: tuple[tuple[BreakerChange, BreakerState], ...] = ()
    """Each transition with the state right after it."""

    def then(self, other: Stepped) -> Stepped:
        return Stepped(other.state, self.changes + other.changes)


class _Failed(Exception):
    """What the breaker's guarded call raises for a transient failure."""


class _Storage(pybreaker.CircuitBreakerStorage):
    """pybreaker's storage over a BreakerState, at the time of one report."""

    def __init__(self, state: BreakerState, policy: BreakerPolicy, now: datetime) -> None:
        super().__init__("errord")
        self.value = state
        self._cooldown = timedelta(seconds=policy.cooldown)
        self._now = now

    def _set(self, **changes: object) -> None:
        self.value = structs.replace(self.value, **changes)

    @property
    def state(self) -> str:
        return PHASES[self.value.phase]

    @state.setter
    def state(self, state: str) -> None:
        self._set(phase=_PHASES_BY_NAME[state])

    def increment_counter(self) -> None:
        self._set(failures=self.value.failures + 1)

    def reset_counter(self) -> None:
        if self.value.failures:
            self._set(failures=0)

    def increment_success_counter(self) -> None:
        self._set(successes=self.value.successes + 1)

    def reset_success_counter(self) -> None:
        if self.value.successes:
            self._set(successes=0)

    @property
    def counter(self) -> int:
        return self.value.failures

    @property
    def success_counter(self) -> int:
        return self.value.successes

    @property
    def opened_at(self) -> datetime | None:
        return self.value.opened_at

    @opened_at.setter
    def opened_at(self, _wall_clock: datetime) -> None:
        # pybreaker passes datetime.now(); the report's time is what counts.
        self._set(
            opened_at=self._now,
            half_opens_at=self._now + self._cooldown,
            opens=self.value.opens + 1,
        )


class _Transitions(pybreaker.CircuitBreakerListener):
    """Collects the transitions pybreaker makes, each with the state right after it."""

    def __init__(self, storage: _Storage) -> None:
        self.storage = storage
        self.seen: list[tuple[BreakerChange, BreakerState]] = []

    def state_change(
        self,
        cb: pybreaker.CircuitBreaker,
        old_state: pybreaker.CircuitBreakerState | None,
        new_state: pybreaker.CircuitBreakerState,
    ) -> None:
        # pybreaker notifies before it stores the new phase (``self.state = storage.state
        # = ...`` assigns left to right): the phase is taken from the change instead.
        self.seen.append((_CHANGES[new_state.name], self.storage.value))


@dataclass
class _Run:
    """One step: a pybreaker breaker over the recorded state."""

    storage: _Storage
    breaker: pybreaker.CircuitBreaker
    listener: _Transitions
    changes: list[tuple[BreakerChange, BreakerState]] = field(default_factory=list)

    @classmethod
    def over(cls, state: BreakerState, policy: BreakerPolicy, now: datetime) -> _Run:
        storage = _Storage(state, policy, now)
        listener = _Transitions(storage)
        breaker = pybreaker.CircuitBreaker(
            fail_max=policy.failure_threshold,
            reset_timeout=policy.cooldown,
            success_threshold=policy.success_threshold,
            state_storage=storage,
            listeners=[listener],
            throw_new_error_on_trip=False,
        )
        return cls(storage, breaker, listener)

    def half_open_if_due(self, now: datetime) -> None:
        """An open breaker whose cooldown is over half-opens (pybreaker would ask the wall
        clock in its next call)."""
        if self.storage.value.phase is BreakerPhase.OPEN and self.storage.value.cooldown_over(now):
            self.breaker.half_open()

    def fail(self) -> None:
        with contextlib.suppress(_Failed):  # the failure is the signal, not an error here
            self.breaker.call(_raise_failed)

    def succeed(self) -> None:
        self.breaker.call(_do_nothing)

    def result(self) -> Stepped:
        """The state after the step, each transition numbered; whatever the step, a probe
        whose result it was has ended."""
        seen = self.listener.seen
        final = self.storage.value
        if not seen:
            return Stepped(structs.replace(final, probe=None) if final.probe else final)
        changes = []
        for number, (change, after) in enumerate(seen, start=1):
            if number == len(seen):
                after = final
            changes.append(
                (
                    change,
                    structs.replace(
                        after,
                        phase=_PHASE_AFTER[change],
                        generation=final.generation + number,
                        probe=None,
                    ),
                )
            )
        return Stepped(changes[-1][1], tuple(changes))


def _raise_failed() -> None:
    raise _Failed


def _do_nothing() -> None:
    return None


def on_failure(
    state: BreakerState | None,
    policy: BreakerPolicy,
    now: datetime,
    *,
    transient: bool,
    attempt: tuple[str, str, int],
) -> Stepped:
    """The breaker after a reported failure of ``attempt`` (turn, call, attempt).

    Permanent errors never count. Closed, a transient failure counts towards opening.
    Open, nothing counts; once the cooldown is over the report half-opens the breaker,
    so that its retry can be the probe. Half-open, only the probe's failure counts:
    it reopens the breaker.
    """
    state = state or CLOSED_BREAKER
    if not transient:
        return Stepped(state)
    run = _Run.over(state, policy, now)
    if state.phase is BreakerPhase.OPEN:
        run.half_open_if_due(now)
        return run.result()
    if state.phase is BreakerPhase.HALF_OPEN and not _is_probe(state, attempt):
        return Stepped(state)
    run.fail()
    return run.result()


def on_outcome(
    state: BreakerState | None,
    policy: BreakerPolicy,
    now: datetime,
    *,
    succeeded: bool,
    attempt: tuple[str, str, int],
) -> Stepped:
    """The breaker after an attempt's reported outcome.

    Closed, a success starts the count of consecutive failures over (a failed outcome
    was counted by its ReportFailure). Open, nothing counts. Half-open, only the probe's
    outcome counts: a success towards closing, a failure reopens.
    """
    state = state or CLOSED_BREAKER
    if state.phase is BreakerPhase.OPEN:
        return Stepped(state)
    if state.phase is BreakerPhase.HALF_OPEN and not _is_probe(state, attempt):
        return Stepped(state)
    if state.phase is BreakerPhase.CLOSED and not succeeded:
        return Stepped(state)
    run = _Run.over(state, policy, now)
    if succeeded:
        run.succeed()
    else:
        run.fail()
    return run.result()


def _is_probe(state: BreakerState, attempt: tuple[str, str, int]) -> bool:
    return state.probe is not None and state.probe.is_attempt(*attempt)


def with_probe(state: BreakerState, probe: Probe) -> BreakerState:
    """A half-open breaker whose one probe ``probe`` now is."""
    return structs.replace(state, probe=probe)


def reset(state: BreakerState | None) -> Stepped:
    """An operator closes the breaker: counters zero, no probe."""
    state = state or CLOSED_BREAKER
    after = BreakerState(opens=state.opens, generation=state.generation + 1)
    return Stepped(after, ((BreakerChange.RESET, after),))


def force_open(state: BreakerState | None, now: datetime, until: datetime | None) -> Stepped:
    """An operator opens the breaker until ``until``, or until a reset when None."""
    state = state or CLOSED_BREAKER
    after = BreakerState(
        phase=BreakerPhase.OPEN,
        failures=state.failures,
        opened_at=now,
        half_opens_at=until,
        opens=state.opens + 1,
        generation=state.generation + 1,
    )
    return Stepped(after, ((BreakerChange.FORCED_OPEN, after),))
