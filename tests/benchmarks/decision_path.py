"""Benchmark: the daemon's decision path in process, without gRPC: CPU per decision.

    python -m tests.benchmarks.decision_path [--requests 20000] [--in-flight 64] [--phases]
        [--fleet]

The servicer, handler, projections and store of ``errord serve`` (a real SQLite file,
WAL, synchronous=FULL, the group-commit writer and what follows a commit), driven by
``--in-flight`` tasks that each hand the servicer the next serialized ReportFailure
request (tests/benchmarks/loadgen.py's: every report a new call of a new turn) and
serialize its answer, as grpc would. What is measured is the process's CPU time per
decision (every thread: the event loop and SQLite's), so the figure moves with
errord's own work and not with the gRPC stack's, and a change can be compared in a
minute, A/B, on the same machine (``--errord-root`` is not needed: run each checkout's
copy of this file).

Logging is configured as the daemon's (``--log-level``, default info: a line per
decision), to stderr: send it where the daemon's goes (a file, journald's pipe).

``--phases`` also times each phase of a request with perf_counter around the functions
that make it (the timers' own cost, about 1 µs each, is included): request conversion,
redaction, the decision, submitting, the writer (staging, encoding, the transaction,
applying, what follows the commit), the response. The figures are per decision.

``--fleet`` runs each round twice, interleaved: alone, and with ``fleet_url`` set to a
Redis server of its own (tests/redis_server.py), the daemon in sync with its fleet
(errord.fleet: the views decisions read, and the link publishing every committed word,
its CPU counted), and prints the ratio of the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import logging
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from errord.assembly import engine_for
from errord.clock import SystemClock
from errord.config import Settings
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.fleet.joining import join_fleet
from errord.fleet.status import FleetState
from errord.handler import ErrorHandler
from errord.ops import logs
from errord.ops.logs import LogFormat
from errord.state.after_commit import AfterCommit
from errord.state.projections import Projections
from errord.state.store import Store
from errord.wire.service import ErrorHandlerService
from tests.benchmarks.loadgen import request
from tests.redis_server import RedisServer

PHASES: dict[str, tuple[str, str]] = {
    "convert request": ("errord.wire.requests", "failure_report_from_proto"),
    "redact": ("errord.handler", "redact_report"),
    "decide": ("errord.decide.engine", "Engine.decide"),
    "submit": ("errord.state.store", "Store.submit"),
    "writer: stage": ("errord.state.projections", "Projections.stage"),
    "writer: encode rows": ("errord.state.store.writer", "event_row"),
    "writer: commit state": ("errord.state.projections", "Projections.commit"),
    "writer: after commit": ("errord.state.store.writer", "GroupCommitWriter._notify"),
    "convert response": ("errord.wire.service", "responses.decision_to_proto"),
}
"""Each phase, as the module and the name (in it) of the function that does it."""


class PhaseTimers:
    """Wall time spent in each phase's function, summed, while installed."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self._undo: list[Callable[[], None]] = []

    def install(self) -> None:
        import importlib

        for phase, (module_name, path) in PHASES.items():
            owner: Any = importlib.import_module(module_name)
            *parents, name = path.split(".")
            for parent in parents:
                owner = getattr(owner, parent)
            original = getattr(owner, name)
            setattr(owner, name, self._timed(phase, original))
            self._undo.append(functools.partial(setattr, owner, name, original))

    def uninstall(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    def _timed(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        spent = self.spent

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[phase] += time.perf_counter() - started

        return timed


async def run(
    requests: int, in_flight: int, directory: Path, fleet_url: str | None = None
) -> tuple[float, float]:
    """CPU seconds and wall seconds for ``requests`` decisions, ``in_flight`` at a time;
    with ``fleet_url``, in sync with a fleet through it."""
    state = Projections()
    clock = SystemClock()
    path = directory / "errord.db"
    settings = Settings(db=path, fleet_url=fleet_url, fleet_name=directory.name[-60:])
    after_commit = AfterCommit()
    fleet = join_fleet(settings, state, clock, after_commit.tools.changed)
    if fleet is not None:
        after_commit.shared = fleet.committed
    stop = asyncio.Event()
    async with await Store.open(path, clock, state, after_commit=after_commit) as store:
        handler = ErrorHandler(engine_for(Settings()), store, state, ManifestSnapshot(), clock)
        linked = None
        if fleet is not None:
            handler.views.share(fleet.view)
            linked = asyncio.create_task(fleet.run(stop))
            async with asyncio.timeout(60):  # a bound on a hang, never a measure
                while fleet.status.state is not FleetState.IN_SYNC:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
        service = ErrorHandlerService(handler)
        prefix = directory.name
        data = [request(f"{prefix}-{n}", n).SerializeToString() for n in range(requests)]
        gc.freeze()
        next_request = iter(data)

        async def worker() -> None:
            for each in next_request:
                response = await service.report_failure(each, None)
                response.SerializeToString()

        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        if fleet is not None:  # the words of the last decisions sent: their CPU counts
            async with asyncio.timeout(60):
                while fleet.outbox.waiting or fleet.last_word_at is None:  # noqa: ASYNC110
                    await asyncio.sleep(0.001)
        spent = time.process_time() - cpu, time.perf_counter() - wall
        stop.set()
        if linked is not None:
            await linked
        return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--phases", action="store_true", help="time each phase too")
    parser.add_argument(
        "--fleet", action="store_true", help="each round also with fleet_url set, interleaved"
    )
    parser.add_argument(
        "--log-level", default="info", choices=("info", "warning"), help="as errord serve's"
    )
    args = parser.parse_args()
    # As the daemon logs (a line per decision at info), to stderr: redirect it.
    logs.configure(logging.getLevelNamesMapping()[args.log_level.upper()], LogFormat.LOGFMT)
    timers = PhaseTimers()
    with tempfile.TemporaryDirectory(prefix="decision-path-redis-") as scratch:
        redis = RedisServer(Path(scratch)).start() if args.fleet else None
        try:
            modes = {"alone": None} | ({"fleet_url set": redis.url} if redis else {})
            cpus: dict[str, list[float]] = {mode: [] for mode in modes}
            walls: dict[str, list[float]] = {mode: [] for mode in modes}
            for _ in range(args.rounds):
                for mode, url in modes.items():
                    with tempfile.TemporaryDirectory(prefix="decision-path-") as directory:
                        cpu, wall = asyncio.run(
                            run(args.requests, args.in_flight, Path(directory), url)
                        )
                    cpus[mode].append(cpu / args.requests * 1e6)
                    walls[mode].append(args.requests / wall)
        finally:
            if redis is not None:
                redis.kill()
    for mode in modes:
        label = "CPU per decision" if len(modes) == 1 else f"CPU per decision, {mode}"
        print(
            f"{label}: {statistics.median(cpus[mode]):.1f} µs (rounds: "
            f"{', '.join(f'{c:.1f}' for c in cpus[mode])}); "
            f"{statistics.median(walls[mode]):.0f} decisions/s"
        )
    if len(modes) > 1:
        ratio = statistics.median(cpus["fleet_url set"]) / statistics.median(cpus["alone"])
        print(f"fleet_url set / alone: {ratio:.3f}")
    if args.phases:
        timers.install()
        try:
            with tempfile.TemporaryDirectory(prefix="decision-path-") as directory:
                asyncio.run(run(args.requests, args.in_flight, Path(directory)))
        finally:
            timers.uninstall()
        for phase, seconds in timers.spent.items():
            print(f"  {phase:<22} {seconds / args.requests * 1e6:7.1f} µs")


if __name__ == "__main__":
    main()
