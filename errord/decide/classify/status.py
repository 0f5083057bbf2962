"""Where a message says that a number is an HTTP status, and which status it says.

A number is a status only where the text says so: after a word that names it ("HTTP 503",
"HTTP/1.1 503", "status code: 429", "Status Code: 503", "Error 401:", "error code 500",
"Response 502:", ``"code": 429`` in a JSON error body), before its own reason phrase
("503 Service Unavailable", "520: Web server is returning an unknown error"), or in the
forms HTTP libraries print:

- requests: ``404 Client Error: Not Found for url: ...``;
- httpx: ``Client error '404 Not Found' for url '...'``;
- aiohttp: ``404, message='Not Found', url='...'``;
- urllib: ``HTTP Error 404: Not Found``; urllib3: ``ResponseError('too many 503 error
  responses')``;
- the OpenAI and Anthropic SDKs: ``Error code: 429 - {...}``;
- botocore: ``'HTTPStatusCode': 503`` in a response, and ``An error occurred (503) when
  calling ...`` for a response without an error code;
- googleapiclient: ``<HttpError 403 when requesting ...``; google.api_core: ``403 GET
  https://...: ...``; PyGithub: ``403 {"message": ...}``.

Any other number is something else: a row count, a request id, a port, a line number, a
price, a size, a duration. The forms are one pattern over the ``searchable`` (lowercased)
text. Every alternative starts with a literal character, so that the engine skips to
where one can start, and ends with the status's three digits.
"""

from __future__ import annotations

import re

from errord.decide.classify.rules import literal_first

REASON_PHRASES: dict[int, tuple[str, ...]] = {
    # RFC 9110 section 15 and the IANA registry, with the older names servers still send
    400: ("bad request",),
    401: ("unauthorized",),
    402: ("payment required",),
    403: ("forbidden",),
    404: ("not found",),
    405: ("method not allowed",),
    406: ("not acceptable",),
    407: ("proxy authentication required",),
    408: ("request timeout", "request time-out"),
    409: ("conflict",),
    410: ("gone",),
    411: ("length required",),
    412: ("precondition failed",),
    413: ("content too large", "payload too large", "request entity too large"),
    414: ("uri too long", "request-uri too long"),
    415: ("unsupported media type",),
    416: ("range not satisfiable", "requested range not satisfiable"),
    417: ("expectation failed",),
    418: ("i'm a teapot",),
    421: ("misdirected request",),
    422: ("unprocessable content", "unprocessable entity"),
    423: ("locked",),
    424: ("failed dependency",),
    425: ("too early",),
    426: ("upgrade required",),
    428: ("precondition required",),
    429: ("too many requests",),
    431: ("request header fields too large",),
    451: ("unavailable for legal reasons",),
    499: ("client closed request",),  # nginx
    500: ("internal server error",),
    501: ("not implemented",),
    502: ("bad gateway",),
    503: ("service unavailable", "service temporarily unavailable"),  # the second: nginx
    504: ("gateway timeout", "gateway time-out"),  # the second: nginx
    505: ("http version not supported",),
    506: ("variant also negotiates",),
    507: ("insufficient storage",),
    508: ("loop detected",),
    510: ("not extended",),
    511: ("network authentication required",),
    # Cloudflare's error pages: "<title>example.com | 520: Web server is returning ..."
    520: ("web server is returning an unknown error",),
    521: ("web server is down",),
    522: ("connection timed out",),
    523: ("origin is unreachable",),
    524: ("a timeout occurred",),
    525: ("ssl handshake failed",),
    526: ("invalid ssl certificate",),
}
"""The reason phrases that may follow each status, lowercase."""

NAMED_FORMS: tuple[tuple[str, str], ...] = (
    # "http 503", "http/1.1 503", "http error 404:", "[http 400]", "httperror 403",
    # "http status code: 503", "'httpstatuscode': 503", ".../web/http/status/404"
    (r"https?(?:/\d(?:\.\d)?)?(?:[ _/]?(?:error|status|response|code))*[ :=#(\[/'\"]{0,3}", ""),
    # "status code: 429", "status: 404", "statuscode: 400", '"status": "401"',
    # "with status code 404", "responded with a status of 503"
    (r"status(?:[ _]?code)?(?: of)?['\"]?[ :=(]{0,3}['\"]?", ""),
    # "error 401:", "error code 500", "error code: 429 - {", "client error '404",
    # "returned error: 500", "api error (529 {", '"error_code":404'
    (r"error(?:[ _]?code)?['\"]?[ :=#('\"]{0,3}", ""),
    # "response 502:", "response code 503", "invalid response from gios api: 503" (the name
    # before the colon has no digit: "response from 10.0.0.7:443" quotes no status)
    (r"response(?:[ _]?(?:code|status)| from [a-z][a-z .'_-]{0,40}(?=:))?[ :=(]{0,3}", ""),
    # a JSON error body: '"code": 429', "'code': '429'"
    (r"c(?<=[\"']c)ode[\"'] ?: ?[\"']?", ""),
    (r"an error occurred \(", r"(?=\))"),
)
"""The words before a number that name it a status, and what must follow it."""

LIBRARY_SUFFIXES = "|".join(
    (
        r" (?:client|server) error: ",  # requests
        r", message=",  # aiohttp
        r" error responses",  # urllib3
        r" (?:get|head|post|put|patch|delete|options) https?://",  # google.api_core
        r" \{\"",  # PyGithub
    )
)
"""What a library prints after a status it puts first."""


def quoted_status_forms(first: str, rest: str) -> tuple[str, ...]:
    r"""Regexes that say a number is an HTTP status, each ending with the number: one of
    the digits ``first`` then ``rest`` (``"45", r"\d\d"`` for any; ``"4", "29"`` for 429).
    Those that start with the number start with a literal digit, for the engine to skip to."""
    status = (first if len(first) == 1 else f"[{first}]") + rest + r"\b"
    return (
        *(before + status + after for before, after in NAMED_FORMS),
        *(literal_first(rf"\b{digit}{rest}\b(?={LIBRARY_SUFFIXES})") for digit in first),
    )


def status_before_its_reason(first: str) -> str:
    """The statuses starting with digit ``first`` before one of their reason phrases."""
    branches = (
        rf"{str(status)[1:]}(?=(?:: | - | )(?:{'|'.join(map(re.escape, phrases))})\b)"
        for status, phrases in REASON_PHRASES.items()
        if str(status).startswith(first)
    )
    return rf"{first}(?<!\w\w)(?:{'|'.join(branches)})"


QUOTED_HTTP_STATUS = re.compile(
    "|".join(
        (
            *quoted_status_forms("45", r"\d\d"),
            status_before_its_reason("4"),
            status_before_its_reason("5"),
        )
    )
)


def quoted_http_status(text: str) -> int | None:
    """The HTTP status ``text``, a ``searchable`` text, says it got, if it says one."""
    match = QUOTED_HTTP_STATUS.search(text)
    return None if match is None else int(match[0][-3:])
