"""Circuit breakers: pybreaker's state machine, run over the state errord records.

The only module that imports pybreaker. A step that changes a breaker's phase loads
the tool's recorded ``BreakerState`` into a ``pybreaker.CircuitBreaker`` through its
storage (``CircuitBreakerStorage``, pybreaker's extension point for persistence),
drives it (open, half-open, a probe's success or failure), and reads back the new
state and each transition, recorded where pybreaker stores it. Nothing here awaits, so
pybreaker's lock is never held across an await.

Where errord departs from pybreaker's own use, and why (measured on the 2-core
machine: ``python -m tests.benchmarks.engine``, a failure's decision without I/O, and
``python -m tests.benchmarks.decision_path``, CPU per decision in the daemon):

- counting while closed is errord's own, not a call through ``CircuitBreaker.call``:
  pybreaker opens after ``fail_max`` consecutive failures of anything, and keeps neither
  the calls a run spans nor the recent attempts that the rule below reads; and a
  failure counted through pybreaker (a CircuitBreaker over the state, a failing call
  through it) costs 5.0 µs where errord's count costs 0.9 µs, on most transient
  reports: the engine benchmark's decision took 41 µs instead of 30.5 (median of three
  alternating runs each), the decision path 187 µs of CPU instead of 184 (within its
  noise: its one tool's breaker opens at once and stays open or half-open).
- one CircuitBreaker per step, not one per tool kept in memory: a breaker is a
  projection of committed events, which a restart and a replay rebuild; a breaker kept
  by pybreaker would hold what a decision did before its commit, even one whose commit
  failed. Building one costs 1.6 µs, only on a step that changes the phase (4.1 µs in
  all for an open breaker half-opening), never on a report that leaves it closed.
- time is the report's, not the wall clock: pybreaker stamps ``opened_at`` with
  ``datetime.now(UTC)`` and half-opens after a fixed ``reset_timeout`` of it, checked
  in its next call. errord decides at the injected Clock's time (a replay at the time
  recorded) and its break grows with each opening, so the storage records the report's
  ``now`` and the break's end (``half_opens_at``), and the step half-opens the breaker
  (``half_open()``) once that time has come: pybreaker's own timeout check is never
  reached. Not a cost but determinism: a recorded trace replays with no change.

What pybreaker does not do, errord adds here:

- when to open (``outage``): chance is not evidence. A run of consecutive transient
  failures opens the breaker only when it spans two calls at least (one call's own
  retries are no evidence of an outage) and nearly all the recent attempts failed; else
  only a failure rate over enough recent attempts does. A 30 % brownout has successes
  among its recent attempts and stays under the rate; a dead backend has neither.
- how long it stays open: the break grows with each opening in a row (the policy's
  ``break_for``, as Polly's break-duration generator and Envoy's ejection multiplier),
  recorded as ``half_opens_at`` so that a restart keeps it; a breaker that stayed
  closed for the policy's ``cooldown`` starts from the first break again.
- half-open admits one probe at a time (``Probe``), released by its result or after
  its time, and only the probe's failure reopens the breaker (another attempt's
  failure may have started before the break ended); operators reset and force
  breakers open.
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
    CallKey,
    Probe,
)

_PHASES = {
    BreakerPhase.CLOSED: pybreaker.STATE_CLOSED,
    BreakerPhase.OPEN: pybreaker.STATE_OPEN,
    BreakerPhase.HALF_OPEN: pybreaker.STATE_HALF_OPEN,
}
_PHASES_BY_NAME = {name: phase for phase, name in _PHASES.items()}
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
    """pybreaker's storage over a BreakerState, at the time of one report: what pybreaker
    stores replaces the record, and each transition is noted as it is stored."""

    def __init__(self, state: BreakerState, policy: BreakerPolicy, now: datetime) -> None:
        super().__init__("errord")
        self.value = state
        self.now = now
        self._policy = policy
        self.transitions: list[tuple[BreakerChange, BreakerState]] = []
        """Each transition pybreaker stored, with the state right after it."""

    def _set(self, **changes: object) -> None:
        self.value = structs.replace(self.value, **changes)

    @property
    def state(self) -> str:
        return _PHASES[self.value.phase]

    @state.setter
    def state(self, state: str) -> None:
        # pybreaker stores each transition here once it has made it (its listeners hear
        # of it before the phase is stored): the state stored is the one right after it.
        self._set(phase=_PHASES_BY_NAME[state])
        self.transitions.append((_CHANGES[state], self.value))

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
        # pybreaker passes datetime.now(); the report's time is what counts. pybreaker
        # sets it before the phase changes: the phase is still the one it opens from.
        streak = opening_streak(self.value, self._policy, self.now)
        self._set(
            opened_at=self.now,
            half_opens_at=self.now + timedelta(seconds=self._policy.break_for(streak)),
            opens=self.value.opens + 1,
            streak=streak,
        )


def opening_streak(state: BreakerState, policy: BreakerPolicy, now: datetime) -> int:
    """Which opening in a row an opening of ``state`` at ``now`` is: one more than the
    last while the breaker has not stayed closed for the policy's cooldown since (a
    failed probe reopens it at once), else the first."""
    if state.phase is not BreakerPhase.CLOSED:
        return state.streak + 1
    closed = state.closed_at
    if closed is not None and (now - closed).total_seconds() < policy.cooldown:
        return state.streak + 1
    return 1


class _Machine:
    """A pybreaker CircuitBreaker over a recorded state, for one step."""

    def __init__(self, state: BreakerState, policy: BreakerPolicy, now: datetime) -> None:
        self.storage = _Storage(state, policy, now)
        self.breaker = pybreaker.CircuitBreaker(
            fail_max=policy.failure_threshold,
            reset_timeout=policy.cooldown,
            success_threshold=policy.success_threshold,
            state_storage=self.storage,
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
    and so does its own result (``ends_probe``). A breaker that closes forgets the
    outage's evidence and notes when it closed."""
    seen = machine.storage.transitions
    final = machine.storage.value
    if not seen:
        return Stepped(structs.replace(final, probe=None) if ends_probe else final)
    changes = []
    now = machine.storage.now
    for number, (change, after) in enumerate(seen, start=1):
        numbered = structs.replace(after, generation=final.generation + number, probe=None)
        if change is BreakerChange.CLOSED:
            numbered = _forgotten(numbered, closed_at=now)
        changes.append((change, numbered))
    return Stepped(changes[-1][1], tuple(changes))


def _forgotten(state: BreakerState, **changes: object) -> BreakerState:
    """``state`` without the evidence of an outage: no run of failures, no recent attempts."""
    return structs.replace(
        state, failures=0, run_call=None, run_calls=0, recent=0, seen=0, failed_at=None, **changes
    )


def on_failure(
    state: BreakerState | None,
    policy: BreakerPolicy,
    now: datetime,
    *,
    counts: bool,
    attempt: tuple[str, str, int],
) -> Stepped:
    """The breaker after a reported failure of ``attempt`` (turn, call, attempt).

    Only a failure that ``counts`` is evidence of an outage: a transient one, not a rate
    limit (which opens a rate-limit window instead) nor an attempt errord refused before
    it ran. One that does not count never changes the breaker, but a probe that fails so
    is over, so that the next report may probe again. Closed, a counted failure joins
    the run and the recent attempts, and opens the breaker when they show an outage
    (``outage``). Open, nothing counts; once the break is over the report half-opens the
    breaker (pybreaker would ask the wall clock in its next call), so that its retry can
    be the probe. Half-open, only the probe's failure counts: it reopens the breaker,
    for a longer break.
    """
    state = state or CLOSED_BREAKER
    if not counts:
        if _is_probe_attempt(state, attempt):
            return Stepped(structs.replace(state, probe=None))
        return Stepped(state)
    if state.phase is BreakerPhase.OPEN and not state.cooldown_over(now):
        return Stepped(state)
    if state.phase is BreakerPhase.HALF_OPEN and not _is_probe_attempt(state, attempt):
        return Stepped(state)
    if state.phase is BreakerPhase.CLOSED:
        state = counted(state, policy, now, CallKey(attempt[0], attempt[1]))
        if not outage(state, policy):
            return Stepped(state)
    machine = _Machine(state, policy, now)
    if state.phase is BreakerPhase.OPEN:
        machine.breaker.half_open()
    elif state.phase is BreakerPhase.HALF_OPEN:
        _fail(machine)
    else:
        machine.breaker.open()
    return _result(machine, ends_probe=True)


def counted(
    state: BreakerState, policy: BreakerPolicy, now: datetime, call: CallKey
) -> BreakerState:
    """A closed breaker with one more transient failure of ``call`` counted: in the run of
    consecutive failures, and among the recent attempts. After a quiet spell (no failure
    for the policy's cooldown) the evidence before it is forgotten first."""
    if quiet(state, policy, now):
        state = _forgotten(state)
    run_calls = state.run_calls
    run_call = state.run_call
    if not state.failures or run_call is None:
        run_call, run_calls = call, 1
    elif run_calls < 2 and call != run_call:
        run_calls = 2
    return structs.replace(
        state,
        failures=state.failures + 1,
        run_call=run_call,
        run_calls=run_calls,
        recent=(state.recent << 1 | 1) & policy.window_mask,
        seen=min(state.seen + 1, policy.window),
        failed_at=now,
    )


def quiet(state: BreakerState, policy: BreakerPolicy, now: datetime) -> bool:
    """True when the tool had no counted failure for the policy's cooldown: what came
    before is no evidence of what happens now."""
    failed = state.failed_at
    return failed is None or (now - failed).total_seconds() >= policy.cooldown


DEAD_SHARE = 0.8
"""The share of the recent attempts a run of failures must have failed to be evidence of
a dead backend: a run among many successes is chance (a 30 % brownout has runs of five
now and then). Not all of them: successes reported just after a backend died (attempts
that ended before it) do not hide its death."""


def outage(state: BreakerState, policy: BreakerPolicy) -> bool:
    """Whether a closed breaker's evidence shows an outage: ``failure_threshold``
    consecutive failures from two calls at least while nearly all the recent attempts
    failed (DEAD_SHARE: a dead backend), or ``failure_rate`` of at least ``min_calls``
    recent attempts failed (a sick one)."""
    failed = state.recent_failures
    run = state.failures >= policy.failure_threshold and state.run_calls >= 2
    if run and failed >= DEAD_SHARE * state.seen:
        return True
    return state.seen >= policy.min_calls and failed >= policy.failure_rate * state.seen


def on_outcome(
    state: BreakerState | None,
    policy: BreakerPolicy,
    now: datetime,
    *,
    succeeded: bool,
    attempt: tuple[str, str, int],
) -> Stepped:
    """The breaker after an attempt's reported outcome.

    Closed, a success ends the run of consecutive failures and joins the recent attempts
    (a failed outcome was counted by its ReportFailure); once no failure is among them,
    nothing is recorded for a success, so that a healthy tool's outcomes change nothing.
    Open, nothing counts. Half-open, every success counts towards closing (so that a
    tool that recovered closes without failing again), and the probe's failure reopens
    it; other failed outcomes were counted, or not, by their ReportFailure.
    """
    state = state or CLOSED_BREAKER
    if state.phase is BreakerPhase.OPEN:
        return Stepped(state)
    if not succeeded and not (
        state.phase is BreakerPhase.HALF_OPEN and _is_probe_attempt(state, attempt)
    ):
        return Stepped(state)
    if state.phase is BreakerPhase.CLOSED:
        if (not state.failures and not state.seen) or quiet(state, policy, now):
            return Stepped(state)  # nothing recent to count it against
        recent = state.recent << 1 & policy.window_mask
        return Stepped(
            structs.replace(
                state,
                failures=0,
                run_call=None,
                run_calls=0,
                recent=recent,
                seen=min(state.seen + 1, policy.window) if recent else 0,
            )
        )
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


def reset(state: BreakerState | None, now: datetime) -> Stepped:
    """An operator closes the breaker at ``now``: counters zero, no probe, no evidence,
    and the next opening's break is the first one again."""
    state = state or CLOSED_BREAKER
    after = BreakerState(opens=state.opens, generation=state.generation + 1, closed_at=now)
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
        streak=state.streak,
        closed_at=state.closed_at,
    )
    return Stepped(after, ((BreakerChange.FORCED_OPEN, after),))
