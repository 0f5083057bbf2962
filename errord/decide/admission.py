"""Admission: whether a tool's circuit breaker lets an attempt run, asked before it runs.

An executor asks (AdmitCall) only when the breaker it watches is not closed. A
closed breaker admits every attempt. A half-open one admits one probe at a time,
claimed here and recorded as a transition, so that only one executor across the
host runs it. Anything else refuses: the refusal is then decided and recorded as
a failure of the attempt (``refusal``), with the code CIRCUIT_OPEN, so that the
turn, its plan and its summary see a call that did not run, and the executor gets
the decision errord gives for it (an alternative, the default, skip, escalate).

Pure and synchronous, as the engine: the caller holds the breaker and commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from errord.decide import breaker as breakers
from errord.decide.events import BreakerChanged
from errord.decide.manifest import ToolManifest
from errord.decide.model import (
    CLOSED_BREAKER,
    BreakerPhase,
    BreakerState,
    ErrorCode,
    FailureReport,
    JSONValue,
    Probe,
    ReportKey,
    ToolFailure,
)


@dataclass(frozen=True, slots=True)
class Admission:
    """What the breaker says of one attempt about to run."""

    admitted: bool
    breaker: BreakerState
    """The tool's breaker once the attempt was admitted or refused."""
    probe: bool = False
    """True when the attempt is the half-open breaker's one probe."""
    claim: tuple[BreakerChanged, ...] = ()
    """The transitions that record a probe claimed now; empty otherwise."""


def admit(
    key: ReportKey, manifest: ToolManifest, breaker: BreakerState | None, now: datetime
) -> Admission:
    """Whether attempt ``key`` of a tool whose breaker is ``breaker`` may run at ``now``."""
    state = breaker or CLOSED_BREAKER
    phase = state.effective_phase(now)
    if phase is BreakerPhase.CLOSED:
        return Admission(admitted=True, breaker=state)
    if phase is BreakerPhase.HALF_OPEN:
        probe = state.probe_in_flight(now)
        if probe is not None and probe.is_attempt(key.turn_id, key.call_id, key.attempt):
            return Admission(admitted=True, breaker=state, probe=True)  # asked again
        if probe is None:
            claimed = Probe(
                turn_id=key.turn_id,
                call_id=key.call_id,
                attempt=key.attempt,
                until=now + timedelta(seconds=manifest.timeout),
            )
            stepped = breakers.claim_probe(state, manifest.breaker, claimed, now)
            claim = tuple(
                BreakerChanged(tool=key.tool, change=change, breaker=after, turn_id=key.turn_id)
                for change, after in stepped.changes
            )
            return Admission(admitted=True, breaker=stepped.state, probe=True, claim=claim)
    return Admission(admitted=False, breaker=state)


def refusal(key: ReportKey, arguments: dict[str, JSONValue]) -> FailureReport:
    """The failure that records a refused attempt: the same for every refusal of the
    attempt, so that asking again replays the recorded decision."""
    return FailureReport(
        turn_id=key.turn_id,
        call_id=key.call_id,
        tool=key.tool,
        attempt=key.attempt,
        error=ToolFailure(
            code=ErrorCode.CIRCUIT_OPEN,
            message=f"the circuit breaker of {key.tool} refused the attempt; it did not run",
        ),
        arguments=arguments,
    )
