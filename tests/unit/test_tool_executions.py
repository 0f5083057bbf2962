"""A tool's figures per execution (a call's attempts of the tool, from the first to the one
that ends it) beside its figures per attempt, as the handler records and folds them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from msgspec.structs import replace

from errord.decide.health.admission import refused_error
from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    Classification,
    Decision,
    ErrorClass,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    ReportKey,
    ToolFailure,
)
from errord.decide.model.events import FailureEvent, OutcomeEvent, TraceEvent
from errord.state.tool_stats import ToolStats, ToolStatsFold
from tests.harness import Harness, failure_report

MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="search", breaker=BreakerPolicy(failure_threshold=50)),
        ToolManifest(
            name="pay",
            parameters={
                "type": "object",
                "required": ["amount"],
                "properties": {"amount": {"type": "number"}},
            },
        ),
    ]
)
TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="read timed out")


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


def stats_of(harness: Harness, tool: str = "search") -> ToolStats:
    stats = harness.state.tool_stats.view(tool)
    assert stats is not None
    return stats


async def fail(
    harness: Harness, attempt: int, *, call: str = "c", elapsed: float = 0.5
) -> Decision:
    report = replace(failure_report(call, attempt=attempt, error=TIMEOUT), elapsed=elapsed)
    decision, _ = await harness.handler.report_failure(report)
    return decision


async def succeed(
    harness: Harness, attempt: int, *, call: str = "c", seconds: float = 0.25
) -> None:
    report = OutcomeReport(
        turn_id="t",
        call_id=call,
        tool="search",
        attempt=attempt,
        outcome=Outcome.SUCCESS,
        duration=seconds,
    )
    await harness.handler.report_outcome(report)


async def test_a_call_that_succeeded_at_its_fourth_attempt_is_one_execution_that_succeeded(
    harness: Harness,
) -> None:
    delays = [(await fail(harness, attempt)).delay for attempt in (1, 2, 3)]
    await succeed(harness, 4)
    stats = stats_of(harness)
    assert (stats.executions, stats.successes, stats.errors) == (4, 1, 3)
    executions = stats.per_execution
    assert (executions.count, executions.successes, executions.errors) == (1, 1, 0)
    assert executions.failure_rate == 0.0
    assert executions.durations.count == 1
    assert executions.durations.total == pytest.approx(3 * 0.5 + sum(delays) + 0.25)


async def test_a_retry_goes_on_with_the_execution_and_a_final_decision_ends_it(
    harness: Harness,
) -> None:
    decisions = [await fail(harness, attempt) for attempt in range(1, 6)]
    assert [d.action for d in decisions[:-1]] == [Action.RETRY] * 4
    assert decisions[-1].action is not Action.RETRY  # five attempts: the retries are spent
    executions = stats_of(harness).per_execution
    assert (executions.count, executions.errors, executions.timeouts) == (1, 1, 1)
    assert executions.failure_rate == 1.0


async def test_a_call_handed_back_to_the_model_ends_its_execution_as_an_error(
    harness: Harness,
) -> None:
    report = FailureReport(
        turn_id="t",
        call_id="p",
        tool="pay",
        attempt=1,
        error=ToolFailure(code=ErrorCode.INVALID_INPUT, message="amount: required"),
        elapsed=0.01,
    )
    decision, _ = await harness.handler.report_failure(report)
    assert decision.action is Action.RETURN_TO_MODEL
    executions = stats_of(harness, "pay").per_execution
    assert (executions.count, executions.errors, executions.timeouts) == (1, 1, 0)


async def test_calls_count_one_execution_each(harness: Harness) -> None:
    await fail(harness, 1, call="a")
    await succeed(harness, 2, call="a")
    await succeed(harness, 1, call="b")
    await fail(harness, 1, call="c")  # still retrying: its execution has not ended
    stats = stats_of(harness)
    assert stats.executions == 4
    assert (stats.per_execution.count, stats.per_execution.successes) == (2, 2)


async def test_a_call_refused_before_any_attempt_ran_has_no_execution(harness: Harness) -> None:
    await harness.actions.force_open_breaker("search", duration=None, by="test")
    admission, decision, _ = await harness.handler.admit_call(ReportKey("t", "c", "search", 1), {})
    assert not admission.admitted
    assert decision is not None
    assert decision.action is not Action.RETRY
    stats = stats_of(harness)
    assert stats.executions == 0
    assert stats.per_execution.count == 0


async def test_a_refusal_after_an_attempt_ran_ends_that_execution(harness: Harness) -> None:
    await fail(harness, 1)
    await harness.actions.force_open_breaker("search", duration=None, by="test")
    _, decision, _ = await harness.handler.admit_call(ReportKey("t", "c", "search", 2), {})
    assert decision is not None
    assert decision.action is not Action.RETRY
    executions = stats_of(harness).per_execution
    assert (executions.count, executions.errors) == (1, 1)


async def test_the_figures_per_execution_survive_a_rebuild_from_the_trace(harness: Harness) -> None:
    for attempt in (1, 2, 3):
        await fail(harness, attempt)
    await succeed(harness, 4)
    folded = stats_of(harness)
    events = [event async for event in harness.handler.trace_after(0)]
    fold = ToolStatsFold()
    rebuilt = fold.apply_all("search", None, [e for e in events if fold.keys(e)])
    assert rebuilt == folded


# Events recorded before errord marked the end of executions


def old_failure(action: Action, *, refused: bool = False) -> TraceEvent:
    code = ErrorCode.CIRCUIT_OPEN if refused else ErrorCode.TIMEOUT
    report = FailureReport(
        turn_id="t",
        call_id="c",
        tool="search",
        attempt=1,
        error=ToolFailure(code=code) if not refused else _refused_error(),
        elapsed=0.0 if refused else 2.0,
    )
    decision = Decision(
        decision_id="d",
        turn_id="t",
        call_id="c",
        tool="search",
        attempt=1,
        action=action,
        classification=Classification(ErrorClass.TRANSIENT, code, "test"),
        reason="",
        llm_message="",
        user_message="",
        technical_message="",
        decided_at=AT,
    )
    return TraceEvent(1, AT, FailureEvent(report=report, decision=decision))


def _refused_error() -> ToolFailure:
    return refused_error("search", held=False)


AT = datetime(2026, 1, 1, tzinfo=UTC)


def test_an_older_trace_ends_executions_at_final_decisions_on_attempts_that_ran() -> None:
    fold = ToolStatsFold()
    success = OutcomeEvent(
        report=OutcomeReport(
            turn_id="t",
            call_id="d",
            tool="search",
            attempt=1,
            outcome=Outcome.SUCCESS,
            duration=1.0,
        )
    )
    events = [
        old_failure(Action.RETRY),
        old_failure(Action.FAIL),
        old_failure(Action.FAIL, refused=True),
        TraceEvent(2, AT, success),
    ]
    executions = fold.apply_all("search", None, events).per_execution
    assert (executions.count, executions.successes, executions.errors) == (2, 1, 1)
    assert executions.durations.total == pytest.approx(3.0)  # the failure's 2 s, the success's 1 s
