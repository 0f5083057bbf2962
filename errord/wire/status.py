"""Errors to gRPC statuses, and method handlers that answer every error with one.

Every expected failure maps to a status code through ``STATUS_CODES``; anything else
is a bug, logged with its traceback and answered INTERNAL — never UNKNOWN. What an
answer carries stays small: at most ``MAX_VIOLATIONS`` field violations, each cut to
``MAX_DESCRIPTION_BYTES``, all within ``TRAILER_BUDGET`` bytes of trailers, so that
no client refuses them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

import grpc
from google.protobuf import any_pb2, message
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from errord.errors import (
    ErrordError,
    FieldViolation,
    InvalidRequest,
    NoManifestDirectory,
    ReportConflict,
    StoreError,
    ToolNotFound,
    TurnClosed,
    TurnNotFound,
    WatcherFellBehind,
)
from errord.limits import LimitExceeded

log = logging.getLogger(__name__)

STATUS_CODES: dict[type[ErrordError], grpc.StatusCode] = {
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    TurnNotFound: grpc.StatusCode.NOT_FOUND,
    ToolNotFound: grpc.StatusCode.NOT_FOUND,
    ReportConflict: grpc.StatusCode.ALREADY_EXISTS,
    TurnClosed: grpc.StatusCode.FAILED_PRECONDITION,
    NoManifestDirectory: grpc.StatusCode.FAILED_PRECONDITION,
    WatcherFellBehind: grpc.StatusCode.RESOURCE_EXHAUSTED,
    LimitExceeded: grpc.StatusCode.RESOURCE_EXHAUSTED,
    StoreError: grpc.StatusCode.UNAVAILABLE,
}
MAX_VIOLATIONS = 20
"""Field violations one answer lists; a last one counts the rest."""
MAX_DESCRIPTION_BYTES = 256
"""UTF-8 bytes of a violation's field, and of its description, beyond which they are cut."""
MAX_MESSAGE_BYTES = 1024
"""UTF-8 bytes of any other error's message, beyond which it is cut."""
TRAILER_BUDGET = 4096
"""Bytes the status message and its details may take in the trailers (grpc clients refuse
trailers beyond 8 KiB, and then see RESOURCE_EXHAUSTED instead of the status)."""


def status_for(error: Exception) -> status_pb2.Status:
    """The google.rpc.Status answering ``error``."""
    code = next(
        (status for kind, status in STATUS_CODES.items() if isinstance(error, kind)),
        grpc.StatusCode.INTERNAL,
    )
    violations: list[FieldViolation] = []
    if code is grpc.StatusCode.INTERNAL:
        log.error("bug while serving a request", exc_info=error)
        text = "internal error in errord; the daemon logged it"
    elif isinstance(error, InvalidRequest):
        violations = shown(error.violations)
        text = str(InvalidRequest(violations))
    else:
        text = cut(str(error), MAX_MESSAGE_BYTES)
    status = status_pb2.Status(code=code.value[0], message=text)
    if violations:
        status.details.append(bad_request(violations))
    return status


def shown(violations: Sequence[FieldViolation]) -> list[FieldViolation]:
    """The violations an answer lists: the first ones, cut, within MAX_VIOLATIONS and
    TRAILER_BUDGET; then one (field ``request``) saying how many more there are."""
    listed: list[FieldViolation] = []
    spent = 0
    for index, violation in enumerate(violations):
        field = cut(violation.field, MAX_DESCRIPTION_BYTES)
        description = cut(violation.description, MAX_DESCRIPTION_BYTES)
        cost = trailer_bytes(field) + trailer_bytes(description) + 8
        full = index == MAX_VIOLATIONS or spent + cost > TRAILER_BUDGET - 200
        if full and listed:
            more = len(violations) - index
            listed.append(FieldViolation("request", f"and {more} more, not listed"))
            break
        listed.append(FieldViolation(field, description))
        spent += cost
    return listed


def trailer_bytes(text: str) -> int:
    """Bytes ``text`` takes in the trailers, at most: percent-encoded in grpc-message (bytes
    outside printable ASCII, and %, take three) and base64-encoded in the details."""
    data = text.encode()
    escaped = sum(1 for byte in data if not 0x20 <= byte <= 0x7E or byte == 0x25)
    return len(data) + 2 * escaped + (len(data) * 4 + 2) // 3


def cut(text: str, limit: int) -> str:
    """``text``, or as much of it as fits ``limit`` UTF-8 bytes with an ellipsis."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: limit - len("…".encode())].decode(errors="ignore") + "…"


def bad_request(violations: Sequence[FieldViolation]) -> any_pb2.Any:
    detail = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
            for v in violations
        ]
    )
    packed = any_pb2.Any()
    packed.Pack(detail)
    return packed


async def abort(context: grpc.aio.ServicerContext[Any, Any], error: Exception) -> None:
    await context.abort_with_status(rpc_status.to_status(status_for(error)))


Handle: TypeAlias = Callable[[bytes], Awaitable[message.Message]]
"""A unary method: the request's bytes in, the response out; it raises what it refuses."""


def answering(handle: Handle) -> Callable[[bytes, Any], Awaitable[message.Message]]:
    """``handle`` as grpc calls it, any error it raises answered with its status code."""

    async def method(data: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> message.Message:
        try:
            return await handle(data)
        except Exception as error:  # every error is answered with a status, never UNKNOWN
            await abort(context, error)
            raise AssertionError("unreachable: abort raises") from error

    return method


InContext: TypeAlias = Callable[
    [bytes, grpc.aio.ServicerContext[Any, Any]], Awaitable[message.Message]
]
"""A unary method that also reads its call's context (its metadata: the caller's trace)."""


def answering_in_context(handle: InContext) -> Callable[[bytes, Any], Awaitable[message.Message]]:
    """``handle`` as grpc calls it, given the call's context; errors answered as ``answering``'s."""

    async def method(data: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> message.Message:
        try:
            return await handle(data, context)
        except Exception as error:  # every error is answered with a status, never UNKNOWN
            await abort(context, error)
            raise AssertionError("unreachable: abort raises") from error

    return method


def unary_handlers(
    table: Mapping[str, tuple[Handle, type[message.Message]]],
    in_context: Mapping[str, tuple[InContext, type[message.Message]]] | None = None,
) -> dict[str, grpc.RpcMethodHandler]:
    """A method handler for each method of ``table`` (name: handle and response type), and
    of ``in_context`` (handles that read the call's context); requests arrive as bytes,
    responses are serialized here."""
    methods = {name: (answering(handle), response) for name, (handle, response) in table.items()}
    for name, (contextual, response) in (in_context or {}).items():
        methods[name] = (answering_in_context(contextual), response)
    return {
        name: grpc.unary_unary_rpc_method_handler(
            method, response_serializer=response.SerializeToString
        )
        for name, (method, response) in methods.items()
    }
