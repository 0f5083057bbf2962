"""The load generator of the ReportFailure benchmark: one process, one grpc.aio channel.

    python -m tests.benchmarks.loadgen ADDRESS --pid PID closed --concurrency 64
    python -m tests.benchmarks.loadgen ADDRESS --pid PID open --rate 900
    python -m tests.benchmarks.loadgen ADDRESS --pid PID --batch 8 closed --concurrency 8

With ``--batch N`` each request is a ReportFailures of N failures (the parallel
calls of one new turn) instead of one ReportFailure; ``decisions_per_s`` counts
the failures decided.

Closed loop: CONCURRENCY workers each send a request as soon as their last one is
answered. Open loop: request i is due at start + i / RATE and is sent then, whether
or not earlier ones were answered, and its latency counts from when it was due, so a
slow server (or a generator that falls behind) cannot hide its delays (no coordinated
omission). Both run a warm-up, then a measured window; the server's CPU time (all its
threads, from /proc/PID/stat) and memory are read at the window's edges. Prints one
JSON line, a Measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import grpc
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

LATE_AFTER = 0.002
"""An open-loop request sent later than this after it was due counts as late."""
CALL_TIMEOUT = 30.0


class Measurement(TypedDict):
    """What one load generator run prints: the figures of its measured window."""

    mode: str
    batch: int
    """Failures per request: 1 for ReportFailure, N for ReportFailures of N."""
    concurrency: int | None
    rate: float | None
    window_s: float
    requests: int
    """Requests in the window: answered in it (closed loop), due in it (open loop)."""
    errors: dict[str, int]
    throughput: float
    decisions_per_s: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    server_cpu_us_per_request: float
    server_vm_hwm_kib: int
    server_vm_rss_kib: int
    generator_cpu_share: float
    """The generator's own CPU time over the window's length: near 1.0, it is the limit."""
    late: int
    """Open loop: requests sent more than LATE_AFTER after they were due."""
    send_lag_p99_ms: float
    send_lag_max_ms: float


@dataclass(frozen=True)
class Sample:
    """The clock, the server's CPU time and the generator's own, at one instant."""

    at: float
    server_cpu: float
    own_cpu: float


@dataclass(frozen=True)
class Call:
    due: float
    sent: float
    done: float
    status: str


def server_cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid: int) -> dict[str, int]:
    """VmHWM (peak resident set) and VmRSS (current) of ``pid``."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = (line.split() for line in lines if line.startswith(("VmHWM:", "VmRSS:")))
    return {field[0].rstrip(":"): int(field[1]) for field in fields}


def sample(pid: int) -> Sample:
    return Sample(time.perf_counter(), server_cpu_seconds(pid), time.process_time())


def request(turn_id: str, number: int) -> pb.ReportFailureRequest:
    """Attempt 1 of a new call; a quarter are permanent errors, the rest timeouts."""
    permanent = number % 4 == 0
    error = (
        pb.ToolError(code=pb.ERROR_CODE_INVALID_INPUT, message="Invalid airport code: XYZ")
        if permanent
        else pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="Connection timeout after 30s")
    )
    message = pb.ReportFailureRequest(
        turn_id=turn_id, call_id="call_1", tool="flight_search", attempt=1, error=error
    )
    message.arguments.update({"origin": "SFO", "destination": "XYZ", "date": "2026-12-01"})
    return message


class Sender:
    """Sends requests with keys never used before, and records every call."""

    def __init__(self, channel: grpc.aio.Channel, batch: int = 1) -> None:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        self._report = stub.ReportFailure if batch == 1 else stub.ReportFailures
        self._batch = batch
        self._prefix = f"bench-{uuid.uuid4().hex[:12]}"
        self._numbers = itertools.count()
        self.calls: list[Call] = []

    def _message(self, number: int) -> pb.ReportFailureRequest | pb.ReportFailuresRequest:
        turn_id = f"{self._prefix}-{number}"
        if self._batch == 1:
            return request(turn_id, number)
        failures = [request(turn_id, number * self._batch + i) for i in range(self._batch)]
        for index, failure in enumerate(failures, start=1):
            failure.call_id = f"call_{index}"
        return pb.ReportFailuresRequest(failures=failures)

    async def send(self, due: float) -> None:
        message = self._message(next(self._numbers))
        sent = time.perf_counter()
        try:
            await self._report(message, timeout=CALL_TIMEOUT)
            status = "OK"
        except grpc.aio.AioRpcError as error:
            status = error.code().name
        self.calls.append(Call(due, sent, time.perf_counter(), status))


async def sleep_until(moment: float) -> None:
    await asyncio.sleep(max(0.0, moment - time.perf_counter()))


async def window(pid: int, start: float, end: float) -> tuple[Sample, Sample]:
    await sleep_until(start)
    first = sample(pid)
    await sleep_until(end)
    return first, sample(pid)


async def closed_loop(
    sender: Sender, pid: int, concurrency: int, warmup: float, duration: float
) -> tuple[Sample, Sample]:
    stop = asyncio.Event()

    async def worker() -> None:
        while not stop.is_set():
            await sender.send(time.perf_counter())

    workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
    start = time.perf_counter() + warmup
    edges = await window(pid, start, start + duration)
    stop.set()
    await asyncio.gather(*workers)
    return edges


async def open_loop(
    sender: Sender, pid: int, rate: float, warmup: float, duration: float
) -> tuple[Sample, Sample]:
    first_due = time.perf_counter() + 0.01
    start = first_due + warmup
    measuring = asyncio.create_task(window(pid, start, start + duration))
    sends: set[asyncio.Task[None]] = set()
    for index in range(round((warmup + duration) * rate)):
        due = first_due + index / rate
        await sleep_until(due)
        task = asyncio.create_task(sender.send(due))
        sends.add(task)
        task.add_done_callback(sends.discard)
    edges = await measuring
    await asyncio.gather(*sends)
    return edges


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """Nearest rank, in milliseconds; 0 for no values."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000


def summarize(
    args: argparse.Namespace, calls: list[Call], edges: tuple[Sample, Sample]
) -> Measurement:
    first, last = edges
    seconds = last.at - first.at
    if args.mode == "closed":
        measured = [call for call in calls if first.at <= call.done < last.at]
    else:
        measured = [call for call in calls if first.at <= call.due < last.at]
    latencies = sorted(call.done - call.due for call in measured)
    lags = sorted(call.sent - call.due for call in measured)
    errors = Counter(call.status for call in measured if call.status != "OK")
    answered = len(measured) - errors.total()
    memory = memory_kib(args.pid)
    return Measurement(
        mode=args.mode,
        batch=args.batch,
        concurrency=args.concurrency if args.mode == "closed" else None,
        rate=args.rate if args.mode == "open" else None,
        window_s=seconds,
        requests=len(measured),
        errors=dict(errors),
        throughput=answered / seconds,
        decisions_per_s=answered * args.batch / seconds,
        p50_ms=percentile(latencies, 0.50),
        p99_ms=percentile(latencies, 0.99),
        p999_ms=percentile(latencies, 0.999),
        max_ms=percentile(latencies, 1.0),
        server_cpu_us_per_request=(last.server_cpu - first.server_cpu) / max(1, answered) * 1e6,
        server_vm_hwm_kib=memory.get("VmHWM", 0),
        server_vm_rss_kib=memory.get("VmRSS", 0),
        generator_cpu_share=(last.own_cpu - first.own_cpu) / seconds,
        late=sum(lag > LATE_AFTER for lag in lags),
        send_lag_p99_ms=percentile(lags, 0.99),
        send_lag_max_ms=percentile(lags, 1.0),
    )


async def run(args: argparse.Namespace) -> Measurement:
    async with grpc.aio.insecure_channel(args.address) as channel:
        await asyncio.wait_for(channel.channel_ready(), CALL_TIMEOUT)
        sender, timing = Sender(channel, args.batch), (args.warmup, args.duration)
        if args.mode == "closed":
            edges = await closed_loop(sender, args.pid, args.concurrency, *timing)
        else:
            edges = await open_loop(sender, args.pid, args.rate, *timing)
        return summarize(args, sender.calls, edges)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address", help="host:port of the server")
    parser.add_argument("--pid", type=int, required=True, help="the server's process id")
    parser.add_argument("--warmup", type=float, default=1.0, metavar="SECONDS")
    parser.add_argument("--duration", type=float, default=4.0, metavar="SECONDS")
    parser.add_argument(
        "--batch",
        type=int,
        choices=range(1, 257),
        default=1,
        metavar="N",
        help="failures per ReportFailures call, 1 to 256 (default 1: ReportFailure)",
    )
    modes = parser.add_subparsers(dest="mode", required=True)
    modes.add_parser("closed").add_argument("--concurrency", type=int, required=True)
    modes.add_parser("open").add_argument("--rate", type=float, required=True)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    json.dump(asyncio.run(run(parse(argv))), sys.stdout)
    print()


if __name__ == "__main__":
    main()
