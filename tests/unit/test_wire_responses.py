"""Decisions are answered with the same messages, field for field, whether built in the
response (ReportFailure, each answer of ReportFailures) or apart; times and durations
convert exactly as protobuf's own conversions and timedelta's rounding do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, json_format, timestamp_pb2
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.model import (
    Action,
    BreakerPhase,
    BreakerState,
    Classification,
    Consequence,
    Correction,
    Decision,
    ErrorClass,
    ErrorCode,
    FailureReport,
    ParameterProblem,
    Probe,
    Recalled,
    ToolFailure,
)
from errord.decide.model.events import FailureEvent, TraceEvent
from errord.wire.bounds import Violations
from errord.wire.requests import tool_failure_from_proto
from errord.wire.responses import (
    decision_to_proto,
    duration,
    report_failure_response,
    timestamp,
    tool_failure_to_proto,
)
from errord.wire.turn_responses import trace_event_to_proto

AT = datetime(2026, 1, 1, 12, 0, 0, 250_000, tzinfo=UTC)
RETRY = Decision(
    decision_id="d-1",
    turn_id="turn-1",
    call_id="call_1",
    tool="search",
    attempt=2,
    action=Action.RETRY,
    classification=Classification(
        error_class=ErrorClass.TRANSIENT, code=ErrorCode.TIMEOUT, rule="default:code:TIMEOUT"
    ),
    reason="why",
    llm_message="to the model",
    user_message="to the user",
    technical_message="for logs",
    decided_at=AT,
    delay=0.0,
    next_attempt_timeout=30.0,
    attempts_left=3,
    breaker=BreakerState(
        phase=BreakerPhase.HALF_OPEN,
        failures=5,
        opened_at=AT - timedelta(seconds=60),
        half_opens_at=AT - timedelta(seconds=1),
        opens=2,
        probe=Probe(
            turn_id="turn-1",
            call_id="call_1",
            attempt=3,
            until=AT + timedelta(seconds=31, microseconds=5),
        ),
    ),
    probe=True,
    recalled=(
        Recalled(recovery="RETRY", succeeded=3.0, failed=1.0, unknown=0.5),
        Recalled(recovery="USE_ALTERNATIVE:other", succeeded=0.0, failed=0.0, unknown=1.0),
    ),
)
"""A retry at once (its delay of zero is sent), as the half-open breaker's probe."""
RETRY_ANSWERED = {
    "decisionId": "d-1",
    "action": "RECOVERY_ACTION_RETRY",
    "delay": "0s",
    "nextAttemptTimeout": "30s",
    "classification": {
        "errorClass": "ERROR_CLASS_TRANSIENT",
        "code": "ERROR_CODE_TIMEOUT",
        "rule": "default:code:TIMEOUT",
        "fault": "FAULT_BACKEND",
    },
    "attemptsLeft": 3,
    "reason": "why",
    "llmMessage": "to the model",
    "userMessage": "to the user",
    "turnId": "turn-1",
    "callId": "call_1",
    "tool": "search",
    "attempt": 2,
    "decidedAt": "2026-01-01T12:00:00.250Z",
    "technicalMessage": "for logs",
    "breaker": {
        "phase": "BREAKER_PHASE_HALF_OPEN",
        "consecutiveFailures": 5,
        "openedAt": "2026-01-01T11:59:00.250Z",
        "halfOpensAt": "2026-01-01T11:59:59.250Z",
        "opens": 2,
        "probeInFlight": True,
        "probeUntil": "2026-01-01T12:00:31.250005Z",
        "breakLength": "59s",
    },
    "probe": True,
    "recalled": [
        {
            "recovery": "RETRY",
            "succeeded": 3.0,
            "failed": 1.0,
            "unknown": 0.5,
            "successRate": 0.75,
        },
        {"recovery": "USE_ALTERNATIVE:other", "unknown": 1.0},
    ],
}
DEFAULT = Decision(
    decision_id="d-2",
    turn_id="turn-1",
    call_id="call_2",
    tool="weather",
    attempt=1,
    action=Action.USE_DEFAULT,
    classification=Classification(
        error_class=ErrorClass.PERMANENT,
        code=ErrorCode.INVALID_INPUT,
        rule="manifest:weather:classification[0]",
    ),
    reason="why",
    llm_message="to the model",
    user_message="to the user",
    technical_message="for logs",
    decided_at=AT,
    alternative_tool="forecast",
    default_policy=True,
    default_value=None,
    breaker=BreakerState(),
    correction=Correction(
        kind="missing_parameter",
        message="city is required",
        parameter="city",
        required_parameters=("city", "units"),
        example={"city": "Paris", "units": "metric"},
        retry_hint="add city",
        problems=(
            ParameterProblem(kind="missing_parameter", parameter="city", message="required"),
        ),
        known_tools=("weather", "forecast"),
        corrections_left=0,
    ),
    consequences=(
        Consequence(
            call_id="call_3",
            action=Action.USE_DEFAULT,
            reason="depends on call_2",
            tool="map",
            blocked_by="call_2",
            default_value={"tiles": []},
        ),
        Consequence(call_id="call_4", action=Action.SKIP, tool="ads", blocked_by="call_2"),
    ),
)
"""A null default standing in (sent as a null Value), a closed breaker with every count at
zero and a correction with none left (both sent all the same), what it means for others."""
DEFAULT_ANSWERED = {
    "decisionId": "d-2",
    "action": "RECOVERY_ACTION_USE_DEFAULT",
    "alternativeTool": "forecast",
    "classification": {
        "errorClass": "ERROR_CLASS_PERMANENT",
        "code": "ERROR_CODE_INVALID_INPUT",
        "rule": "manifest:weather:classification[0]",
        "fault": "FAULT_ARGUMENTS",
    },
    "reason": "why",
    "llmMessage": "to the model",
    "userMessage": "to the user",
    "turnId": "turn-1",
    "callId": "call_2",
    "tool": "weather",
    "attempt": 1,
    "decidedAt": "2026-01-01T12:00:00.250Z",
    "defaultPolicy": True,
    "technicalMessage": "for logs",
    "breaker": {"phase": "BREAKER_PHASE_CLOSED"},
    "defaultValue": None,
    "consequences": [
        {
            "callId": "call_3",
            "tool": "map",
            "action": "RECOVERY_ACTION_USE_DEFAULT",
            "reason": "depends on call_2",
            "blockedBy": "call_2",
            "defaultValue": {"tiles": []},
        },
        {
            "callId": "call_4",
            "tool": "ads",
            "action": "RECOVERY_ACTION_SKIP",
            "blockedBy": "call_2",
        },
    ],
    "correction": {
        "type": "missing_parameter",
        "message": "city is required",
        "parameter": "city",
        "requiredParameters": ["city", "units"],
        "example": {"city": "Paris", "units": "metric"},
        "retryHint": "add city",
        "problems": [{"type": "missing_parameter", "parameter": "city", "message": "required"}],
        "availableTools": ["weather", "forecast"],
    },
}


@pytest.mark.parametrize(
    ("decision", "answered"), [(RETRY, RETRY_ANSWERED), (DEFAULT, DEFAULT_ANSWERED)]
)
def test_a_decision_is_answered_with_every_field_it_has(
    decision: Decision, answered: dict[str, Any]
) -> None:
    response = report_failure_response(decision, replayed=True)
    assert json_format.MessageToDict(response) == {"decision": answered, "replayed": True}
    assert report_failure_response(decision, replayed=False).HasField("decision")


@pytest.mark.parametrize("decision", [RETRY, DEFAULT])
def test_a_decision_built_in_its_response_is_the_one_built_apart(decision: Decision) -> None:
    apart = pb.ReportFailureResponse(decision=decision_to_proto(decision), replayed=True)
    batch = pb.ReportFailuresResponse()
    report_failure_response(decision, True, batch.results.add().answer)
    # Deterministic: a map (the example's Struct) is otherwise sent in any order.
    assert report_failure_response(decision, True).SerializeToString(deterministic=True) == (
        apart.SerializeToString(deterministic=True)
    )
    assert batch.results[0].answer == apart


def test_a_failure_event_sends_its_arguments_even_when_there_are_none() -> None:
    report = FailureReport(
        turn_id="turn-1", call_id="call_1", tool="search", attempt=2, error=ToolFailure()
    )
    event = trace_event_to_proto(TraceEvent(7, AT, FailureEvent(report=report, decision=RETRY)))
    assert event.failure.HasField("arguments")
    assert event.failure.HasField("error")
    assert event.failure.elapsed == duration_pb2.Duration()
    assert event.failure.HasField("elapsed")
    assert json_format.MessageToDict(event.failure.decision) == RETRY_ANSWERED


def timedelta_duration(seconds: float) -> tuple[int, int]:
    """What a Duration was made of before: timedelta's rounding to the microsecond."""
    exact = timedelta(seconds=seconds)
    return exact.days * 86_400 + exact.seconds, exact.microseconds * 1000


@given(
    st.floats(min_value=-1e9, max_value=1e9)
    | st.integers(-(10**9), 10**9).map(lambda micros: micros / 1e6)
    | st.integers(-(10**15), 10**15).map(lambda halves: (halves + 0.5) / 1e6)
)
def test_a_duration_is_rounded_to_the_microsecond_as_timedelta_rounds(seconds: float) -> None:
    """Halfway cases too: half to even, as timedelta."""
    converted = duration(seconds)
    assert (converted.seconds, converted.nanos) == timedelta_duration(seconds)


@given(st.datetimes(timezones=st.just(UTC)))
def test_a_timestamp_is_what_protobuf_makes_of_the_datetime(moment: datetime) -> None:
    expected = timestamp_pb2.Timestamp()
    expected.FromDatetime(moment)
    assert timestamp(moment) == expected


@given(
    st.builds(
        ToolFailure,
        code=st.none() | st.sampled_from(ErrorCode),
        http_status=st.none() | st.integers(100, 599),
        exception_type=st.text(max_size=10),
        message=st.text(max_size=20),
        retry_after=st.none() | st.integers(0, 10**9).map(lambda quarters: quarters / 4),
        partial_result=st.none() | st.dictionaries(st.text(max_size=4), st.text(max_size=4)),
    )
    | st.builds(
        ToolFailure,
        code=st.sampled_from(ErrorCode),
        retry_at=st.datetimes(timezones=st.just(UTC)).map(lambda at: at.replace(microsecond=0)),
    )
)
def test_a_tool_failure_is_sent_as_it_is_read_back(failure: ToolFailure) -> None:
    """Delays in quarter seconds: the float seconds read back are then exactly those sent."""
    check = Violations()
    assert tool_failure_from_proto(tool_failure_to_proto(failure), check) == failure
    assert check.found == []
