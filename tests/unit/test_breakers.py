"""Circuit breakers in decisions: open, half-open with one probe, closed; persisted; by hand."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest

from errord.decide.manifest import BreakerPolicy, RetryPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    CLOSED_BREAKER,
    Action,
    BreakerChange,
    BreakerPhase,
    Decision,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.decide.model.events import BreakerChanged, FailureEvent, OutcomeEvent
from errord.errors import ToolNotFound
from errord.handler import ErrorHandler
from tests.harness import Harness, failure_report

TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="timed out")
FORBIDDEN = ToolFailure(http_status=403, message="forbidden")
POLICY = BreakerPolicy(failure_threshold=3, cooldown=30.0, success_threshold=2, first_cooldown=30.0)
"""A fixed 30 s break, the seed's (first_cooldown equal to cooldown)."""
SEED_RETRIES = RetryPolicy(max_total_time=2.0)
"""The seed's 2 s of retry time: too short to wait for a 30 s break."""
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(
            name="search",
            timeout=5.0,
            breaker=POLICY,
            alternatives=("backup", "mirror"),
            retry_policy=SEED_RETRIES,
        ),
        ToolManifest(name="backup", breaker=POLICY),
        ToolManifest(name="mirror", breaker=POLICY),
        ToolManifest(name="lonely", timeout=2.0, breaker=POLICY),
    ]
)


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


failure = partial(failure_report, error=TIMEOUT)


def success(call: str, tool: str = "search", attempt: int = 2) -> OutcomeReport:
    return OutcomeReport(
        turn_id="t", call_id=call, tool=tool, attempt=attempt, outcome=Outcome.SUCCESS
    )


async def decide(handler: ErrorHandler, report: FailureReport) -> Decision:
    return (await handler.report_failure(report))[0]


async def trip(handler: ErrorHandler, tool: str = "search") -> list[Decision]:
    return [await decide(handler, failure(f"trip-{tool}-{n}", tool)) for n in range(3)]


async def breaker_changes(harness: Harness) -> list[tuple[str, BreakerChange]]:
    events = [event async for event in harness.handler.trace_after(0)]
    return [
        (event.detail.tool, event.detail.change)
        for event in events
        if isinstance(event.detail, BreakerChanged)
    ]


async def test_consecutive_transient_failures_open_the_breaker_and_stop_retries(
    harness: Harness,
) -> None:
    first, second, third = await trip(harness.handler)
    assert [first.action, second.action] == [Action.RETRY, Action.RETRY]
    assert first.breaker is not None
    assert first.breaker.failures == 1
    assert third.action is Action.USE_ALTERNATIVE
    assert third.alternative_tool == "backup"
    assert third.breaker is not None
    assert third.breaker.phase is BreakerPhase.OPEN
    assert third.reason.startswith(
        "No retry: the circuit breaker of search is open; it half-opens in 30000 ms"
    )
    assert third.user_message == "Search is temporarily unavailable; trying another way."
    later = await decide(harness.handler, failure("later"))
    assert later.action is Action.USE_ALTERNATIVE
    assert await breaker_changes(harness) == [("search", BreakerChange.OPENED)]


async def test_permanent_errors_never_count(harness: Harness) -> None:
    for n in range(5):
        decision = await decide(harness.handler, failure(f"p{n}", error=FORBIDDEN))
        assert decision.breaker is not None
        assert decision.breaker.failures == 0
    assert (harness.state.breakers.view("search") or CLOSED_BREAKER) == CLOSED_BREAKER
    assert await breaker_changes(harness) == []


async def test_a_success_starts_the_count_over(harness: Harness) -> None:
    await decide(harness.handler, failure("a"))
    await decide(harness.handler, failure("b"))
    await harness.handler.report_outcome(success("b"))
    after = await decide(harness.handler, failure("c"))
    assert after.action is Action.RETRY
    assert after.breaker is not None
    assert after.breaker.failures == 1


async def test_alternatives_with_an_open_breaker_are_skipped(harness: Harness) -> None:
    await trip(harness.handler, "backup")
    await trip(harness.handler)
    decision = await decide(harness.handler, failure("x"))
    assert decision.alternative_tool == "mirror"
    await trip(harness.handler, "mirror")
    decision = await decide(harness.handler, failure("y"))
    assert decision.action is Action.FAIL  # no one can act on an outage
    assert decision.reason.endswith(
        "no alternative is usable (backup has an open circuit breaker; mirror has an open "
        "circuit breaker); search is unavailable for now, which no one can act on: the call "
        "fails, and the turn goes on without it (it may call search again later)."
    )
    assert "escalat" not in decision.reason
    assert decision.user_message == (
        "Search is temporarily unavailable; continuing with the rest of the request."
    )
    assert "Continue without its result, or call search again later" in decision.llm_message


async def test_after_the_cooldown_one_probe_then_two_successes_close_it(harness: Harness) -> None:
    await trip(harness.handler)
    harness.clock.advance(30.0)
    probe = await decide(harness.handler, failure("p"))
    assert probe.action is Action.RETRY
    assert probe.probe
    assert probe.breaker is not None
    assert probe.breaker.phase is BreakerPhase.HALF_OPEN
    assert "this retry in" in probe.reason
    assert "is its one probe" in probe.reason
    meanwhile = await decide(harness.handler, failure("q"))
    assert meanwhile.action is Action.USE_ALTERNATIVE
    assert not meanwhile.probe
    assert "its one probe is in flight" in meanwhile.reason

    await harness.handler.report_outcome(success("p"))  # the probe: attempt 2 of call p
    second_probe = await decide(harness.handler, failure("r"))
    assert second_probe.probe
    await harness.handler.report_outcome(success("r"))
    closed = harness.state.breakers.view("search")
    assert closed is not None
    assert closed.phase is BreakerPhase.CLOSED
    assert await breaker_changes(harness) == [
        ("search", BreakerChange.OPENED),
        ("search", BreakerChange.HALF_OPENED),
        ("search", BreakerChange.CLOSED),
    ]


async def test_a_failed_probe_reopens_for_another_cooldown(harness: Harness) -> None:
    await trip(harness.handler)
    harness.clock.advance(31.0)
    probe = await decide(harness.handler, failure("p"))
    assert probe.probe
    reopened = await decide(harness.handler, failure("p", attempt=2))  # the probe failed
    assert reopened.action is Action.USE_ALTERNATIVE
    assert reopened.breaker is not None
    assert reopened.breaker.phase is BreakerPhase.OPEN
    assert reopened.breaker.half_opens_at == harness.clock.now() + timedelta(seconds=30)
    assert [change for _, change in await breaker_changes(harness)] == [
        BreakerChange.OPENED,
        BreakerChange.HALF_OPENED,
        BreakerChange.OPENED,
    ]


async def test_a_failed_probe_reported_as_an_outcome_reopens_too(harness: Harness) -> None:
    await trip(harness.handler)
    harness.clock.advance(30.0)
    await decide(harness.handler, failure("p"))
    failed = OutcomeReport(
        turn_id="t", call_id="p", tool="search", attempt=2, outcome=Outcome.FAILURE
    )
    event, _ = await harness.handler.report_outcome(failed)
    assert isinstance(event.detail, OutcomeEvent)
    assert event.detail.breaker is not None
    assert event.detail.breaker.phase is BreakerPhase.OPEN


async def test_a_probe_without_an_outcome_is_released_after_the_tools_timeout(
    harness: Harness,
) -> None:
    await trip(harness.handler)
    harness.clock.advance(30.0)
    probe = await decide(harness.handler, failure("p"))
    assert probe.probe
    harness.clock.advance(probe.delay + 5.0 - 0.001)  # search's timeout is 5 s
    assert not (await decide(harness.handler, failure("q"))).probe
    harness.clock.advance(0.001)
    assert (await decide(harness.handler, failure("r"))).probe


async def test_without_an_alternative_a_report_waits_for_the_probe_if_limits_allow(
    tmp_path: Path,
) -> None:
    lonely = ToolManifest(name="lonely", timeout=1.5, breaker=POLICY, retry_policy=SEED_RETRIES)
    harness = Harness(tmp_path, ManifestSnapshot([lonely]))
    handler = await harness.start()
    try:
        await trip(handler, "lonely")
        harness.clock.advance(30.0)
        probe = await decide(handler, failure("p", "lonely"))
        waiting = await decide(handler, failure("q", "lonely"))
        assert waiting.action is Action.RETRY
        assert not waiting.probe
        assert waiting.delay == pytest.approx(probe.delay + 1.5)
        assert "its one probe is in flight: retrying in" in waiting.reason
        too_long = await decide(handler, failure("q", "lonely", attempt=2))
        assert too_long.action is Action.FAIL  # twice 1.6 s is over the 2 s retry time
        assert "the circuit breaker of lonely is half-open" in too_long.reason
    finally:
        await harness.close()


async def test_concurrent_reports_in_half_open_get_one_probe(harness: Harness) -> None:
    await trip(harness.handler)
    harness.clock.advance(30.0)
    decisions = await asyncio.gather(
        *(decide(harness.handler, failure(f"c{n}")) for n in range(20))
    )
    assert sum(decision.probe for decision in decisions) == 1
    assert sum(decision.action is Action.RETRY for decision in decisions) == 1


async def test_the_breaker_survives_a_restart(harness: Harness) -> None:
    await trip(harness.handler)
    opened = harness.state.breakers.view("search")
    handler = await harness.restart()
    assert harness.state.breakers.view("search") == opened
    harness.clock.advance(29.0)
    assert (await decide(handler, failure("after"))).action is Action.USE_ALTERNATIVE
    harness.clock.advance(1.0)
    assert (await decide(handler, failure("later"))).probe


async def test_an_operator_resets_and_forces_open(harness: Harness) -> None:
    await trip(harness.handler)
    event = await harness.actions.reset_breaker("search", by="alice: backend fixed")
    assert isinstance(event.detail, BreakerChanged)
    assert event.detail.change is BreakerChange.RESET
    assert event.detail.turn_id == ""
    assert (await decide(harness.handler, failure("a"))).action is Action.RETRY

    await harness.actions.force_open_breaker("lonely", duration=None, by="maintenance")
    harness.clock.advance(86_400)
    forced = await decide(harness.handler, failure("b", "lonely"))
    assert forced.action is Action.FAIL  # no wait ends before the reset: go on without it
    assert "an operator forced it open, until it is reset" in forced.reason

    await harness.actions.force_open_breaker("backup", duration=60.0)
    harness.clock.advance(60.0)
    backup = harness.state.breakers.view("backup")
    assert backup is not None
    assert backup.effective_phase(harness.clock.now()) is BreakerPhase.HALF_OPEN
    assert [change for _, change in await breaker_changes(harness)] == [
        BreakerChange.OPENED,
        BreakerChange.RESET,
        BreakerChange.FORCED_OPEN,
        BreakerChange.FORCED_OPEN,
    ]


async def test_an_unknown_tool_has_no_breaker_to_change(harness: Harness) -> None:
    with pytest.raises(ToolNotFound, match="no tool 'serch'"):
        await harness.actions.reset_breaker("serch")
    await decide(harness.handler, failure("a", tool="unlisted"))
    event = await harness.actions.force_open_breaker("unlisted", duration=None)
    assert isinstance(event.detail, BreakerChanged)


async def test_each_decision_records_the_breaker_it_left(harness: Harness) -> None:
    await trip(harness.handler)
    events = [event async for event in harness.handler.trace_after(0)]
    recorded = [e.detail.decision.breaker for e in events if isinstance(e.detail, FailureEvent)]
    assert [(b.phase, b.failures) for b in recorded if b is not None] == [
        (BreakerPhase.CLOSED, 1),
        (BreakerPhase.CLOSED, 2),
        (BreakerPhase.OPEN, 3),
    ]


async def test_a_probe_that_fails_permanently_is_over_without_counting(harness: Harness) -> None:
    await trip(harness.handler)
    harness.clock.advance(30.0)
    assert (await decide(harness.handler, failure("p"))).probe
    permanent = await decide(harness.handler, failure("p", attempt=2, error=FORBIDDEN))
    assert permanent.breaker is not None
    assert permanent.breaker.phase is BreakerPhase.HALF_OPEN
    assert permanent.breaker.probe is None
    assert (await decide(harness.handler, failure("q"))).probe


async def test_a_tool_that_recovered_closes_on_successes_without_failing_again(
    harness: Harness,
) -> None:
    await trip(harness.handler)
    harness.clock.advance(30.0)
    await decide(harness.handler, failure("p"))
    await harness.handler.report_outcome(success("p"))
    await harness.handler.report_outcome(success("fresh", attempt=1))
    closed = harness.state.breakers.view("search")
    assert closed is not None
    assert closed.phase is BreakerPhase.CLOSED


GROWING = BreakerPolicy(failure_threshold=3, cooldown=30.0, first_cooldown=1.0)
"""The defaults' growth: 1 s, then 1.5 times each opening in a row, at most 30 s."""


async def test_the_break_grows_with_each_opening_in_a_row_up_to_the_ceiling(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path, ManifestSnapshot([ToolManifest(name="dead", breaker=GROWING)]))
    handler = await harness.start()
    try:
        await trip(handler, "dead")
        breaks = []
        for n in range(12):  # each break over, the probe fails: it reopens for longer
            breaker = harness.state.breakers.view("dead")
            assert breaker is not None
            breaks.append(breaker.break_length)
            harness.clock.advance(breaker.break_length or 0.0)
            probe = await decide(handler, failure(f"p{n}", "dead"))
            assert probe.probe
            await decide(handler, failure(f"p{n}", "dead", attempt=2))
        assert breaks[:5] == pytest.approx([1.0, 1.5, 2.25, 3.375, 5.0625])
        assert breaks[-1] == 30.0  # the ceiling: the seed's fixed break
        last = harness.state.breakers.view("dead")
        assert last is not None
        assert last.streak == 13
    finally:
        await harness.close()


async def test_a_breaker_closed_for_a_ceiling_breaks_shortly_again(tmp_path: Path) -> None:
    harness = Harness(tmp_path, ManifestSnapshot([ToolManifest(name="dead", breaker=GROWING)]))
    handler = await harness.start()
    try:
        await trip(handler, "dead")
        harness.clock.advance(1.0)
        assert (await decide(handler, failure("p", "dead"))).probe
        await handler.report_outcome(success("p", tool="dead"))
        await handler.report_outcome(success("q", tool="dead", attempt=1))  # closed
        closed = harness.state.breakers.view("dead")
        assert closed is not None
        assert closed.phase is BreakerPhase.CLOSED
        harness.clock.advance(5.0)
        again = [await decide(handler, failure(f"a{n}", "dead")) for n in range(3)]
        assert again[-1].breaker is not None
        assert again[-1].breaker.break_length == 1.5  # within a ceiling of closing: longer
        await harness.actions.reset_breaker("dead", by="test")  # a reset starts over
        after_reset = [await decide(handler, failure(f"r{n}", "dead")) for n in range(3)]
        assert after_reset[-1].breaker is not None
        assert after_reset[-1].breaker.break_length == 1.0
        harness.clock.advance(1.0)
        assert (await decide(handler, failure("p2", "dead"))).probe
        await handler.report_outcome(success("p2", tool="dead"))
        await handler.report_outcome(success("q2", tool="dead", attempt=1))
        harness.clock.advance(30.0)  # closed a whole ceiling: the first break again
        later = [await decide(handler, failure(f"l{n}", "dead", turn="u")) for n in range(3)]
        assert later[-1].breaker is not None
        assert later[-1].breaker.break_length == 1.0
    finally:
        await harness.close()


async def test_a_probe_of_a_tool_without_a_manifest_is_bounded_by_its_declared_timeout(
    harness: Harness,
) -> None:
    """Without a manifest the executor's declared timeout (2 s), not the default 30 s,
    bounds the probe: the others wait for it that long, not half a minute."""
    declared = partial(failure, tool="bare", declared_timeout=2.0)
    for n in range(5):
        await decide(harness.handler, declared(f"d{n}"))
    harness.clock.advance(1.0)
    probe = await decide(harness.handler, declared("p"))
    assert probe.probe
    assert probe.breaker is not None
    assert probe.breaker.probe is not None
    assert probe.breaker.probe.until == harness.clock.now() + timedelta(seconds=probe.delay + 2.0)
    waiting = await decide(harness.handler, declared("q"))
    assert waiting.action is Action.RETRY
    assert waiting.delay == pytest.approx(probe.delay + 2.0)


async def test_rate_limits_and_refused_attempts_never_count(harness: Harness) -> None:
    limited = ToolFailure(http_status=429, message="429 Too Many Requests", retry_after=0.5)
    for n in range(6):
        decision = await decide(harness.handler, failure(f"r{n}", error=limited))
        assert decision.breaker is not None
        assert decision.breaker.failures == 0
    assert await breaker_changes(harness) == []
