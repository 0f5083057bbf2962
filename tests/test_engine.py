"""The engine over a real SQLite store: retry accounting, redaction, manifests, idempotency."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from errord.decide.engine import Engine
from errord.decide.model import (
    Action,
    ErrorCode,
    FailureEvent,
    FailureReport,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.decide.policy import default_policy
from errord.errors import ReportConflict, TurnNotFound
from errord.manifests.model import ManifestSet, ToolManifest
from errord.state.store import TraceStore
from tests.fakes import FakeClock, FixedJitter

TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="Connection timeout after 30s")
MANIFESTS = ManifestSet(
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
    return FailureReport("turn", "call", tool, attempt, error, arguments, elapsed)


class Daemon:
    """An engine over a store in one directory; ``restart`` reopens both."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.manifests = MANIFESTS
        self.clock = FakeClock()
        self.ids = (f"decision-{n}" for n in itertools.count(1))

    async def start(self) -> Engine:
        self.store = await TraceStore.open(self.path / "errord.db", self.clock)
        return Engine(
            self.manifests,
            self.store,
            default_policy(FixedJitter()),
            self.clock,
            new_id=lambda: next(self.ids),
        )

    async def restart(self) -> Engine:
        await self.store.close()
        return await self.start()


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    running = Daemon(tmp_path)
    yield running
    await running.store.close()


async def test_retry_time_counts_delays_and_retried_attempts_until_the_budget_is_spent(
    daemon: Daemon,
) -> None:
    engine = await daemon.start()
    first, _ = await engine.report_failure(failure(1, elapsed=30.0))  # attempt 1 does not count
    second, _ = await engine.report_failure(failure(2, elapsed=0.5))  # 0.1 + 0.5 spent
    third, _ = await engine.report_failure(failure(3, elapsed=0.9))  # 0.1+0.5+0.2+0.9 = 1.7
    assert [first.action, second.action] == [Action.RETRY, Action.RETRY]
    assert (first.delay, second.delay) == (0.1, 0.2)
    assert third.action is Action.USE_ALTERNATIVE  # 1.7 + 0.4 > 2.0
    assert "1700 ms spent retrying plus a 400 ms delay" in third.reason


async def test_retry_time_is_rebuilt_from_the_trace_after_a_restart(daemon: Daemon) -> None:
    engine = await daemon.start()
    await engine.report_failure(failure(1))
    await engine.report_failure(failure(2, elapsed=1.0))
    engine = await daemon.restart()
    third, _ = await engine.report_failure(failure(3, elapsed=0.4))  # 0.1+1.0+0.2+0.4 = 1.7
    assert third.action is Action.USE_ALTERNATIVE
    assert "1700 ms spent retrying" in third.reason


async def test_the_alternative_gets_its_own_timeout(daemon: Daemon) -> None:
    engine = await daemon.start()
    retry, _ = await engine.report_failure(failure(1))
    switch, _ = await engine.report_failure(failure(5))
    assert (retry.action, retry.next_attempt_timeout) == (Action.RETRY, 12.0)
    assert (switch.action, switch.alternative_tool) == (Action.USE_ALTERNATIVE, "flight_backup")
    assert switch.next_attempt_timeout == 7.0


async def test_a_tool_without_manifest_gets_the_default_policy_and_the_decision_says_so(
    daemon: Daemon,
) -> None:
    engine = await daemon.start()
    known, _ = await engine.report_failure(failure())
    unknown, _ = await engine.report_failure(failure(tool="hotel_search"))
    assert not known.default_policy
    assert "default policy" not in known.reason
    assert unknown.default_policy
    assert unknown.reason.endswith("hotel_search has no manifest; the default policy applied.")
    assert (unknown.action, unknown.next_attempt_timeout) == (Action.RETRY, 30.0)


async def test_arguments_are_redacted_before_they_are_stored(daemon: Daemon) -> None:
    engine = await daemon.start()
    report = failure(origin="SFO", api_key="sk-123", passenger={"passport": "X1", "name": "Ann"})
    await engine.report_failure(report)
    engine = await daemon.restart()
    [event] = await engine.turn_trace("turn")
    assert isinstance(event.detail, FailureEvent)
    assert event.detail.report.arguments == {
        "origin": "SFO",
        "api_key": "[REDACTED]",
        "passenger": {"passport": "[REDACTED]", "name": "Ann"},
    }


async def test_a_repeated_report_returns_the_recorded_decision(daemon: Daemon) -> None:
    engine = await daemon.start()
    original, replayed = await engine.report_failure(failure())
    daemon.clock.advance(5)
    again, replayed_again = await engine.report_failure(failure())
    assert (replayed, replayed_again) == (False, True)
    assert again == original
    [event] = await engine.turn_trace("turn")
    assert event.key == original.key


async def test_a_tool_the_model_made_up_is_told_which_tools_exist(daemon: Daemon) -> None:
    engine = await daemon.start()
    error = ToolFailure(code=ErrorCode.TOOL_NOT_FOUND, message="no tool named fligth_search")
    decision, _ = await engine.report_failure(failure(tool="fligth_search", error=error))
    assert decision.action is Action.ESCALATE
    assert "Available tools: flight_backup, flight_search." in decision.llm_message


async def test_outcomes_are_recorded_in_order_with_failures(daemon: Daemon) -> None:
    engine = await daemon.start()
    decision, _ = await engine.report_failure(failure())
    outcome = OutcomeReport(
        "turn", "call", "flight_search", 2, Outcome.SUCCESS, 0.25, decision.decision_id
    )
    event, replayed = await engine.report_outcome(outcome)
    again, replayed_again = await engine.report_outcome(outcome)
    assert (replayed, replayed_again) == (False, True)
    assert again == event
    events = await engine.turn_trace("turn")
    assert [type(e.detail).__name__ for e in events] == ["FailureEvent", "OutcomeEvent"]


async def test_an_unknown_turn_is_not_found(daemon: Daemon) -> None:
    engine = await daemon.start()
    with pytest.raises(TurnNotFound, match="no trace events for turn 'nope'"):
        await engine.turn_trace("nope")


async def test_a_long_error_message_is_clipped_in_the_texts_it_is_echoed_in(
    daemon: Daemon,
) -> None:
    engine = await daemon.start()
    error = ToolFailure(code=ErrorCode.TIMEOUT, message="x" * 10_000)
    decision, _ = await engine.report_failure(failure(error=error))
    assert "x" * 2_000 + "... [8000 more characters]" in decision.llm_message
    assert len(decision.llm_message) < 2_500
    assert len(decision.technical_message) < 2_500


PING_PONG = ManifestSet(
    [
        ToolManifest(name="search_a", alternatives=("search_b",)),
        ToolManifest(name="search_b", alternatives=("search_a",)),
    ]
)
INVALID = ToolFailure(code=ErrorCode.INVALID_INPUT, message="bad query")


async def test_alternatives_that_point_at_each_other_do_not_loop(daemon: Daemon) -> None:
    daemon.manifests = PING_PONG
    engine = await daemon.start()
    first, _ = await engine.report_failure(failure(tool="search_a", error=INVALID))
    second, _ = await engine.report_failure(failure(tool="search_b", error=INVALID))
    assert (first.action, first.alternative_tool) == (Action.USE_ALTERNATIVE, "search_b")
    assert second.action is Action.ESCALATE


async def test_alternatives_that_failed_before_a_restart_are_not_offered_again(
    daemon: Daemon,
) -> None:
    daemon.manifests = PING_PONG
    engine = await daemon.start()
    await engine.report_failure(failure(tool="search_a", error=INVALID))
    engine = await daemon.restart()
    after_restart, _ = await engine.report_failure(failure(tool="search_b", error=INVALID))
    assert after_restart.action is Action.ESCALATE


async def test_a_repeated_key_with_a_different_error_is_a_conflict(daemon: Daemon) -> None:
    engine = await daemon.start()
    await engine.report_failure(failure())
    with pytest.raises(
        ReportConflict, match=r"already recorded with a different error \(TIMEOUT\)"
    ):
        await engine.report_failure(failure(error=INVALID))
    assert len(await engine.turn_trace("turn")) == 1


async def test_a_repeated_outcome_with_another_result_is_a_conflict(daemon: Daemon) -> None:
    engine = await daemon.start()
    await engine.report_outcome(OutcomeReport("turn", "call", "flight_search", 1, Outcome.SUCCESS))
    with pytest.raises(ReportConflict, match="already recorded as SUCCESS"):
        await engine.report_outcome(
            OutcomeReport("turn", "call", "flight_search", 1, Outcome.FAILURE)
        )
