"""Admission: whether a tool's circuit breaker and its rate-limit window let an attempt
run, asked before it runs.

An executor asks (AdmitCall) only when the breaker it watches is not closed, or a
rate-limit window holds the tool. A closed breaker admits every attempt while no window
holds the tool. A half-open one admits one probe at a time, claimed here and recorded
as a transition, so that only one executor across the host runs it. Anything else
refuses: the refusal is then decided and recorded as a failure of the attempt
(``refusal``) that never ran: with the code CIRCUIT_OPEN for the breaker's, RATE_LIMITED
for the window's, so that the turn, its plan and its summary see a call that did not
run, and the executor gets the decision errord gives for it (a wait for the probe or
for the window's end, an alternative, the default, skip, fail). A refused attempt is no
attempt of the tool: it counts neither as an execution nor against the attempts a call
may make.

Pure and synchronous, as the engine: the caller holds the breaker and commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from errord.decide.health import breaker as breakers
from errord.decide.manifest import ToolManifest
from errord.decide.model import (
    CLOSED_BREAKER,
    BreakerChanged,
    BreakerPhase,
    BreakerState,
    ErrorCode,
    FailureReport,
    JSONValue,
    Probe,
    RateWindow,
    ReportKey,
    ToolFailure,
)


@dataclass(frozen=True, slots=True)
class Admission:
    """What the breaker and the rate-limit window say of one attempt about to run."""

    admitted: bool
    breaker: BreakerState
    """The tool's breaker once the attempt was admitted or refused."""
    probe: bool = False
    """True when the attempt is the half-open breaker's one probe."""
    claim: tuple[BreakerChanged, ...] = ()
    """The transitions that record a probe claimed now; empty otherwise."""
    held: bool = False
    """True when the tool's rate-limit window refused the attempt (the breaker would
    have let it run)."""


def admit(
    key: ReportKey,
    manifest: ToolManifest,
    breaker: BreakerState | None,
    now: datetime,
    window: RateWindow | None = None,
    scope: str = "",
) -> Admission:
    """Whether attempt ``key`` of a tool in ``scope`` whose breaker is ``breaker`` and
    whose rate-limit window is ``window`` may run at ``now``. An open breaker refuses
    first; a window holds what the breaker would admit, a probe included (it is not
    claimed)."""
    state = breaker or CLOSED_BREAKER
    phase = state.effective_phase(now)
    if phase is BreakerPhase.OPEN:
        return Admission(admitted=False, breaker=state)
    probe = state.probe_in_flight(now) if phase is BreakerPhase.HALF_OPEN else None
    asked_again = probe is not None and probe.is_attempt(key.turn_id, key.call_id, key.attempt)
    if probe is not None and not asked_again:
        return Admission(admitted=False, breaker=state)
    if asked_again:
        return Admission(admitted=True, breaker=state, probe=True)
    if window is not None and window.holds(now):
        return Admission(admitted=False, breaker=state, held=True)
    if phase is BreakerPhase.CLOSED:
        return Admission(admitted=True, breaker=state)
    claimed = Probe(
        turn_id=key.turn_id,
        call_id=key.call_id,
        attempt=key.attempt,
        until=now + timedelta(seconds=manifest.timeout),
    )
    stepped = breakers.claim_probe(state, manifest.breaker, claimed, now)
    claim = tuple(
        BreakerChanged(
            tool=key.tool, change=change, breaker=after, turn_id=key.turn_id, scope=scope
        )
        for change, after in stepped.changes
    )
    return Admission(admitted=True, breaker=stepped.state, probe=True, claim=claim)


def refusal(
    key: ReportKey, arguments: dict[str, JSONValue], *, held: bool = False, scope: str = ""
) -> FailureReport:
    """The failure that records a refused attempt in ``scope``: the same for every refusal
    of the attempt by the same cause, so that asking again replays the recorded decision;
    ``held``: by the tool's rate-limit window, else by its breaker."""
    return FailureReport(
        turn_id=key.turn_id,
        call_id=key.call_id,
        tool=key.tool,
        attempt=key.attempt,
        error=refused_error(key.tool, held=held),
        arguments=arguments,
        scope=scope,
    )


def refused_error(tool: str, *, held: bool) -> ToolFailure:
    """The error of an attempt of ``tool`` errord refused: by its rate-limit window
    (``held``), else by its breaker."""
    if held:
        return ToolFailure(
            code=ErrorCode.RATE_LIMITED,
            message=f"the rate-limit window of {tool} held the attempt; it did not run",
        )
    return ToolFailure(
        code=ErrorCode.CIRCUIT_OPEN,
        message=f"the circuit breaker of {tool} refused the attempt; it did not run",
    )


REFUSAL_CODES = frozenset({ErrorCode.CIRCUIT_OPEN, ErrorCode.RATE_LIMITED})
"""The codes of refused attempts' errors."""


def was_refused(report: FailureReport) -> bool:
    """True when ``report`` records an attempt errord refused before it ran (AdmitCall)."""
    error = report.error
    if error.code not in REFUSAL_CODES:
        return False
    return error == refused_error(report.tool, held=error.code is ErrorCode.RATE_LIMITED)
