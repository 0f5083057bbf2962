"""What the executor's tests against a real daemon share: errord as a process with the
test's own manifests, its trace and breakers read over gRPC, waiting for a condition
(never for a fixed time), and tools that count, time or hold their invocations.

Each test owns its daemon, port, tools and breakers: ``errord_process`` starts one on a
free port (or on the port given, to restart it there) and kills it when the test ends.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import signal
import socket
import textwrap
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import grpc
import grpc.aio
from errord_client.executor import Executor
from errord_client.tools import ANY_ARGUMENTS, Tool
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from tests.helpers import DaemonProcess, Reachable, operator_channel, start_process

T = TypeVar("T")

PATIENCE = 30.0
"""Seconds a test waits for a condition before it fails: generous, for loaded machines."""


# errord as a process


def free_port() -> int:
    """A loopback port free now, for a daemon that must come back on the same one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def write_manifests(tmp_path: Path, yaml: str) -> Path:
    """A manifest directory in ``tmp_path`` holding ``yaml`` (dedented) as tools.yaml."""
    directory = tmp_path / "tools"
    directory.mkdir(exist_ok=True)
    (directory / "tools.yaml").write_text(textwrap.dedent(yaml))
    return directory


def start_errord(tmp_path: Path, manifests: Path, port: int = 0) -> DaemonProcess:
    """errord serving on 127.0.0.1:``port`` (0: any free one), its database in tmp_path."""
    return start_process(
        "--listen",
        f"127.0.0.1:{port}",
        "--db",
        str(tmp_path / "errord.db"),
        "--manifests",
        str(manifests),
    )


@contextmanager
def errord_process(tmp_path: Path, yaml: str, port: int = 0) -> Iterator[DaemonProcess]:
    """errord with ``yaml`` as its manifests, killed when the block ends."""
    running = start_errord(tmp_path, write_manifests(tmp_path, yaml), port)
    try:
        yield running
    finally:
        running.terminate(signal.SIGKILL)


# What errord says


@dataclass
class Errord:
    """Stubs of both services over one grpc.aio channel, for reading what errord holds."""

    channel: grpc.aio.Channel
    errors: Any = field(init=False)
    operators: Any = field(init=False)

    def __post_init__(self) -> None:
        self.errors = errord_pb2_grpc.ErrorHandlerServiceStub(self.channel)
        self.operators = errord_pb2_grpc.OperatorServiceStub(self.channel)

    async def trace(self, turn_id: str) -> list[pb.TraceEvent]:
        """Every recorded event of ``turn_id``, oldest first (all pages)."""
        events: list[pb.TraceEvent] = []
        token = ""
        while True:
            page = await self.errors.GetTurnTrace(
                pb.GetTurnTraceRequest(turn_id=turn_id, page_token=token), timeout=10
            )
            events.extend(page.events)
            token = page.next_page_token
            if not token:
                return events

    async def breaker(self, tool: str) -> pb.Breaker:
        response = await self.operators.GetBreaker(pb.GetBreakerRequest(tool=tool), timeout=10)
        breaker: pb.Breaker = response.breaker
        return breaker

    async def force_open(self, tool: str, seconds: float = 0.0) -> pb.Breaker:
        """ForceOpenBreaker: open for ``seconds`` before it half-opens (0: until reset)."""
        request = pb.ForceOpenBreakerRequest(tool=tool, by="test")
        if seconds:
            request.duration.FromTimedelta(timedelta(seconds=seconds))
        response = await self.operators.ForceOpenBreaker(request, timeout=10)
        breaker: pb.Breaker = response.breaker
        return breaker


async def recorded_trace(daemon: Reachable, turn_id: str) -> list[pb.TraceEvent]:
    """Every event ``daemon`` recorded for ``turn_id``, oldest first, read as its operator."""
    async with operator_channel(daemon.address, daemon.token) as channel:
        return await Errord(channel).trace(turn_id)


async def wait_for(
    probe: Callable[[], Awaitable[T | None]], what: str, patience: float = PATIENCE
) -> T:
    """Ask ``probe`` again and again until it gives something other than None (or False);
    fail naming ``what`` after ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while True:
        found = await probe()
        if found is not None and found is not False:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {patience:g} s for {what}")
        await asyncio.sleep(0.02)


def failures(events: list[pb.TraceEvent], call_id: str | None = None) -> list[pb.TraceEvent]:
    """The failure events (of ``call_id``, if given), in trace order."""
    return [
        event
        for event in events
        if event.WhichOneof("event") == "failure" and call_id in (None, event.call_id)
    ]


def outcomes(events: list[pb.TraceEvent], call_id: str | None = None) -> list[pb.TraceEvent]:
    """The outcome events (of ``call_id``, if given), in trace order."""
    return [
        event
        for event in events
        if event.WhichOneof("event") == "outcome" and call_id in (None, event.call_id)
    ]


def breaker_changes(events: list[pb.TraceEvent]) -> list[str]:
    """The names of the breaker changes the events record, in trace order."""
    return [
        pb.BreakerChange.Name(event.breaker.change)
        for event in events
        if event.WhichOneof("event") == "breaker"
    ]


def seconds(duration: Any) -> float:
    """A google.protobuf.Duration in seconds."""
    value: float = duration.ToTimedelta().total_seconds()
    return value


def sent_failures(executor: Executor) -> list[pb.ReportFailureRequest]:
    """Every failure report ``executor`` sends errord from now on, as it sends it: each
    ReportFailure, and each item of a ReportFailures, in order (the stub's calls are
    watched; errord still gets them)."""
    sent: list[pb.ReportFailureRequest] = []
    stub = executor._started().client.stub
    single, batch = stub.ReportFailure, stub.ReportFailures

    def report_failure(request: pb.ReportFailureRequest, **options: Any) -> Any:
        sent.append(request)
        return single(request, **options)

    def report_failures(request: pb.ReportFailuresRequest, **options: Any) -> Any:
        sent.extend(request.failures)
        return batch(request, **options)

    stub.ReportFailure, stub.ReportFailures = report_failure, report_failures
    return sent


# Tools that tell the test what happened to them


@dataclass
class Spans:
    """When each invocation of a tool started and ended (time.monotonic)."""

    started: list[float] = field(default_factory=list)
    ended: list[float] = field(default_factory=list)


def timed(tool: Tool) -> tuple[Tool, Spans]:
    """``tool`` recording the start and end of each invocation (a cancelled one too)."""
    spans = Spans()
    inner = tool.function

    async def run(**arguments: Any) -> Any:
        spans.started.append(time.monotonic())
        try:
            result = inner(**arguments)
            return await result if inspect.isawaitable(result) else result
        finally:
            spans.ended.append(time.monotonic())

    return dataclasses.replace(tool, blocking=False, function=run), spans


@dataclass
class Held:
    """A tool whose invocations wait on ``gate`` and then return ``output``; ``calls``
    counts them."""

    name: str
    output: Any = None
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    calls: int = 0

    @property
    def tool(self) -> Tool:
        return Tool(self.name, ANY_ARGUMENTS, function=self._run)

    async def _run(self, **_: Any) -> Any:
        self.calls += 1
        await self.gate.wait()
        return self.output
