"""Benchmark: ReportFailure throughput with 200 WatchTrace watchers against none.

    python -m tests.benchmarks.watchers                       # 3 rounds, about a minute
    python -m tests.benchmarks.watchers --buffering-clients   # every watcher reads
    python -m tests.benchmarks.watchers --readers 200         # every one reads each event
    python -m tests.benchmarks.watchers --quick               # 1 round of short points
    python -m tests.benchmarks.watchers --watchers 200 --readers 20 --rounds 5
    python -m tests.benchmarks.watchers --errord-root /tmp/old-checkout    # another daemon

One daemon process (``python -m errord serve``, a real database file) serves every
round. Each round measures closed-loop ReportFailure load (tests/benchmarks/loadgen.py,
64 in flight) twice, in alternating order: with no watcher, and with WATCHERS watchers
of every turn held open by a process of their own. READERS of them read every event
as it comes and check that each arrives once, in sequence order; the others never
read after their first event, from a channel without BDP probing, so that HTTP/2
flow control stops them after about 64 KB as it would a client that reads nothing.
The daemon must drop those with RESOURCE_EXHAUSTED once their backlog fills instead of
letting them hold anything up. With ``--buffering-clients`` they use grpc's default
channel instead, whose client goes on reading into its own buffers, several MB a
stream, before flow control pushes back: until then the daemon writes to them as to
readers.

Prints each point, the median throughputs and their ratio, and the daemon's CPU per
request (all its threads). The bounds: a ratio of at least 0.85 with watchers
that never read (they must cost nothing once stopped), and of at least 0.50 when every
watcher reads (``--buffering-clients``, or as many readers as watchers): those cost what
they read, each event's bytes sent 200 times. On a small machine the watchers' own
process competes with the daemon and the load generator for the cores (with 200
readers, it decodes every event 200 times): its CPU time is printed with each point.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import grpc
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from tests.benchmarks.loadgen import Measurement
from tests.benchmarks.report_failure import (
    ROOT,
    START_TIMEOUT,
    Load,
    Options,
    Server,
    checkout_env,
    measure,
    start_server,
)

NEVER_READING = [("grpc.http2.bdp_probe", 0)]
"""Channel options of the watchers that never read: HTTP/2's initial 64 KB window stays."""
BOUND_NEVER_READING = 0.85
"""The bound on the throughput with watchers that mostly never read, to without."""
BOUND_ALL_READING = 0.50
"""The bound when every watcher reads every event."""


@dataclass(frozen=True)
class Settings:
    watchers: int
    readers: int
    rounds: int
    warmup: float
    duration: float
    concurrency: int
    buffering: bool
    """The watchers that never read do so on grpc's default channel (BDP probing on)."""
    errord_root: Path
    """The checkout whose daemon runs (the watchers and the load come from this one)."""
    batch_ms: int = 0
    """The watchers' batch_interval in milliseconds; 0 for none (coalesced all the same)."""

    @property
    def all_reading(self) -> bool:
        """Every watcher reads: as many readers as watchers, or clients that buffer."""
        return self.buffering or self.readers == self.watchers


class Watched(TypedDict):
    """What the watchers' process prints when it is told to stop."""

    readers: int
    events: list[int]
    """Events each reader received."""
    in_order: bool
    """Every reader's sequences rose strictly: nothing twice, nothing out of order."""
    dropped: dict[str, int]
    """Status codes that ended readers' streams (a reader that falls behind is dropped)."""
    cpu_s: float


@dataclass(frozen=True)
class Point:
    round: int
    watched: bool
    measurement: Measurement
    watchers: Watched | None


# The watchers' process.


async def subscribe_all(
    address: str, token: str, count: int, readers: int, buffering: bool, batch_ms: int
) -> list[Any]:
    """``count`` streams of every turn, each proven live by reading its first event (as
    the daemon's operator: ``token``)."""
    operator = (("authorization", f"Bearer {token}"),)
    reading = grpc.aio.insecure_channel(address)
    never = grpc.aio.insecure_channel(address, options=[] if buffering else NEVER_READING)
    probe = errord_pb2_grpc.ErrorHandlerServiceStub(reading)
    request = pb.ReportFailureRequest(
        turn_id=f"watch-probe-{time.time_ns()}",
        call_id="c",
        tool="probe",
        attempt=1,
        error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT),
    )
    await probe.ReportFailure(request)
    # The probe's events are the newest: a watch after the one before its last replays
    # that one after subscribing, so receiving it proves the stream is subscribed.
    trace = await probe.GetTurnTrace(
        pb.GetTurnTraceRequest(turn_id=request.turn_id), metadata=operator
    )
    after = trace.events[-1].sequence - 1
    streams = []
    for number in range(count):
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(reading if number < readers else never)
        watching = pb.WatchTraceRequest(after_sequence=after)
        if batch_ms:
            watching.batch_interval.FromMilliseconds(batch_ms)
        streams.append(stub.WatchTrace(watching, metadata=operator))
    for stream in streams:
        await asyncio.wait_for(stream.read(), START_TIMEOUT)
    return streams


async def read_all(stream: Any, tally: list[int]) -> str:
    """Read until the stream ends; how it ended. ``tally``: [events, last sequence, disorder]."""
    try:
        while (response := await stream.read()) is not grpc.aio.EOF:
            for event in [response.event] if response.HasField("event") else response.events:
                tally[0] += 1
                tally[2] += event.sequence <= tally[1]
                tally[1] = event.sequence
        return "OK"
    except grpc.aio.AioRpcError as error:
        return str(error.code().name)
    except asyncio.CancelledError:
        return "CANCELLED"


async def watch(
    address: str, token: str, count: int, readers: int, buffering: bool, batch_ms: int
) -> Watched:
    streams = await subscribe_all(address, token, count, readers, buffering, batch_ms)
    tallies = [[0, 0, 0] for _ in range(readers)]
    reading = [asyncio.create_task(read_all(s, t)) for s, t in zip(streams, tallies, strict=False)]
    print("watching", flush=True)
    await asyncio.to_thread(sys.stdin.read)  # until the benchmark closes our stdin
    ended = {task: task.done() for task in reading}
    for stream in streams:
        stream.cancel()
    endings = await asyncio.gather(*reading)
    dropped: dict[str, int] = {}
    for task, ending in zip(reading, endings, strict=True):
        if ended[task] and ending != "OK":
            dropped[ending] = dropped.get(ending, 0) + 1
    return Watched(
        readers=readers,
        events=[tally[0] for tally in tallies],
        in_order=not any(tally[2] for tally in tallies),
        dropped=dropped,
        cpu_s=time.process_time(),
    )


# The benchmark.


class Watchers:
    """The watchers' process: started, then stopped with its figures."""

    def __init__(self, address: str, token_file: Path, settings: Settings) -> None:
        command = [sys.executable, "-m", "tests.benchmarks.watchers", "--watch", address]
        command += ["--token-file", str(token_file)]
        command += ["--watchers", str(settings.watchers), "--readers", str(settings.readers)]
        command += ["--buffering-clients"] if settings.buffering else []
        command += ["--batch-ms", str(settings.batch_ms)]
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=checkout_env(ROOT),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], START_TIMEOUT)
        if not ready or self.process.stdout.readline().strip() != "watching":
            self.process.kill()
            raise RuntimeError("the watchers did not subscribe")

    def stop(self) -> Watched:
        out, _ = self.process.communicate(timeout=START_TIMEOUT)
        if self.process.returncode != 0:
            raise RuntimeError(f"the watchers failed with status {self.process.returncode}")
        figures: Watched = json.loads(out)
        return figures


def point(
    server: Server, token_file: Path, settings: Settings, number: int, watched: bool
) -> Point:
    options = Options(
        1, settings.warmup, settings.duration, None, ("errord",), settings.errord_root, None
    )
    load = Load("closed", settings.concurrency)
    if not watched:
        return Point(number, False, measure(server, load, options), None)
    watchers = Watchers(server.address, token_file, settings)
    try:
        measurement = measure(server, load, options)
    finally:
        figures = watchers.stop()
    return Point(number, True, measurement, figures)


def progress(found: Point, settings: Settings) -> None:
    figures = found.measurement
    text = (
        f"round {found.round}/{settings.rounds} "
        f"{'with' if found.watched else 'without':<7} watchers: "
        f"{figures['throughput']:6.0f} req/s, "
        f"{figures['server_cpu_us_per_request']:5.0f} µs daemon CPU/req"
    )
    if found.watchers is not None:
        watched = found.watchers
        text += (
            f"; readers got {min(watched['events'], default=0)}-"
            f"{max(watched['events'], default=0)} events, in order: {watched['in_order']}, "
            f"dropped: {watched['dropped'] or 'none'}, watchers' CPU {watched['cpu_s']:.1f} s"
        )
    print(text, file=sys.stderr, flush=True)


def run(settings: Settings) -> list[Point]:
    points = []
    with tempfile.TemporaryDirectory(prefix="errord-watchers-") as directory:
        server = start_server("errord", Path(directory), settings.errord_root)
        token_file = Path(directory) / "errord" / "operator.token"  # beside its database
        try:
            for number in range(1, settings.rounds + 1):
                order = (False, True) if number % 2 else (True, False)
                for watched in order:
                    points.append(point(server, token_file, settings, number, watched))
                    progress(points[-1], settings)
        finally:
            server.stop()
    return points


def median(points: Sequence[Point], watched: bool, key: str) -> float:
    """The median of one figure over the points with (or without) watchers."""
    found: list[float] = []
    for each in points:
        figures: Mapping[str, object] = each.measurement
        value = figures[key]
        if each.watched is watched and isinstance(value, int | float):
            found.append(float(value))
    return statistics.median(found)


def report(points: Sequence[Point], settings: Settings) -> str:
    without = median(points, False, "throughput")
    with_ = median(points, True, "throughput")
    cpu_without = median(points, False, "server_cpu_us_per_request")
    cpu_with = median(points, True, "server_cpu_us_per_request")
    ratio = with_ / without
    bound = BOUND_ALL_READING if settings.all_reading else BOUND_NEVER_READING
    verdict = "within" if ratio >= bound else "outside"
    never = f"{settings.watchers - settings.readers} never reading"
    if settings.buffering:
        never += " on grpc's default channel"
    return (
        f"# ReportFailure with {settings.watchers} WatchTrace watchers "
        f"({settings.readers} reading, {never}) against none\n\n"
        f"rounds: {settings.rounds} (medians), {settings.concurrency} in flight, "
        f"{settings.duration:g} s measured per point; errord from {settings.errord_root}\n"
        f"throughput: {without:.0f} req/s without watchers, {with_:.0f} req/s with\n"
        f"daemon CPU per request: {cpu_without:.0f} µs without, {cpu_with:.0f} µs with\n"
        f"ratio with/without: {ratio:.2f} ({verdict} the bound of {bound:.2f})"
    )


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", type=int, default=200, help="default: 200")
    parser.add_argument("--readers", type=int, default=10, help="of the watchers (default: 10)")
    parser.add_argument("--rounds", type=int, default=3, help="default: 3")
    parser.add_argument("--warmup", type=float, default=1.0, metavar="SECONDS", help="per point")
    parser.add_argument("--duration", type=float, default=4.0, metavar="SECONDS", help="per point")
    parser.add_argument("--concurrency", type=int, default=64, help="default: 64")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 round of 1 s points")
    parser.add_argument("--errord-root", type=Path, default=ROOT, metavar="PATH")
    parser.add_argument(
        "--buffering-clients",
        action="store_true",
        help="the watchers that never read use grpc's default channel, whose client reads "
        "several MB a stream into its own buffers: the daemon writes to them as to readers",
    )
    parser.add_argument(
        "--batch-ms",
        type=int,
        default=0,
        metavar="MS",
        help="watchers ask for this batch_interval (default: 0, none)",
    )
    # Internal: the watchers' process, which the benchmark starts with the daemon's address.
    parser.add_argument("--watch", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--token-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 0 <= args.readers <= args.watchers:
        parser.error("--readers: from 0 to --watchers")
    if args.quick:
        args.rounds, args.warmup, args.duration = 1, 0.3, 1.0
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.watch:
        token = args.token_file.read_text().strip()
        watching = watch(
            args.watch, token, args.watchers, args.readers, args.buffering_clients, args.batch_ms
        )
        print(json.dumps(asyncio.run(watching)))
        return
    settings = Settings(
        args.watchers,
        args.readers,
        args.rounds,
        args.warmup,
        args.duration,
        args.concurrency,
        args.buffering_clients,
        args.errord_root.resolve(),
        args.batch_ms,
    )
    print(report(run(settings), settings))


if __name__ == "__main__":
    main()
