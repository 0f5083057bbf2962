# Generated from errord/decide/classify by clients/python/genproto.py; never edit.
"""The names and numbers failures carry: exception type names and service error codes,
HTTP statuses and gRPC status names, each with the code it implies.
"""

from __future__ import annotations

from errord_client._classify.rules import PERMANENT, Rule, rule
from errord_client.classify_model import ErrorCode, Fault

# Exception type names, and service error codes quoted in messages (AWS's are type names).
EXCEPTION_TYPES: tuple[Rule, ...] = (
    rule("tls_setup", ("certverification", "certificate"), ErrorCode.CONNECTION, PERMANENT),
    rule(
        "invalid_url",
        (
            "invalidurl",
            "missingschema",
            "invalidschema",
            "unsupportedprotocol",
            "nonhttpurl",
            "urlrequired",
            "locationparse",
        ),
        ErrorCode.INVALID_INPUT,
    ),
    rule("unexpected_content", ("contenttypeerror",), ErrorCode.UNKNOWN),
    rule("timeout", ("timeout", "timedout", "deadlineexceeded"), ErrorCode.TIMEOUT),
    rule(
        "rate_limit",
        (
            "ratelimit",
            "toomanyrequests",
            "throttl",
            "resourceexhausted",
            "throughputexceeded",
            "limitexceeded",
            "quotaexceeded",
            "slowdown",
        ),
        ErrorCode.RATE_LIMITED,
    ),
    rule(
        "auth",
        (
            "auth",
            "permission",
            "forbidden",
            "credential",
            "accessdenied",
            "unauthori[sz]ed",
            "token",
            "signature",
        ),
        ErrorCode.AUTH,
    ),
    rule(
        "connection",
        (
            "connect",
            "brokenpipe",
            "network",
            "socket",
            "gaierror",
            "disconnect",
            "remoteprotocol",
            "proxy",
            "ssl",
        ),
        ErrorCode.CONNECTION,
    ),
    rule("not_found", ("notfound", "nosuch"), ErrorCode.NOT_FOUND),
    rule("unsupported", ("notimplemented", "unsupported", "unimplemented"), ErrorCode.UNSUPPORTED),
    rule(
        "unavailable",
        ("unavailable", "overload", "badgateway", "serverbusy"),
        ErrorCode.UNAVAILABLE,
    ),
    rule("contention", ("deadlock", "serialization", "conflict"), ErrorCode.UNAVAILABLE),
    rule(
        "validation",
        (
            "validation",
            "valueerror",
            "typeerror",
            "invalid",
            "badrequest",
            "unprocessable",
            "malformed",
        ),
        ErrorCode.INVALID_INPUT,
    ),
)

HTTP_STATUS_CODES: dict[int, ErrorCode] = {
    400: ErrorCode.INVALID_INPUT,
    401: ErrorCode.AUTH,
    403: ErrorCode.AUTH,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.UNSUPPORTED,
    406: ErrorCode.UNSUPPORTED,
    408: ErrorCode.TIMEOUT,
    409: ErrorCode.UNAVAILABLE,  # a concurrent request holds the resource: SDKs retry it
    410: ErrorCode.NOT_FOUND,
    413: ErrorCode.INVALID_INPUT,  # the same request will be as large next time
    415: ErrorCode.UNSUPPORTED,
    422: ErrorCode.INVALID_INPUT,
    423: ErrorCode.UNAVAILABLE,  # locked, for now
    424: ErrorCode.UNAVAILABLE,  # a dependency of the service failed
    425: ErrorCode.UNAVAILABLE,  # too early: retry once the handshake is done
    429: ErrorCode.RATE_LIMITED,
    499: ErrorCode.UNKNOWN,  # the client closed the request: says nothing of the cause
    500: ErrorCode.UNKNOWN,
    501: ErrorCode.UNSUPPORTED,
    502: ErrorCode.UNAVAILABLE,
    503: ErrorCode.UNAVAILABLE,
    504: ErrorCode.TIMEOUT,
    505: ErrorCode.UNSUPPORTED,
    # Cloudflare's origin errors, and Anthropic's overload
    520: ErrorCode.UNAVAILABLE,
    521: ErrorCode.UNAVAILABLE,
    522: ErrorCode.TIMEOUT,
    523: ErrorCode.UNAVAILABLE,
    524: ErrorCode.TIMEOUT,
    525: ErrorCode.UNAVAILABLE,
    526: ErrorCode.UNAVAILABLE,
    529: ErrorCode.UNAVAILABLE,
    530: ErrorCode.UNAVAILABLE,
}

HTTP_STATUS_FAULTS: dict[int, Fault] = {
    402: Fault.PERSON,  # Payment Required: a card declined, a bill or a quota to settle
}
"""Statuses that say who can act, whatever their code says (errord.decide.classify.fault)."""

GRPC_STATUS_CODES: dict[str, ErrorCode] = {
    "CANCELLED": ErrorCode.UNKNOWN,
    "UNKNOWN": ErrorCode.UNKNOWN,
    "INVALID_ARGUMENT": ErrorCode.INVALID_INPUT,
    "DEADLINE_EXCEEDED": ErrorCode.TIMEOUT,
    "NOT_FOUND": ErrorCode.NOT_FOUND,
    "ALREADY_EXISTS": ErrorCode.INVALID_INPUT,
    "PERMISSION_DENIED": ErrorCode.AUTH,
    "RESOURCE_EXHAUSTED": ErrorCode.RATE_LIMITED,
    "FAILED_PRECONDITION": ErrorCode.INVALID_INPUT,
    "ABORTED": ErrorCode.UNAVAILABLE,  # a concurrency conflict: retry (gRPC status codes)
    "OUT_OF_RANGE": ErrorCode.INVALID_INPUT,
    "UNIMPLEMENTED": ErrorCode.UNSUPPORTED,
    "INTERNAL": ErrorCode.UNKNOWN,
    "UNAVAILABLE": ErrorCode.UNAVAILABLE,
    "DATA_LOSS": ErrorCode.UNKNOWN,
    "UNAUTHENTICATED": ErrorCode.AUTH,
}
