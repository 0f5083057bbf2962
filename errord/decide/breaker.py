"""Circuit breakers: pybreaker's state machine, run over the state errord records.

The only module that imports pybreaker. A step that can change a breaker's
phase loads the tool's recorded ``BreakerState`` into a
``pybreaker.CircuitBreaker`` through a storage of our own, feeds it the signal
(a transient failure, a success), and reads back the new state and the
transitions its listener saw. A step that cannot (a failure below the
threshold, a success while closed) only changes pybreaker's count, and is done
here without it: it is the path of most reports, and pybreaker signals a
failure by raising, twice. Nothing here awaits, so
pybreaker's lock is never held across an await, and nothing depends on the
wall clock: the time pybreaker stores when it opens is replaced by the
report's ``now``, and its open state's own timeout check is never reached.

What pybreaker does not do, errord adds here: the cooldown is checked against
``now`` and recorded as ``half_opens_at`` (so that a restart keeps it); half-open
admits one probe at a time (``Probe``), released by its result or after the
tool's timeout, and only the probe's failure reopens the breaker (another
attempt's failure may have started before the cooldown ended); operators reset
and force breakers open.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta

import pybreaker
from msgspec import Struct, structs

from errord.decide.manifest import BreakerPolicy
from errord.decide.model import (
    CLOSED_BREAKER,
    BreakerChange,
    BreakerPhase,
    BreakerState,
    Probe,
)

_PHASES = {
    BreakerPhase.CLOSED: pybreaker.STATE_CLOSED,
    BreakerPhase.OPEN: pybreaker.STATE_OPEN,
    BreakerPhase.HALF_OPEN: pybreaker.STATE_HALF_OPEN,
}
_PHASES_BY_NAME = {name: phase for phase, name in _PHASES.items()}
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


class Stepped(Struct, frozen=True, gc=False):
    """A breaker after one signal, and the transitions the signal caused, in order."""

    state: BreakerState
    changes: tuple[tuple[BreakerChange, BreakerState], ...] = ()
    """Each transition with the state right after it."""


class _Failed(Exception):
    """What the breaker's guarded call raises for a transient failure."""


class _Storage(pybreaker.CircuitBreakerStorage):
    """pybreaker's storage over a BreakerState, at the time of one report."""

    def __init__(self, state: BreakerState, policy: BreakerPolicy, now: datetime) -> None:
        super().__init__("errord")
        self.value = state
        self._now = now
        self._cooldown = timedelta(seconds=policy.cooldown)

    def _set(self, **changes: object) -> None:
        self.value = structs.replace(self.value, **changes)

    @property
    def state(self) -> str:
        return _PHASES[self.value.phase]

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


class _Machine:
    """A pybreaker CircuitBreaker over a recorded state, for one step."""

    def __init__(self, state: BreakerState, policy: BreakerPolicy, now: datetime) -> None:
        self.storage = _Storage(state, policy, now)
        self.listener = _Transitions(self.storage)
        self.breaker = pybreaker.CircuitBreaker(
            fail_max=policy.failure_threshold,
            reset_timeout=policy.cooldown,
            success_threshold=policy.success_threshold,
            state_storage=self.storage,
            listeners=[self.listener],
            throw_new_error_on_trip=False,
        )


def _fail(machine: _Machine) -> None:
    with contextlib.suppress(_Failed):  # the failure is the signal, not an error here
        machine.breaker.call(_raise_failed)


def _raise_failed() -> None:
    raise _Failed


def _succeed(machine: _Machine) -> None:
    machine.breaker.call(_do_nothing)


def _do_nothing() -> None:
    return None


def _result(machine: _Machine, *, ends_probe: bool) -> Stepped:
    """The state after the step, each transition numbered; a transition ends the probe,
    and so does its own result (``ends_probe``)."""
    seen = machine.listener.seen
    final = machine.storage.value
    if not seen:
        return Stepped(structs.replace(final, probe=None) if ends_probe else final)
    changes = []
    for number, (change, after) in enumerate(seen, start=1):
        snapshot = final if number == len(seen) else after
        numbered = structs.replace(
            snapshot, phase=_PHASE_AFTER[change], generation=final.generation + number, probe=None
        )
        changes.append((change, numbered))
    return Stepped(changes[-1][1], tuple(changes))


def on_failure(
    state: BreakerState | None,
    policy: BreakerPolicy,
    now: datetime,
    *,
    transient: bool,
    attempt: tuple[str, str, int],
) -> Stepped:
    """The breaker after a reported failure of ``attempt`` (turn, call, attempt).

    Permanent errors never count; a probe that fails with one is over, so the next
    report may probe again. Closed, a transient failure counts towards opening. Open,
    nothing counts; once the cooldown is over the report half-opens the breaker
    (pybreaker would ask the wall clock in its next call), so that its retry can be the
    probe. Half-open, only the probe's failure counts: it reopens the breaker.
    """
    state = state or CLOSED_BREAKER
    if not transient:
        if _is_probe_attempt(state, attempt):
            return Stepped(structs.replace(state, probe=None))
        return Stepped(state)
    if state.phase is BreakerPhase.OPEN and not state.cooldown_over(now):
        return Stepped(state)
    if state.phase is BreakerPhase.HALF_OPEN and not _is_probe_attempt(state, attempt):
        return Stepped(state)
    if state.phase is BreakerPhase.CLOSED and state.failures + 1 < policy.failure_threshold:
        # Below the threshold pybreaker only adds one to its count (CircuitClosedState);
        # doing that here spares the step its two exceptions, on the most common path.
        return Stepped(structs.replace(state, failures=state.failures + 1))
    machine = _Machine(state, policy, now)
    if state.phase is BreakerPhase.OPEN:
        machine.breaker.half_open()
    else:
        _fail(machine)
    return _result(machine, ends_probe=True)


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
    was counted by its ReportFailure). Open, nothing counts. Half-open, every success
    counts towards closing (so that a tool that recovered closes without failing
    again), and the probe's failure reopens it; other failed outcomes were counted, or
    not, by their ReportFailure.
    """
    state = state or CLOSED_BREAKER
    if state.phase is BreakerPhase.OPEN:
        return Stepped(state)
    if not succeeded and not (
        state.phase is BreakerPhase.HALF_OPEN and _is_probe_attempt(state, attempt)
    ):
        return Stepped(state)
    if state.phase is BreakerPhase.CLOSED and not state.failures:
        return Stepped(state)  # nothing to count: a success with no failures to forget
    if state.phase is BreakerPhase.CLOSED:
        # A success only sets pybreaker's count back to zero (CircuitBreakerState).
        return Stepped(structs.replace(state, failures=0))
    machine = _Machine(state, policy, now)
    if succeeded:
        _succeed(machine)
    else:
        _fail(machine)
    return _result(machine, ends_probe=_is_probe_attempt(state, attempt))


def _is_probe_attempt(state: BreakerState, attempt: tuple[str, str, int]) -> bool:
    return state.probe is not None and state.probe.is_attempt(*attempt)


def with_probe(state: BreakerState, probe: Probe) -> BreakerState:
    """A half-open breaker whose one probe ``probe`` now is."""
    return structs.replace(state, probe=probe)


def claim_probe(state: BreakerState, policy: BreakerPolicy, probe: Probe, now: datetime) -> Stepped:
    """The breaker whose probe an executor claims before running it (AdmitCall): half-open
    (an open one whose cooldown is over half-opens first), with ``probe`` in flight, each
    step a recorded transition. The caller checked that no other probe is in flight."""
    changes: list[tuple[BreakerChange, BreakerState]] = []
    if state.phase is BreakerPhase.OPEN:
        machine = _Machine(state, policy, now)
        machine.breaker.half_open()
        changes.extend(_result(machine, ends_probe=True).changes)
        state = changes[-1][1]
    claimed = structs.replace(state, probe=probe, generation=state.generation + 1)
    changes.append((BreakerChange.PROBE_CLAIMED, claimed))
    return Stepped(claimed, tuple(changes))


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
