"""Classification per seed 004 section 1, with 003's message patterns and manifest overrides."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.classify import DEFAULT_CLASSES, classify
from errord.decide.model import ErrorClass, ErrorCode, ToolFailure
from errord.manifests.model import ClassificationRule

T, P = ErrorClass.TRANSIENT, ErrorClass.PERMANENT


@pytest.mark.parametrize(
    ("failure", "error_class", "code", "rule"),
    [
        # seed 004 1.1: transient
        (
            ToolFailure(message="Connection timeout after 30s"),
            T,
            ErrorCode.TIMEOUT,
            "default:message:timeout",
        ),
        (ToolFailure(code=ErrorCode.TIMEOUT), T, ErrorCode.TIMEOUT, "default:code:TIMEOUT"),
        (
            ToolFailure(exception_type="ConnectionResetError"),
            T,
            ErrorCode.CONNECTION,
            "default:exception_type:connection",
        ),
        (
            ToolFailure(message="connection reset by peer"),
            T,
            ErrorCode.CONNECTION,
            "default:message:connection",
        ),
        (ToolFailure(http_status=429), T, ErrorCode.RATE_LIMITED, "default:http_status:429"),
        (ToolFailure(http_status=503), T, ErrorCode.UNAVAILABLE, "default:http_status:503"),
        (ToolFailure(message="boom"), T, ErrorCode.UNKNOWN, "default:unknown"),
        (ToolFailure(code=ErrorCode.UNKNOWN), T, ErrorCode.UNKNOWN, "default:unknown"),
        (ToolFailure(http_status=500), T, ErrorCode.UNKNOWN, "default:http_status:500"),
        # seed 004 1.2: permanent
        (
            ToolFailure(message="Invalid airport code: XYZ"),
            P,
            ErrorCode.INVALID_INPUT,
            "default:message:invalid_input",
        ),
        (
            ToolFailure(code=ErrorCode.INVALID_INPUT, message="Invalid airport code: XYZ"),
            P,
            ErrorCode.INVALID_INPUT,
            "default:code:INVALID_INPUT",
        ),
        (ToolFailure(http_status=400), P, ErrorCode.INVALID_INPUT, "default:http_status:400"),
        (ToolFailure(http_status=401), P, ErrorCode.AUTH, "default:http_status:401"),
        (ToolFailure(http_status=403), P, ErrorCode.AUTH, "default:http_status:403"),
        (ToolFailure(http_status=404), P, ErrorCode.NOT_FOUND, "default:http_status:404"),
        (
            ToolFailure(code=ErrorCode.UNSUPPORTED),
            P,
            ErrorCode.UNSUPPORTED,
            "default:code:UNSUPPORTED",
        ),
        (
            ToolFailure(code=ErrorCode.TOOL_NOT_FOUND),
            P,
            ErrorCode.TOOL_NOT_FOUND,
            "default:code:TOOL_NOT_FOUND",
        ),
        (
            ToolFailure(code=ErrorCode.SCHEMA_VIOLATION),
            P,
            ErrorCode.SCHEMA_VIOLATION,
            "default:code:SCHEMA_VIOLATION",
        ),
        (
            ToolFailure(exception_type="ValidationError"),
            P,
            ErrorCode.INVALID_INPUT,
            "default:exception_type:validation",
        ),
        # seed 003: message patterns for auth and rate limits
        (ToolFailure(message="Authentication failed"), P, ErrorCode.AUTH, "default:message:auth"),
        (ToolFailure(message="401 Unauthorized"), P, ErrorCode.AUTH, "default:message:auth"),
        (ToolFailure(message="invalid API key"), P, ErrorCode.AUTH, "default:message:auth"),
        (
            ToolFailure(message="Rate limit exceeded"),
            T,
            ErrorCode.RATE_LIMITED,
            "default:message:rate_limit",
        ),
        (
            ToolFailure(message="Too Many Requests"),
            T,
            ErrorCode.RATE_LIMITED,
            "default:message:rate_limit",
        ),
        (
            ToolFailure(message="HTTP 429 (check api key quota)"),
            T,
            ErrorCode.RATE_LIMITED,
            "default:message:rate_limit",
        ),
    ],
)
def test_default_classification_follows_the_seeds(
    failure: ToolFailure, error_class: ErrorClass, code: ErrorCode, rule: str
) -> None:
    verdict = classify(failure)
    assert (verdict.error_class, verdict.code, verdict.rule) == (error_class, code, rule)


def test_an_explicit_code_wins_over_status_and_message() -> None:
    failure = ToolFailure(code=ErrorCode.TIMEOUT, http_status=401, message="unauthorized")
    assert classify(failure).code is ErrorCode.TIMEOUT


def test_http_status_wins_over_the_message() -> None:
    assert classify(ToolFailure(http_status=404, message="timed out")).code is ErrorCode.NOT_FOUND


def test_manifest_override_treats_503_as_permanent_and_names_its_rule() -> None:
    rules = (ClassificationRule(P, http_status=503),)
    verdict = classify(ToolFailure(http_status=503), rules, tool="flight_search")
    assert verdict.error_class is P
    assert verdict.code is ErrorCode.UNAVAILABLE
    assert verdict.rule == "manifest:flight_search:classification[0]"


def test_manifest_rules_match_on_every_condition_and_the_first_match_wins() -> None:
    rules = (
        ClassificationRule(T, exception_type="QuotaError", message=re.compile("daily")),
        ClassificationRule(P, message=re.compile("(?i)quota")),
    )
    hourly = ToolFailure(exception_type="QuotaError", message="Quota exceeded (hourly)")
    daily = ToolFailure(exception_type="QuotaError", message="Quota exceeded (daily)")
    assert classify(hourly, rules, "t").rule == "manifest:t:classification[1]"
    assert classify(hourly, rules, "t").error_class is P
    assert classify(daily, rules, "t").rule == "manifest:t:classification[0]"
    assert classify(daily, rules, "t").error_class is T


def test_a_rule_can_match_the_normalized_code() -> None:
    rules = (ClassificationRule(P, code=ErrorCode.TIMEOUT),)
    verdict = classify(ToolFailure(message="request timed out"), rules, "slow")
    assert (verdict.error_class, verdict.rule) == (P, "manifest:slow:classification[0]")


def test_non_matching_rules_leave_the_default() -> None:
    rules = (ClassificationRule(P, http_status=503),)
    assert classify(ToolFailure(http_status=429), rules, "t").rule == "default:http_status:429"


@given(
    code=st.none() | st.sampled_from(ErrorCode),
    http_status=st.none() | st.integers(100, 599),
    exception_type=st.text(max_size=30),
    message=st.text(max_size=80),
)
def test_every_failure_gets_a_class_consistent_with_its_code(
    code: ErrorCode | None, http_status: int | None, exception_type: str, message: str
) -> None:
    failure = ToolFailure(code, http_status, exception_type, message)
    verdict = classify(failure)
    assert verdict.error_class is DEFAULT_CLASSES[verdict.code]
    assert verdict.rule.startswith("default:")
    if code not in (None, ErrorCode.UNKNOWN):
        assert verdict.code is code
