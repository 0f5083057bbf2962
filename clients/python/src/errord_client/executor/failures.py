"""What errord reads of a failed attempt, made from the exception the tool raised.

A tool fails by raising. ``failure_from_exception`` reads the exception the way
errord's wire ``ToolError`` wants it, recognizing the errors of the HTTP and model
SDK libraries agents use by the names and modules of the exception's classes and by
its attributes, never by importing those libraries:

- an HTTP status (httpx/httpx2 ``HTTPStatusError``, requests ``HTTPError``, aiohttp
  ``ClientResponseError``, the openai and anthropic SDKs' ``APIStatusError`` and their
  subclasses such as ``RateLimitError``; any exception with an integer ``status_code``
  or ``status``, on itself or its ``response``) fills ``http_status`` and leaves
  ``code`` empty: errord classifies statuses, with the tool manifest's overrides.
  The response's ``Retry-After`` (seconds or an HTTP-date) fills ``retry_after``;
  ``retry-after-ms``, which the openai and anthropic APIs send, is read first.
  The response body, where the API says what is wrong, fills ``api_message``,
  ``api_parameter`` and ``api_code`` (errord_client.executor.api_words).
- timeouts (``TimeoutError``, so ``asyncio.TimeoutError`` and ``socket.timeout``;
  httpx ``TimeoutException``, requests ``Timeout``, aiohttp ``ServerTimeoutError``,
  the SDKs' ``APITimeoutError``) are ``TIMEOUT``.
- broken connections (``ConnectionError``, so ``BrokenPipeError``; httpx
  ``NetworkError`` and ``RemoteProtocolError``, requests ``ConnectionError``, aiohttp
  ``ClientConnectionError``, the SDKs' ``APIConnectionError``, anyio's closed and broken
  streams under an MCP session) are ``CONNECTION``.
- a JSON-RPC error (the MCP SDK's ``MCPError``, the MCP adapter's ``MCPProtocolError``)
  gives its code as ``api_code`` ("-32602") and its message as ``api_message``: errord
  reads the code as an API's own (-32602 invalid params the call's, -32002 a resource not
  found, -32000 the connection closed...), and so does the local policy, with errord's
  rules.
- the executor's own ``InvalidArguments`` is ``INVALID_INPUT``, the parameter it names
  (``InvalidArguments.parameter``, as a framework's validator said it) as ``api_parameter``.
- anything else gives its type and message only, and errord infers the code.

An exception may carry what the tool produced before it failed in a
``partial_result`` attribute (any JSON-like value): set it before raising, and errord
can let the turn continue with it (``CONTINUE_PARTIAL``).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Final

from google.protobuf import json_format, struct_pb2

from errord_client.executor.api_words import NO_WORDS, ApiWords, api_words, jsonrpc_error
from errord_client.requests import as_duration
from errord_client.tools.arguments import InvalidArguments
from errord_client.v1 import errord_pb2 as pb

MAX_MESSAGE_BYTES: Final = 4096
"""Bytes of an exception's text kept as the failure's message (UTF-8)."""

MAX_EXCEPTION_TYPE_LENGTH: Final = 512
"""Characters of an exception type errord accepts (an identifier's bound)."""

MAX_API_MESSAGE_BYTES: Final = MAX_MESSAGE_BYTES
"""Bytes of an API's message kept (UTF-8), as of the exception's own."""

MAX_PARTIAL_RESULT_BYTES: Final = 262_144
"""Serialized bytes of a partial result errord accepts; a larger one is not sent."""

CODES: Final = frozenset(
    name.removeprefix("ERROR_CODE_")
    for name in pb.ErrorCode.keys()  # noqa: SIM118 - an enum wrapper, not a dict
    if name != "ERROR_CODE_UNSPECIFIED"
)
"""The values ``ToolFailure.code`` takes besides "": the wire's ErrorCode names unprefixed."""

_HTTPX: Final = {
    "TimeoutException": "TIMEOUT",
    "ConnectError": "CONNECTION",
    "NetworkError": "CONNECTION",
    "RemoteProtocolError": "CONNECTION",
}
_SDK: Final = {"APITimeoutError": "TIMEOUT", "APIConnectionError": "CONNECTION"}
_CODES_BY_CLASS: Final[Mapping[tuple[str, str], str]] = {
    ("builtins", "TimeoutError"): "TIMEOUT",
    ("builtins", "ConnectionError"): "CONNECTION",
    **{("httpx", name): code for name, code in _HTTPX.items()},
    **{("httpx2", name): code for name, code in _HTTPX.items()},
    # ConnectTimeout is a ConnectionError too, ahead of Timeout in its MRO.
    ("requests", "ConnectTimeout"): "TIMEOUT",
    ("requests", "Timeout"): "TIMEOUT",
    ("requests", "ConnectionError"): "CONNECTION",
    ("aiohttp", "ServerTimeoutError"): "TIMEOUT",
    ("aiohttp", "ClientConnectionError"): "CONNECTION",
    # What an MCP session's streams raise once the server is gone (a stdio pipe closed).
    ("anyio", "ClosedResourceError"): "CONNECTION",
    ("anyio", "BrokenResourceError"): "CONNECTION",
    ("anyio", "EndOfStream"): "CONNECTION",
    **{("openai", name): code for name, code in _SDK.items()},
    **{("anthropic", name): code for name, code in _SDK.items()},
    # The registry's own refusals: the model's call is wrong, or the tool cannot run.
    ("errord_client", "InvalidArguments"): "INVALID_INPUT",
    ("errord_client", "MathError"): "INVALID_INPUT",
    ("errord_client", "HandlerNotFound"): "UNSUPPORTED",
}
"""(top-level package, class name) -> code; the first class of an exception's MRO found wins."""


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """What errord reads of a failed attempt (the wire's ToolError)."""

    message: str
    """The technical message, as the exception said it."""
    exception_type: str = ""
    """The exception's class as its library names it: "httpx.HTTPStatusError", "TimeoutError"."""
    code: str = ""
    """An ErrorCode name without its prefix ("TIMEOUT", "RATE_LIMITED", ...: ``CODES``), or ""
    when the status or the message says more than the exception's class: errord infers it."""
    http_status: int = 0
    """The HTTP status the tool's backend answered with; 0 for none."""
    retry_after: float | None = None
    """Seconds the backend asked to wait before a retry (its Retry-After), if it did."""
    partial_result: Any = None
    """What the tool produced before it failed (any JSON-like value), if anything."""
    api_message: str = ""
    """What the API said of the failure in its error body (or a JSON-RPC error's message),
    "" when it said nothing."""
    api_parameter: str = ""
    """The parameter the API's error names (Stripe's ``param``, FastAPI's ``loc``), or that
    a framework's own validator named; "" for none."""
    api_code: str = ""
    """The API's own error code ("resource_missing", "invalid_api_key", "-32602")."""

    def __post_init__(self) -> None:
        if self.code and self.code not in CODES:
            raise ValueError(
                f'ToolFailure.code should be "" or one of {", ".join(sorted(CODES))}, '
                f"got {self.code!r}"
            )
        if self.http_status and not 100 <= self.http_status <= 599:
            raise ValueError(
                f"ToolFailure.http_status should be 0 or 100 to 599, got {self.http_status}"
            )
        if self.retry_after is not None and not (
            math.isfinite(self.retry_after) and self.retry_after >= 0
        ):
            raise ValueError(
                f"ToolFailure.retry_after should be seconds, finite and not negative, "
                f"got {self.retry_after}"
            )

    def to_proto(self) -> pb.ToolError:
        """The wire ToolError. A partial result is sent as plain JSON (``_set_json``); one
        over MAX_PARTIAL_RESULT_BYTES is left out, since errord would refuse the report."""
        error = pb.ToolError(
            code=f"ERROR_CODE_{self.code}" if self.code else pb.ERROR_CODE_UNSPECIFIED,
            http_status=self.http_status,
            exception_type=self.exception_type,
            message=self.message,
            retry_after=as_duration(self.retry_after),
            api_message=self.api_message,
            api_parameter=self.api_parameter,
            api_code=self.api_code,
        )
        if self.partial_result is not None:
            _set_json(error.partial_result, self.partial_result)
            if error.partial_result.ByteSize() > MAX_PARTIAL_RESULT_BYTES:
                error.ClearField("partial_result")
        return error


def _utc_now() -> datetime:
    return datetime.now(UTC)


def failure_from_exception(
    error: BaseException, *, now: Callable[[], datetime] = _utc_now
) -> ToolFailure:
    """What errord reads of ``error``, as the module's docstring says. ``now`` (an aware
    datetime) makes a Retry-After given as an HTTP-date relative: seconds from now, 0 when
    past. Never raises for an exception it cannot read: it gives the type and message. An
    exception group of one exception (what a task group, such as an MCP client's, raises
    around its task's) is read as that exception."""
    error = _single(error)
    status = _http_status(error)
    headers = _attribute(error, "headers")
    if headers is None:
        headers = _attribute(_attribute(error, "response"), "headers")
    code = "" if status else _code(type(error))
    words = api_words(error) if status else NO_WORDS
    rpc = None if status else jsonrpc_error(error)
    if rpc is not None:  # its code is the API's, which errord reads (classify/api.py)
        code = ""
        words = ApiWords(rpc[1], "", str(rpc[0]))
    elif isinstance(error, InvalidArguments):
        words = ApiWords(parameter=error.parameter)
    return ToolFailure(
        message=_cut(_text(error), MAX_MESSAGE_BYTES),
        exception_type=exception_type(type(error))[:MAX_EXCEPTION_TYPE_LENGTH],
        code=code,
        http_status=status,
        retry_after=None if headers is None else _retry_after(headers, now),
        partial_result=_attribute(error, "partial_result"),
        api_message=_cut(words.message, MAX_API_MESSAGE_BYTES),
        api_parameter=words.parameter,
        api_code=words.code,
    )


def _single(error: BaseException) -> BaseException:
    """The one exception inside nested exception groups of one; else ``error``."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def exception_type(cls: type[BaseException]) -> str:
    """The class's name as its library exports it: "TimeoutError" for a built-in,
    "requests.HTTPError" (not requests.exceptions.HTTPError) when the top-level package
    has it, else its module and qualified name."""
    if cls.__module__ == "builtins":
        return cls.__qualname__
    top = cls.__module__.partition(".")[0]
    if getattr(sys.modules.get(top), cls.__name__, None) is cls:
        return f"{top}.{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _code(cls: type[BaseException]) -> str:
    for base in cls.__mro__:
        code = _CODES_BY_CLASS.get((base.__module__.partition(".")[0], base.__name__))
        if code is not None:
            return code
    return ""


def _http_status(error: BaseException) -> int:
    """The first integer HTTP status among the error's and its response's
    ``status_code`` and ``status``; 0 when none."""
    response = _attribute(error, "response")
    for holder in (error, response):
        for name in ("status_code", "status"):
            value = _attribute(holder, name)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    return 0


def _retry_after(headers: Any, now: Callable[[], datetime]) -> float | None:
    milliseconds = _seconds(_header(headers, "retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = _header(headers, "retry-after")
    seconds = _seconds(value)
    if seconds is not None or value is None:
        return seconds
    return _seconds_until(value, now())


def _header(headers: Any, name: str) -> str | None:
    """A header's value, whatever the case of its name, from a mapping (httpx, requests,
    aiohttp, a dict) or anything with ``get`` (``http.client.HTTPMessage``)."""
    if isinstance(headers, Mapping):
        for key, value in headers.items():
            if isinstance(key, str) and key.lower() == name:
                return str(value)
        return None
    get = _attribute(headers, "get")
    value = get(name) if callable(get) else None
    return None if value is None else str(value)


def _seconds(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _seconds_until(http_date: str, now: datetime) -> float | None:
    try:
        moment = parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:  # "-0000": UTC, the zone unsaid
        moment = moment.replace(tzinfo=UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return max(0.0, (moment - now).total_seconds())


def _attribute(holder: object, name: str) -> Any:
    """``holder.name``, or None when it has none or reading it raises (a property of a
    half-built exception may)."""
    try:
        return getattr(holder, name, None)
    except Exception:
        return None


def _text(error: BaseException) -> str:
    """``str(error)``; its ``repr()`` when that raises (aiohttp's errors do without a
    request), a placeholder when both do."""
    for show in (str, repr):
        try:
            return show(error)
        except Exception:  # a broken __str__ or __repr__: try the next
            continue
    return f"<{type(error).__qualname__}: str() and repr() raised>"


def _cut(text: str, limit: int) -> str:
    """At most ``limit`` bytes of UTF-8, cut between characters; unencodable ones
    (lone surrogates) replaced, as protobuf would refuse them."""
    return text.encode("utf-8", "replace")[:limit].decode("utf-8", "ignore")


def _set_json(message: struct_pb2.Value, value: Any) -> None:
    """``message`` set to ``value`` as plain JSON, or to its ``str()`` when a protobuf
    Value cannot hold it (an integer too large for a double)."""
    try:
        json_format.ParseDict(_json_value(value), message)
    except (OverflowError, ValueError, json_format.ParseError):
        message.string_value = str(value)


def _json_value(value: Any) -> Any:
    """``value`` as plain JSON: what JSON cannot hold as its ``str()``, non-finite numbers
    as null; the whole value's ``str()`` when it cannot be walked (a cycle, a tuple key)."""
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)
    return json.loads(text, parse_constant=lambda _: None)
