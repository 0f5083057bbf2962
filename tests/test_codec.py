"""The stored JSON shape of trace records, and that it loses nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.model import (
    Action,
    Classification,
    Decision,
    ErrorClass,
    ErrorCode,
    EventDetail,
    FailureEvent,
    FailureReport,
    Outcome,
    OutcomeEvent,
    OutcomeReport,
    ToolFailure,
)
from errord.state.codec import event_detail_from_dict, event_detail_to_dict

texts = st.text(max_size=12)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite_floats | texts,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=8,
)
fixed_offsets = st.builds(
    timezone, st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23))
)
aware_times = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=fixed_offsets
)
tool_failures = st.builds(
    ToolFailure,
    code=st.none() | st.sampled_from(ErrorCode),
    http_status=st.none() | st.integers(100, 599),
    exception_type=texts,
    message=texts,
    retry_after=st.none() | finite_floats,
    retry_at=st.none() | aware_times,
    partial_result=json_values,
)
failure_reports = st.builds(
    FailureReport,
    error=tool_failures,
    arguments=st.dictionaries(texts, json_values, max_size=3),
    elapsed=finite_floats,
)
decisions = st.builds(
    Decision,
    decided_at=aware_times,
    delay=finite_floats,
    next_attempt_timeout=st.none() | finite_floats,
    alternative_tool=st.none() | texts,
    attempts_left=st.integers(),
    default_policy=st.booleans(),
)
outcome_reports = st.builds(
    OutcomeReport, duration=finite_floats, decision_id=texts, outcome=st.sampled_from(Outcome)
)
event_details: st.SearchStrategy[EventDetail] = st.one_of(
    st.builds(FailureEvent, report=failure_reports, decision=decisions),
    st.builds(OutcomeEvent, report=outcome_reports),
)


def failure_decided_at(moment: datetime) -> FailureEvent:
    return replace(FAILURE, decision=replace(FAILURE.decision, decided_at=moment))


def through_json(detail: EventDetail) -> EventDetail:
    text = json.dumps(event_detail_to_dict(detail), allow_nan=False)
    return event_detail_from_dict(json.loads(text))


@given(event_details)
def test_any_event_detail_survives_a_json_round_trip(detail: EventDetail) -> None:
    assert through_json(detail) == detail


def test_failure_event_is_stored_in_this_exact_shape() -> None:
    assert event_detail_to_dict(FAILURE) == FAILURE_AS_DICT
    assert event_detail_from_dict(FAILURE_AS_DICT) == FAILURE


def test_outcome_event_is_stored_with_kind_outcome() -> None:
    outcome = OutcomeEvent(OutcomeReport("turn-1", "call-1", "search", 2, Outcome.SUCCESS, 0.5))

    assert event_detail_to_dict(outcome) == {
        "kind": "outcome",
        "report": {
            "turn_id": "turn-1",
            "call_id": "call-1",
            "tool": "search",
            "attempt": 2,
            "outcome": "SUCCESS",
            "duration": 0.5,
            "decision_id": "",
        },
    }
    assert through_json(outcome) == outcome


def test_datetimes_are_stored_as_utc_iso_text() -> None:
    local = datetime(2026, 1, 1, 3, 0, tzinfo=timezone(timedelta(hours=2)))

    assert (
        event_detail_to_dict(failure_decided_at(local))["decision"]["decided_at"]
        == "2026-01-01T01:00:00+00:00"
    )


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        event_detail_to_dict(failure_decided_at(datetime(2026, 1, 1)))


def test_missing_fields_with_defaults_decode_to_the_default() -> None:
    stored = json.loads(json.dumps(FAILURE_AS_DICT))
    del stored["report"]["error"]["retry_at"]
    del stored["decision"]["alternative_tool"]
    stored["decision"]["field_from_a_newer_errord"] = 1

    decoded = event_detail_from_dict(stored)

    assert isinstance(decoded, FailureEvent)
    assert decoded.report.error.retry_at is None
    assert decoded.decision.alternative_tool is None


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="'breaker'"):
        event_detail_from_dict({"kind": "breaker"})


FAILURE = FailureEvent(
    report=FailureReport(
        turn_id="turn-1",
        call_id="call-1",
        tool="flight_search",
        attempt=1,
        error=ToolFailure(
            code=ErrorCode.RATE_LIMITED,
            http_status=429,
            exception_type="HTTPError",
            message="too many requests",
            retry_after=1.5,
            retry_at=datetime(2026, 1, 1, 0, 0, 2, tzinfo=UTC),
            partial_result={"flights": [1, 2]},
        ),
        arguments={"from": "AMS", "passengers": 2},
        elapsed=0.25,
    ),
    decision=Decision(
        decision_id="d-1",
        turn_id="turn-1",
        call_id="call-1",
        tool="flight_search",
        attempt=1,
        action=Action.RETRY,
        classification=Classification(
            ErrorClass.TRANSIENT, ErrorCode.RATE_LIMITED, "default:code:RATE_LIMITED"
        ),
        reason="rate limited",
        llm_message="retrying",
        user_message="One moment.",
        technical_message="429 too many requests",
        decided_at=datetime(2026, 1, 1, tzinfo=UTC),
        delay=1.5,
        next_attempt_timeout=30.0,
        alternative_tool=None,
        attempts_left=4,
        default_policy=False,
    ),
)

FAILURE_AS_DICT = {
    "kind": "failure",
    "report": {
        "turn_id": "turn-1",
        "call_id": "call-1",
        "tool": "flight_search",
        "attempt": 1,
        "error": {
            "code": "RATE_LIMITED",
            "http_status": 429,
            "exception_type": "HTTPError",
            "message": "too many requests",
            "retry_after": 1.5,
            "retry_at": "2026-01-01T00:00:02+00:00",
            "partial_result": {"flights": [1, 2]},
        },
        "arguments": {"from": "AMS", "passengers": 2},
        "elapsed": 0.25,
    },
    "decision": {
        "decision_id": "d-1",
        "turn_id": "turn-1",
        "call_id": "call-1",
        "tool": "flight_search",
        "attempt": 1,
        "action": "RETRY",
        "classification": {
            "error_class": "TRANSIENT",
            "code": "RATE_LIMITED",
            "rule": "default:code:RATE_LIMITED",
        },
        "reason": "rate limited",
        "llm_message": "retrying",
        "user_message": "One moment.",
        "technical_message": "429 too many requests",
        "decided_at": "2026-01-01T00:00:00+00:00",
        "delay": 1.5,
        "next_attempt_timeout": 30.0,
        "alternative_tool": None,
        "attempts_left": 4,
        "default_policy": False,
    },
}
