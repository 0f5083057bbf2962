"""Episodic memory at scale: a trace of 1,000,000 episodes, then recall, decisions and
start-up measured on it, against the same figures with an empty memory.

    python -m tests.benchmarks.memory [--episodes 1000000] [--errors 100000] [--db PATH]

1. Build (skipped when ``--db`` names a database built with the same figures less than
   12 hours ago): the real handler and store, in process, record ``--episodes``
   episodes of ``--errors`` errors (1,000 tools, each with its share of distinct error
   messages): each is a timeout that errord decides to retry, whose retry's outcome is
   then reported (three in four recover), over the two hours before the build; half
   of the errors are only seen in its first 40 minutes.
2. Start-up: opening the database (schema check, loading every projection) and, for
   comparison, rebuilding every projection from the whole trace.
3. Recall: ``recall`` of a random remembered error's statistics (what a decision reads),
   and the RecallEpisodes RPC of one error against the real daemon serving the database.
4. Decisions: closed-loop ReportFailure load (64 in flight) against the real daemon on
   the built database, where every report is an error memory holds (its evidence steers
   the decision), and against one on an empty database, alternately, three rounds each.
5. Pruning: 64 reports decided at once in process on the built history while an age
   pass forgets every error not seen in its last hour (half of them), against as long a
   run without a pass: the decisions' latencies.

Prints a Markdown report. Figures move from machine to machine; the ratios are the
point.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
from errord_client.operator_token import OPERATOR_TOKEN, operator_token
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.clock import SystemClock
from errord.decide.engine import Engine
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory import recall
from errord.decide.model import ErrorCode, FailureReport, Outcome, OutcomeReport, ToolFailure
from errord.decide.policy import default_policy
from errord.handler import ErrorHandler
from errord.state.memory_retention import MemoryBounds
from errord.state.projections import Projections
from errord.state.store import Store
from tests.fakes import FakeClock

TOOLS = 1_000
BATCH = 256
"""Calls reported together, as one ReportFailures would."""
SPAN = 2 * 3_600.0
"""Seconds the built history spans, ending when it is built: two half-lives of evidence."""
FRESH_FOR = 12 * 3_600.0
"""Seconds a built history is reused for: well within the default age bound (a day), so
that the daemons measured do not start by forgetting it."""


@dataclass(frozen=True)
class Options:
    episodes: int
    errors: int
    db: Path
    duration: float
    rounds: int


def word(number: int) -> str:
    """Letters only: a fingerprint keeps them, so each number is its own error."""
    letters = ""
    for _ in range(4):
        letters += string.ascii_lowercase[number % 26]
        number //= 26
    return letters


def error_of(number: int) -> tuple[str, str]:
    """The tool and message of error ``number``."""
    return f"tool{number % TOOLS}", f"upstream {word(number // TOOLS)} timed out after 30s"


def failure(turn: str, call: str, error: int) -> FailureReport:
    tool, message = error_of(error)
    return FailureReport(
        turn_id=turn,
        call_id=call,
        tool=tool,
        attempt=1,
        error=ToolFailure(code=ErrorCode.TIMEOUT, message=message),
    )


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest rank; 0 for no values."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


# 1. Build.


def reusable(db: Path, episodes: int, errors: int) -> bool:
    """True when ``db`` holds a history of these figures, recent enough."""
    marker = db.with_suffix(".json")
    if not db.exists() or not marker.exists():
        return False
    built = json.loads(marker.read_text())
    ends = datetime.fromisoformat(built.get("ends_at", "2000-01-01T00:00:00+00:00"))
    recent = (datetime.now(UTC) - ends).total_seconds() < FRESH_FOR
    return (built["episodes"], built["errors"]) == (episodes, errors) and recent


async def build(options: Options) -> float:
    """Record the episodes; seconds it took."""
    options.db.parent.mkdir(parents=True, exist_ok=True)
    for stale in options.db.parent.glob(options.db.name + "*"):
        stale.unlink()
    clock = FakeClock()
    clock.wall_time = datetime.now(UTC) - timedelta(seconds=SPAN)
    bounds = MemoryBounds(max_errors=options.errors)
    # Every call of the build held in memory, and no fsync per batch: the build only makes
    # the history; what is measured afterwards runs as the daemon does.
    state = Projections(capacity=options.episodes + 1, memory_errors=options.errors)
    started = time.perf_counter()
    store = await Store.open(options.db, clock, state)
    await store._db.execute("PRAGMA synchronous = OFF")
    handler = ErrorHandler(
        Engine(default_policy(random.Random(1))), store, state, ManifestSnapshot(), clock, bounds
    )
    chooser = random.Random(2)
    step = SPAN / (options.episodes / BATCH)
    for batch, first in enumerate(range(0, options.episodes, BATCH)):
        turn = f"build-{batch}"
        count = min(BATCH, options.episodes - first)
        # After the first third (40 minutes), half of the errors are seen no more: they are
        # there for an age pass to forget.
        cycle = options.errors if first < options.episodes // 3 else options.errors // 2
        errors = [(first + i) % cycle for i in range(count)]
        reports = [failure(turn, f"c{i}", error) for i, error in enumerate(errors)]
        await handler.report_failures(reports)
        outcomes = [
            OutcomeReport(
                turn,
                report.call_id,
                report.tool,
                2,
                Outcome.SUCCESS if chooser.random() < 0.75 else Outcome.FAILURE,
            )
            for report in reports
        ]
        await asyncio.gather(*(handler.report_outcome(outcome) for outcome in outcomes))
        clock.advance(step)
        if batch % 400 == 0:
            done = first + count
            print(f"  built {done:,} of {options.episodes:,} episodes", file=sys.stderr)
    await store.close()
    seconds = time.perf_counter() - started
    marker = {
        "episodes": options.episodes,
        "errors": options.errors,
        "ends_at": clock.now().isoformat(),
    }
    options.db.with_suffix(".json").write_text(json.dumps(marker))
    return seconds


# 2. Start-up, 3a. recall in process.


@dataclass(frozen=True)
class Opened:
    open_seconds: float
    rebuild_seconds: float
    remembered: int
    events: int
    recall_us: list[float]


async def open_and_recall(options: Options) -> Opened:
    state = Projections(memory_errors=options.errors)
    started = time.perf_counter()
    store = await Store.open(options.db, FakeClock(), state)
    opened = time.perf_counter() - started
    try:
        started = time.perf_counter()
        await store.fold_trace(state.all)
        rebuilt = time.perf_counter() - started
        events = store._next_sequence - 1
        memory = state.memory
        keys = list(memory.snapshot())
        now = max(stats.seen_at or datetime.min for stats in memory.snapshot().values())
        chooser = random.Random(3)
        timings = []
        for _ in range(20_000):
            key = chooser.choice(keys)
            begun = time.perf_counter()
            recall(memory.view(key), now)
            timings.append((time.perf_counter() - begun) * 1e6)
    finally:
        await store.close()
    return Opened(opened, rebuilt, len(keys), events, sorted(timings))


# 3b, 4. Against the real daemon.


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    address: str
    token: str
    """The operator token it made beside its database (RecallEpisodes needs it)."""

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


def start_daemon(db: Path, errors: int) -> tuple[Daemon, float]:
    """The daemon on ``db``; and seconds from exec to answering health."""
    config = db.parent / f"{db.stem}.toml"
    config.write_text(f"memory_max_errors = {errors}\nlog_level = 'error'\n")
    port_file = db.parent / f"{db.stem}.port"
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "errord", "serve", "--config", str(config),
         "--listen", f"unix:{port_file}", "--db", str(db)],
    )  # fmt: skip
    address = f"unix:{port_file}"
    with grpc.insecure_channel(address) as channel:
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        health = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                break
            except grpc.RpcError:
                if process.poll() is not None:
                    raise RuntimeError("the daemon exited at start") from None
                time.sleep(0.01)
    token = operator_token(db.parent / OPERATOR_TOKEN)
    return Daemon(process, address, token), time.perf_counter() - started


def recall_rpc(daemon: Daemon, errors: int) -> list[float]:
    chooser = random.Random(4)
    timings = []
    metadata = (("authorization", f"Bearer {daemon.token}"),)
    with grpc.insecure_channel(daemon.address) as channel:
        stub = errord_pb2_grpc.OperatorServiceStub(channel)
        for _ in range(2_000):
            tool, message = error_of(chooser.randrange(errors))
            request = pb.RecallEpisodesRequest(tool=tool, message=message)
            begun = time.perf_counter()
            stub.RecallEpisodes(request, timeout=10, metadata=metadata)
            timings.append((time.perf_counter() - begun) * 1e3)
    return sorted(timings)


async def decisions(address: str, errors: int, duration: float) -> tuple[float, float]:
    """Decisions per second and p99 in ms at 64 in flight, each report a remembered error."""
    chooser = random.Random()
    latencies: list[float] = []
    stop = time.perf_counter() + 1.0 + duration
    measured_from = time.perf_counter() + 1.0
    counted = 0
    prefix = f"load-{chooser.randrange(1 << 30)}"
    numbers = iter(range(1 << 62))

    async with grpc.aio.insecure_channel(address) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)

        async def worker() -> None:
            nonlocal counted
            while (now := time.perf_counter()) < stop:
                tool, message = error_of(chooser.randrange(errors))
                request = pb.ReportFailureRequest(
                    turn_id=f"{prefix}-{next(numbers)}", call_id="c", tool=tool, attempt=1,
                    error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message=message),
                )  # fmt: skip
                await stub.ReportFailure(request, timeout=30)
                if now >= measured_from:
                    counted += 1
                    latencies.append((time.perf_counter() - now) * 1e3)

        await asyncio.gather(*(worker() for _ in range(64)))
    return counted / duration, percentile(sorted(latencies), 0.99)


def measure_decisions(options: Options, empty: Path) -> dict[str, list[tuple[float, float]]]:
    results: dict[str, list[tuple[float, float]]] = {"remembered": [], "empty": []}
    for _ in range(options.rounds):
        for name, db in (("remembered", options.db), ("empty", empty)):
            daemon, _ = start_daemon(db, options.errors)
            try:
                results[name].append(
                    asyncio.run(decisions(daemon.address, options.errors, options.duration))
                )
            finally:
                daemon.stop()
    return results


# 5. Pruning.


@dataclass(frozen=True)
class Pruning:
    forgotten: int
    seconds: float
    """How long the age pass took, decisions going on."""
    during_ms: list[float]
    """Decision latencies while it ran."""
    without_ms: list[float]
    """Decision latencies for as long, on the same history, without a pass."""


async def decisions_while_pruning(db: Path, directory: Path, errors: int) -> Pruning:
    """64 concurrent reports in process, on the built history, while an age pass forgets
    every error not seen in the last hour; then for as long without a pass."""
    copy = directory / "pruned.db"
    shutil.copyfile(db, copy)
    marker = db.with_suffix(".json")
    forgotten, seconds, during = await _decide_while(copy, marker, errors, prune=True, seconds=0.0)
    copy.unlink()
    shutil.copyfile(db, copy)
    _, _, without = await _decide_while(copy, marker, errors, prune=False, seconds=seconds)
    return Pruning(forgotten, seconds, sorted(during), sorted(without))


async def _decide_while(
    db: Path, db_marker: Path, errors: int, *, prune: bool, seconds: float
) -> tuple[int, float, list[float]]:
    state = Projections(memory_errors=errors)
    clock = SystemClock()
    store = await Store.open(db, clock, state)
    # An hour before the history ends, however long ago it was built.
    ends = datetime.fromisoformat(json.loads(db_marker.read_bytes())["ends_at"])  # noqa: ASYNC240
    an_hour_before_the_end = 3_600.0 + (datetime.now(UTC) - ends).total_seconds()
    bounds = MemoryBounds(errors, max_age=an_hour_before_the_end if prune else 86_400.0)
    handler = ErrorHandler(
        Engine(default_policy(random.Random())), store, state, ManifestSnapshot(), clock, bounds
    )
    chooser = random.Random(5)
    latencies: list[float] = []
    stop = asyncio.Event()

    async def worker(number: int) -> None:
        for call in range(1 << 62):
            if stop.is_set():
                return
            # Errors still being seen: the pass forgets the others, none that reports touch.
            report = failure(f"prune-{number}-{call}", "c", chooser.randrange(errors // 2))
            begun = time.perf_counter()
            await handler.report_failure(report)
            latencies.append((time.perf_counter() - begun) * 1e3)

    workers = [asyncio.create_task(worker(number)) for number in range(64)]
    await asyncio.sleep(1.0)  # warm-up
    latencies.clear()
    begun = time.perf_counter()
    forgotten = await handler.retention.forget_old() if prune else 0
    if not prune:
        await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - begun
    measured = list(latencies)
    stop.set()
    await asyncio.gather(*workers)
    await store.close()
    return forgotten, elapsed, measured


def working_copy(db: Path, directory: Path) -> Path:
    """A copy of the built database for a run to write into, so that the next run
    starts from the same one."""
    copy = directory / "remembered.db"
    shutil.copyfile(db, copy)
    return copy


def fmt_us(timings: list[float]) -> str:
    return f"p50 {percentile(timings, 0.5):.2f} µs, p99 {percentile(timings, 0.99):.2f} µs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--errors", type=int, default=100_000)
    parser.add_argument("--db", type=Path, help="where the built database is kept for reuse")
    parser.add_argument("--duration", type=float, default=4.0, metavar="SECONDS")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build-only", action="store_true", help="build --db, measure nothing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="errord-memory-bench-") as scratch:
        directory = Path(scratch)
        db = args.db or directory / "built.db"
        options = Options(args.episodes, args.errors, db, args.duration, args.rounds)
        if reusable(db, args.episodes, args.errors):
            print(f"reusing {db}: {args.episodes:,} episodes of {args.errors:,} errors")
            built_in = None
        else:
            built_in = asyncio.run(build(options))
        if args.build_only:
            return
        options = Options(
            args.episodes, args.errors, working_copy(db, directory), args.duration, args.rounds
        )
        opened = asyncio.run(open_and_recall(options))
        daemon, daemon_start = start_daemon(options.db, options.errors)
        try:
            rpc = recall_rpc(daemon, options.errors)
        finally:
            daemon.stop()
        results = measure_decisions(options, directory / "empty.db")
        pruning = asyncio.run(decisions_while_pruning(db, directory, args.errors))
    print(report(options, built_in, opened, daemon_start, rpc, results, pruning))


def report(
    options: Options,
    built_in: float | None,
    opened: Opened,
    daemon_start: float,
    rpc: list[float],
    results: dict[str, list[tuple[float, float]]],
    pruning: Pruning,
) -> str:
    remembered = statistics.median(r for r, _ in results["remembered"])
    empty = statistics.median(r for r, _ in results["empty"])
    lines = [
        f"# Episodic memory with {options.episodes:,} episodes of {options.errors:,} errors",
        "",
        f"- trace: {opened.events:,} events; memory holds {opened.remembered:,} errors",
    ]
    if built_in is not None:
        lines.append(f"- built in {built_in:.0f} s (in process, real handler and store)")
    lines += [
        f"- start-up: database opened and every projection loaded in {opened.open_seconds:.2f} s;"
        f" daemon process from exec to answering health: {daemon_start:.2f} s",
        f"- rebuilding every projection from the whole trace (a fold version change):"
        f" {opened.rebuild_seconds:.1f} s",
        f"- recall of one error's statistics, in process: {fmt_us(opened.recall_us)}",
        f"- RecallEpisodes RPC of one error over a unix socket: p50"
        f" {percentile(rpc, 0.5):.2f} ms, p99 {percentile(rpc, 0.99):.2f} ms",
        "",
        "ReportFailure at 64 in flight, each report an error memory holds (median of"
        f" {options.rounds} rounds, {options.duration:g} s each):",
        "",
        "| memory | decisions/s | p99 ms |",
        "|---|---|---|",
        f"| {options.episodes:,} episodes | {remembered:,.0f} |"
        f" {statistics.median(p for _, p in results['remembered']):.1f} |",
        f"| empty | {empty:,.0f} | {statistics.median(p for _, p in results['empty']):.1f} |",
        "",
        f"remembered/empty throughput = {remembered / empty:.3f}",
        "",
        f"An age pass forgetting the {pruning.forgotten:,} errors not seen in the history's last"
        f" hour, in {pruning.seconds:.1f} s, while 64 reports are decided at once in process:"
        f" decision p99 {percentile(pruning.during_ms, 0.99):.1f} ms"
        f" (p50 {percentile(pruning.during_ms, 0.5):.1f} ms, {len(pruning.during_ms):,}"
        f" decisions) during it, against {percentile(pruning.without_ms, 0.99):.1f} ms"
        f" (p50 {percentile(pruning.without_ms, 0.5):.1f} ms,"
        f" {len(pruning.without_ms):,} decisions) for as long without.",
        "",
        *(
            f"- {name}, round by round: " + ", ".join(f"{rate:,.0f}/s" for rate, _ in runs)
            for name, runs in results.items()
        ),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
