"""A failure report is converted by quick checks first (plain_failure_report), and by the
careful ones (Violations) only when a field needs them: the quick checks vouch only for
requests the careful ones pass unchanged, and a request they are wary of is still
converted, or refused naming each field, as before."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from errord.decide.model import ErrorCode, FailureReport, ToolFailure
from errord.errors import FieldViolation, InvalidRequest
from errord.wire.bounds import NotPlain, Violations
from errord.wire.requests import (
    _failure_report,
    failure_report_from_proto,
    failure_reports_from_proto,
    plain_failure_report,
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)
ODD_JSON = st.recursive(
    st.floats(),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
)
"""JSON values with NaN or the infinities, which plain JSON cannot hold."""


def struct(members: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(members)
    return message


def value(plain: Any) -> struct_pb2.Value:
    return struct({"v": plain}).fields["v"]


def durations(seconds: st.SearchStrategy[int], nanos: st.SearchStrategy[int]) -> Any:
    return st.builds(duration_pb2.Duration, seconds=seconds, nanos=nanos)


PLAIN_ID = st.from_regex(r"[\w.:-]{1,12}", fullmatch=True) | st.text(
    st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12
)
"""Identifiers as they come, and any text at all (a few with whitespace or control characters)."""
ODD_ID = st.sampled_from(
    ["", " ", "  x ", "a\tb", "\x7f", "a\u00a0b", "\u200b", "x" * 512, "x" * 513]
)
"""Blank ones, control characters, other whitespace, the length bound."""
PLAIN_TEXT = st.text(max_size=20)
ODD_TEXT = st.sampled_from(["x" * 512, "x" * 513, "x" * 16_384, "x" * 16_385])
PLAIN_DURATION = durations(st.integers(0, 10**6), st.integers(0, 999_999_999))
ODD_DURATION = durations(
    st.sampled_from([-1, 0, 1, 315_576_000_000, 315_576_000_001, -315_576_000_001]),
    st.sampled_from([-1, 0, 1, 999_999_999, 1_000_000_000, -(10**9)]),
)
TIMESTAMPS = st.builds(
    timestamp_pb2.Timestamp,
    seconds=st.sampled_from([-62_135_596_801, -62_135_596_800, 0, 1_767_225_600, 253_402_300_800]),
    nanos=st.sampled_from([-1, 0, 999_999_999, 1_000_000_000]),
)
ARGUMENTS = st.dictionaries(st.text(max_size=4), JSON, max_size=3)

ERROR_FIELDS = {
    "code": (st.integers(0, 13), st.integers(14, 2**31 - 1)),
    "http_status": (st.sampled_from([0, 100, 429, 599]), st.sampled_from([1, 99, 600, 2**32 - 1])),
    "exception_type": (PLAIN_TEXT, ODD_TEXT),
    "message": (PLAIN_TEXT, ODD_TEXT),
    "retry_after": (st.none() | PLAIN_DURATION, ODD_DURATION),
    "retry_at": (st.none(), TIMESTAMPS),
    "partial_result": (st.none() | JSON.map(value), ODD_JSON.map(value)),
    "api_message": (PLAIN_TEXT, ODD_TEXT),
    "api_parameter": (PLAIN_TEXT, ODD_TEXT),
    "api_code": (PLAIN_TEXT, ODD_TEXT),
}
REQUEST_FIELDS = {
    "turn_id": (PLAIN_ID, ODD_ID),
    "call_id": (PLAIN_ID, ODD_ID),
    "tool": (PLAIN_ID, ODD_ID),
    "attempt": (st.integers(1, 10_000), st.sampled_from([-1, 0, 10_001])),
    "arguments": (
        st.none() | ARGUMENTS.map(struct),
        st.dictionaries(st.text(max_size=2), ODD_JSON).map(struct),
    ),
    "elapsed": (st.none() | PLAIN_DURATION, ODD_DURATION),
    "user_id": (st.just("") | PLAIN_ID, ODD_ID),
    "session_id": (st.just("") | PLAIN_ID, ODD_ID),
    "scope": (st.just("") | PLAIN_ID, ODD_ID),
    "tool_declaration": (
        st.none()
        | st.builds(
            pb.ToolDeclaration,
            parameters=st.none() | ARGUMENTS.map(struct),
            timeout=st.none() | PLAIN_DURATION,
        ),
        st.builds(
            pb.ToolDeclaration,
            parameters=st.dictionaries(st.text(max_size=2), ODD_JSON).map(struct),
            timeout=ODD_DURATION,
        ),
    ),
}
"""Each field's (plain, odd) values: a random request has at most two odd fields."""


def set_fields(message: Any, fields: dict[str, Any]) -> None:
    """Set ``fields`` of ``message`` (None: left unset)."""
    for name, given_value in fields.items():
        if given_value is None:
            continue
        if hasattr(given_value, "DESCRIPTOR"):
            getattr(message, name).CopyFrom(given_value)
        else:
            setattr(message, name, given_value)


@st.composite
def reports(draw: st.DrawFn) -> pb.ReportFailureRequest:
    """A ReportFailureRequest with every field plain but at most two (of it or its error)."""
    named = {**REQUEST_FIELDS, **{f"error.{name}": each for name, each in ERROR_FIELDS.items()}}
    odd = draw(st.sets(st.sampled_from(sorted(named)), max_size=2))
    drawn = {name: draw(each[name in odd]) for name, each in named.items()}
    request = pb.ReportFailureRequest()
    set_fields(request, {k: v for k, v in drawn.items() if "." not in k})
    request.error.SetInParent()
    set_fields(request.error, {k[6:]: v for k, v in drawn.items() if k.startswith("error.")})
    return request


REQUESTS = reports()


def test_the_random_requests_set_every_field_of_a_report() -> None:
    """A field added to the proto needs its quick check, and values here to test it."""
    assert {*REQUEST_FIELDS, "error"} == set(pb.ReportFailureRequest.DESCRIPTOR.fields_by_name)
    assert set(ERROR_FIELDS) == set(pb.ToolError.DESCRIPTOR.fields_by_name)


@settings(max_examples=300)
@given(REQUESTS)
def test_the_quick_checks_pass_only_what_the_careful_ones_pass_unchanged(
    request: pb.ReportFailureRequest,
) -> None:
    check = Violations()
    careful = _failure_report(request, check)
    try:
        quick = plain_failure_report(request)
    except NotPlain:
        return
    assert check.found == []
    assert quick == careful


@settings(max_examples=300)
@given(REQUESTS)
def test_a_report_is_converted_or_refused_as_the_careful_checks_alone_would(
    request: pb.ReportFailureRequest,
) -> None:
    check = Violations()
    careful = _failure_report(request, check)
    if check.found:
        with pytest.raises(InvalidRequest) as refused:
            failure_report_from_proto(request)
        assert list(refused.value.violations) == check.found
    else:
        assert failure_report_from_proto(request) == careful


def full_request() -> pb.ReportFailureRequest:
    """A report with every field set, plainly valid."""
    request = pb.ReportFailureRequest(
        turn_id="turn-7",
        call_id="call_1",
        tool="flight_search",
        attempt=2,
        error=pb.ToolError(
            code=pb.ERROR_CODE_RATE_LIMITED,
            http_status=429,
            exception_type="HTTPError",
            message="slow down",
            retry_after=duration_pb2.Duration(seconds=2, nanos=500_000_000),
        ),
        elapsed=duration_pb2.Duration(seconds=1),
        user_id="user-1",
        session_id="session-1",
    )
    request.arguments.update({"origin": "SFO", "passengers": 2, "flex": [True, None, {"a": "b"}]})
    request.error.partial_result.CopyFrom(value({"found": 3}))
    return request


def test_a_plainly_valid_report_takes_the_quick_path_with_every_field() -> None:
    assert plain_failure_report(full_request()) == FailureReport(
        turn_id="turn-7",
        call_id="call_1",
        tool="flight_search",
        attempt=2,
        error=ToolFailure(
            code=ErrorCode.RATE_LIMITED,
            http_status=429,
            exception_type="HTTPError",
            message="slow down",
            retry_after=2.5,
            partial_result={"found": 3.0},
        ),
        arguments={"origin": "SFO", "passengers": 2.0, "flex": [True, None, {"a": "b"}]},
        elapsed=1.0,
        user_id="user-1",
        session_id="session-1",
    )


def test_a_retry_time_takes_the_quick_path_too() -> None:
    request = full_request()
    request.error.retry_at.CopyFrom(timestamp_pb2.Timestamp(seconds=1_767_225_600))
    report = plain_failure_report(request)
    assert report.error.retry_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert report.error.retry_after is None


def test_a_valid_identifier_the_quick_checks_are_wary_of_is_still_accepted() -> None:
    """A no-break space is not printable, so only the careful checks pass it."""
    request = full_request()
    request.tool = "flight\u00a0search"
    with pytest.raises(NotPlain):
        plain_failure_report(request)
    assert failure_report_from_proto(request).tool == "flight\u00a0search"


def test_a_batch_of_plain_reports_is_each_report_as_alone() -> None:
    failures = [full_request(), full_request()]
    failures[1].call_id = "call_2"
    converted = failure_reports_from_proto(pb.ReportFailuresRequest(failures=failures))
    assert converted == [failure_report_from_proto(failure) for failure in failures]


def test_a_batch_with_a_bad_report_names_its_fields_by_index() -> None:
    failures = [full_request(), full_request(), full_request()]
    failures[1].tool = "a\nb"
    failures[2].attempt = 0
    with pytest.raises(InvalidRequest) as refused:
        failure_reports_from_proto(pb.ReportFailuresRequest(failures=failures))
    assert refused.value.violations == (
        FieldViolation(
            "failures[1].tool", "must not contain control characters (U+0000 to U+001F, U+007F)"
        ),
        FieldViolation(
            "failures[2].attempt", "must be from 1 to 10000 (attempts count from 1), got 0"
        ),
    )
