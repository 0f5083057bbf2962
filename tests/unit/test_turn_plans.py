"""Turn plans: a call that ends without a result takes the calls waiting on it along, and
EndTurn settles every call and tells the user."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest

from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    CallStatus,
    Consequence,
    DefaultValue,
    ErrorCode,
    Outcome,
    OutcomeReport,
    PlannedCall,
    ToolFailure,
)
from errord.decide.texts.tool_results import ToolCall
from errord.errors import TurnClosed, TurnNotFound
from tests.harness import Harness, failure_report

CALM = BreakerPolicy(failure_threshold=1000)
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="flight_search", breaker=CALM),
        ToolManifest(name="hotel_search", breaker=CALM),
        ToolManifest(name="car_search", breaker=CALM),
        ToolManifest(name="geocode", breaker=CALM),
        ToolManifest(name="weather", breaker=CALM, default=DefaultValue({"forecast": "unknown"})),
        ToolManifest(name="advice", breaker=CALM),
        ToolManifest(name="news", breaker=CALM, optional=True),
    ]
)
GONE = ToolFailure(code=ErrorCode.NOT_FOUND, message="no such city")
TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT)


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


def call(
    call_id: str,
    tool: str,
    *needs: str,
    optional: bool | None = None,
    default: DefaultValue | None = None,
) -> PlannedCall:
    return PlannedCall(
        call_id=call_id, tool=tool, depends_on=needs, optional=optional, default=default
    )


failure = partial(failure_report, error=GONE)


def success(call_id: str, tool: str, attempt: int = 1) -> OutcomeReport:
    return OutcomeReport(
        turn_id="t", call_id=call_id, tool=tool, attempt=attempt, outcome=Outcome.SUCCESS
    )


def fates(consequences: tuple[Consequence, ...]) -> dict[str, tuple[Action, str]]:
    return {each.call_id: (each.action, each.blocked_by) for each in consequences}


async def test_a_turn_that_reaches_its_deadline_keeps_what_completed(
    harness: Harness,
) -> None:
    """Tool 1 completes at 50 s, tools 2 and 3 are still running at 300 s."""
    plan = (call("1", "flight_search"), call("2", "hotel_search"), call("3", "car_search"))
    await harness.handler.begin_turn("t", None, None, plan)
    harness.clock.advance(50.0)
    await harness.handler.report_outcome(success("1", "flight_search"))
    harness.clock.advance(250.0)
    summary, replayed = await harness.handler.end_turn("t")
    assert not replayed
    assert summary.deadline_passed
    assert [(c.call_id, c.status) for c in summary.calls] == [
        ("1", CallStatus.SUCCEEDED),
        ("2", CallStatus.TIMED_OUT),
        ("3", CallStatus.TIMED_OUT),
    ]
    assert summary.user_notice == (
        "Completed flight search, but hotel search and car search timed out."
    )
    assert summary.calls[1].detail == "had not finished at the turn's deadline"
    reconciled = await harness.handler.reconcile_results(
        "t", [ToolCall("1", "flight_search"), ToolCall("2", "hotel_search")], []
    )
    assert reconciled.results[1].content == (
        "No result: hotel_search did not finish before the turn's deadline."
    )


async def test_a_turn_ended_before_its_deadline_skips_what_did_not_finish(
    harness: Harness,
) -> None:
    await harness.handler.begin_turn("t", None, None, (call("1", "flight_search"),))
    summary, _ = await harness.handler.end_turn("t")
    assert not summary.deadline_passed
    assert [(c.status, c.detail) for c in summary.calls] == [
        (CallStatus.SKIPPED, "had not finished when the turn ended")
    ]
    assert summary.user_notice == "Could not complete the request: flight search was skipped."


async def test_a_chain_is_skipped_with_its_first_call_and_independent_calls_go_on(
    harness: Harness,
) -> None:
    """A -> B -> C, and D alone: A (optional) fails for good; B and C are skipped, D is not."""
    plan = (
        call("A", "geocode", optional=True),
        call("B", "advice", "A", optional=True),
        call("C", "news", "B"),
        call("D", "flight_search"),
    )
    await harness.handler.begin_turn("t", None, None, plan)
    decision, _ = await harness.handler.report_failure(failure("A", "geocode"))
    assert decision.action is Action.SKIP
    assert fates(decision.consequences) == {"B": (Action.SKIP, "A"), "C": (Action.SKIP, "B")}
    assert decision.reason.endswith("Calls waiting on it: B skipped, C skipped.")
    assert "Do not make call B (advice): it needs this call's result." in decision.llm_message
    assert decision.consequences[1].reason == "needs the result of B, which has none; skipped"
    independent, _ = await harness.handler.report_failure(
        failure("D", "flight_search", error=TIMEOUT)
    )
    assert (independent.action, independent.consequences) == (Action.RETRY, ())
    await harness.handler.report_outcome(success("D", "flight_search", attempt=2))
    summary, _ = await harness.handler.end_turn("t")
    assert [(c.call_id, c.status, c.blocked_by) for c in summary.calls] == [
        ("A", CallStatus.SKIPPED, ""),
        ("B", CallStatus.SKIPPED, "A"),
        ("C", CallStatus.SKIPPED, "B"),
        ("D", CallStatus.SUCCEEDED, ""),
    ]
    assert [d.action for d in summary.calls[3].decisions] == [Action.RETRY]
    assert summary.user_notice == (
        "Completed flight search, but geocode, advice and news were skipped."
    )


async def test_a_default_stands_in_and_the_calls_after_it_go_on(harness: Harness) -> None:
    """A -> B -> C: B has a default (its tool's), so C can run on it."""
    plan = (
        call("A", "geocode", optional=True),
        call("B", "weather", "A"),
        call("C", "advice", "B"),
    )
    await harness.handler.begin_turn("t", None, None, plan)
    decision, _ = await harness.handler.report_failure(failure("A", "geocode"))
    assert decision.action is Action.SKIP
    [given] = decision.consequences
    assert (given.call_id, given.action, given.default_value) == (
        "B",
        Action.USE_DEFAULT,
        {"forecast": "unknown"},
    )
    assert 'use its default result instead: {"forecast": "unknown"}' in decision.llm_message
    await harness.handler.report_outcome(success("C", "advice"))
    summary, _ = await harness.handler.end_turn("t")
    assert [c.status for c in summary.calls] == [
        CallStatus.SKIPPED,
        CallStatus.DEFAULTED,
        CallStatus.SUCCEEDED,
    ]
    assert summary.user_notice == (
        "Completed weather (a standard result) and advice, but geocode was skipped."
    )


async def test_a_required_call_that_cannot_run_escalates(harness: Harness) -> None:
    """A (optional) -> B (required, no default): skipping A blocks B, so the turn escalates."""
    plan = (call("A", "geocode", optional=True), call("B", "advice", "A"))
    await harness.handler.begin_turn("t", None, None, plan)
    decision, _ = await harness.handler.report_failure(failure("A", "geocode"))
    assert decision.action is Action.ESCALATE
    assert fates(decision.consequences) == {"B": (Action.ESCALATE, "A")}
    assert decision.reason.endswith(
        "the call is optional, but B needs its result and is required, with no default: "
        "escalating. Calls waiting on it: B blocked (required, no default)."
    )
    assert decision.user_message == (
        "Geocode is unavailable, and other steps of this request can't go on without it."
    )
    summary, _ = await harness.handler.end_turn("t")
    assert [(c.status, c.blocked_by) for c in summary.calls] == [
        (CallStatus.FAILED, ""),
        (CallStatus.FAILED, "A"),
    ]


async def test_a_diamond_blocks_its_last_call_once(harness: Harness) -> None:
    """A -> B, A -> C, B -> D, C -> D: B has a default, C is optional, D needs both."""
    plan = (
        call("D", "advice", "B", "C", optional=True),
        call("B", "weather", "A"),
        call("C", "news", "A"),
        call("A", "geocode"),
        call("E", "flight_search"),
    )
    await harness.handler.begin_turn("t", None, None, plan)
    decision, _ = await harness.handler.report_failure(failure("A", "geocode"))
    assert decision.action is Action.FAIL  # A is required, but no city of that name exists
    assert [(c.call_id, c.action, c.blocked_by) for c in decision.consequences] == [
        ("B", Action.USE_DEFAULT, "A"),
        ("C", Action.SKIP, "A"),
        ("D", Action.SKIP, "C"),
    ]
    summary, _ = await harness.handler.end_turn("t")
    by_call = {c.call_id: c.status for c in summary.calls}
    assert by_call == {
        "D": CallStatus.SKIPPED,
        "B": CallStatus.DEFAULTED,
        "C": CallStatus.SKIPPED,
        "A": CallStatus.FAILED,
        "E": CallStatus.SKIPPED,  # ended before the deadline without a report
    }


async def test_the_plan_says_whether_a_call_is_optional_and_what_its_default_is(
    harness: Harness,
) -> None:
    plan = (
        call("skippable", "flight_search", optional=True),
        call("defaulted", "hotel_search", default=DefaultValue(None)),
        call("required", "news", optional=False),
    )
    await harness.handler.begin_turn("t", None, None, plan)
    skipped, _ = await harness.handler.report_failure(failure("skippable", "flight_search"))
    defaulted, _ = await harness.handler.report_failure(failure("defaulted", "hotel_search"))
    required, _ = await harness.handler.report_failure(failure("required", "news"))
    assert (skipped.action, defaulted.action, required.action) == (
        Action.SKIP,
        Action.USE_DEFAULT,
        Action.FAIL,  # news's manifest calls it optional (SKIP); the plan says otherwise
    )
    assert defaulted.default_value is None
    assert "its default result stands in for it: null" in defaulted.llm_message


async def test_out_of_time_the_calls_waiting_are_skipped_rather_than_escalated(
    harness: Harness,
) -> None:
    plan = (call("A", "geocode"), call("B", "advice", "A"))
    await harness.handler.begin_turn("t", harness.clock.now() + timedelta(seconds=20), None, plan)
    decision, _ = await harness.handler.report_failure(failure("A", "geocode", error=TIMEOUT))
    assert decision.action is Action.SKIP
    assert "the turn is out of time" in decision.reason
    [skipped] = decision.consequences
    assert (skipped.action, skipped.reason) == (
        Action.SKIP,
        "needs the result of A, which has none; the turn is out of time; skipped",
    )


async def test_a_call_that_already_ended_is_left_alone(harness: Harness) -> None:
    plan = (call("A", "geocode"), call("B", "advice", "A", optional=True))
    await harness.handler.begin_turn("t", None, None, plan)
    await harness.handler.report_outcome(success("B", "advice"))
    decision, _ = await harness.handler.report_failure(failure("A", "geocode"))
    assert decision.consequences == ()


async def test_end_turn_is_idempotent_and_closes_the_turn(harness: Harness) -> None:
    await harness.handler.report_failure(failure("A", "geocode", error=TIMEOUT))
    summary, replayed = await harness.handler.end_turn("t")
    assert not replayed
    harness.clock.advance(400.0)  # a repeat answers what was recorded, not what is now
    again, replayed = await harness.handler.end_turn("t")
    assert replayed
    assert again == summary
    assert [(c.call_id, c.status) for c in summary.calls] == [("A", CallStatus.SKIPPED)]
    with pytest.raises(TurnClosed, match="turn 't' ended at"):
        await harness.handler.report_failure(failure("B", "geocode"))
    repeat, replayed = await harness.handler.report_failure(failure("A", "geocode", error=TIMEOUT))
    assert replayed  # a recorded report still answers
    assert repeat.action is Action.RETRY
    with pytest.raises(TurnNotFound, match="no turn 'nobody'"):
        await harness.handler.end_turn("nobody")


async def test_plans_cascades_and_endings_survive_a_restart(harness: Harness) -> None:
    plan = (call("A", "geocode", optional=True), call("B", "advice", "A", optional=True))
    await harness.handler.begin_turn("t", None, None, plan)
    await harness.handler.begin_turn("u", None, None, plan)
    await harness.handler.report_failure(failure("A", "geocode"))
    ended, _ = await harness.handler.end_turn("t")
    handler = await harness.restart()
    assert await handler.end_turn("t") == (ended, True)
    with pytest.raises(TurnClosed):
        await handler.report_failure(failure("C", "geocode"))
    decision, _ = await handler.report_failure(failure("A", "geocode", turn="u"))
    assert fates(decision.consequences) == {"B": (Action.SKIP, "A")}
