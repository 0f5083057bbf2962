"""The bearer token: read from a file, required of callers by a server interceptor.

Which calls need it depends on the listener:

    service                              TCP      unix socket
    grpc.health.v1.Health                open     open
    errord.v1.OperatorService            token    token
    everything else (ErrorHandlerService,
      reflection)                        token    open

Health stays open so that probes and orchestrators need no secret. On TCP the
reflection service needs the token too: an unauthenticated peer learns nothing
but whether errord is up. On a unix socket the file's mode and group already
decide who connects, so only the admin RPCs ask for more.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health

from errord.errors import ConfigError
from errord.wire import operator

MISSING = "missing bearer token: send metadata authorization: Bearer <token>"
INVALID = "invalid bearer token"
TOKEN_CHARACTERS = frozenset(chr(code) for code in range(0x21, 0x7F))
"""Printable ASCII without spaces: what a gRPC metadata value carries after "Bearer "."""

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]]


def read_token(path: Path) -> str:
    """The token in ``path``, stripped; a ConfigError naming the file if there is none."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ConfigError(f"token_file: cannot read {path}: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise ConfigError(f"token_file: {path} is not UTF-8 text") from error
    if not token:
        raise ConfigError(f"token_file: {path} is empty")
    if not TOKEN_CHARACTERS.issuperset(token):
        raise ConfigError(
            f"token_file: {path}: the token must be printable ASCII without spaces "
            "(it travels in a gRPC metadata value)"
        )
    return token


def requires_token(service: str, *, unix: bool) -> bool:
    """Whether a call to ``service`` must present the token (the table above)."""
    if service == health.SERVICE_NAME:
        return False
    return service == operator.SERVICE_NAME or not unix


def check_bearer(metadata: Sequence[tuple[str, Any]], token: str) -> str | None:
    """Why ``metadata`` does not carry ``token``, or None when it does."""
    values = [value for key, value in metadata if key == "authorization"]
    if not values:
        return MISSING
    scheme, _, presented = str(values[0]).partition(" ")
    if scheme.lower() != "bearer":
        return MISSING
    # bytes: compare_digest refuses str with non-ASCII characters.
    if not hmac.compare_digest(presented.strip().encode(), token.encode()):
        return INVALID
    return None


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped
    """Answers UNAUTHENTICATED, before the handler runs, to calls without the token."""

    def __init__(self, token: str, *, unix: bool) -> None:
        self._token = token
        self._unix = unix

    async def intercept_service(
        self, continuation: Continuation, details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        service = str(details.method).lstrip("/").partition("/")[0]
        if handler is None or not requires_token(service, unix=self._unix):
            return handler
        problem = check_bearer(details.invocation_metadata or (), self._token)
        return handler if problem is None else refusal(handler, problem)


def refusal(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same shape as ``handler`` that only aborts UNAUTHENTICATED.

    It decodes nothing: requests stay bytes. grpc.aio runs a coroutine handler for
    streaming responses too, so one coroutine serves all four shapes.
    """

    async def refuse(request: object, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    shapes = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }
    build = shapes[(bool(handler.request_streaming), bool(handler.response_streaming))]
    return build(refuse)
