"""The handler over a real SQLite store: retry accounting, redaction, manifests, idempotency."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from errord.decide.manifest import RetryPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    BreakerPhase,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.decide.model.events import FailureEvent
from errord.errors import ReportConflict, TurnNotFound
from tests.harness import Harness

TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="Connection timeout after 30s")
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(
            name="flight_search",
            timeout=12.0,
            alternatives=("flight_backup",),
            redact=("passenger.passport",),
        ),
        ToolManifest(name="flight_backup", timeout=7.0),
    ]
)


def failure(
    attempt: int = 1,
    elapsed: float = 0.0,
    tool: str = "flight_search",
    error: ToolFailure = TIMEOUT,
    **arguments: object,
) -> FailureReport:
    return FailureReport(
        turn_id="turn",
        call_id="call",
        tool=tool,
        attempt=attempt,
        error=error,
        arguments=arguments,
        elapsed=elapsed,
    )


def outcome(result: Outcome, attempt: int = 1) -> OutcomeReport:
    return OutcomeReport(
        turn_id="turn", call_id="call", tool="flight_search", attempt=attempt, outcome=result
    )


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Harness]:
    running = Harness(tmp_path, MANIFESTS)
    yield running
    await running.close()


async def test_a_tool_timing_out_after_30_s_each_time_is_retried_up_to_its_5_attempts(
    daemon: Harness,
) -> None:
    """The total retry time counts the delays granted (100+200+400+800
    ms), not the 30 s each failed attempt ran; the fifth attempt is the last. One call's
    own failures are no evidence of an outage: the breaker stays closed."""
    handler = await daemon.start()
    decisions = [
        (await handler.report_failure(failure(attempt, elapsed=30.0)))[0] for attempt in range(1, 6)
    ]
    assert [d.action for d in decisions] == [Action.RETRY] * 4 + [Action.USE_ALTERNATIVE]
    assert [d.delay for d in decisions[:4]] == [0.1, 0.2, 0.4, 0.8]
    assert [d.attempts_left for d in decisions[:4]] == [4, 3, 2, 1]
    assert decisions[4].breaker is not None
    assert decisions[4].breaker.phase is BreakerPhase.CLOSED
    assert decisions[4].breaker.failures == 5
    assert "attempt 5 reached the limit of 5 attempts" in decisions[4].reason


TIGHT = ManifestSnapshot(
    [ToolManifest(name="flight_search", retry_policy=RetryPolicy(max_total_time=0.5))]
)


async def test_the_retry_time_limit_counts_the_delays_granted(daemon: Harness) -> None:
    daemon.manifests = TIGHT
    handler = await daemon.start()
    first, _ = await handler.report_failure(failure(1, elapsed=10.0))
    second, _ = await handler.report_failure(failure(2, elapsed=10.0))  # 0.1 granted so far
    third, _ = await handler.report_failure(failure(3, elapsed=10.0))  # 0.1 + 0.2 granted
    assert [first.delay, second.delay] == [0.1, 0.2]
    assert third.action is Action.FAIL  # 0.3 + 0.4 > 0.5
    assert (
        "300 ms of retry delay already granted plus a 400 ms delay would exceed the 500 ms "
        "retry time limit" in third.reason
    )


async def test_retry_time_is_restored_after_a_restart(daemon: Harness) -> None:
    daemon.manifests = TIGHT
    handler = await daemon.start()
    await handler.report_failure(failure(1))
    await handler.report_failure(failure(2))
    handler = await daemon.restart()
    third, _ = await handler.report_failure(failure(3))
    assert third.action is Action.FAIL
    assert "300 ms of retry delay already granted" in third.reason


async def test_the_alternative_gets_its_own_timeout(daemon: Harness) -> None:
    handler = await daemon.start()
    retry, _ = await handler.report_failure(failure(1))
    switch, _ = await handler.report_failure(failure(5))
    assert (retry.action, retry.next_attempt_timeout) == (Action.RETRY, 12.0)
    assert (switch.action, switch.alternative_tool) == (Action.USE_ALTERNATIVE, "flight_backup")
    assert switch.next_attempt_timeout == 7.0


async def test_a_tool_without_manifest_gets_the_default_policy_and_the_decision_says_so(
    daemon: Harness,
) -> None:
    handler = await daemon.start()
    known, _ = await handler.report_failure(failure())
    unknown, _ = await handler.report_failure(failure(tool="hotel_search"))
    assert not known.default_policy
    assert "default policy" not in known.reason
    assert unknown.default_policy
    assert unknown.reason.endswith("hotel_search has no manifest; the default policy applied.")
    assert (unknown.action, unknown.next_attempt_timeout) == (Action.RETRY, 30.0)


async def test_arguments_are_redacted_before_they_are_stored(daemon: Harness) -> None:
    handler = await daemon.start()
    report = failure(origin="SFO", api_key="sk-123", passenger={"passport": "X1", "name": "Ann"})
    await handler.report_failure(report)
    handler = await daemon.restart()
    [_, event] = await handler.turn_trace("turn")
    assert isinstance(event.detail, FailureEvent)
    assert event.detail.report.arguments == {
        "origin": "SFO",
        "api_key": "[REDACTED:api_key]",
        "passenger": {"passport": "[REDACTED:manifest]", "name": "Ann"},
    }


async def test_a_repeated_report_returns_the_recorded_decision(daemon: Harness) -> None:
    handler = await daemon.start()
    original, replayed = await handler.report_failure(failure())
    daemon.clock.advance(5)
    again, replayed_again = await handler.report_failure(failure())
    assert (replayed, replayed_again) == (False, True)
    assert again == original
    [_, event] = await handler.turn_trace("turn")
    assert isinstance(event.detail, FailureEvent)
    assert event.detail.decision == original


async def test_a_tool_the_model_made_up_is_told_which_tools_exist(daemon: Harness) -> None:
    handler = await daemon.start()
    error = ToolFailure(code=ErrorCode.TOOL_NOT_FOUND, message="no tool named fligth_search")
    decision, _ = await handler.report_failure(failure(tool="fligth_search", error=error))
    assert decision.action is Action.RETURN_TO_MODEL
    assert "Available Tools: flight_search, flight_backup" in decision.llm_message


async def test_outcomes_are_recorded_in_order_with_failures(daemon: Harness) -> None:
    handler = await daemon.start()
    decision, _ = await handler.report_failure(failure())
    report = OutcomeReport(
        turn_id="turn",
        call_id="call",
        tool="flight_search",
        attempt=2,
        outcome=Outcome.SUCCESS,
        duration=0.25,
        decision_id=decision.decision_id,
    )
    event, replayed = await handler.report_outcome(report)
    again, replayed_again = await handler.report_outcome(report)
    assert (replayed, replayed_again) == (False, True)
    assert again == event
    events = await handler.turn_trace("turn")
    assert [e.kind.value for e in events] == ["turn_began", "failure", "outcome"]


async def test_an_unknown_turn_is_not_found(daemon: Harness) -> None:
    handler = await daemon.start()
    with pytest.raises(TurnNotFound, match="no trace events for turn 'nope'"):
        await handler.turn_trace("nope")


async def test_a_long_error_message_is_clipped_in_the_texts_it_is_echoed_in(
    daemon: Harness,
) -> None:
    handler = await daemon.start()
    error = ToolFailure(code=ErrorCode.TIMEOUT, message="x" * 10_000)
    decision, _ = await handler.report_failure(failure(error=error))
    assert "x" * 2_000 + "... [8000 more characters]" in decision.llm_message
    assert len(decision.llm_message) < 2_500
    assert len(decision.technical_message) < 2_500


PING_PONG = ManifestSnapshot(
    [
        ToolManifest(name="search_a", alternatives=("search_b",)),
        ToolManifest(name="search_b", alternatives=("search_a",)),
    ]
)
GONE = ToolFailure(code=ErrorCode.NOT_FOUND, message="no such index")


async def test_alternatives_that_point_at_each_other_do_not_loop(daemon: Harness) -> None:
    daemon.manifests = PING_PONG
    handler = await daemon.start()
    first, _ = await handler.report_failure(failure(tool="search_a", error=GONE))
    second, _ = await handler.report_failure(failure(tool="search_b", error=GONE))
    assert (first.action, first.alternative_tool) == (Action.USE_ALTERNATIVE, "search_b")
    assert second.action is Action.FAIL  # no alternative left for an index that does not exist


async def test_alternatives_that_failed_before_a_restart_are_not_offered_again(
    daemon: Harness,
) -> None:
    daemon.manifests = PING_PONG
    handler = await daemon.start()
    await handler.report_failure(failure(tool="search_a", error=GONE))
    handler = await daemon.restart()
    after_restart, _ = await handler.report_failure(failure(tool="search_b", error=GONE))
    assert after_restart.action is Action.FAIL


async def test_a_repeated_key_with_a_different_error_is_a_conflict(daemon: Harness) -> None:
    handler = await daemon.start()
    await handler.report_failure(failure())
    with pytest.raises(
        ReportConflict, match=r"already recorded with a different error \(TIMEOUT\)"
    ):
        await handler.report_failure(failure(error=GONE))
    assert len(await handler.turn_trace("turn")) == 2  # the turn began, the first report


async def test_a_repeated_outcome_with_another_result_is_a_conflict(daemon: Harness) -> None:
    handler = await daemon.start()
    await handler.report_outcome(outcome(Outcome.SUCCESS))
    with pytest.raises(ReportConflict, match="already recorded as SUCCESS"):
        await handler.report_outcome(outcome(Outcome.FAILURE))
