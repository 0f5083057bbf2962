"""The API's own words: failure_from_exception reads the error body of real httpx, httpx2,
requests, aiohttp, openai and anthropic errors (raised by the libraries themselves over a
mock transport, offline) into api_message, api_parameter and api_code; bounded, never
reading a stream that was not read, never raising. A JSON-RPC error of the MCP SDK gives
its code, as api_code and as the code errord reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import anthropic
import anyio
import httpx
import httpx2
import openai
import pytest
import requests
from errord_client.executor.api_words import MAX_BODY_BYTES, MAX_NAME_LENGTH
from errord_client.executor.failures import (
    MAX_MESSAGE_BYTES,
    ToolFailure,
    failure_from_exception,
)
from errord_client.executor.local_policy import local_classification
from errord_client.tools import InvalidArguments
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp.server.mcpserver import MCPServer
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from tests.fakes import CannedAdapter

STRIPE = {
    "error": {
        "code": "resource_missing",
        "doc_url": "https://stripe.com/docs/error-codes/resource-missing",
        "message": "No such customer: 'cus_123'",
        "param": "customer",
        "type": "invalid_request_error",
    }
}


def words(failure: ToolFailure) -> tuple[str, str, str]:
    return failure.api_message, failure.api_parameter, failure.api_code


# The libraries' own errors


def httpx_error(status: int, content: bytes, content_type: str = "application/json") -> Any:
    """The HTTPStatusError httpx's raise_for_status raises for a response read whole."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=content, headers={"content-type": content_type})

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        response = client.get("https://api.example/v1/customers/cus_123")
    with pytest.raises(httpx.HTTPStatusError) as raised:
        response.raise_for_status()
    return raised.value


def requests_error(status: int, body: bytes, *, stream: bool = False) -> requests.HTTPError:
    session = requests.Session()
    session.mount("https://", CannedAdapter(status, body))
    response = session.get("https://api.example/v1/charges", stream=stream)
    with pytest.raises(requests.HTTPError) as raised:
        response.raise_for_status()
    return raised.value


def test_an_httpx_error_gives_what_its_json_body_says() -> None:
    failure = failure_from_exception(httpx_error(404, json.dumps(STRIPE).encode()))
    assert words(failure) == ("No such customer: 'cus_123'", "customer", "resource_missing")
    assert (failure.http_status, failure.code) == (404, "")
    assert failure.message.startswith("Client error '404 Not Found'")  # the status line, kept
    wire = failure.to_proto()
    assert (wire.api_message, wire.api_parameter, wire.api_code) == words(failure)


def test_an_httpx2_error_gives_what_its_json_body_says() -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(401, json={"message": "Bad credentials"})

    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        response = client.get("https://api.github.example/user")
    with pytest.raises(httpx2.HTTPStatusError) as raised:
        response.raise_for_status()
    assert words(failure_from_exception(raised.value)) == ("Bad credentials", "", "")


def test_a_streamed_httpx_response_not_read_is_left_unread() -> None:
    """raise_for_status inside ``client.stream`` before reading: the body is not read
    (it could block, or never end), and the failure has the status only."""
    pulled: list[bytes] = []

    def body() -> Iterator[bytes]:
        pulled.append(b"chunk")
        yield json.dumps(STRIPE).encode()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, content=body())

    with (
        httpx.Client(transport=httpx.MockTransport(answer)) as client,
        client.stream("GET", "https://api.example/v1/export") as response,
        pytest.raises(httpx.HTTPStatusError) as raised,
    ):
        response.raise_for_status()
    failure = failure_from_exception(raised.value)
    assert (failure.http_status, words(failure)) == (400, ("", "", ""))
    assert pulled == []


def test_a_requests_error_gives_what_its_json_body_says() -> None:
    body = {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
    failure = failure_from_exception(requests_error(400, json.dumps(body).encode()))
    assert words(failure) == ("Token has been expired or revoked.", "", "invalid_grant")
    assert failure.exception_type == "requests.HTTPError"


def test_a_streamed_requests_response_not_read_is_left_unread() -> None:
    """``stream=True``: requests has not read the body; reading ``content`` would read
    the socket, so nothing is read."""
    session = requests.Session()
    canned = CannedAdapter(400, json.dumps(STRIPE).encode())
    session.mount("https://", canned)
    response = session.get("https://api.example/v1/charges", stream=True)
    with pytest.raises(requests.HTTPError) as raised:
        response.raise_for_status()
    failure = failure_from_exception(raised.value)
    assert (failure.http_status, words(failure)) == (400, ("", "", ""))
    assert canned.raw is not None
    assert canned.raw.tell() == 0


def aiohttp_error(status: int, message: str) -> aiohttp.ClientResponseError:
    url = URL("https://api.example/v1/search")
    request_info = aiohttp.RequestInfo(url, "GET", CIMultiDictProxy(CIMultiDict()), url)
    return aiohttp.ClientResponseError(request_info, (), status=status, message=message)


@pytest.mark.parametrize(
    ("status", "message", "said"),
    [
        (400, "Bad Request", ("", "", "")),  # the status's own phrase says nothing more
        (429, "too many requests", ("", "", "")),
        (400, "Invalid API Key", ("Invalid API Key", "", "")),
        (422, '{"detail": "q must not be empty"}', ("q must not be empty", "", "")),
    ],
)
def test_an_aiohttp_error_gives_its_message_when_it_says_more_than_the_status(
    status: int, message: str, said: tuple[str, str, str]
) -> None:
    """aiohttp releases the response before raising: its message is all it carries."""
    assert words(failure_from_exception(aiohttp_error(status, message))) == said


def test_an_openai_error_gives_what_its_body_says() -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        error = {
            "message": "The model `gpt-9` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": "model",
            "code": "model_not_found",
        }
        return httpx2.Response(404, json={"error": error})

    transport = httpx2.Client(transport=httpx2.MockTransport(answer))
    client = openai.OpenAI(
        api_key="sk-test", base_url="https://api.example/v1", http_client=transport, max_retries=0
    )
    with pytest.raises(openai.NotFoundError) as raised:
        client.models.retrieve("gpt-9")
    failure = failure_from_exception(raised.value)
    assert words(failure) == (
        "The model `gpt-9` does not exist or you do not have access to it.",
        "model",
        "model_not_found",
    )
    assert (failure.exception_type, failure.http_status) == ("openai.NotFoundError", 404)


def test_an_anthropic_error_gives_what_its_body_says() -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        error = {"type": "authentication_error", "message": "invalid x-api-key"}
        return httpx2.Response(401, json={"type": "error", "error": error})

    transport = httpx2.Client(transport=httpx2.MockTransport(answer))
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=transport, max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as raised:
        client.models.retrieve("claude-x")
    failure = failure_from_exception(raised.value)
    assert words(failure) == ("invalid x-api-key", "", "authentication_error")


def test_an_sdk_error_with_a_text_body_gives_its_first_line() -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(500, text="upstream connect error\nreset reason: overflow")

    transport = httpx2.Client(transport=httpx2.MockTransport(answer))
    client = openai.OpenAI(
        api_key="sk-test", base_url="https://api.example/v1", http_client=transport, max_retries=0
    )
    with pytest.raises(openai.InternalServerError) as raised:
        client.models.retrieve("gpt-9")
    assert words(failure_from_exception(raised.value)) == ("upstream connect error", "", "")


# The shapes APIs answer in


SHAPES = [
    pytest.param(
        STRIPE, ("No such customer: 'cus_123'", "customer", "resource_missing"), id="stripe"
    ),
    pytest.param(
        {
            "error": {
                "message": "Incorrect API key provided: sk-test.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
        ("Incorrect API key provided: sk-test.", "", "invalid_api_key"),
        id="openai",
    ),
    pytest.param(
        {"error": {"message": "Quota exceeded.", "type": "insufficient_quota", "code": None}},
        ("Quota exceeded.", "", "insufficient_quota"),
        id="openai-type-for-code",
    ),
    pytest.param(
        {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}},
        ("model: claude-x", "", "not_found_error"),
        id="anthropic",
    ),
    pytest.param(
        {
            "error": {
                "code": 400,
                "message": "Invalid value at 'page_size' (TYPE_INT32), \"ten\"",
                "status": "INVALID_ARGUMENT",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.BadRequest",
                        "fieldViolations": [{"field": "page_size", "description": "Invalid"}],
                    }
                ],
            }
        },
        ("Invalid value at 'page_size' (TYPE_INT32), \"ten\"", "page_size", "INVALID_ARGUMENT"),
        id="google",
    ),
    pytest.param(
        {"error": "invalid_grant", "error_description": "Token has expired."},
        ("Token has expired.", "", "invalid_grant"),
        id="oauth",
    ),
    pytest.param({"error": "Unauthorized"}, ("Unauthorized", "", ""), id="error-phrase"),
    pytest.param({"detail": "Invalid token"}, ("Invalid token", "", ""), id="fastapi"),
    pytest.param(
        {
            "detail": [
                {
                    "type": "int_parsing",
                    "loc": ["body", "count"],
                    "msg": "Input should be a valid integer, unable to parse string as an integer",
                    "input": "ten",
                }
            ]
        },
        (
            "Input should be a valid integer, unable to parse string as an integer",
            "count",
            "int_parsing",
        ),
        id="fastapi-validation",
    ),
    pytest.param(
        {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
        ("Bad credentials", "", ""),
        id="github",
    ),
    pytest.param(
        {
            "message": "Validation Failed",
            "errors": [{"resource": "Issue", "field": "title", "code": "missing_field"}],
        },
        ("Validation Failed", "title", "missing_field"),
        id="github-validation",
    ),
    pytest.param(
        {"errors": [{"message": "Bad credentials"}]}, ("Bad credentials", "", ""), id="errors"
    ),
    pytest.param(
        {
            "errors": [
                {
                    "message": 'Variable "$id" got invalid value',
                    "path": ["user", "id"],
                    "extensions": {"code": "BAD_USER_INPUT"},
                }
            ],
            "data": None,
        },
        ('Variable "$id" got invalid value', "id", "BAD_USER_INPUT"),
        id="graphql",
    ),
    pytest.param(
        {
            "errors": [
                {
                    "status": "422",
                    "source": {"pointer": "/data/attributes/firstName"},
                    "title": "Invalid Attribute",
                    "detail": "First name must contain at least two characters.",
                }
            ]
        },
        ("Invalid Attribute: First name must contain at least two characters.", "firstName", ""),
        id="json-api",
    ),
    pytest.param(
        {"message": "Rate limit reached for requests", "code": 1302},
        ("Rate limit reached for requests", "", "1302"),
        id="message-and-code",
    ),
    pytest.param(
        {
            "type": "https://example.com/probs/out-of-credit",
            "title": "You do not have enough credit.",
            "detail": "Your current balance is 30, but that costs 50.",
            "instance": "/account/12345/msgs/abc",
        },
        (
            "You do not have enough credit. Your current balance is 30, but that costs 50.",
            "",
            "https://example.com/probs/out-of-credit",
        ),
        id="rfc7807",
    ),
    pytest.param(
        {
            "type": "about:blank",
            "title": "Your request parameters didn't validate.",
            "invalid-params": [{"name": "age", "reason": "must be a positive integer"}],
        },
        ("Your request parameters didn't validate.", "age", ""),
        id="rfc7807-invalid-params",
    ),
    pytest.param(
        {
            "statusCode": 400,
            "message": ["limit must not be greater than 10"],
            "error": "Bad Request",
        },
        ("limit must not be greater than 10", "", ""),
        id="nestjs",
    ),
    pytest.param(
        {
            "timestamp": "2030-01-01T12:00:00.000+00:00",
            "status": 400,
            "error": "Bad Request",
            "message": "Required request parameter 'q' is not present",
            "path": "/api/search",
        },
        ("Required request parameter 'q' is not present", "", ""),
        id="spring-boot",
    ),
    pytest.param(
        {"email": ["Enter a valid email address."]},
        ("Enter a valid email address.", "email", ""),
        id="django-rest-framework",
    ),
    pytest.param(
        [{"message": "first", "code": "one"}, {"message": "second"}],
        ("first", "", "one"),
        id="a-list",
    ),
    pytest.param("Unauthorized", ("Unauthorized", "", ""), id="a-json-string"),
    pytest.param({"ok": False}, ("", "", ""), id="nothing-said"),
    pytest.param(42, ("", "", ""), id="a-number"),
]


@pytest.mark.parametrize(("body", "said"), SHAPES)
def test_each_shape_of_json_error_body_gives_its_message_parameter_and_code(
    body: Any, said: tuple[str, str, str]
) -> None:
    assert words(failure_from_exception(httpx_error(400, json.dumps(body).encode()))) == said


@pytest.mark.parametrize(("body", "said"), SHAPES)
def test_an_sdk_body_already_decoded_reads_as_the_same_shape(
    body: Any, said: tuple[str, str, str]
) -> None:
    response = httpx2.Response(400, request=httpx2.Request("POST", "https://api.example/v1"))
    error = openai.BadRequestError("Error code: 400", response=response, body=body)
    assert words(failure_from_exception(error)) == said


@pytest.mark.parametrize(
    ("content", "content_type", "said"),
    [
        (b"upstream connect error\nreset reason: overflow", "text/plain", "upstream connect error"),
        (
            b"\n\n  Service paused for maintenance  \n",
            "text/plain",
            "Service paused for maintenance",
        ),
        (b"<html><head><title>502 Bad Gateway</title></head></html>", "text/html", ""),
        (b'<?xml version="1.0"?><Error><Code>NoSuchKey</Code></Error>', "application/xml", ""),
        (b'{"error": {"message": "cut off', "application/json", ""),
        (b"", "application/json", ""),
        (b"\xff\xfe not utf-8", "text/plain", "\ufffd\ufffd not utf-8"),
    ],
)
def test_a_body_that_is_not_a_json_error_object_gives_its_first_line_or_nothing(
    content: bytes, content_type: str, said: str
) -> None:
    failure = failure_from_exception(httpx_error(502, content, content_type))
    assert words(failure) == (said, "", "")


def test_a_json_body_longer_than_the_bound_is_not_read() -> None:
    """Only MAX_BODY_BYTES are read; a JSON body cut there is not JSON, and says nothing."""
    body = {"error": {"message": "x" * MAX_BODY_BYTES, "code": "too_long"}}
    assert words(failure_from_exception(httpx_error(400, json.dumps(body).encode()))) == (
        "",
        "",
        "",
    )


def test_long_words_are_cut_to_what_errord_accepts() -> None:
    """The message to MAX_MESSAGE_BYTES of UTF-8 between characters, as the exception's own
    message; a parameter's name and a code to MAX_NAME_LENGTH characters, on one line."""
    body = {"error": {"message": "é" * 5000, "param": "p\n\x00" * 400, "code": "c" * 600}}
    content = json.dumps(body, ensure_ascii=False).encode()
    failure = failure_from_exception(httpx_error(400, content))
    assert len(failure.api_message.encode()) == MAX_MESSAGE_BYTES
    assert set(failure.api_message) == {"é"}
    assert len(failure.api_parameter) == MAX_NAME_LENGTH
    assert failure.api_parameter.isprintable()
    assert failure.api_code == "c" * MAX_NAME_LENGTH


def test_a_deeply_nested_body_gives_nothing_and_raises_nothing() -> None:
    body = '{"error": ' * 3000 + "{}" + "}" * 3000
    assert words(failure_from_exception(httpx_error(400, body.encode()[:MAX_BODY_BYTES]))) == (
        "",
        "",
        "",
    )
    nested: Any = {}
    for _ in range(5000):
        nested = {"error": nested}
    response = httpx2.Response(400, request=httpx2.Request("POST", "https://api.example/v1"))
    error = openai.BadRequestError("Error code: 400", response=response, body=nested)
    assert words(failure_from_exception(error)) == ("", "", "")


@given(body=st.binary(max_size=2048))
def test_any_body_at_all_gives_a_failure_that_serializes(body: bytes) -> None:
    failure = failure_from_exception(httpx_error(400, body))
    assert len(failure.api_message.encode()) <= MAX_MESSAGE_BYTES
    assert len(failure.api_parameter) <= MAX_NAME_LENGTH
    assert len(failure.api_code) <= MAX_NAME_LENGTH
    assert failure.to_proto().SerializeToString()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["error", "errors", "detail", "message", "param", "code", "loc", "x"]),
            inner,
        )
    ),
    max_leaves=12,
)


@given(body=JSON)
def test_any_decoded_sdk_body_gives_a_failure_that_serializes(body: Any) -> None:
    response = httpx2.Response(400, request=httpx2.Request("POST", "https://api.example/v1"))
    error = anthropic.BadRequestError("Error code: 400", response=response, body=body)
    assert failure_from_exception(error).to_proto().SerializeToString()


def test_an_error_without_a_status_reads_no_body() -> None:
    error = ValueError("no such column: prce")
    error.body = {"error": {"message": "not an HTTP error"}}  # type: ignore[attr-defined]
    assert words(failure_from_exception(error)) == ("", "", "")


# JSON-RPC errors (MCP)


@pytest.mark.parametrize(
    ("code", "errord_code"),
    [
        (-32602, "INVALID_INPUT"),
        (-32600, "INTERNAL"),
        (-32601, "UNSUPPORTED"),
        (-32603, "UNKNOWN"),
        (-32001, "TIMEOUT"),
        (-32000, "CONNECTION"),
        (-32002, "NOT_FOUND"),
        (-32700, "INTERNAL"),
    ],
)
def test_an_mcp_error_gives_its_json_rpc_code_and_message_which_errord_reads(
    code: int, errord_code: str
) -> None:
    """The JSON-RPC code is the API's own: the executor sends it, and errord's rules (the
    local policy's copy of them too) read it."""
    failure = failure_from_exception(MCPError(code, "the call failed", {"tool": "search"}))
    assert (failure.code, failure.api_code, failure.api_message) == (
        "",
        str(code),
        'the call failed ({"tool": "search"})',
    )
    assert failure.exception_type == "mcp.MCPError"
    assert local_classification(failure, {}).code.value == errord_code


def test_an_mcp_error_of_a_code_errord_does_not_know_is_left_to_its_words() -> None:
    failure = failure_from_exception(MCPError(-32099, "server busy"))
    assert (failure.code, failure.api_code, failure.api_message) == ("", "-32099", "server busy")


async def test_a_closed_mcp_session_is_a_connection_failure() -> None:
    """The MCP SDK's own error for a session whose server is gone (-32000)."""
    server = MCPServer("gone")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    async with Client(server, mode="legacy") as client:
        session = client.session
    with pytest.raises(MCPError) as raised:
        await session.call_tool("echo", {"text": "hello"})
    failure = failure_from_exception(raised.value)
    assert failure.api_code == "-32000"
    assert local_classification(failure, {}).code.value == "CONNECTION"


@pytest.mark.parametrize(
    "error", [anyio.ClosedResourceError(), anyio.BrokenResourceError(), anyio.EndOfStream()]
)
def test_an_mcp_sessions_closed_stream_is_a_connection_failure(error: BaseException) -> None:
    assert failure_from_exception(error).code == "CONNECTION"


def test_an_mcp_error_of_the_sdks_first_versions_is_read_too() -> None:
    """mcp 1.x named it McpError, with the code and message on its ``error`` (ErrorData)."""

    class ErrorData:
        code = -32602
        message = "Invalid arguments for tool search: limit"

    older = type("McpError", (Exception,), {"__module__": "mcp.shared.exceptions"})
    error = older("Invalid arguments for tool search: limit")
    error.error = ErrorData()
    failure = failure_from_exception(error)
    assert (failure.api_code, failure.api_message) == (
        "-32602",
        "Invalid arguments for tool search: limit",
    )
    assert local_classification(failure, {"limit": 5}).code.value == "INVALID_INPUT"


# The executor's own refusals


def test_invalid_arguments_name_their_parameter() -> None:
    failure = failure_from_exception(InvalidArguments(["missing 'city'"], parameter="city"))
    assert (failure.code, failure.api_parameter) == ("INVALID_INPUT", "city")
