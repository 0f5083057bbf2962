"""Records through the msgspec codec: every event kind and state record round-trips, and
bodies written by errord 0.1's own codec still decode."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.model import (
    Action,
    CallKey,
    Classification,
    Consequence,
    Decision,
    ErrorClass,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    Refusal,
    RefusalKind,
    ToolFailure,
)
from errord.decide.model.events import (
    EventDetail,
    FailureEvent,
    OutcomeEvent,
    TraceEvent,
    TurnBegan,
)
from errord.state import codec
from errord.state.calls import CallState, ToolRecord
from errord.state.store.rows import event_of, event_row
from errord.state.turns import TurnState

texts = st.text(max_size=12)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | finite_floats | texts,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=8,
)
fixed_offsets = st.integers(-23 * 60, 23 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
"""Offsets in whole minutes: what RFC 3339 text can hold."""
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
    turn_id=texts,
    call_id=texts,
    tool=texts,
    attempt=st.integers(1, 10_000),
    error=tool_failures,
    arguments=st.dictionaries(texts, json_values, max_size=3),
    elapsed=finite_floats,
)
refusals = st.builds(
    Refusal,
    kind=st.sampled_from(RefusalKind),
    limit=finite_floats,
    spent=finite_floats,
    wait=finite_floats,
    attempt=st.integers(0, 10_000),
)
decisions = st.builds(
    Decision,
    decision_id=texts,
    turn_id=texts,
    call_id=texts,
    tool=texts,
    attempt=st.integers(1, 10_000),
    action=st.sampled_from(Action),
    classification=st.builds(
        Classification, st.sampled_from(ErrorClass), st.sampled_from(ErrorCode), texts
    ),
    reason=texts,
    llm_message=texts,
    user_message=texts,
    technical_message=texts,
    decided_at=aware_times,
    delay=finite_floats,
    next_attempt_timeout=st.none() | finite_floats,
    alternative_tool=st.none() | texts,
    attempts_left=st.integers(0, 10_000),
    default_policy=st.booleans(),
    refusal=st.none() | refusals,
    consequences=st.lists(
        st.builds(Consequence, call_id=texts, action=st.sampled_from(Action), reason=texts),
        max_size=2,
    ).map(tuple),
)
outcome_reports = st.builds(
    OutcomeReport,
    turn_id=texts,
    call_id=texts,
    tool=texts,
    attempt=st.integers(1, 10_000),
    outcome=st.sampled_from(Outcome),
    duration=finite_floats,
    decision_id=texts,
)
event_details: st.SearchStrategy[EventDetail] = st.one_of(
    st.builds(FailureEvent, report=failure_reports, decision=decisions),
    st.builds(OutcomeEvent, report=outcome_reports),
    st.builds(TurnBegan, turn_id=texts, implicit=st.booleans()),
)
tool_records = st.builds(
    ToolRecord,
    failed=st.frozensets(st.integers(1, 10_000), max_size=4).map(lambda s: tuple(sorted(s))),
    outcomes=st.dictionaries(st.integers(1, 10_000), st.sampled_from(Outcome), max_size=3),
    delay_granted=finite_floats,
    ran=finite_floats,
)
call_states = st.builds(CallState, tools=st.dictionaries(texts, tool_records, max_size=3))


@given(event_details)
def test_every_event_kind_survives_the_codec(detail: EventDetail) -> None:
    assert codec.decode_detail(codec.encode(detail)) == detail


@given(st.integers(1, 2**62), aware_times, event_details)
def test_every_event_kind_survives_its_database_row(
    sequence: int, time: datetime, detail: EventDetail
) -> None:
    event = TraceEvent(sequence, time, detail)
    row = event_row(event)
    assert event_of((row[0], row[4], row[5])) == event


@given(call_states)
def test_call_state_keeps_its_tuples_and_integer_keys(state: CallState) -> None:
    assert codec.decoder(CallState)(codec.encode(state)) == state


@given(aware_times, st.booleans())
def test_turn_state_survives_the_codec(began_at: datetime, implicit: bool) -> None:
    state = TurnState(began_at=began_at, implicit=implicit)
    assert codec.decoder(TurnState)(codec.encode(state)) == state


def test_keys_are_stored_as_json_arrays() -> None:
    assert codec.encode(CallKey("turn-1", "call-1")) == b'["turn-1","call-1"]'
    assert codec.encode(FAILURE.dedup_key) == b'["turn-1","call-1","flight_search",1]'
    assert codec.decoder(CallKey)(b'["turn-1","call-1"]') == CallKey("turn-1", "call-1")


def test_a_body_written_by_errord_0_1_decodes_to_the_same_event() -> None:
    assert codec.decode_detail(json.dumps(FAILURE_AS_DICT)) == FAILURE


def test_fields_equal_to_their_default_are_left_out() -> None:
    stored = json.loads(codec.encode(OutcomeEvent(report=OUTCOME)))
    assert stored == {
        "kind": "outcome",
        "report": {
            "turn_id": "turn-1",
            "call_id": "call-1",
            "tool": "search",
            "attempt": 2,
            "outcome": "SUCCESS",
            "duration": 0.5,
        },
    }


def test_datetimes_are_stored_as_rfc_3339_text_with_their_offset() -> None:
    local = datetime(2026, 1, 1, 3, 0, tzinfo=timezone(timedelta(hours=2)))
    assert codec.time_to_text(local) == "2026-01-01T03:00:00+02:00"
    assert codec.time_to_text(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00Z"
    assert codec.time_from_text("2026-01-01T03:00:00+02:00") == local


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        codec.time_to_text(datetime(2026, 1, 1))


def test_missing_fields_with_defaults_decode_to_the_default_and_unknown_ones_are_ignored() -> None:
    stored = json.loads(json.dumps(FAILURE_AS_DICT))
    del stored["report"]["error"]["retry_at"]
    del stored["decision"]["alternative_tool"]
    stored["decision"]["field_from_a_newer_errord"] = 1
    decoded = codec.decode_detail(json.dumps(stored))
    assert isinstance(decoded, FailureEvent)
    assert decoded.report.error.retry_at is None
    assert decoded.decision.alternative_tool is None
    assert decoded.decision.refusal is None


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="'memory_episode'"):
        codec.decode_detail(b'{"kind": "memory_episode"}')


OUTCOME = OutcomeReport(
    turn_id="turn-1",
    call_id="call-1",
    tool="search",
    attempt=2,
    outcome=Outcome.SUCCESS,
    duration=0.5,
)

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
