"""Failure -> classification: normalize the cause, then let the manifest override.

Normalization takes the executor's code when it gives one, else infers it from
the HTTP status, the exception type and the message (in that order), else
UNKNOWN. The default class of each code follows the seeds: timeouts, connection
faults, 429, 503 and unknown errors are transient; everything the caller got
wrong, or that does not exist, is permanent. The first manifest rule matching
the failure overrides the default class. Every result names the rule it used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from errord.decide.model import Classification, ErrorClass, ErrorCode, ToolFailure
from errord.manifests.model import ClassificationRule

TRANSIENT, PERMANENT = ErrorClass.TRANSIENT, ErrorClass.PERMANENT

DEFAULT_CLASSES: dict[ErrorCode, ErrorClass] = {
    ErrorCode.TIMEOUT: TRANSIENT,
    ErrorCode.CONNECTION: TRANSIENT,
    ErrorCode.RATE_LIMITED: TRANSIENT,
    ErrorCode.UNAVAILABLE: TRANSIENT,
    ErrorCode.UNKNOWN: TRANSIENT,
    ErrorCode.INVALID_INPUT: PERMANENT,
    ErrorCode.AUTH: PERMANENT,
    ErrorCode.NOT_FOUND: PERMANENT,
    ErrorCode.UNSUPPORTED: PERMANENT,
    ErrorCode.TOOL_NOT_FOUND: PERMANENT,
    ErrorCode.SCHEMA_VIOLATION: PERMANENT,
}

HTTP_STATUS_CODES: dict[int, ErrorCode] = {
    400: ErrorCode.INVALID_INPUT,
    401: ErrorCode.AUTH,
    403: ErrorCode.AUTH,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.UNSUPPORTED,
    408: ErrorCode.TIMEOUT,
    410: ErrorCode.NOT_FOUND,
    422: ErrorCode.INVALID_INPUT,
    429: ErrorCode.RATE_LIMITED,
    501: ErrorCode.UNSUPPORTED,
    502: ErrorCode.UNAVAILABLE,
    503: ErrorCode.UNAVAILABLE,
    504: ErrorCode.TIMEOUT,
}

EXCEPTION_PATTERNS: tuple[tuple[str, re.Pattern[str], ErrorCode], ...] = (
    ("timeout", re.compile(r"Timeout|TimedOut", re.IGNORECASE), ErrorCode.TIMEOUT),
    (
        "connection",
        re.compile(r"Connect|BrokenPipe|Network|Socket", re.IGNORECASE),
        ErrorCode.CONNECTION,
    ),
    (
        "rate_limit",
        re.compile(r"RateLimit|TooManyRequests|Throttl", re.IGNORECASE),
        ErrorCode.RATE_LIMITED,
    ),
    ("auth", re.compile(r"Auth|Permission|Forbidden|Credential", re.IGNORECASE), ErrorCode.AUTH),
    ("not_found", re.compile(r"NotFound|FileNotFound|NoSuch", re.IGNORECASE), ErrorCode.NOT_FOUND),
    (
        "unsupported",
        re.compile(r"NotImplemented|Unsupported", re.IGNORECASE),
        ErrorCode.UNSUPPORTED,
    ),
    (
        "validation",
        re.compile(r"Validation|ValueError|TypeError|InvalidInput|BadRequest", re.IGNORECASE),
        ErrorCode.INVALID_INPUT,
    ),
)

# 003's patterns for auth and rate limits, with the other seed categories beside them.
# Rate limits come before auth so that "429 Too Many Requests (api key ...)" is a rate limit.
MESSAGE_PATTERNS: tuple[tuple[str, re.Pattern[str], ErrorCode], ...] = (
    (
        "rate_limit",
        re.compile(r"rate.?limit|too many requests|\b429\b|quota", re.IGNORECASE),
        ErrorCode.RATE_LIMITED,
    ),
    (
        "auth",
        re.compile(r"authenticat|unauthori[sz]ed|api.?key|forbidden|\b40[13]\b", re.IGNORECASE),
        ErrorCode.AUTH,
    ),
    ("timeout", re.compile(r"time[sd]?.?out|deadline exceeded", re.IGNORECASE), ErrorCode.TIMEOUT),
    (
        "connection",
        re.compile(
            r"connection (reset|refused|aborted|closed|error)|"
            r"network (error|unreachable)|broken pipe",
            re.IGNORECASE,
        ),
        ErrorCode.CONNECTION,
    ),
    (
        "unavailable",
        re.compile(
            r"\b50[23]\b|service unavailable|temporarily unavailable|"
            r"bad gateway",
            re.IGNORECASE,
        ),
        ErrorCode.UNAVAILABLE,
    ),
    (
        "not_found",
        re.compile(r"\b404\b|not found|does not exist|no such", re.IGNORECASE),
        ErrorCode.NOT_FOUND,
    ),
    (
        "unsupported",
        re.compile(r"not supported|unsupported|not implemented", re.IGNORECASE),
        ErrorCode.UNSUPPORTED,
    ),
    (
        "invalid_input",
        re.compile(
            r"\binvalid\b|\b400\b|malformed|missing (required )?"
            r"param|validation",
            re.IGNORECASE,
        ),
        ErrorCode.INVALID_INPUT,
    ),
)


def normalize(failure: ToolFailure) -> tuple[ErrorCode, str]:
    """The failure's normalized code and the default rule that found it."""
    if failure.code is not None and failure.code is not ErrorCode.UNKNOWN:
        return failure.code, f"default:code:{failure.code.value}"
    if failure.http_status is not None:
        code = http_status_code(failure.http_status)
        if code is not None:
            return code, f"default:http_status:{failure.http_status}"
    for name, pattern, code in EXCEPTION_PATTERNS:
        if failure.exception_type and pattern.search(failure.exception_type):
            return code, f"default:exception_type:{name}"
    for name, pattern, code in MESSAGE_PATTERNS:
        if pattern.search(failure.message):
            return code, f"default:message:{name}"
    return ErrorCode.UNKNOWN, "default:unknown"


def http_status_code(status: int) -> ErrorCode | None:
    """The code an HTTP status implies: the table, else any 4xx is the caller's fault."""
    if status in HTTP_STATUS_CODES:
        return HTTP_STATUS_CODES[status]
    if 400 <= status < 500:
        return ErrorCode.INVALID_INPUT
    if 500 <= status < 600:
        return ErrorCode.UNKNOWN
    return None


def classify(
    failure: ToolFailure, rules: Sequence[ClassificationRule] = (), tool: str = ""
) -> Classification:
    """Classify ``failure``: the first matching rule of ``tool``'s manifest, else the default."""
    code, default_rule = normalize(failure)
    for index, rule in enumerate(rules):
        if rule.matches(failure, code):
            return Classification(
                rule.error_class, code, f"manifest:{tool}:classification[{index}]"
            )
    return Classification(DEFAULT_CLASSES[code], code, default_rule)
