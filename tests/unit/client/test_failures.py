"""failure_from_exception reads the real exceptions of the standard library, httpx,
requests, aiohttp and the openai and anthropic SDKs, built offline; ToolFailure checks
its fields and becomes the wire's ToolError."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime, timedelta

import aiohttp
import anthropic
import httpx
import httpx2
import openai
import pytest
import requests
from errord_client.executor.failures import (
    CODES,
    MAX_MESSAGE_BYTES,
    MAX_PARTIAL_RESULT_BYTES,
    ToolFailure,
    exception_type,
    failure_from_exception,
)
from errord_client.v1 import errord_pb2 as pb
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

NOW = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
IN_90_SECONDS = "Tue, 01 Jan 2030 12:01:30 GMT"


def _now() -> datetime:
    return NOW


def httpx_status_error(status: int, headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "https://x")
    response = httpx.Response(status, headers=headers, request=request)
    return httpx.HTTPStatusError(f"{status} from x", request=request, response=response)


def requests_http_error(status: int, headers: dict[str, str] | None = None) -> requests.HTTPError:
    response = requests.Response()
    response.status_code = status
    response.headers.update(headers or {})
    return requests.HTTPError(f"{status} Client Error", response=response)


def aiohttp_response_error(
    status: int, headers: dict[str, str] | None = None
) -> aiohttp.ClientResponseError:
    url = URL("https://x/search")
    request_info = aiohttp.RequestInfo(url, "GET", CIMultiDictProxy(CIMultiDict()), url)
    return aiohttp.ClientResponseError(
        request_info, (), status=status, message="Too Many Requests", headers=CIMultiDict(headers)
    )


def sdk_response(status: int, headers: dict[str, str] | None = None) -> httpx2.Response:
    request = httpx2.Request("POST", "https://api.example/v1/messages")
    return httpx2.Response(status, headers=headers, request=request)


def sdk_request() -> httpx2.Request:
    return httpx2.Request("POST", "https://api.example/v1/messages")


class OwnError(Exception):
    """A tool's own exception."""


# Built-in timeouts and connections


async def test_asyncio_timeout_is_timeout_named_timeouterror() -> None:
    """asyncio's timeout, like socket.timeout, is the built-in TimeoutError since 3.11."""
    with pytest.raises(TimeoutError) as raised:
        await asyncio.wait_for(asyncio.Event().wait(), timeout=0)
    failure = failure_from_exception(raised.value)
    assert (failure.code, failure.exception_type, failure.http_status) == (
        "TIMEOUT",
        "TimeoutError",
        0,
    )


@pytest.mark.parametrize(
    ("error", "name"),
    [
        (ConnectionError("down"), "ConnectionError"),
        (ConnectionRefusedError(111, "refused"), "ConnectionRefusedError"),
        (ConnectionResetError("reset"), "ConnectionResetError"),
        (BrokenPipeError("pipe"), "BrokenPipeError"),
    ],
)
def test_connection_error_subclasses_are_connection(error: BaseException, name: str) -> None:
    failure = failure_from_exception(error)
    assert (failure.code, failure.exception_type) == ("CONNECTION", name)


def test_message_is_str_of_the_exception() -> None:
    assert (
        failure_from_exception(ConnectionRefusedError(111, "refused")).message
        == "[Errno 111] refused"
    )


# httpx


def test_httpx_status_error_fills_status_and_retry_after_seconds_and_leaves_code_empty() -> None:
    failure = failure_from_exception(httpx_status_error(503, {"Retry-After": "7"}))
    assert failure == ToolFailure(
        message="503 from x",
        exception_type="httpx.HTTPStatusError",
        code="",
        http_status=503,
        retry_after=7.0,
    )


def test_httpx_retry_after_as_http_date_is_seconds_from_now() -> None:
    failure = failure_from_exception(
        httpx_status_error(429, {"retry-after": IN_90_SECONDS}), now=_now
    )
    assert failure.retry_after == 90.0


def test_httpx_status_error_without_retry_after_has_none() -> None:
    assert failure_from_exception(httpx_status_error(500)).retry_after is None


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (httpx.ConnectTimeout("connect"), "TIMEOUT"),
        (httpx.ReadTimeout("read"), "TIMEOUT"),
        (httpx.PoolTimeout("pool"), "TIMEOUT"),
        (httpx.ConnectError("refused"), "CONNECTION"),
        (httpx.ReadError("reset"), "CONNECTION"),
        (httpx.RemoteProtocolError("peer closed"), "CONNECTION"),
        (httpx2.ReadTimeout("read"), "TIMEOUT"),
        (httpx2.ConnectError("refused"), "CONNECTION"),
    ],
)
def test_httpx_transport_errors_have_their_code(error: BaseException, code: str) -> None:
    failure = failure_from_exception(error)
    assert (failure.code, failure.http_status) == (code, 0)
    assert failure.exception_type == f"{type(error).__module__}.{type(error).__name__}"


# requests


def test_requests_http_error_fills_status_and_http_date_retry_after() -> None:
    failure = failure_from_exception(
        requests_http_error(429, {"Retry-After": IN_90_SECONDS}), now=_now
    )
    assert failure == ToolFailure(
        message="429 Client Error",
        exception_type="requests.HTTPError",
        http_status=429,
        retry_after=90.0,
    )


def test_requests_http_error_without_a_response_gives_type_and_message_only() -> None:
    failure = failure_from_exception(requests.HTTPError("no response"))
    assert failure == ToolFailure("no response", "requests.HTTPError")


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (requests.Timeout(), "TIMEOUT"),
        (requests.ConnectTimeout(), "TIMEOUT"),
        (requests.ReadTimeout(), "TIMEOUT"),
        (requests.ConnectionError(), "CONNECTION"),
    ],
)
def test_requests_timeouts_and_connection_errors_have_their_code(
    error: BaseException, code: str
) -> None:
    failure = failure_from_exception(error)
    assert (failure.code, failure.exception_type) == (code, f"requests.{type(error).__name__}")


# aiohttp


def test_aiohttp_client_response_error_fills_status_and_retry_after() -> None:
    failure = failure_from_exception(aiohttp_response_error(429, {"Retry-After": "3"}))
    assert (failure.exception_type, failure.code, failure.http_status, failure.retry_after) == (
        "aiohttp.ClientResponseError",
        "",
        429,
        3.0,
    )
    assert failure.message.startswith("429, message='Too Many Requests'")


def test_aiohttp_error_whose_str_raises_gives_its_repr() -> None:
    error = aiohttp.ClientResponseError(None, (), status=502)  # type: ignore[arg-type]
    failure = failure_from_exception(error)
    assert (failure.message, failure.http_status) == (repr(error), 502)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (aiohttp.ServerTimeoutError("timeout on reading data"), "TIMEOUT"),
        (aiohttp.ConnectionTimeoutError("connect"), "TIMEOUT"),
        (aiohttp.ClientConnectionError("closed"), "CONNECTION"),
        (aiohttp.ServerDisconnectedError(), "CONNECTION"),
        (aiohttp.ClientConnectorError(None, OSError(111, "refused")), "CONNECTION"),  # type: ignore[arg-type]
    ],
)
def test_aiohttp_timeouts_and_connection_errors_have_their_code(
    error: BaseException, code: str
) -> None:
    failure = failure_from_exception(error)
    assert (failure.code, failure.exception_type) == (code, f"aiohttp.{type(error).__name__}")


# openai and anthropic


@pytest.mark.parametrize(
    ("error", "name"),
    [
        (
            openai.RateLimitError("slow down", response=sdk_response(429), body=None),
            "openai.RateLimitError",
        ),
        (
            anthropic.RateLimitError("slow down", response=sdk_response(429), body=None),
            "anthropic.RateLimitError",
        ),
    ],
)
def test_sdk_rate_limit_comes_through_its_status(error: BaseException, name: str) -> None:
    failure = failure_from_exception(error)
    assert failure == ToolFailure(message="slow down", exception_type=name, http_status=429)


@pytest.mark.parametrize("kind", [openai.InternalServerError, anthropic.InternalServerError])
def test_sdk_status_errors_read_retry_after_from_the_response(
    kind: type[openai.InternalServerError] | type[anthropic.InternalServerError],
) -> None:
    error = kind("overloaded", response=sdk_response(503, {"retry-after": "12"}), body=None)
    failure = failure_from_exception(error)
    assert (failure.http_status, failure.retry_after, failure.code) == (503, 12.0, "")


def test_sdk_retry_after_ms_is_read_before_retry_after() -> None:
    response = sdk_response(429, {"retry-after-ms": "1500", "retry-after": "2"})
    error = openai.RateLimitError("slow down", response=response, body=None)
    assert failure_from_exception(error).retry_after == 1.5


def test_anthropic_overloaded_error_keeps_its_529() -> None:
    error = anthropic.OverloadedError("overloaded", response=sdk_response(529), body=None)
    failure = failure_from_exception(error)
    assert (failure.exception_type, failure.http_status) == ("anthropic.OverloadedError", 529)


@pytest.mark.parametrize(
    ("error", "code", "name"),
    [
        (openai.APITimeoutError(request=sdk_request()), "TIMEOUT", "openai.APITimeoutError"),
        (
            openai.APIConnectionError(request=sdk_request()),
            "CONNECTION",
            "openai.APIConnectionError",
        ),
        (anthropic.APITimeoutError(request=sdk_request()), "TIMEOUT", "anthropic.APITimeoutError"),
        (
            anthropic.APIConnectionError(request=sdk_request()),
            "CONNECTION",
            "anthropic.APIConnectionError",
        ),
    ],
)
def test_sdk_timeouts_and_connection_errors_have_their_code(
    error: BaseException, code: str, name: str
) -> None:
    failure = failure_from_exception(error)
    assert (failure.code, failure.exception_type, failure.http_status) == (code, name, 0)


# Retry-After values


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("0", 0.0),
        ("120", 120.0),
        ("1.5", 1.5),
        (" 30 ", 30.0),
        ("Tue, 01 Jan 2030 11:59:00 GMT", 0.0),  # past: retry now
        (IN_90_SECONDS, 90.0),
        ("-5", None),
        ("soon", None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_retry_after_is_seconds_from_now_or_none_when_unreadable(
    header: str, seconds: float | None
) -> None:
    failure = failure_from_exception(httpx_status_error(503, {"Retry-After": header}), now=_now)
    assert failure.retry_after == seconds


def test_retry_after_header_of_a_plain_dict_is_found_whatever_its_case() -> None:
    class Response:
        status_code = 503
        headers = {"RETRY-AFTER": "4"}  # noqa: RUF012 - a fixture, never mutated

    error = OwnError("unavailable")
    error.response = Response()  # type: ignore[attr-defined]
    failure = failure_from_exception(error)
    assert (failure.http_status, failure.retry_after) == (503, 4.0)


def test_default_now_is_the_current_time() -> None:
    when = (datetime.now(UTC) + timedelta(hours=1)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    failure = failure_from_exception(httpx_status_error(429, {"Retry-After": when}))
    assert failure.retry_after is not None
    assert 3590 <= failure.retry_after <= 3600


# Anything else


def test_other_exceptions_give_type_and_message_only() -> None:
    failure = failure_from_exception(ValueError("bad city"))
    assert failure == ToolFailure(message="bad city", exception_type="ValueError")


def test_own_exception_type_is_module_and_qualified_name() -> None:
    assert failure_from_exception(OwnError("x")).exception_type == f"{__name__}.OwnError"


def test_library_names_its_exception_by_the_top_level_package_that_exports_it() -> None:
    assert exception_type(requests.exceptions.ReadTimeout) == "requests.ReadTimeout"
    assert exception_type(aiohttp.client_exceptions.ClientResponseError) == (
        "aiohttp.ClientResponseError"
    )


def test_status_attribute_outside_http_range_is_ignored() -> None:
    error = OwnError("exit 1")
    error.status = 1  # type: ignore[attr-defined]
    assert failure_from_exception(error).http_status == 0


def test_attribute_that_raises_when_read_is_treated_as_absent() -> None:
    class Broken(Exception):
        @property
        def response(self) -> object:
            raise RuntimeError("The .response property has not been set.")

    assert failure_from_exception(Broken("x")) == ToolFailure(
        "x", f"{__name__}.{Broken.__qualname__}"
    )


def test_partial_result_attribute_is_carried() -> None:
    class PageTimeout(TimeoutError):
        def __init__(self, message: str, partial_result: object) -> None:
            super().__init__(message)
            self.partial_result = partial_result

    failure = failure_from_exception(PageTimeout("page 3 timed out", {"pages": [1, 2]}))
    assert (failure.code, failure.partial_result) == ("TIMEOUT", {"pages": [1, 2]})


def test_long_message_is_cut_to_4_kib_between_characters() -> None:
    failure = failure_from_exception(ValueError("é" * 5000))
    assert failure.message == "é" * (MAX_MESSAGE_BYTES // 2)


def test_message_with_a_lone_surrogate_still_goes_on_the_wire() -> None:
    failure = failure_from_exception(ValueError("bad \udc80 byte"))
    assert failure.to_proto().SerializeToString()


@given(st.text())
def test_any_message_is_a_prefix_within_4_kib_and_serializes(text: str) -> None:
    failure = failure_from_exception(RuntimeError(text))
    assert len(failure.message.encode()) <= MAX_MESSAGE_BYTES
    if not any("\ud800" <= character <= "\udfff" for character in text):  # no lone surrogate
        assert text.startswith(failure.message)
    assert (
        pb.ToolError.FromString(failure.to_proto().SerializeToString()).message == failure.message
    )


@given(st.integers(min_value=0, max_value=10**9))
def test_any_retry_after_in_seconds_is_read_as_is(seconds: int) -> None:
    failure = failure_from_exception(httpx_status_error(429, {"Retry-After": str(seconds)}))
    assert failure.retry_after == seconds


# ToolFailure


def test_codes_are_the_wire_error_codes_without_prefix() -> None:
    assert {"TIMEOUT", "CONNECTION", "RATE_LIMITED", "SCHEMA_VIOLATION", "UNKNOWN"} <= CODES
    assert "UNSPECIFIED" not in CODES


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"code": "TIMED_OUT"}, "ToolFailure.code"),
        ({"code": "ERROR_CODE_TIMEOUT"}, "ToolFailure.code"),
        ({"http_status": 42}, "ToolFailure.http_status"),
        ({"retry_after": -1.0}, "ToolFailure.retry_after"),
        ({"retry_after": math.nan}, "ToolFailure.retry_after"),
    ],
)
def test_invalid_fields_raise_naming_the_field(fields: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        ToolFailure("x", **fields)  # type: ignore[arg-type]


def test_to_proto_carries_every_field() -> None:
    failure = ToolFailure(
        message="read timed out",
        exception_type="httpx.ReadTimeout",
        code="TIMEOUT",
        http_status=504,
        retry_after=2.5,
        partial_result={"rows": [1, 2]},
        api_message="upstream took too long",
        api_parameter="region",
        api_code="gateway_timeout",
    )
    error = failure.to_proto()
    assert error.code == pb.ERROR_CODE_TIMEOUT
    assert (error.message, error.exception_type, error.http_status) == (
        "read timed out",
        "httpx.ReadTimeout",
        504,
    )
    assert error.WhichOneof("retry_hint") == "retry_after"
    assert error.retry_after.ToNanoseconds() == 2_500_000_000
    assert dict(error.partial_result.struct_value) == {"rows": [1.0, 2.0]}
    assert (error.api_message, error.api_parameter, error.api_code) == (
        "upstream took too long",
        "region",
        "gateway_timeout",
    )


def test_to_proto_leaves_unknown_code_unspecified_and_hints_unset() -> None:
    error = ToolFailure("boom").to_proto()
    assert error.code == pb.ERROR_CODE_UNSPECIFIED
    assert error.WhichOneof("retry_hint") is None
    assert not error.HasField("partial_result")


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_maps_to_its_wire_enum(code: str) -> None:
    assert pb.ErrorCode.Name(ToolFailure("x", code=code).to_proto().code) == f"ERROR_CODE_{code}"


def test_to_proto_partial_result_with_odd_values_is_plain_json() -> None:
    when = datetime(2030, 1, 1, tzinfo=UTC)
    error = ToolFailure("x", partial_result={"at": when, "score": math.nan, "n": 1}).to_proto()
    fields = error.partial_result.struct_value.fields
    assert fields["at"].string_value == str(when)
    assert fields["score"].WhichOneof("kind") == "null_value"
    assert fields["n"].number_value == 1


def test_to_proto_partial_result_that_cannot_be_walked_is_its_str() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    error = ToolFailure("x", partial_result=cycle).to_proto()
    assert error.partial_result.string_value == "[[...]]"


def test_to_proto_partial_result_a_protobuf_value_cannot_hold_is_its_str() -> None:
    error = ToolFailure("x", partial_result={"n": 10**400}).to_proto()
    assert error.partial_result.string_value == str({"n": 10**400})


def test_to_proto_leaves_out_a_partial_result_errord_would_refuse() -> None:
    error = ToolFailure("x", partial_result="a" * MAX_PARTIAL_RESULT_BYTES).to_proto()
    assert not error.HasField("partial_result")
    assert error.message == "x"
