"""The grpc.aio server: errord's services, the standard health service, reflection."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from errord.errors import ListenError
from errord.wire import operator, service

SERVING = health_pb2.HealthCheckResponse.SERVING
SERVER_OPTIONS = [
    # grpc sets SO_REUSEPORT by default: a second daemon would silently share the port.
    ("grpc.so_reuseport", 0),
]


@dataclass
class RunningServer:
    server: grpc.aio.Server
    health: health.aio.HealthServicer
    address: str
    """The address bound, with the real port when 0 was asked for."""


async def start_server(
    listen: str,
    errors: service.ErrorHandlerService,
    operators: operator.OperatorService,
    *,
    reflection_on: bool | None = None,
) -> RunningServer:
    """Bind ``listen`` and start serving; reflection defaults to on for local addresses."""
    server = grpc.aio.server(options=SERVER_OPTIONS)
    server.add_generic_rpc_handlers(
        (service.rpc_handlers(errors), operator.rpc_handlers(operators))
    )
    checker = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    if reflection_on is None:
        reflection_on = is_local(listen)
    served = (service.SERVICE_NAME, operator.SERVICE_NAME)
    if reflection_on:
        names = (*served, health.SERVICE_NAME, reflection.SERVICE_NAME)
        reflection.enable_server_reflection(names, server)
    try:
        port = server.add_insecure_port(listen)
    except RuntimeError as error:
        raise ListenError(f"cannot listen on {listen}: {error}") from error
    await server.start()
    await checker.set("", SERVING)
    for name in served:
        await checker.set(name, SERVING)
    return RunningServer(server, checker, bound_address(listen, port))


def bound_address(listen: str, port: int) -> str:
    if listen.startswith("unix:"):
        return listen
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
