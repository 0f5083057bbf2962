"""Benchmark: the daemon's resident memory over a million decisions.

    python -m tests.benchmarks.rss                          # 1,000,000 decisions, a few minutes
    python -m tests.benchmarks.rss --decisions 200000 --every 20000
    python -m tests.benchmarks.rss --errord-env MALLOC_ARENA_MAX=2 --json curve.json
    python -m tests.benchmarks.rss --errord-config settings.toml   # e.g. state_capacity

Starts the real daemon (``python -m errord serve --listen 127.0.0.1:0 --db PATH``, a fresh
database in a temporary directory, default settings unless ``--errord-config`` names a
settings file) and sends it ReportFailures as fast
as it answers: ``--concurrency`` calls in flight, each of ``--batch`` failures, each
failure the first attempt of call ``call_1`` of a turn of its own (the request of
tests/benchmarks/loadgen.py: three in four timeouts, one in four invalid input), so that
turns and calls accumulate as in the ReportFailure benchmark. Every ``--every`` decisions
it reads the daemon's VmRSS from /proc/PID/status.

Prints the curve (decisions, RSS, decisions per second since the last row), the RSS at
the end, its peak (VmHWM), and the slope over the last half of the run (least squares,
MB per 100,000 decisions): flat memory has a slope near 0.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from tests.benchmarks.loadgen import CALL_TIMEOUT, memory_kib, request, server_cpu_seconds
from tests.benchmarks.report_failure import Server

ROOT = Path(__file__).resolve().parents[2]
MB = 1_000_000
"""Figures are in MB (10^6 bytes), as the target is."""


@dataclass(frozen=True)
class Options:
    decisions: int
    every: int
    batch: int
    concurrency: int
    errord_root: Path
    errord_env: dict[str, str] = field(default_factory=dict)
    errord_config: Path | None = None
    json_path: Path | None = None


@dataclass(frozen=True)
class Point:
    """The daemon's memory after ``decisions`` decisions."""

    decisions: int
    seconds: float
    rss_kib: int
    hwm_kib: int
    anon_kib: int
    """Of ``rss_kib``, what the process allocated (RssAnon): the heap, not mapped files."""
    cpu_seconds: float

    @property
    def rss_mb(self) -> float:
        return self.rss_kib * 1024 / MB


def start_daemon(home: Path, options: Options) -> Server:
    """``python -m errord serve`` on a fresh database in ``home``, in ``--errord-root``."""
    serve = ["serve", "--listen", "127.0.0.1:0", "--db", str(home / "errord.db")]
    if options.errord_config is not None:
        serve += ["--config", str(options.errord_config)]
    command = [sys.executable, "-m", "errord", *serve]
    return Server(command, options.errord_root, options.errord_env)


def anon_kib(pid: int) -> int:
    """RssAnon of ``pid``: its resident memory that no file backs."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    return 0


def point(pid: int, decisions: int, started: float) -> Point:
    memory = memory_kib(pid)
    return Point(
        decisions,
        time.perf_counter() - started,
        memory["VmRSS"],
        memory["VmHWM"],
        anon_kib(pid),
        server_cpu_seconds(pid),
    )


class Driver:
    """Sends batches of new turns' failures until ``decisions`` are answered, reading the
    daemon's memory every ``every`` answered decisions."""

    def __init__(self, stub: errord_pb2_grpc.ErrorHandlerServiceStub, pid: int, options: Options):
        self._stub = stub
        self._pid = pid
        self._options = options
        self._prefix = f"rss-{uuid.uuid4().hex[:12]}"
        self._numbers = itertools.count()
        self._sent = 0
        self.answered = 0
        self.failed: dict[str, int] = {}
        self._started = time.perf_counter()
        self.points = [point(pid, 0, self._started)]

    def _message(self) -> pb.ReportFailuresRequest:
        failures = []
        for _ in range(self._options.batch):
            number = next(self._numbers)
            failures.append(request(f"{self._prefix}-{number}", number))
        return pb.ReportFailuresRequest(failures=failures)

    async def _worker(self) -> None:
        options = self._options
        while self._sent < options.decisions:
            self._sent += options.batch
            try:
                answer = await self._stub.ReportFailures(self._message(), timeout=CALL_TIMEOUT)
                refused = sum(result.WhichOneof("result") == "error" for result in answer.results)
                if refused:
                    self.failed["refused"] = self.failed.get("refused", 0) + refused
            except grpc.aio.AioRpcError as error:
                name = error.code().name
                self.failed[name] = self.failed.get(name, 0) + options.batch
            self._answered(options.batch)

    def _answered(self, count: int) -> None:
        before = self.answered
        self.answered += count
        every = self._options.every
        if self.answered // every > before // every or self.answered >= self._options.decisions:
            self.points.append(point(self._pid, self.answered, self._started))

    async def run(self) -> list[Point]:
        await asyncio.gather(*(self._worker() for _ in range(self._options.concurrency)))
        return self.points


async def drive(address: str, pid: int, options: Options) -> Driver:
    async with grpc.aio.insecure_channel(address) as channel:
        await asyncio.wait_for(channel.channel_ready(), CALL_TIMEOUT)
        driver = Driver(errord_pb2_grpc.ErrorHandlerServiceStub(channel), pid, options)
        await driver.run()
        return driver


def slope(points: Sequence[Point]) -> float:
    """Least-squares MB per 100,000 decisions through ``points``; 0 for fewer than two."""
    if len(points) < 2:
        return 0.0
    xs = [p.decisions / 100_000 for p in points]
    ys = [p.rss_mb for p in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if not spread:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def last_half(points: Sequence[Point]) -> list[Point]:
    """The points of the last half of the run, its middle included."""
    middle = points[-1].decisions / 2
    return [p for p in points if p.decisions >= middle]


def report(points: Sequence[Point], driver: Driver, options: Options) -> str:
    first, last, tail = points[0], points[-1], last_half(points)
    lines = [
        f"errord RSS over {last.decisions:,} decisions: ReportFailures of {options.batch} "
        f"new turns' failures, {options.concurrency} in flight",
        "",
        "| decisions | RSS MB | of which heap MB | decisions/s | daemon CPU µs/decision |",
        "|---:|---:|---:|---:|---:|",
        f"| 0 | {first.rss_mb:.1f} | {first.anon_kib * 1024 / MB:.1f} | | |",
    ]
    for before, after in itertools.pairwise(points):
        done = after.decisions - before.decisions
        rate = done / max(1e-9, after.seconds - before.seconds)
        cpu = (after.cpu_seconds - before.cpu_seconds) / max(1, done) * 1e6
        lines.append(
            f"| {after.decisions:,} | {after.rss_mb:.1f} | {after.anon_kib * 1024 / MB:.1f} "
            f"| {rate:,.0f} | {cpu:.0f} |"
        )
    lines += [
        "",
        f"RSS at the end: {last.rss_mb:.1f} MB (peak {last.hwm_kib * 1024 / MB:.1f} MB)",
        f"slope over the last {last.decisions - tail[0].decisions:,} decisions: "
        f"{slope(tail):+.2f} MB per 100k decisions",
        f"{last.decisions / last.seconds:,.0f} decisions/s overall",
    ]
    if driver.failed:
        lines.append(f"failed decisions: {driver.failed}")
    return "\n".join(lines)


def run(options: Options) -> str:
    with tempfile.TemporaryDirectory(prefix="errord-rss-") as directory:
        home = Path(directory)
        daemon = start_daemon(home, options)
        try:
            driver = asyncio.run(drive(daemon.address, daemon.process.pid, options))
        finally:
            daemon.stop()
    text = report(driver.points, driver, options)
    if options.json_path is not None:
        figures = {
            "options": asdict(options),
            "points": [asdict(p) for p in driver.points],
            "slope_last_half_mb_per_100k": slope(last_half(driver.points)),
            "failed": driver.failed,
        }
        options.json_path.write_text(json.dumps(figures, indent=1, default=str))
    return text


def environment(pairs: Sequence[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise SystemExit(f"--errord-env takes KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def parse(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1_000_000, metavar="N")
    parser.add_argument(
        "--every", type=int, default=50_000, metavar="N", help="read RSS every N decisions"
    )
    parser.add_argument("--batch", type=int, default=16, metavar="N", help="failures per call")
    parser.add_argument("--concurrency", type=int, default=8, metavar="N", help="calls in flight")
    parser.add_argument("--errord-root", type=Path, default=ROOT, metavar="PATH")
    parser.add_argument("--errord-env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--errord-config", type=Path, metavar="FILE", help="errord settings")
    parser.add_argument("--json", type=Path, dest="json_path", metavar="PATH")
    args = parser.parse_args(argv)
    if min(args.decisions, args.every, args.batch, args.concurrency) < 1:
        parser.error("--decisions, --every, --batch and --concurrency must be positive")
    return Options(
        args.decisions,
        args.every,
        args.batch,
        args.concurrency,
        args.errord_root.resolve(),
        environment(args.errord_env),
        args.errord_config and args.errord_config.resolve(),
        args.json_path,
    )


def main(argv: Sequence[str] | None = None) -> None:
    print(run(parse(argv)))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
