"""Who may call: the bearer token of ``token_file``, and the operator's token.

Operator calls change or read what every executor shares: the breakers (reset, forced
open), the manifests (reload, replay), the statistics and memory, and the trace of any
turn (GetTurnTrace, WatchTrace). They always need a credential. Which calls need which
token depends on the settings and the listener:

    calls                                  token_file set        no token_file
                                           TCP      unix socket
    grpc.health.v1.Health                  open     open         open
    operator calls (OperatorService,
      GetTurnTrace, WatchTrace)            token    token        operator token
    every other call (reports, turns,
      admission; reflection)               token    open         open

Without ``token_file``, errord generates an operator token at first start into
``operator.token`` beside its database (mode 0600, or ``operator_token_file``), and
errord's own commands on the same host read it from there: whoever can read that
file is the operator. A token file that others may read, or that another user owns,
is refused, as sshd refuses a loose key.

Health stays open so that probes and orchestrators need no secret. With
``token_file`` on TCP, reflection needs the token too: an unauthenticated peer learns
nothing but whether errord is up. On a unix socket the file's mode and group already
decide who connects, so only the operator calls ask for more.

``token_file`` is checked by a server interceptor (it guards reflection too). The
operator token is checked where grpc looks the method up (``OperatorGate``), so that
the calls it does not guard, reports among them, pay nothing for it.
"""

from __future__ import annotations

import errno
import hmac
import os
import secrets
import stat
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from errord_client.v1 import errord_pb2 as pb
from grpc_health.v1 import health

from errord.errors import ConfigError
from errord.wire import operator, service

MISSING = (
    "missing bearer token: this errord has token_file set; send that token as the header "
    "'authorization: Bearer TOKEN' (the clients' token=, grpcurl -H, errord's commands "
    "--token-file FILE)"
)
INVALID = "invalid bearer token"
OPERATOR_MISSING = (
    "this is an operator call: it needs the operator token, which 'errord token' prints on "
    "the daemon's host (errord's commands find it themselves with --config, or take "
    '--token-file FILE; grpcurl: -H "authorization: Bearer $(errord token)")'
)
OPERATOR_INVALID = "invalid operator token"
TOKEN_CHARACTERS = frozenset(chr(code) for code in range(0x21, 0x7F))
"""Printable ASCII without spaces: what a gRPC metadata value carries after "Bearer "."""
OPERATOR_TOKEN_BYTES = 32
"""Random bytes of a generated operator token (43 characters of URL-safe base64)."""
OPERATOR_METHODS = frozenset(
    {
        *(
            f"/{operator.SERVICE_NAME}/{method.name}"
            for method in pb.DESCRIPTOR.services_by_name["OperatorService"].methods
        ),
        f"/{service.SERVICE_NAME}/GetTurnTrace",
        f"/{service.SERVICE_NAME}/WatchTrace",
    }
)
"""The full names of the calls only the operator may make."""

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]]


def read_token(path: Path) -> str:
    """The token in ``path``, stripped; a ConfigError naming the file if there is none."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ConfigError(f"token_file: cannot read {path}: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise ConfigError(f"token_file: {path} is not UTF-8 text") from error
    return _checked(token, path, "token_file")


def _checked(token: str, path: Path, setting: str) -> str:
    if not token:
        raise ConfigError(f"{setting}: {path} is empty")
    if not TOKEN_CHARACTERS.issuperset(token):
        raise ConfigError(
            f"{setting}: {path}: the token must be printable ASCII without spaces "
            "(it travels in a gRPC metadata value)"
        )
    return token


def operator_token(path: Path) -> str:
    """The operator token kept in ``path``, generated there (mode 0600) when the file does
    not exist. ConfigError, naming ``operator_token_file``, when the file is not a regular
    file of errord's own user that only that user may read and write, or cannot be made."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags, 0o600)
    except FileExistsError:
        return _existing_operator_token(path)
    except OSError as error:
        raise ConfigError(f"operator_token_file: cannot create {path}: {error.strerror}") from error
    token = secrets.token_urlsafe(OPERATOR_TOKEN_BYTES)
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        file.write(token + "\n")
    return token


def _existing_operator_token(path: Path) -> str:
    setting = "operator_token_file"
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ConfigError(
                f"{setting}: {path} is a symbolic link; the operator token must be a file of "
                "its own (delete the link: errord makes a new token at its next start)"
            ) from error
        raise ConfigError(f"{setting}: cannot read {path}: {error.strerror}") from error
    try:
        problem = _loose(os.fstat(descriptor), path)
        if problem:
            raise ConfigError(f"{setting}: {problem}")
        data = os.read(descriptor, 1024)
    finally:
        os.close(descriptor)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{setting}: {path} is not ASCII text") from error
    return _checked(text.strip(), path, setting)


def _loose(info: os.stat_result, path: Path) -> str | None:
    """Why the file ``info`` describes cannot hold the operator's secret, or None."""
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is not a regular file"
    if info.st_uid != os.geteuid():
        return (
            f"{path} belongs to uid {info.st_uid}, not to errord's user (uid {os.geteuid()}): "
            "whoever wrote it knows the token; delete it, and errord makes a new one at its "
            "next start"
        )
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        return (
            f"{path} is mode {mode:04o}: others may read or change the operator token; run "
            f"chmod 600 {path} (or delete it for a new token)"
        )
    return None


def requires_token(method: str, *, unix: bool) -> bool:
    """Whether the call ``method`` (``/service/Method``) must present ``token_file``'s token
    (the table above)."""
    service_name = method.lstrip("/").partition("/")[0]
    if service_name == health.SERVICE_NAME:
        return False
    return method in OPERATOR_METHODS or not unix


def check_bearer(
    metadata: Sequence[tuple[str, Any]],
    token: str,
    missing: str = MISSING,
    invalid: str = INVALID,
) -> str | None:
    """Why ``metadata`` does not carry ``token`` (``missing`` or ``invalid``), or None when
    it does."""
    values = [value for key, value in metadata if key == "authorization"]
    if not values:
        return missing
    scheme, _, presented = str(values[0]).partition(" ")
    if scheme.lower() != "bearer":
        return missing
    # bytes: compare_digest refuses str with non-ASCII characters.
    if not hmac.compare_digest(presented.strip().encode(), token.encode()):
        return invalid
    return None


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped
    """Answers UNAUTHENTICATED, before the handler runs, to calls without ``token_file``'s
    token."""

    def __init__(self, token: str, *, unix: bool) -> None:
        self._token = token
        self._unix = unix

    async def intercept_service(
        self, continuation: Continuation, details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        if handler is None or not requires_token(str(details.method), unix=self._unix):
            return handler
        problem = check_bearer(details.invocation_metadata or (), self._token)
        return handler if problem is None else refusal(handler, problem)


class OperatorGate(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpc is untyped
    """``handler``'s operator calls refused UNAUTHENTICATED, before they run, to callers
    without the operator token; its other calls as they are."""

    def __init__(self, handler: grpc.GenericRpcHandler, token: str) -> None:
        self._handler = handler
        self._token = token

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        found = self._handler.service(details)
        if found is None or details.method not in OPERATOR_METHODS:
            return found
        metadata = details.invocation_metadata or ()
        problem = check_bearer(metadata, self._token, OPERATOR_MISSING, OPERATOR_INVALID)
        return found if problem is None else refusal(found, problem)


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
