"""Fair shares, against the daemon as a process with its default limits: streams held
open by one peer take neither the room of decisions nor every slot of their kind, so
another peer's reports, watches and health checks are served. The other peer is this
test process too, connecting from 127.0.0.2 through a relay (tests.helpers.relay_from).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from errord.config import Settings
from tests.helpers import (
    DaemonProcess,
    operator_channel,
    relay_from,
    scrape,
    start_in_process,
    start_process,
)

WAIT = 60.0
"""A bound on a hang, never a measure."""
OPEN = "open"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    running = start_process(
        "--listen",
        "127.0.0.1:0",
        "--db",
        str(tmp_path / "errord.db"),
        "--metrics-listen",
        "127.0.0.1:0",
    )
    yield running
    running.terminate()


def report(call_id: str) -> pb.ReportFailureRequest:
    error = pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="timed out")
    return pb.ReportFailureRequest(
        turn_id="shares", call_id=call_id, tool="search", attempt=1, error=error
    )


async def opened(stream: Any) -> str:
    """``open`` once the stream's first response came (it holds a slot), else how it
    was refused."""
    try:
        await asyncio.wait_for(stream.read(), WAIT)
    except grpc.aio.AioRpcError as error:
        return f"{error.code().name}: {error.details()}"
    return OPEN


def watch_trace(stub: Any) -> Any:
    """A WatchTrace of the test's turn, from its first event (its first response)."""
    return stub.WatchTrace(pb.WatchTraceRequest(turn_id="shares", include_history=True))


def health_watch(channel: grpc.aio.Channel) -> Any:
    return health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())


def streams_open(scraped: str) -> dict[str, float]:
    return {
        kind: float(count)
        for kind, count in re.findall(r'^errord_streams_open\{kind="(\w+)"\} (\S+)$', scraped, re.M)
    }


async def test_one_peers_streams_leave_room_for_decisions_and_for_another_peer(
    daemon: DaemonProcess,
) -> None:
    """1,000 health watches and 300 WatchTrace streams from one peer: it holds its share
    of each (half of 256 and of 512), the rest are refused naming the limit, and its own
    report is still decided; another peer's report, WatchTrace and health watch are
    served."""
    async with (
        operator_channel(daemon.address, daemon.token) as channel,
        relay_from("127.0.0.2", daemon.address) as relayed,
        operator_channel(relayed, daemon.token) as other_channel,
    ):
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        await stub.ReportFailure(report("c0"), timeout=WAIT)
        health_watches = [health_watch(channel) for _ in range(1000)]
        health_opened = Counter(await asyncio.gather(*map(opened, health_watches)))
        trace_watches = [watch_trace(stub) for _ in range(300)]
        trace_opened = Counter(await asyncio.gather(*map(opened, trace_watches)))

        decided = await stub.ReportFailure(report("c1"), timeout=WAIT)
        other = errord_pb2_grpc.ErrorHandlerServiceStub(other_channel)
        other_decided = await other.ReportFailure(report("c2"), timeout=WAIT)
        other_watch = watch_trace(other)
        other_health = health_watch(other_channel)
        others_opened = [await opened(other_watch), await opened(other_health)]
        scraped = await asyncio.to_thread(scrape, daemon)
        for stream in [*health_watches, *trace_watches, other_watch, other_health]:
            stream.cancel()

    assert health_opened == {
        OPEN: 128,
        "RESOURCE_EXHAUSTED: 127.0.0.1 holds 128 of the 256 health Watch streams errord "
        "serves at once, as many as one peer may (peer_stream_share x max_health_watches); "
        "close one, or watch again later": 872,
    }
    assert trace_opened == {
        OPEN: 256,
        "RESOURCE_EXHAUSTED: 127.0.0.1 holds 256 of the 512 WatchTrace streams errord serves "
        "at once, as many as one peer may (peer_stream_share x max_watchers); close one, "
        "or watch again later": 44,
    }
    assert decided.decision.action == other_decided.decision.action == pb.RECOVERY_ACTION_RETRY
    assert others_opened == [OPEN, OPEN]
    assert streams_open(scraped) == {
        "health_watch": 129.0,
        "watch_trace": 257.0,
        "watch_tools": 0.0,
        "reflection": 0.0,
    }
    assert 'errord_streams_refused_total{kind="health_watch"} 872.0' in scraped
    assert "Concurrent RPC limit exceeded" not in daemon.stderr


async def test_watch_tools_and_reflection_streams_have_limits_of_their_own(
    tmp_path: Path,
) -> None:
    """Past max_tool_watchers, and past max_reflection_streams, a stream is refused
    RESOURCE_EXHAUSTED naming its setting; a unary call is still served."""
    settings = Settings(
        listen="127.0.0.1:0",
        db=tmp_path / "errord.db",
        max_tool_watchers=1,
        max_reflection_streams=1,
    )
    daemon = await start_in_process(settings)
    try:
        async with operator_channel(daemon.address, daemon.token) as channel:
            stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
            tools = [stub.WatchTools(pb.WatchToolsRequest()) for _ in range(2)]
            listing = [reflection.ServerReflectionInfo() for _ in range(2)]
            for stream in listing:
                await stream.write(reflection_pb2.ServerReflectionRequest(list_services=""))
            tools_opened = sorted([await opened(stream) for stream in tools])
            listing_opened = sorted([await opened(stream) for stream in listing])
            await stub.ReportFailure(report("c1"), timeout=WAIT)
            for stream in [*tools, *listing]:
                stream.cancel()
    finally:
        daemon.stop.set()
        await asyncio.wait_for(daemon.task, WAIT)
    assert tools_opened == [  # either may come first
        "RESOURCE_EXHAUSTED: 1 WatchTools streams are open, the most errord serves at once "
        "(max_tool_watchers); close one, or watch again later",
        OPEN,
    ]
    assert listing_opened == [
        "RESOURCE_EXHAUSTED: 1 reflection streams are open, the most errord serves at once "
        "(max_reflection_streams); close one, or watch again later",
        OPEN,
    ]
