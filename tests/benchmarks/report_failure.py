"""Benchmark: ReportFailure throughput, latency and daemon memory, against an echo baseline.

    python -m tests.benchmarks.report_failure [--requests 20000] [--concurrency 32]

Runs the real daemon as its own process (real SQLite in a temporary directory,
synchronous=FULL) and, for comparison, an echo server that answers every
ReportFailure with a canned response and records nothing. The same grpc.aio load
generator drives both from this process, on the same cores, so the ratio is what
errord's decision and durable commit cost over gRPC alone. Every request has a
new (turn, call) key; a quarter are permanent errors, the rest timeouts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from tests.conftest import DaemonProcess, spawn, start_process


@dataclass
class Result:
    name: str
    requests: int
    seconds: float
    latencies: list[float]
    peak_rss_kib: int
    cpu_seconds: float
    """CPU the server process used during the measured run, every thread."""

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000


def request(worker: int, number: int) -> pb.ReportFailureRequest:
    permanent = number % 4 == 0
    error = (
        pb.ToolError(code=pb.ERROR_CODE_INVALID_INPUT, message="Invalid airport code: XYZ")
        if permanent
        else pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="Connection timeout after 30s")
    )
    message = pb.ReportFailureRequest(
        turn_id=f"bench-{worker}-{number}",
        call_id="call_1",
        tool="flight_search",
        attempt=1,
        error=error,
    )
    message.arguments.update({"origin": "SFO", "destination": "XYZ", "date": "2026-12-01"})
    return message


async def load(address: str, requests: int, concurrency: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    per_worker = requests // concurrency
    async with grpc.aio.insecure_channel(address) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        await stub.ReportFailure(request(-1, 0))  # connect

        async def worker(index: int) -> None:
            for number in range(per_worker):
                started = time.perf_counter()
                await stub.ReportFailure(request(index, number))
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker(index) for index in range(concurrency)))
        return time.perf_counter() - started, latencies


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def measure(name: str, daemon: DaemonProcess, requests: int, concurrency: int) -> Result:
    asyncio.run(load(daemon.address, requests // 10, concurrency))  # warm up
    cpu_before = cpu_seconds(daemon.process.pid)
    seconds, latencies = asyncio.run(load(daemon.address, requests, concurrency))
    cpu = cpu_seconds(daemon.process.pid) - cpu_before
    rss = peak_rss_kib(daemon.process.pid)
    return Result(name, len(latencies), seconds, latencies, rss, cpu)


# The echo baseline: same transport, canned answer, nothing decided or stored.


async def echo_server() -> None:
    canned = pb.ReportFailureResponse(
        decision=pb.RecoveryDecision(
            decision_id="0" * 32,
            action=pb.RECOVERY_ACTION_RETRY,
            reason="echo " * 20,
            llm_message="echo " * 40,
            user_message="echo " * 10,
        )
    )

    class Echo(errord_pb2_grpc.ErrorHandlerServiceServicer):  # type: ignore[misc]
        async def ReportFailure(self, request: object, context: object) -> object:  # noqa: N802
            return canned

    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    errord_pb2_grpc.add_ErrorHandlerServiceServicer_to_server(Echo(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"echo serving on 127.0.0.1:{port},", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await server.stop(1)


def start_echo() -> DaemonProcess:
    return spawn([sys.executable, "-m", "tests.benchmarks.report_failure", "--echo-server"])


def report(results: list[Result]) -> None:
    baseline = results[0].throughput
    print(
        f"{'server':<8} {'requests':>8} {'req/s':>8} {'x echo':>7} {'p50 ms':>7} "
        f"{'p95 ms':>7} {'p99 ms':>7} {'CPU us/req':>10} {'peak RSS MiB':>12}"
    )
    for result in results:
        print(
            f"{result.name:<8} {result.requests:>8} {result.throughput:>8.0f} "
            f"{result.throughput / baseline:>7.2f} {result.percentile(0.5):>7.2f} "
            f"{result.percentile(0.95):>7.2f} {result.percentile(0.99):>7.2f} "
            f"{result.cpu_seconds / result.requests * 1e6:>10.0f} "
            f"{result.peak_rss_kib / 1024:>12.1f}"
        )
    print(f"mean latency errord: {statistics.fmean(results[-1].latencies) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--echo-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_server:
        asyncio.run(echo_server())
        return
    results = []
    echo = start_echo()
    try:
        results.append(measure("echo", echo, args.requests, args.concurrency))
    finally:
        echo.terminate()
    with tempfile.TemporaryDirectory() as directory:
        database = Path(directory) / "errord.db"
        daemon = start_process("--listen", "127.0.0.1:0", "--db", str(database))
        try:
            results.append(measure("errord", daemon, args.requests, args.concurrency))
        finally:
            daemon.terminate()
        size = sum(path.stat().st_size for path in Path(directory).iterdir())
        print(f"database files after the run: {size / 1024:.0f} KiB")
    report(results)


if __name__ == "__main__":
    main()
