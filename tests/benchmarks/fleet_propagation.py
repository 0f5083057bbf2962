"""Benchmark: how long a breaker opening on one daemon of a fleet takes to reach another.

    python -m tests.benchmarks.fleet_propagation [--openings 200]

A Redis server of its own (tests/redis_server.py) and two daemons as processes, a and b,
of one fleet with ``fleet_quorum = 1`` (so that one host's opening refuses the tool on
every host), on loopback. For each opening, a new tool's breaker is opened on a (the
failures that open it reported one after the other; the clock starts when the one that
opens it is sent) and the clock stops when an executor's WatchTools stream on b shows
the tool's breaker open: a's commit, its word published, b's view applying it, b's
watcher told, and the gRPC message to the executor. Prints p50, p90, p99 and the
largest, in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import tempfile
import time
from pathlib import Path

import grpc
from errord_client import AsyncErrordClient
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from tests.helpers import start_fleet_daemon
from tests.redis_server import RedisServer

THRESHOLD = 2
"""Failures (of two calls) that open a tool's breaker."""


async def measure(a: str, b: str, openings: int) -> list[float]:
    """Seconds from each opening sent to a until b's WatchTools shows it."""
    seen: dict[str, float] = {}
    arrived = asyncio.Event()

    async def watch(channel: grpc.aio.Channel) -> None:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        async for response in stub.WatchTools(pb.WatchToolsRequest()):
            for policy in response.tools:
                if policy.breaker.phase == pb.BREAKER_PHASE_OPEN and policy.tool not in seen:
                    seen[policy.tool] = time.perf_counter()
                    arrived.set()

    took = []
    async with grpc.aio.insecure_channel(b) as channel, AsyncErrordClient(a) as errord:
        watching = asyncio.create_task(watch(channel))
        await asyncio.sleep(0.5)  # the snapshot first
        for n in range(openings):
            tool = f"tool_{n}"
            for call in range(THRESHOLD):
                sent = time.perf_counter()
                await errord.report_failure(
                    turn_id=f"turn-{n}",
                    call_id=f"call-{call}",
                    tool=tool,
                    attempt=1,
                    code=pb.ERROR_CODE_TIMEOUT,
                    message="upstream timeout",
                )
            while tool not in seen:
                arrived.clear()
                await asyncio.wait_for(arrived.wait(), 10)
            took.append(seen[tool] - sent)
            await asyncio.sleep(0.02)
        watching.cancel()
    return took


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openings", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleet-propagation-") as scratch:
        directory = Path(scratch)
        redis = RedisServer(directory / "redis").start()
        manifests = """\
            tools: []
            """
        settings = {"fleet_quorum": 1, "breaker_failure_threshold": THRESHOLD}
        daemons = []
        try:
            for host in ("a", "b"):
                daemons.append(
                    start_fleet_daemon(directory / host, host, redis.url, manifests, settings)
                )
            time.sleep(2.0)  # both in sync: each has read the other's card
            took = asyncio.run(measure(daemons[0].address, daemons[1].address, args.openings))
        finally:
            for daemon in daemons:
                daemon.terminate(signal.SIGKILL)
            redis.kill()
    ms = [each * 1000 for each in took]
    print("| openings | p50 | p90 | p99 | max | mean |\n|---|---|---|---|---|---|")
    print(
        f"| {len(ms)} | {percentile(ms, 0.5):.1f} ms | {percentile(ms, 0.9):.1f} ms | "
        f"{percentile(ms, 0.99):.1f} ms | {max(ms):.1f} ms | {statistics.mean(ms):.1f} ms |"
    )


if __name__ == "__main__":
    main()
