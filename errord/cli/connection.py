"""How the operator commands reach a running daemon: its address, TLS, the bearer token, the
calls.

``Daemon`` wraps one gRPC channel, over TLS when ``ClientTLS`` files were given
(errord.cli.tls). Every call carries the ``authorization: Bearer TOKEN``
metadata when a token was given, and every failed call becomes a
``CommandError`` holding the daemon's status code and message, which the
command prints instead of a traceback.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc
from errord_client.v1 import errord_pb2_grpc
from google.protobuf import message
from grpc_health.v1 import health_pb2_grpc

from errord.cli.tls import ClientTLS, unreachable
from errord.config import Settings
from errord.errors import ErrordError

CALL_TIMEOUT = 10.0
"""Seconds a unary call may take unless ``--timeout`` says otherwise."""

_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]"}

Response = TypeVar("Response", bound=message.Message)


class CommandError(ErrordError):
    """An operator command cannot do what it was asked: the daemon refused the call or does
    not answer, or a file the command was given cannot be read. The message is what the
    operator reads after ``errord:``."""

    def __init__(self, text: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(text)
        self.code = code
        """The daemon's status code; None when the command failed before calling."""


def grpc_target(address: str) -> str:
    """``address`` as gRPC takes it: a path with a ``/`` is a unix socket (``unix:PATH``);
    ``unix:PATH``, other gRPC URIs and ``host:port`` are kept as they are."""
    if "/" not in address or _URI_SCHEME.match(address):
        return address
    return f"unix:{os.path.expanduser(address)}"


def default_target(config: Path | None) -> str:
    """Where a daemon configured by ``config`` (or by the embedded defaults) answers.

    A wildcard listen address (``0.0.0.0``, ``[::]``) is reached over loopback.
    Raises ConfigError for an unreadable or invalid settings file.
    """
    return listen_target(configured(config).listen)


def configured(config: Path | None) -> Settings:
    """The settings of the file ``config``, else the embedded defaults; raises ConfigError
    for an unreadable or invalid file."""
    return Settings.from_toml(config) if config else Settings()


def listen_target(listen: str) -> str:
    """Where a daemon listening on ``listen`` answers: a wildcard host over loopback."""
    host, colon, port = listen.rpartition(":")
    if colon and host in _WILDCARD_HOSTS:
        listen = f"{_WILDCARD_HOSTS[host]}:{port}"
    return grpc_target(listen)


def read_token(path: Path) -> str:
    """The bearer token in ``path``, without surrounding whitespace."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise CommandError(f"cannot read token file {path}: {reason}") from None
    if not token:
        raise CommandError(f"token file {path} is empty")
    if not all("!" <= character <= "~" for character in token):
        raise CommandError(f"token file {path}: the token must be printable ASCII, no spaces")
    return token


class Daemon:
    """A channel to a running errord, over TLS with ``tls``; each call carries the token and
    the timeout."""

    def __init__(
        self,
        target: str,
        *,
        token: str | None = None,
        token_source: str = "",
        timeout: float = CALL_TIMEOUT,
        tls: ClientTLS | None = None,
    ) -> None:
        self.target = target
        self.timeout = timeout
        self.tls = tls
        self.token_source = token_source if token else ""
        """Where the token sent was read, for an UNAUTHENTICATED answer; "" when none was."""
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._channel = _channel(target, tls)
        self.errors: Any = errord_pb2_grpc.ErrorHandlerServiceStub(self._channel)
        self.operators: Any = errord_pb2_grpc.OperatorServiceStub(self._channel)
        self.health: Any = health_pb2_grpc.HealthStub(self._channel)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._channel.close()

    def call(self, method: Callable[..., Response], request: message.Message) -> Response:
        """A unary ``method`` of one of the stubs, called with ``request``."""
        try:
            return method(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise self._failure(error) from None

    def stream(
        self, method: Callable[..., Iterator[Response]], request: message.Message
    ) -> Iterator[Response]:
        """The responses of a server-streaming ``method``, without a deadline; the call is
        cancelled when the iterator is closed."""
        call: Any = method(request, metadata=self._metadata)
        try:
            yield from call
        except grpc.RpcError as error:
            raise self._failure(error) from None
        finally:
            call.cancel()

    def _failure(self, error: grpc.RpcError) -> CommandError:
        if not isinstance(error, grpc.Call):
            return CommandError(f"UNKNOWN: {error}")
        code, details = error.code(), error.details()
        if code is grpc.StatusCode.UNAVAILABLE:
            details = unreachable(self.target, details, self.tls)
        elif code is grpc.StatusCode.UNAUTHENTICATED:  # say it in the command's words
            details = unauthenticated(details.partition(":")[0], self.token_source)
        return CommandError(f"{code.name}: {details}", code)


def unauthenticated(refusal: str, token_source: str) -> str:
    """What an operator command says when the daemon wants another token than it sent:
    the daemon's words, which token was sent, and how to give the right one."""
    sent = (
        f"the token sent ({token_source}) is not this daemon's"
        if token_source
        else "no token was found to send"
    )
    return (
        f"{refusal}: {sent}; give --config FILE, this daemon's settings (the commands send "
        "its token_file, or the operator.token beside its db), or --token-file FILE "
        "('errord token --config FILE' prints the operator token)"
    )


def _channel(target: str, tls: ClientTLS | None) -> grpc.Channel:
    if tls is None:
        return grpc.insecure_channel(target)
    if target.startswith("unix:"):
        raise CommandError(
            f"{target} is a unix socket, and errord serves TLS on TCP only: leave out "
            "--tls-ca, --tls-cert and --tls-key (and the config's [client] table)"
        )
    return grpc.secure_channel(target, tls.credentials())
