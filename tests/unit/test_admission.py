"""Admission before an attempt runs (AdmitCall): closed admits, half-open admits one probe
across every asker, open refuses with errord's recorded decision."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from errord.decide.health.admission import admit
from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    BreakerChange,
    BreakerPhase,
    BreakerState,
    ErrorClass,
    ErrorCode,
    Outcome,
    OutcomeReport,
    Probe,
    ReportKey,
)
from errord.decide.model.events import BreakerChanged, FailureEvent, ManifestsReloaded, TraceEvent
from errord.errors import TurnClosed
from errord.state.breaker_feed import EVERY_TOOL, BreakerFeed
from tests.fakes import FakeClock
from tests.harness import Harness

POLICY = BreakerPolicy(failure_threshold=1, cooldown=30.0, success_threshold=2)
SEARCH = ToolManifest(name="search", timeout=5.0, breaker=POLICY, alternatives=("backup",))
MANIFESTS = ManifestSnapshot([SEARCH, ToolManifest(name="backup", breaker=POLICY)])


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


def key(call: str = "c", attempt: int = 1, turn: str = "t") -> ReportKey:
    return ReportKey(turn, call, "search", attempt)


async def force_open(harness: Harness, seconds: float | None = 30.0) -> None:
    await harness.actions.force_open_breaker("search", duration=seconds, by="test")


async def breaker_changes(harness: Harness) -> list[BreakerChange]:
    return [
        event.detail.change
        async for event in harness.handler.trace_after(0)
        if isinstance(event.detail, BreakerChanged)
    ]


def test_a_closed_breaker_admits_without_anything_to_record() -> None:
    now = FakeClock().now()
    admission = admit(key(), SEARCH, None, now)
    assert admission.admitted
    assert not admission.probe
    assert admission.claim == ()


def test_an_open_breaker_refuses_until_its_cooldown_is_over() -> None:
    now = FakeClock().now()
    state = BreakerState(phase=BreakerPhase.OPEN, opened_at=now, half_opens_at=now + timedelta(1))
    assert not admit(key(), SEARCH, state, now).admitted


def test_an_open_breaker_past_its_cooldown_half_opens_and_gives_its_probe() -> None:
    now = FakeClock().now()
    state = BreakerState(
        phase=BreakerPhase.OPEN, opened_at=now, half_opens_at=now, opens=1, generation=1
    )
    admission = admit(key(), SEARCH, state, now)
    assert admission.admitted
    assert admission.probe
    assert [event.change for event in admission.claim] == [
        BreakerChange.HALF_OPENED,
        BreakerChange.PROBE_CLAIMED,
    ]
    assert [event.breaker.generation for event in admission.claim] == [2, 3]
    assert admission.breaker.phase is BreakerPhase.HALF_OPEN
    assert admission.breaker.probe == Probe(
        turn_id="t", call_id="c", attempt=1, until=now + timedelta(seconds=SEARCH.timeout)
    )


def test_a_probe_in_flight_refuses_others_and_admits_its_own_attempt_again() -> None:
    now = FakeClock().now()
    probe = Probe(turn_id="t", call_id="c", attempt=1, until=now + timedelta(seconds=5))
    state = BreakerState(phase=BreakerPhase.HALF_OPEN, probe=probe)
    assert not admit(key("other"), SEARCH, state, now).admitted
    again = admit(key("c"), SEARCH, state, now)
    assert again.admitted
    assert again.probe
    assert again.claim == ()


def test_a_probe_whose_time_ran_out_is_claimed_anew() -> None:
    now = FakeClock().now()
    probe = Probe(turn_id="t", call_id="c", attempt=1, until=now)
    state = BreakerState(phase=BreakerPhase.HALF_OPEN, probe=probe)
    admission = admit(key("next"), SEARCH, state, now)
    assert admission.admitted
    assert [event.change for event in admission.claim] == [BreakerChange.PROBE_CLAIMED]


async def test_many_concurrent_askers_of_a_half_open_breaker_get_one_probe(
    harness: Harness,
) -> None:
    await force_open(harness, 30.0)
    harness.clock.advance(30.0)
    answers = await asyncio.gather(
        *(harness.handler.admit_call(key(f"c{n}"), {}) for n in range(40))
    )
    admitted = [admission for admission, _, _ in answers if admission.admitted]
    assert len(admitted) == 1
    assert admitted[0].probe
    refused = [decision for admission, decision, _ in answers if not admission.admitted]
    assert len(refused) == 39
    assert all(d is not None and d.action is Action.USE_ALTERNATIVE for d in refused)
    assert all(d is not None and d.alternative_tool == "backup" for d in refused)
    assert await breaker_changes(harness) == [
        BreakerChange.FORCED_OPEN,
        BreakerChange.HALF_OPENED,
        BreakerChange.PROBE_CLAIMED,
    ]


async def test_a_refusal_is_a_recorded_failure_with_errords_decision(harness: Harness) -> None:
    await force_open(harness)
    admission, decision, replayed = await harness.handler.admit_call(key(), {"q": "x"})
    assert not admission.admitted
    assert not replayed
    assert decision is not None
    assert decision.action is Action.USE_ALTERNATIVE
    assert decision.classification.code is ErrorCode.CIRCUIT_OPEN
    assert decision.classification.error_class is ErrorClass.TRANSIENT
    assert "circuit breaker of search is open" in decision.reason
    failures = [
        event.detail
        async for event in harness.handler.trace_after(0)
        if isinstance(event.detail, FailureEvent)
    ]
    assert [f.report.arguments for f in failures] == [{"q": "x"}]
    again, same, replayed = await harness.handler.admit_call(key(), {"q": "x"})
    assert not again.admitted
    assert replayed
    assert same == decision


async def test_a_refusal_is_no_execution_of_the_tool(harness: Harness) -> None:
    await force_open(harness)
    await harness.handler.admit_call(key(), {})
    stats = harness.state.tool_stats.view("search")
    assert stats is not None
    assert stats.executions == 0
    assert stats.errors == 0
    assert stats.errors_by_code == {ErrorCode.CIRCUIT_OPEN: 1}
    assert stats.decisions == {Action.USE_ALTERNATIVE: 1}


async def test_the_claimed_probes_success_counts_towards_closing(harness: Harness) -> None:
    await force_open(harness, 30.0)
    harness.clock.advance(30.0)
    admission, _, _ = await harness.handler.admit_call(key("p"), {})
    assert admission.probe
    success = OutcomeReport(
        turn_id="t", call_id="p", tool="search", attempt=1, outcome=Outcome.SUCCESS
    )
    await harness.handler.report_outcome(success)
    breaker = harness.state.breakers.view("search")
    assert breaker is not None
    assert breaker.successes == 1
    assert breaker.probe is None  # the next attempt may probe
    second, _, _ = await harness.handler.admit_call(key("q"), {})
    assert second.probe


async def test_the_claim_survives_a_restart(harness: Harness) -> None:
    await force_open(harness, 30.0)
    harness.clock.advance(30.0)
    await harness.handler.admit_call(key("p"), {})
    await harness.restart()
    admission, decision, _ = await harness.handler.admit_call(key("q"), {})
    assert not admission.admitted
    assert decision is not None
    assert "its one probe is in flight" in decision.reason


async def test_admission_in_an_ended_turn_is_refused(harness: Harness) -> None:
    await harness.handler.begin_turn("t", None, None)
    await harness.handler.end_turn("t")
    with pytest.raises(TurnClosed):
        await harness.handler.admit_call(key(), {})


async def test_watchers_hear_of_transitions_and_reloads_not_of_other_events(
    harness: Harness,
) -> None:
    feed = BreakerFeed()
    watcher = feed.subscribe()
    changes = watcher.changes()
    await force_open(harness)
    events = [event async for event in harness.handler.trace_after(0)]
    feed.publish(events)
    assert await anext(changes) == {"search"}
    await harness.handler.admit_call(key(), {})  # a refusal changes no breaker
    feed.publish([event async for event in harness.handler.trace_after(events[-1].sequence)])
    assert watcher.changed == set()
    reloaded = ManifestsReloaded(event_id="r", applied=True, tools=2)
    feed.publish([TraceEvent(sequence=99, time=harness.clock.now(), detail=reloaded)])
    assert await anext(changes) is EVERY_TOOL
    feed.close()
    assert [change async for change in changes] == []
    assert feed.watchers == 0
