"""Per-tool statistics folded from the trace, and the alerts read from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from errord.decide.health.alerts import AlertKind, AlertThresholds
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    BreakerChange,
    BreakerPhase,
    BreakerState,
    Classification,
    Decision,
    ErrorClass,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.decide.model.events import BreakerChanged, FailureEvent, OutcomeEvent, TraceEvent
from errord.state.health import ToolHealthBoard
from errord.state.projections import Projections
from errord.state.tool_stats import (
    MAX_EXCEPTION_TYPES,
    OTHER_EXCEPTIONS,
    Durations,
    ToolStats,
    ToolStatsFold,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
FOLD = ToolStatsFold()


def failed(
    seconds: float = 1.0,
    *,
    at: float = 0.0,
    code: ErrorCode = ErrorCode.TIMEOUT,
    error_class: ErrorClass = ErrorClass.TRANSIENT,
    action: Action = Action.RETRY,
    exception: str = "TimeoutError",
) -> TraceEvent:
    report = FailureReport(
        turn_id="t",
        call_id="c",
        tool="search",
        attempt=1,
        error=ToolFailure(code=code, exception_type=exception),
        elapsed=seconds,
    )
    decision = Decision(
        decision_id="d",
        turn_id="t",
        call_id="c",
        tool="search",
        attempt=1,
        action=action,
        classification=Classification(error_class, code, "test"),
        reason="",
        llm_message="",
        user_message="",
        technical_message="",
        decided_at=START,
    )
    return TraceEvent(
        1, START + timedelta(seconds=at), FailureEvent(report=report, decision=decision)
    )


def succeeded(seconds: float = 1.0, *, at: float = 0.0, attempt: int = 1) -> TraceEvent:
    report = OutcomeReport(
        turn_id="t",
        call_id="c",
        tool="search",
        attempt=attempt,
        outcome=Outcome.SUCCESS,
        duration=seconds,
    )
    return TraceEvent(1, START + timedelta(seconds=at), OutcomeEvent(report=report))


def opened(at: float = 0.0) -> TraceEvent:
    breaker = BreakerState(phase=BreakerPhase.OPEN, opened_at=START, generation=1)
    detail = BreakerChanged(tool="search", change=BreakerChange.OPENED, breaker=breaker)
    return TraceEvent(1, START + timedelta(seconds=at), detail)


def fold(*events: TraceEvent) -> ToolStats:
    return FOLD.apply_all("search", None, events)


def test_failures_successes_and_openings_are_counted() -> None:
    stats = fold(
        failed(),
        failed(
            code=ErrorCode.AUTH,
            error_class=ErrorClass.PERMANENT,
            action=Action.ESCALATE,
            exception="PermissionError",
        ),
        succeeded(attempt=2),
        succeeded(),
        opened(),
    )
    assert (stats.executions, stats.successes, stats.errors) == (4, 2, 2)
    assert (stats.transient_errors, stats.permanent_errors, stats.timeouts) == (1, 1, 1)
    assert (stats.retries, stats.retry_successes, stats.breaker_opens) == (1, 1, 1)
    assert stats.errors_by_code == {ErrorCode.TIMEOUT: 1, ErrorCode.AUTH: 1}
    assert stats.errors_by_exception == {"TimeoutError": 1, "PermissionError": 1}
    assert stats.decisions == {Action.RETRY: 1, Action.ESCALATE: 1}


def test_folding_one_by_one_equals_folding_a_batch() -> None:
    events = [failed(at=n * 20.0) if n % 3 else succeeded(at=n * 20.0) for n in range(12)]
    one_by_one = None
    for event in events:
        one_by_one = FOLD.apply("search", one_by_one, event)
    assert one_by_one == fold(*events)


def test_a_failed_outcome_repeats_a_reported_failure_and_is_not_counted() -> None:
    report = OutcomeReport(
        turn_id="t", call_id="c", tool="search", attempt=1, outcome=Outcome.FAILURE
    )
    assert FOLD.keys(TraceEvent(1, START, OutcomeEvent(report=report))) == ()


def test_exception_types_beyond_the_cap_count_together() -> None:
    stats = fold(*(failed(exception=f"Error{n}") for n in range(MAX_EXCEPTION_TYPES + 5)))
    assert len(stats.errors_by_exception) == MAX_EXCEPTION_TYPES + 1
    assert stats.errors_by_exception[OTHER_EXCEPTIONS] == 5


def test_durations_give_the_mean_and_the_p95_as_prometheus_would() -> None:
    stats = fold(*(succeeded(seconds=0.2) for _ in range(95)), *(failed(4.0) for _ in range(5)))
    assert stats.durations.count == 100
    assert stats.durations.mean == pytest.approx((95 * 0.2 + 5 * 4.0) / 100)
    # 95 in (0.1, 0.25]: the 95th of 100 is at the bucket's upper bound.
    assert stats.durations.quantile(0.95) == pytest.approx(0.25)
    assert stats.durations.quantile(0.99) == pytest.approx(2.5 + 2.5 * 4 / 5)
    assert Durations().quantile(0.95) == 0.0
    unmeasured = fold(succeeded(seconds=0.0))
    assert unmeasured.durations.count == 0


def test_recent_figures_cover_whole_minutes_of_the_last_hour() -> None:
    stats = fold(failed(at=0), succeeded(at=30), failed(at=600), failed(at=3700))
    assert [minute.executions for minute in stats.recent] == [1, 1]  # the first minute aged out
    assert stats.since(START + timedelta(seconds=3700 - 300)).executions == 1
    assert stats.since(START + timedelta(seconds=500)).errors == 2


def board(*events: TraceEvent, **limits: Any) -> ToolHealthBoard:
    state = Projections()
    state.tool_stats.load([("search", fold(*events))], complete=True)
    return ToolHealthBoard(state, ManifestSnapshot, AlertThresholds(**limits))


def test_alerts_flag_failure_rate_slowness_and_a_tripped_breaker() -> None:
    events = [succeeded(seconds=6.0) for _ in range(9)] + [failed(seconds=6.0)]
    health = board(*events).health("search", START + timedelta(seconds=60))
    assert [alert.kind for alert in health.alerts] == [AlertKind.FAILURE_RATE, AlertKind.SLOW]
    assert health.alerts[0].message == (
        "failure rate 10.0% over the last 5 min (1 of 10) is above 5.0%"
    )
    assert health.alerts[1].message == "mean duration 6.00 s over the last 5 min is above 5 s"
    calm = board(*events, failure_rate=0.2, mean_duration=10.0).health("search", START)
    assert calm.alerts == ()


def test_the_failure_rate_is_judged_only_with_enough_executions() -> None:
    health = board(failed(), failed()).health("search", START)
    assert health.recent_failure_rate == 1.0
    assert health.alerts == ()
    assert [
        a.kind for a in board(failed(), failed(), min_executions=2).health("search", START).alerts
    ] == [AlertKind.FAILURE_RATE]


def test_old_failures_leave_the_window() -> None:
    events = [failed() for _ in range(20)]
    assert board(*events).health("search", START + timedelta(minutes=4)).alerts
    assert not board(*events).health("search", START + timedelta(minutes=6)).alerts
