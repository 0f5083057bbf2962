"""The grpc.aio server: errord's services, the standard health service, reflection."""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from errord.config import Settings
from errord.errors import ListenError
from errord.limits import Limits
from errord.wire import operator, service, tls, unix_socket
from errord.wire.access import BearerTokenInterceptor, OperatorGate, operator_token, read_token
from errord.wire.drain import ArrivalCounter
from errord.wire.streams import LimitedHealth, LimitedReflection, Streams

log = logging.getLogger(__name__)

SERVING = health_pb2.HealthCheckResponse.SERVING
MAX_PING_STRIKES = 2
"""Pings sooner than keepalive_min_ping_seconds a connection may send before its GOAWAY."""


def server_options(limits: Limits) -> list[tuple[str, int]]:
    """grpc's channel arguments for ``limits`` (errord.limits)."""
    return [
        # grpc sets SO_REUSEPORT by default: a second daemon would silently share the port.
        ("grpc.so_reuseport", 0),
        # Larger requests are refused by grpc itself: RESOURCE_EXHAUSTED.
        ("grpc.max_receive_message_length", limits.max_message_bytes),
        # Ping abuse: pings sooner than the interval are strikes; then GOAWAY too_many_pings.
        ("grpc.keepalive_permit_without_calls", int(limits.keepalive_permit_without_calls)),
        (
            "grpc.http2.min_ping_interval_without_data_ms",
            round(limits.keepalive_min_ping_seconds * 1000),
        ),
        ("grpc.http2.max_ping_strikes", MAX_PING_STRIKES),
    ]


SERVED_SERVICES = (service.SERVICE_NAME, operator.SERVICE_NAME)
"""errord's own services, each with its health status."""


@dataclass(frozen=True)
class Access:
    """Who may reach the server (a bearer token, TLS on TCP, the unix socket's group), and
    how much one caller may ask of it."""

    token: str | None = None
    """Callers must send ``authorization: Bearer <token>`` (see ``errord.wire.access``)."""
    operator_token: str | None = None
    """Without ``token``: operator calls must send ``authorization: Bearer <this>``."""
    tls: grpc.ServerCredentials | None = None
    """Serve TCP over TLS with these credentials; None for plaintext."""
    socket_group: int | None = None
    """The gid a unix socket is given; None keeps the process's group."""
    limits: Limits = field(default_factory=Limits)
    """Message size, calls, streams, events per turn, pings (errord.limits)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Access:
        """Read the token and TLS files, resolve the group, take the limits; ConfigErrors
        name the setting."""
        token = None if settings.token_file is None else read_token(settings.token_file)
        credentials = None
        if settings.tls_cert_file is not None and settings.tls_key_file is not None:
            credentials = tls.server_credentials(
                settings.tls_cert_file, settings.tls_key_file, settings.tls_client_ca_file
            )
        group = settings.socket_group
        gid = None if group is None else unix_socket.group_id(group)
        # Last: the other settings' errors come first, and a token is made only for a
        # daemon that can start.
        operator = None if token is not None else operator_token(settings.operator_token_path)
        return cls(token, operator, credentials, gid, settings.limits())


@dataclass
class RunningServer:
    server: grpc.aio.Server
    health: health.aio.HealthServicer
    arrivals: ArrivalCounter
    """Counts the calls to errord's services, for the drain at shutdown."""
    streams: Streams
    """The streams open of each kind, and how many may be (errord.wire.streams)."""
    address: str
    """The address bound, with the real port when 0 was asked for."""
    socket: unix_socket.ClaimedSocket | None = None
    """The unix socket published, removed at ``stop`` if it is still errord's."""

    async def stop(self, grace: float | None) -> None:
        """Stop serving, letting calls run for ``grace`` seconds; then release the socket."""
        await self.server.stop(grace)
        if self.socket is not None:
            self.socket.release()


async def start_server(
    listen: str,
    errors: service.ErrorHandlerService,
    operators: operator.OperatorService,
    *,
    reflection_on: bool | None = None,
    access: Access | None = None,
) -> RunningServer:
    """Bind ``listen`` and start serving; reflection defaults to on for local addresses.

    ``access.limits`` are enforced: grpc's own (message size, concurrent calls and
    streams, pings) by the server, errord's (each kind of stream and each peer's share of
    it: errord.wire.streams; events per turn) by the services.
    """
    access = access or Access()
    unix = listen.startswith("unix:")
    interceptors = []
    if access.token is not None:
        interceptors.append(BearerTokenInterceptor(access.token, unix=unix))
    streams = Streams.within(access.limits)
    errors.enforce(access.limits, streams)
    server = grpc.aio.server(
        options=server_options(access.limits),
        interceptors=interceptors,
        maximum_concurrent_rpcs=access.limits.grpc_concurrent_rpcs,
    )
    arrivals = ArrivalCounter(service.rpc_handlers(errors), operator.rpc_handlers(operators))
    handlers = (
        arrivals if access.operator_token is None else OperatorGate(arrivals, access.operator_token)
    )
    server.add_generic_rpc_handlers((handlers,))
    checker = LimitedHealth(streams.health)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    if reflection_on is None:
        reflection_on = is_local(listen)
    served = SERVED_SERVICES
    if reflection_on:
        names = (*served, health.SERVICE_NAME, reflection.SERVICE_NAME)
        reflecting = LimitedReflection(names, streams.reflection)
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(reflecting, server)
    if unix:
        claimed = await bind_unix(server, Path(listen.removeprefix("unix:")), access.socket_group)
        running = RunningServer(server, checker, arrivals, streams, listen, claimed)
    else:
        warn_if_exposed(listen, access)
        port = bind(server, listen, listen, access.tls)
        running = RunningServer(server, checker, arrivals, streams, bound_address(listen, port))
    await server.start()
    await checker.set("", SERVING)
    for name in served:
        await checker.set(name, SERVING)
    return running


def bind(
    server: grpc.aio.Server,
    address: str,
    listen: str,
    credentials: grpc.ServerCredentials | None,
) -> int:
    """Add a port at ``address``; errors name ``listen``, the address asked for.

    A TCP address is tried first with a socket of errord's own: gRPC's core logs a raw line
    of its own (``E... add_port.cc:...]``) before failing, and the operator should read
    only errord's message. Only an address taken between the two tries reaches gRPC's."""
    why = why_not_bound(listen)
    if why is not None:
        raise ListenError(f"cannot listen on {listen}: {why}")
    try:
        if credentials is None:
            return int(server.add_insecure_port(address))
        return int(server.add_secure_port(address, credentials))
    except RuntimeError as error:
        why = why_not_bound(listen) or str(error)
        raise ListenError(f"cannot listen on {listen}: {why}") from error


def why_not_bound(listen: str) -> str | None:
    """Why a TCP address cannot be bound, found by binding it the same way; None when
    it can be now (or it is no TCP address)."""
    if listen.startswith("unix:"):
        return None
    host, port = listen.rsplit(":", 1)
    host = host.strip("[]")
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, int(port)))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            return f"address {listen} is already in use"
        if error.errno == errno.EADDRNOTAVAIL:
            return f"{host} is not an address of this machine"
        if error.errno == errno.EACCES:
            return f"permission denied to bind port {port} (ports below 1024 need privileges)"
        return error.strerror or str(error)
    return None


async def bind_unix(
    server: grpc.aio.Server, path: Path, group: int | None
) -> unix_socket.ClaimedSocket:
    """Bind privately, then publish at ``path`` (see ``errord.wire.unix_socket``)."""
    try:
        unix_socket.clear_stale(path)
        with unix_socket.staging(path) as staged:
            bind(server, f"unix:{staged}", f"unix:{path}", None)
            return unix_socket.publish(staged, path, group)
    except ListenError:
        await server.stop(None)
        raise


def warn_if_exposed(listen: str, access: Access) -> None:
    if is_local(listen):
        return
    if access.token is None:
        log.warning(
            "listening on %s, beyond loopback, without a bearer token: whoever reaches it "
            "may call every RPC, breaker resets included; set token_file",
            listen,
        )
    elif access.tls is None:
        log.warning(
            "listening on %s, beyond loopback, without TLS: the bearer token crosses the "
            "network in plaintext; set tls_cert_file and tls_key_file",
            listen,
        )


def bound_address(listen: str, port: int) -> str:
    host = listen.rsplit(":", 1)[0]
    return f"{host}:{port}"


def is_local(listen: str) -> bool:
    """Unix sockets and loopback addresses."""
    if listen.startswith("unix:"):
        return True
    host = listen.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
