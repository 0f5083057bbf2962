"""Classification: the defaults by status, message and exception type, and manifest overrides."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from errord.decide.classify import (
    DEFAULT_CLASSES,
    ERROR_CODE_TIER,
    EXCEPTION_TYPE_TIER,
    EXCEPTION_TYPES,
    OVERRIDING_PHRASES,
    OVERRIDING_TIER,
    PHRASE_TIER,
    PHRASES,
    SEARCHED_CHARS,
    WORD_TIER,
    WORDS,
    Tier,
    classify,
    http_status_code,
    rule,
    searchable,
    service_error_code,
)
from errord.decide.manifest import ClassificationRule
from errord.decide.model import Classification, ErrorClass, ErrorCode, ToolFailure
from tests.harness import corpus_failure, load_error_corpus

T, P = ErrorClass.TRANSIENT, ErrorClass.PERMANENT

CORPUS = load_error_corpus()

OWN_CLASSES = {
    rule.name: rule.error_class
    for rule in (*OVERRIDING_PHRASES, *PHRASES, *EXCEPTION_TYPES, *WORDS)
    if rule.error_class is not None
}
"""The rules that carry a class other than their code's default, by name."""


@pytest.mark.parametrize(
    ("failure", "error_class", "code", "rule"),
    [
        # transient
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
        # permanent
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
        # message patterns for auth and rate limits
        (ToolFailure(message="Authentication failed"), P, ErrorCode.AUTH, "default:message:auth"),
        (
            ToolFailure(message="401 Unauthorized"),
            P,
            ErrorCode.AUTH,
            "default:message:http_status:401",
        ),
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
def test_default_classification_of_common_failures(
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
    # A rule may carry its own class (an exhausted quota is RATE_LIMITED but permanent), so
    # the class is the code's default unless the deciding rule carries one.
    assert verdict.error_class is OWN_CLASSES.get(
        verdict.rule.rpartition(":")[2], DEFAULT_CLASSES[verdict.code]
    )
    assert verdict.rule.startswith("default:")
    if code not in (None, ErrorCode.UNKNOWN):
        assert verdict.code is code


@pytest.mark.parametrize(
    "message",
    [
        "No query provided",
        "The 'query' parameter is required for document search",
        "Parameter 'query' must be str, got int",
        "Parameter 'query' cannot be empty",
        "Invalid value for parameter timeout",
    ],
)
def test_parameter_errors_without_a_code_are_invalid_input(message: str) -> None:
    """They came out UNKNOWN (transient), and the last one TIMEOUT: the model must fix its
    call instead of retrying it."""
    verdict = classify(ToolFailure(message=message))
    assert (verdict.code, verdict.error_class, verdict.rule) == (
        ErrorCode.INVALID_INPUT,
        P,
        "default:message:invalid_parameter",
    )


@pytest.mark.parametrize(
    "message",
    [
        "Tool 'foo' not found",
        "Unknown tool: foo",
        "No tool named 'foo'",
        "tool foo is not available",
        "tool foo is not registered",
        "Error: foo is not a valid tool, try one of [bar, baz].",
    ],
)
def test_a_missing_tool_is_tool_not_found_not_a_missing_resource(message: str) -> None:
    verdict = classify(ToolFailure(message=message))
    assert (verdict.code, verdict.error_class, verdict.rule) == (
        ErrorCode.TOOL_NOT_FOUND,
        P,
        "default:message:tool_not_found",
    )


# Each case is a failure two rules could claim; the specific one must win. The id names
# the winner, then the rule it beats.
@pytest.mark.parametrize(
    ("failure", "code", "rule"),
    [
        pytest.param(
            ToolFailure(message="Invalid value for parameter timeout"),
            ErrorCode.INVALID_INPUT,
            "default:message:invalid_parameter",
            id="invalid_parameter-over-timeout",
        ),
        pytest.param(
            ToolFailure(message="Connection timeout after 30s"),
            ErrorCode.TIMEOUT,
            "default:message:timeout",
            id="timeout-over-connection",
        ),
        pytest.param(
            ToolFailure(message="429 Too Many Requests (api key abc123)"),
            ErrorCode.RATE_LIMITED,
            "default:message:rate_limit",
            id="rate_limit-over-auth",
        ),
        pytest.param(
            ToolFailure(
                http_status=403,
                message="API rate limit exceeded for 54.221.143.48. (But here's the good "
                "news: Authenticated requests get a higher rate limit.)",
            ),
            ErrorCode.RATE_LIMITED,
            "default:message:rate_limit",
            id="rate_limit-over-auth-and-http_403",
        ),
        pytest.param(
            ToolFailure(http_status=404, message="Tool 'foo' not found"),
            ErrorCode.TOOL_NOT_FOUND,
            "default:message:tool_not_found",
            id="tool_not_found-over-not_found-and-http_404",
        ),
        pytest.param(
            ToolFailure(http_status=401, message="401 Unauthorized: invalid API key"),
            ErrorCode.AUTH,
            "default:http_status:401",
            id="http_status-over-a-phrase-that-restates-it",
        ),
        pytest.param(
            ToolFailure(
                message="<_InactiveRpcError of RPC that terminated with: status = "
                'StatusCode.INVALID_ARGUMENT details = "API key not valid."'
            ),
            ErrorCode.AUTH,
            "default:message:auth",
            id="auth-over-grpc_status",
        ),
        pytest.param(
            ToolFailure(message="City not found"),
            ErrorCode.NOT_FOUND,
            "default:message:not_found",
            id="not_found-when-no-tool-is-named",
        ),
        pytest.param(
            ToolFailure(
                message="This model's maximum context length is 8192 tokens. However, your "
                "messages resulted in 8765 tokens. Please reduce the length of the messages."
            ),
            ErrorCode.INVALID_INPUT,
            "default:message:too_large",
            id="too_large-over-rate_limit-tokens",
        ),
        pytest.param(
            ToolFailure(
                http_status=429,
                message="Request too large for gpt-4o on tokens per min (TPM): Limit 30000, "
                "Requested 31538. The input or output tokens must be reduced. "
                "'code': 'rate_limit_exceeded'",
            ),
            ErrorCode.INVALID_INPUT,
            "default:message:too_large",
            id="too_large-over-rate_limit-and-http_429",
        ),
        pytest.param(
            ToolFailure(
                http_status=429,
                message="You exceeded your current quota, please check your plan and billing "
                "details. 'type': 'insufficient_quota'",
            ),
            ErrorCode.RATE_LIMITED,
            "default:message:quota_exhausted",
            id="quota_exhausted-over-rate_limit",
        ),
        pytest.param(
            ToolFailure(http_status=429, message="The engine is currently overloaded"),
            ErrorCode.UNAVAILABLE,
            "default:message:overloaded",
            id="overloaded-over-http_429",
        ),
        pytest.param(
            ToolFailure(
                exception_type="requests.exceptions.SSLError",
                message="[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable "
                "to get local issuer certificate (_ssl.c:1129)",
            ),
            ErrorCode.CONNECTION,
            "default:message:tls_setup",
            id="tls_setup-over-exception_type-connection",
        ),
        pytest.param(
            ToolFailure(exception_type="aiohttp.ClientConnectorCertificateError"),
            ErrorCode.CONNECTION,
            "default:exception_type:tls_setup",
            id="exception_type-tls_setup-over-connection",
        ),
        pytest.param(
            ToolFailure(message="getaddrinfo ENOTFOUND api.example.com"),
            ErrorCode.CONNECTION,
            "default:message:dns",
            id="dns-over-not_found",
        ),
        pytest.param(
            ToolFailure(exception_type="requests.exceptions.ConnectTimeout"),
            ErrorCode.TIMEOUT,
            "default:exception_type:timeout",
            id="exception_type-timeout-over-connection",
        ),
        pytest.param(
            ToolFailure(
                http_status=400,
                exception_type="botocore.errorfactory.ThrottlingException",
                message="Rate exceeded",
            ),
            ErrorCode.RATE_LIMITED,
            "default:message:rate_limit",
            id="rate_limit-over-http_400",
        ),
        pytest.param(
            ToolFailure(http_status=400, exception_type="ThrottlingException"),
            ErrorCode.RATE_LIMITED,
            "default:exception_type:rate_limit",
            id="exception_type-over-http_400",
        ),
        pytest.param(
            ToolFailure(
                http_status=400,
                exception_type="botocore.exceptions.ClientError",
                message="An error occurred (RequestTimeout) when calling the PutObject "
                "operation: Your socket connection to the server was not read from or "
                "written to within the timeout period.",
            ),
            ErrorCode.TIMEOUT,
            "default:error_code:timeout",
            id="quoted_error_code-over-http_400",
        ),
        pytest.param(
            ToolFailure(message="UNIMPLEMENTED: Method not found!"),
            ErrorCode.UNSUPPORTED,
            "default:grpc_status:UNIMPLEMENTED",
            id="grpc_status-over-not_found",
        ),
        pytest.param(
            ToolFailure(
                message="status = StatusCode.UNAVAILABLE details = "
                '"failed to connect to all addresses; last error: UNKNOWN"'
            ),
            ErrorCode.UNAVAILABLE,
            "default:grpc_status:UNAVAILABLE",
            id="first-grpc_status-over-later-UNKNOWN-and-connection",
        ),
        pytest.param(
            ToolFailure(message="<head><title>504 Gateway Time-out</title></head>"),
            ErrorCode.TIMEOUT,
            "default:message:http_status:504",
            id="quoted_http_status-over-timeout-and-unavailable-words",
        ),
        pytest.param(
            ToolFailure(
                message='Bad gateway. {"error":{"code":502,"message":"Bad gateway.",'
                '"param":null,"type":"cf_bad_gateway"}}'
            ),
            ErrorCode.UNAVAILABLE,
            "default:message:http_status:502",
            id="quoted_http_status-over-invalid_parameter",
        ),
        pytest.param(
            ToolFailure(http_status=404, message="HTTP 503"),
            ErrorCode.NOT_FOUND,
            "default:http_status:404",
            id="http_status-over-quoted_http_status",
        ),
        pytest.param(
            ToolFailure(http_status=403, message="Error code: 429 - invalid api key"),
            ErrorCode.RATE_LIMITED,
            "default:message:rate_limit",
            id="quoted_429-over-auth-and-http_403",
        ),
        pytest.param(
            ToolFailure(message="Additional properties are not allowed ('x' was unexpected)"),
            ErrorCode.INVALID_INPUT,
            "default:message:invalid_parameter",
            id="invalid_parameter-over-unsupported",
        ),
        pytest.param(
            ToolFailure(message="HTTPSConnectionPool: Read timed out. (read timeout=30)"),
            ErrorCode.TIMEOUT,
            "default:message:timeout",
            id="timeout-word-not-invalid_parameter",
        ),
    ],
)
def test_a_specific_rule_wins_over_a_generic_one(
    failure: ToolFailure, code: ErrorCode, rule: str
) -> None:
    verdict = classify(failure)
    assert (verdict.code, verdict.rule) == (code, rule)


def test_an_exhausted_quota_is_a_permanent_rate_limit_even_as_a_429() -> None:
    """Waiting does not refill a quota or a credit balance: the rule carries its own class."""
    failure = ToolFailure(
        http_status=429, message="You exceeded your current quota, please check your plan"
    )
    verdict = classify(failure)
    assert (verdict.code, verdict.error_class) == (ErrorCode.RATE_LIMITED, P)
    assert classify(ToolFailure(http_status=429)).error_class is T


def test_a_tls_setup_error_is_a_permanent_connection_error() -> None:
    """A retry meets the same certificate, or the same plain-HTTP port."""
    verdict = classify(ToolFailure(message="[SSL: WRONG_VERSION_NUMBER] wrong version number"))
    assert (verdict.code, verdict.error_class) == (ErrorCode.CONNECTION, P)


def test_a_manifest_rule_overrides_the_class_a_default_rule_carries() -> None:
    rules = (ClassificationRule(T, code=ErrorCode.RATE_LIMITED),)
    verdict = classify(ToolFailure(message="insufficient_quota"), rules, "search")
    assert (verdict.code, verdict.error_class, verdict.rule) == (
        ErrorCode.RATE_LIMITED,
        T,
        "manifest:search:classification[0]",
    )


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (409, ErrorCode.UNAVAILABLE),
        (413, ErrorCode.INVALID_INPUT),
        (415, ErrorCode.UNSUPPORTED),
        (423, ErrorCode.UNAVAILABLE),
        (424, ErrorCode.UNAVAILABLE),
        (499, ErrorCode.UNKNOWN),
        (520, ErrorCode.UNAVAILABLE),
        (522, ErrorCode.TIMEOUT),
        (524, ErrorCode.TIMEOUT),
        (529, ErrorCode.UNAVAILABLE),
        (418, ErrorCode.INVALID_INPUT),
        (599, ErrorCode.UNKNOWN),
    ],
)
def test_http_statuses_beyond_the_common_ones_get_the_code_their_recovery_needs(
    status: int, code: ErrorCode
) -> None:
    verdict = classify(ToolFailure(http_status=status))
    assert (verdict.code, verdict.rule) == (code, f"default:http_status:{status}")


def test_an_exception_type_matches_by_its_short_name_after_the_module_path() -> None:
    verdict = classify(
        ToolFailure(exception_type="aiohttp.client_exceptions.ServerDisconnectedError")
    )
    assert (verdict.code, verdict.rule) == (
        ErrorCode.CONNECTION,
        "default:exception_type:connection",
    )


# Each as the library prints it; the status is read however the rest of the text reads.
@pytest.mark.parametrize(
    ("message", "status"),
    [
        pytest.param(
            "404 Client Error: Not Found for url: https://api.example.com/v1/items/42",
            404,
            id="requests",
        ),
        pytest.param(
            "503 Server Error: Service Temporarily Unavailable for url: https://api.example.com/",
            503,
            id="requests-nginx-reason",
        ),
        pytest.param(
            "Client error '409 Conflict' for url 'https://api.example.com/v1/items'\n"
            "For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/409",
            409,
            id="httpx",
        ),
        pytest.param(
            "410, message='Gone', url='https://api.example.com/v1/items/42'", 410, id="aiohttp"
        ),
        pytest.param("HTTP Error 404: Not Found", 404, id="urllib"),
        pytest.param(
            "HTTPSConnectionPool(host='api.example.com', port=443): Max retries exceeded with url: "
            "/v1/search (Caused by ResponseError('too many 502 error responses'))",
            502,
            id="urllib3-after-a-port",
        ),
        pytest.param(
            "Error code: 500 - {'type': 'error', 'error': {'type': 'api_error', "
            "'message': 'Internal server error'}}",
            500,
            id="anthropic-and-openai-sdks",
        ),
        pytest.param(
            "An error occurred (403) when calling the HeadObject operation: Forbidden",
            403,
            id="botocore-without-an-error-code",
        ),
        pytest.param(
            "{'Error': {'Code': 'Unknown'}, 'ResponseMetadata': {'HTTPStatusCode': 503}}",
            503,
            id="botocore-response",
        ),
        pytest.param(
            "<HttpError 403 when requesting https://www.googleapis.com/drive/v3/files?alt=json "
            'returned "Insufficient Permission">',
            403,
            id="googleapiclient",
        ),
        pytest.param(
            "403 GET https://storage.googleapis.com/storage/v1/b/reports?projection=noAcl: "
            "svc@example.iam.gserviceaccount.com does not have storage.buckets.get access",
            403,
            id="google-api-core",
        ),
        pytest.param('{"error": {"code": 404, "message": "x"}}', 404, id="google-json-body"),
        pytest.param('403 {"message": "Resource not accessible"}', 403, id="pygithub"),
        pytest.param(
            "<title>example.com | 520: Web server is returning an unknown error</title>",
            520,
            id="cloudflare",
        ),
        pytest.param("Error 524 A timeout occurred", 524, id="cloudflare-error-page"),
        pytest.param(
            "the server responded with a status of 404 (Not Found)", 404, id="browser-console"
        ),
        pytest.param("curl: (22) The requested URL returned error: 404", 404, id="curl"),
        pytest.param("HTTP/1.1 503 Service Unavailable", 503, id="status-line"),
        pytest.param("Request failed with status code 404", 404, id="status-code"),
        pytest.param("Error 401: token rejected", 401, id="error-number-colon"),
        pytest.param("Response 502: upstream went away", 502, id="response-number"),
    ],
)
def test_a_status_the_text_names_is_read_as_the_http_status(message: str, status: int) -> None:
    verdict = classify(ToolFailure(message=message))
    assert (verdict.code, verdict.rule) == (
        http_status_code(status),
        f"default:message:http_status:{status}",
    )


@pytest.mark.parametrize(
    "message",
    [
        "processed 401 rows then connection dropped",
        "upstream glitch on req 462",
        "proxy 10.0.0.7 port 443 dropped the stream",
        "upstream 10.0.0.7:443 went away",
        'File "/app/tools/search.py", line 404, in run',
        "Expecting ',' delimiter: line 1 column 404 (char 403)",
        "order total $450.00 was declined by the bank",
        "no prices recorded since 1999",
        "upstream answered in 500 ms",
        "retry in 429 seconds",
        "job stopped at 2024-05-01 12:45:03.404 UTC",
        "wrote 413 KB before the stream stopped",
        "user 401 has 503 unread messages",
        "response from the worker took 450 ms",
        "no response from 10.0.0.7:443",
    ],
)
def test_a_number_the_text_does_not_name_a_status_is_not_read_as_one(message: str) -> None:
    """They came out AUTH, NOT_FOUND, INVALID_INPUT or RATE_LIMITED by the number alone;
    nothing else in them names a cause, so they stay UNKNOWN, which is transient."""
    verdict = classify(ToolFailure(message=message))
    assert (verdict.code, verdict.error_class, verdict.rule) == (
        ErrorCode.UNKNOWN,
        T,
        "default:unknown",
    )


NEUTRAL_WORDS = (
    "processed", "rows", "then", "the", "batch", "job", "upstream", "glitch", "on", "req",
    "item", "took", "in", "of", "at", "for", "user", "order", "total", "wrote", "before",
    "since", "page", "line", "column", "port", "ms", "seconds", "KB", "shard", "worker",
)  # fmt: skip
"""Words that name no cause and no status."""
NUMBER_FORMS = ("{}", "${}", ":{}", "#{}", "{}.00", "12:45:03.{}", "{},", "({})", "v{}")
neutral_prose = st.lists(st.sampled_from(NEUTRAL_WORDS), max_size=8).map(" ".join)
number_in_prose = st.builds(
    lambda before, form, number, after: f"{before} {form.format(number)} {after}",
    neutral_prose,
    st.sampled_from(NUMBER_FORMS),
    st.integers(0, 999),
    neutral_prose,
)
"""Neutral prose with a number in it, written as counts, prices, times and ids are."""
NAMING_FORMS = (
    "HTTP {}",
    "HTTP/1.1 {}",
    "status code: {}",
    "status: {}",
    "Error {}:",
    "error code {}",
    "Error code: {} - {{}}",
    "{} Client Error: x for url: https://h/p",
    "{}, message='x', url='https://h/p'",
    "HTTP Error {}: x",
)


@settings(deadline=None)
@given(message=number_in_prose)
def test_a_number_in_neutral_prose_is_never_read_as_a_status(message: str) -> None:
    assert classify(ToolFailure(message=message)).rule == "default:unknown"


@settings(deadline=None)
@given(
    before=number_in_prose,
    form=st.sampled_from(NAMING_FORMS),
    status=st.integers(400, 599).filter(lambda status: status != 429),
)
def test_the_status_the_text_names_is_read_not_a_number_before_it(
    before: str, form: str, status: int
) -> None:
    """429 is left out: it is a rate limit whatever else the message says."""
    verdict = classify(ToolFailure(message=f"{before} {form.format(status)}"))
    assert verdict.rule == f"default:message:http_status:{status}"


@pytest.mark.parametrize(
    "message", ["HTTP 429", "status code: 429 (invalid api key)", "Error code: 429 - {}"]
)
def test_a_quoted_429_is_a_rate_limit_whatever_else_the_message_says(message: str) -> None:
    verdict = classify(ToolFailure(http_status=403, message=message))
    assert (verdict.code, verdict.rule) == (ErrorCode.RATE_LIMITED, "default:message:rate_limit")


@pytest.mark.parametrize(
    ("field", "evidence", "rule"),
    [
        ("message", "timed out", "default:message:timeout"),
        ("message", "Rate limit", "default:message:rate_limit"),
        ("message", " StatusCode.UNAVAILABLE", "default:grpc_status:UNAVAILABLE"),
        ("message", " HTTP 503", "default:message:http_status:503"),
        ("message", " An error occurred (NoSuchKey)", "default:error_code:not_found"),
        ("exception_type", "TimedOut", "default:exception_type:timeout"),
    ],
)
def test_only_the_first_searched_chars_are_read(field: str, evidence: str, rule: str) -> None:
    """Evidence sits at the start of an error message; reading all of a long one would make
    the decision cost more than its budget. Evidence that ends at the limit is found, one
    character later it is not."""
    within = "x" * (SEARCHED_CHARS - len(evidence)) + evidence
    assert classify(failure_with(field, within)).rule == rule
    assert classify(failure_with(field, "x" + within)).rule == "default:unknown"


def failure_with(field: str, text: str) -> ToolFailure:
    return ToolFailure(message=text) if field == "message" else ToolFailure(exception_type=text)


def tier_texts(failure: ToolFailure) -> list[tuple[str, Tier, str]]:
    """Each tier, by name, with the text normalize() searches it in."""
    message = searchable(failure.message)
    return [
        ("overriding phrases", OVERRIDING_TIER, message),
        ("exception type", EXCEPTION_TYPE_TIER, searchable(failure.exception_type)),
        ("error code", ERROR_CODE_TIER, searchable(service_error_code(failure.message))),
        ("phrases", PHRASE_TIER, message),
        ("words", WORD_TIER, message),
    ]


def first_rule_that_occurs(tier: Tier, text: str) -> Classification | None:
    """What Tier.first_match must return: try every rule in priority order."""
    found = (v for p, v in zip(tier.patterns, tier.verdicts, strict=True) if p.search(text))
    return next(found, None) if text else None


def test_a_tiers_pattern_finds_a_rule_exactly_when_one_of_its_rules_occurs() -> None:
    """The combined pattern is a pre-filter: it must not skip a rule, nor find one that is
    not there (checked for every tier of every failure of the corpus)."""
    mismatches = [
        (entry["id"], name)
        for entry in CORPUS
        for name, tier, text in tier_texts(corpus_failure(entry))
        if (tier.any_rule.search(text) is None) == any(p.search(text) for p in tier.patterns)
    ]
    assert mismatches == []


CASES: tuple[Callable[[str], str], ...] = (str.lower, str.upper, str.title, str)
CORPUS_WORDS = sorted({word for entry in CORPUS for word in entry["message"].split()})
corpus_like = st.lists(
    st.tuples(st.sampled_from(CORPUS_WORDS), st.sampled_from(CASES)), max_size=12
).map(lambda words: " ".join(case(word) for word, case in words))
"""Messages of corpus words, in any order and case: they name several rules at once."""
LOOKALIKES = (("i", "\u0130"), ("i", "\u0131"), ("s", "\u017f"), ("k", "\u212a"), ("", ""))
tricky_case = st.lists(
    st.tuples(st.sampled_from(CORPUS_WORDS), st.sampled_from(LOOKALIKES)), max_size=12
).map(lambda words: " ".join(word.replace(*lookalike) for word, lookalike in words))
"""Corpus words with a letter written as one that re.IGNORECASE takes for it and
str.lower() does not (or, for the Kelvin sign, does): "\u0131nval\u0131d", "\u017flow"."""


@given(message=corpus_like | tricky_case)
def test_a_tier_finds_the_first_rule_in_priority_order_not_the_leftmost(message: str) -> None:
    for _, tier, text in tier_texts(ToolFailure(message=message, exception_type=message)):
        assert tier.first_match(text) == first_rule_that_occurs(tier, text)


@settings(deadline=None)  # the first example compiles every pattern again, slow under load
@given(text=corpus_like | tricky_case)
def test_lowercase_patterns_on_the_searchable_text_match_as_ignorecase_would(text: str) -> None:
    """The rules were written for re.IGNORECASE, which makes every search several times
    slower; searchable() must lowercase exactly as it compares."""
    for tier in (OVERRIDING_TIER, EXCEPTION_TYPE_TIER, PHRASE_TIER, WORD_TIER):
        for pattern in (*tier.patterns, tier.any_rule):
            ignoring_case = re.search(pattern.pattern, text, re.IGNORECASE)
            assert (pattern.search(searchable(text)) is None) == (ignoring_case is None)


@pytest.mark.parametrize(
    "alternative", ["(?:lost|closed) connection", "[ab]c", "s?low", "tools?(s)"]
)
def test_an_alternative_must_start_with_a_literal_and_capture_nothing(alternative: str) -> None:
    """A tier's pattern is fast only when the engine can skip to each alternative's first
    character, and it tells the rule that matched by the groups it adds itself."""
    with pytest.raises(ValueError, match="must start with a word character"):
        rule("x", (alternative,), ErrorCode.UNKNOWN)
