"""The API's own words: what an HTTP error's response body says of the failure.

A status says little: a 400 may be a wrong argument or a revoked key, a 404 a typo in an
id or an endpoint gone. APIs say which in their error body, and ``api_words`` reads it
from the exception a tool raised, never importing the libraries:

- httpx and httpx2 ``HTTPStatusError``, requests ``HTTPError``: the bytes the response
  already holds (``_content``, where all three keep what they read). A streamed response
  that was not read has none, and none is read here: reading could block, or never end.
  At most MAX_BODY_BYTES of it.
- the openai and anthropic SDKs' ``APIStatusError``: its ``body``, the JSON they decoded.
- aiohttp ``ClientResponseError`` holds no body (aiohttp releases the response before it
  raises): its ``message``, when it says more than the status's reason phrase.

A JSON body is read in the shapes APIs use, the first that applies: an ``error`` object
(``{"error": {"message", "param", "code", "type"}}``: Stripe, OpenAI, Anthropic, Google's
``status`` and ``fieldViolations``), an OAuth ``{"error": "invalid_grant",
"error_description"}``, ``errors[]`` (GitHub's ``field``/``code``, GraphQL's ``path`` and
``extensions.code``, JSON:API's ``source``), FastAPI's ``{"detail": [{"loc", "msg",
"type"}]}`` (the parameter is ``loc``'s last name), and flat objects: ``{"detail"}``,
``{"message", "code"}``, RFC 7807's ``{"title", "detail", "invalid-params"}``, a map of
field names to their messages (Django REST framework). A text body gives its first line;
an HTML page (a proxy's error page) gives nothing.
"""

from __future__ import annotations

import http
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

MAX_BODY_BYTES: Final = 16_384
"""Bytes of a response body read at most; a JSON body cut there is not read."""

MAX_NAME_LENGTH: Final = 512
"""Characters of a parameter's name and of an API's error code kept (an identifier's
bound in errord)."""

_MESSAGE_KEYS: Final = (
    "message",
    "error_description",
    "detail",
    "msg",
    "error_message",
    "description",
    "title",
    "error",
)
"""Where an error object keeps its message, the most specific first."""

_PARAMETER_KEYS: Final = ("param", "parameter", "field", "loc", "path", "name")
"""Where an error object names the parameter it is about (``path`` only as a list, as
GraphQL gives it: as a string it is the request's URL path, as Spring Boot sends it)."""

_CODE_KEYS: Final = ("code", "status", "type", "reason", "error")
"""Where an error object keeps the API's own code (a string first: see ``_code``)."""

_JSONRPC_ERRORS: Final[Sequence[tuple[str, str]]] = (
    ("mcp", "MCPError"),
    ("mcp", "McpError"),
    ("errord_client", "MCPProtocolError"),
)
"""Exceptions that are JSON-RPC errors, by top-level package and class name."""

_NOT_FIELDS: Final = frozenset({"non_field_errors", "__all__", "detail", "errors"})
"""Keys of a field-to-messages map that name no field."""


@dataclass(frozen=True, slots=True)
class ApiWords:
    """What an API said of a failure, each part "" when it did not say."""

    message: str = ""
    """Its message: "No such customer: 'cus_123'"."""
    parameter: str = ""
    """The parameter it names: Stripe's ``param``, FastAPI's ``loc``, GitHub's ``field``."""
    code: str = ""
    """Its own error code: "resource_missing", "invalid_api_key", "INVALID_ARGUMENT"."""

    def __bool__(self) -> bool:
        return bool(self.message or self.parameter or self.code)

    def fill(self, other: ApiWords) -> ApiWords:
        """These words, each part missing taken from ``other``."""
        return ApiWords(
            self.message or other.message,
            self.parameter or other.parameter,
            self.code or other.code,
        )


NO_WORDS: Final = ApiWords()


def api_words(error: BaseException) -> ApiWords:
    """What the response body ``error`` holds says (the module's docstring); NO_WORDS when
    it holds none. Never raises: a body is the backend's to write, any shape at all."""
    try:
        return _words(error)
    except Exception:  # an odd attribute or body must not cost the failure its report
        return NO_WORDS


def jsonrpc_error(error: BaseException) -> tuple[int, str] | None:
    """A JSON-RPC error's code and message (the MCP SDK's ``MCPError``, ``McpError`` before
    it, the MCP adapter's ``MCPProtocolError``), None for any other exception."""
    if not any(_is_class(error, package, name) for package, name in _JSONRPC_ERRORS):
        return None
    code = _attribute(error, "code")
    if not isinstance(code, int) or isinstance(code, bool):
        code = _attribute(_attribute(error, "error"), "code")  # mcp 1.x: error.error.code
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    message = _attribute(error, "message")
    if not isinstance(message, str):
        message = _attribute(_attribute(error, "error"), "message")
    message = message if isinstance(message, str) else ""
    data = _attribute(error, "data")
    if data is None:
        data = _attribute(_attribute(error, "error"), "data")
    if isinstance(data, str | dict) and data:  # what it is about: a resource's uri...
        shown = data if isinstance(data, str) else json.dumps(data, default=str)
        message = f"{message} ({shown})" if message else shown
    return code, message


def _words(error: BaseException) -> ApiWords:
    body = _attribute(error, "body")
    if body is not None:
        return body_words(body[:MAX_BODY_BYTES] if isinstance(body, str | bytes) else body)
    content = _attribute(_attribute(error, "response"), "_content")
    if isinstance(content, bytes):
        return body_words(content[:MAX_BODY_BYTES])
    if _is_class(error, "aiohttp", "ClientResponseError"):
        return _reason_words(_attribute(error, "message"), _attribute(error, "status"))
    return NO_WORDS


def body_words(body: Any) -> ApiWords:
    """The words of a body: bytes or text as sent (JSON, or text), or JSON decoded."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str):
        return json_words(body)
    text = body.lstrip("\ufeff \t\r\n")
    if text.startswith("<"):  # HTML or XML: a page, not a message
        return NO_WORDS
    try:
        return json_words(json.loads(text))
    except ValueError:  # text; or JSON cut at MAX_BODY_BYTES, which says nothing sure
        if text.startswith(("{", "[", '"')):
            return NO_WORDS
    return ApiWords(message=text.partition("\n")[0].strip())


def json_words(body: Any) -> ApiWords:
    """The words of a decoded JSON error body, in the shapes the module's docstring lists."""
    if isinstance(body, list) and body:  # some APIs answer a list of errors
        body = body[0]
    if isinstance(body, str):
        return ApiWords(message=body.strip())
    if not isinstance(body, Mapping):
        return NO_WORDS
    inner = body.get("error")
    if isinstance(inner, Mapping):
        return json_words(inner).fill(_object_words(body))
    errors = body.get("errors")
    if isinstance(errors, list) and errors:
        return json_words(errors[0]).fill(_object_words(body))
    detail = body.get("detail")
    if isinstance(detail, list) and detail and isinstance(detail[0], Mapping):
        return _object_words(detail[0])
    return _object_words(body)


def _object_words(error: Mapping[str, Any]) -> ApiWords:
    """The words of one flat error object."""
    message = _message(error)
    parameter = _parameter(error)
    if not message and not parameter:
        return _field_messages(error).fill(ApiWords(code=_code(error)))
    return ApiWords(message, parameter, _code(error))


def _message(error: Mapping[str, Any]) -> str:
    title, detail = error.get("title"), error.get("detail")
    if isinstance(title, str) and isinstance(detail, str) and title and detail:
        if detail.startswith(title):  # RFC 7807: the summary, then this occurrence
            return detail
        return f"{title} {detail}" if title[-1] in ".!?" else f"{title}: {detail}"
    for key in _MESSAGE_KEYS:
        text = _text(error.get(key))
        if text:
            return text
    return ""


def _parameter(error: Mapping[str, Any]) -> str:
    for key in _PARAMETER_KEYS:
        value = error.get(key)
        if (key == "path" and not isinstance(value, list)) or (
            key == "name" and "reason" not in error  # only RFC 7807's invalid-params name
        ):
            continue
        name = _name(value)
        if name:
            return name
    source = error.get("source")  # JSON:API
    if isinstance(source, Mapping):
        return _name(source.get("parameter")) or _name(source.get("pointer"))
    for key in ("invalid-params", "invalid_params", "details", "fieldViolations"):
        items = error.get(key)
        if isinstance(items, list):
            for item in items:
                if isinstance(item, Mapping):
                    name = _parameter(item)
                    if name:
                        return name
    return ""


def _code(error: Mapping[str, Any]) -> str:
    """The API's own code: a string one first (Google's numeric ``code`` is the HTTP
    status, its ``status`` the code), an ``error`` only when it reads as a code
    (OAuth's "invalid_grant", not "Bad Request"), a number last."""
    for key in _CODE_KEYS:
        value = error.get(key)
        if isinstance(value, str) and _is_code(key, value):
            return _short(value)
    extensions = error.get("extensions")  # GraphQL
    if isinstance(extensions, Mapping) and isinstance(extensions.get("code"), str):
        return _short(extensions["code"])
    value = error.get("code")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return ""


def _is_code(key: str, value: str) -> bool:
    """Whether ``value`` of ``key`` reads as an error code: not a status's digits
    (JSON:API's "422"), not RFC 7807's "about:blank", and for ``error`` a code as OAuth
    writes them ("invalid_grant"), not a phrase ("Bad Request", "Unauthorized")."""
    if not value or value.isdigit() or value == "about:blank":
        return False
    if key != "error":
        return True
    bare = value.replace("_", "").replace(".", "").replace("-", "")
    return bare.isalnum() and bare.isascii() and ("_" in value or value == value.lower())


def _field_messages(error: Mapping[str, Any]) -> ApiWords:
    """A map of field names to their messages: the first field, and its first message."""
    for key, value in error.items():
        if isinstance(key, str) and key not in _NOT_FIELDS and isinstance(value, list):
            text = _text(value)
            if text:
                return ApiWords(text, _short(key))
    return NO_WORDS


def _text(value: Any) -> str:
    """A message: a string, or the first string of a list (NestJS sends a list)."""
    if isinstance(value, list) and value:
        value = value[0]
    return value.strip() if isinstance(value, str) else ""


def _name(value: Any) -> str:
    """A parameter's name: a string (a JSON pointer's last segment), or the last name of a
    path (FastAPI's ``loc``: ["body", "customer", 0] names "customer")."""
    if isinstance(value, str):
        return _short(value.rsplit("/", 1)[-1] if value.startswith("/") else value)
    if isinstance(value, list | tuple):
        names = [item for item in value if isinstance(item, str) and item]
        return _short(names[-1]) if names else ""
    return ""


def _short(text: str) -> str:
    """An identifier-like text: on one line, printable characters only (errord shows it in
    logs and texts), at most MAX_NAME_LENGTH characters."""
    line = " ".join(text.split())
    if not line.isprintable():
        line = "".join(character for character in line if character.isprintable())
    return line[:MAX_NAME_LENGTH]


def _reason_words(message: Any, status: Any) -> ApiWords:
    """aiohttp's ``message``: the reason phrase the server sent, unless it is the
    status's own (then it says nothing the status does not)."""
    if not isinstance(message, str) or not message.strip():
        return NO_WORDS
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    if message.strip().lower() == phrase.lower():
        return NO_WORDS
    return body_words(message[:MAX_BODY_BYTES])


def _is_class(error: BaseException, package: str, name: str) -> bool:
    """Whether a class of ``error``'s MRO is ``name`` of the top-level ``package``."""
    return any(
        cls.__name__ == name and cls.__module__.partition(".")[0] == package
        for cls in type(error).__mro__
    )


def _attribute(holder: object, name: str) -> Any:
    try:
        return getattr(holder, name, None)
    except Exception:  # a property of a half-built object may raise
        return None
