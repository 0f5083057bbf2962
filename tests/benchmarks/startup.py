"""Start-up with a million-episode history: from spawning the daemon to health SERVING.

    python -m tests.benchmarks.startup --db PATH [--episodes 1000000] [--errors 100000]
        [--spawns 3] [--errord-root CHECKOUT]

The history is tests.benchmarks.memory's (built by it, or reused from ``--db``: build it
once with ``python -m tests.benchmarks.memory --db PATH --build-only``). On a copy of
it, the real daemon (``python -m errord serve --listen 127.0.0.1:0 --db COPY``) is
spawned ``--spawns`` times, each stopped with SIGTERM before the next: clean restarts,
the start-up the target is about; their median is reported. With ``--after-crash``, a
start on a copy the daemon never closed comes first: it checks the whole file with
SQLite's quick_check (about 11 s a GB), as after a crash, and is reported apart.

Each start is timed from spawn to the first Health.Check that answers SERVING, and cut
into phases by the daemon's own log lines (it runs at log_level "debug"), timed as they
arrive on its stderr: interpreter, imports and settings until the store's first line;
connecting, migrating, each projection's load; the server's start until "serving on";
the first health answer. A line logged after SERVING (a projection loaded in the
background) is shown as the time it came, after SERVING.

``--errord-root`` runs another checkout's daemon (PYTHONPATH set to it and its client
package), to measure the code before a change on the same history.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from errord.state.store.connection import mark_closed_cleanly
from tests.benchmarks.memory import Options, build, reusable

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 120.0
SERVING = "first health answer SERVING"


@dataclass
class Start:
    """One start of the daemon: when each of its lines came, seconds after the spawn."""

    marks: list[tuple[str, float]] = field(default_factory=list)
    """(phase, seconds after spawn at its end), in order; the last is SERVING."""
    after: list[tuple[str, float]] = field(default_factory=list)
    """Lines logged after SERVING (work left to the background), with their times."""

    @property
    def serving(self) -> float:
        return dict(self.marks)[SERVING]

    def phases(self) -> list[tuple[str, float]]:
        """Each phase and how long it took: from the previous mark to its own."""
        previous = 0.0
        phases = []
        for name, at in self.marks:
            phases.append((name, at - previous))
            previous = at
        return phases


class Lines:
    """The daemon's stderr, read by a thread: each line with the time it came."""

    def __init__(self, process: subprocess.Popen[bytes], spawned: float) -> None:
        self._process = process
        self._spawned = spawned
        self._lines: list[tuple[float, dict[str, object]]] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._process.stderr is not None
        for raw in self._process.stderr:
            at = time.perf_counter() - self._spawned
            try:
                record = json.loads(raw)
            except ValueError:
                record = {"msg": raw.decode(errors="replace").rstrip()}
            with self._changed:
                self._lines.append((at, record))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, text: str, timeout: float) -> tuple[float, str]:
        """The first line whose message contains ``text``: when it came, and its message."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for at, record in self._lines:
                    message = str(record.get("msg", ""))
                    if text in message:
                        return at, message
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    messages = [record.get("msg") for _, record in self._lines]
                    raise RuntimeError(f"no line with {text!r} from the daemon: {messages}")
                self._changed.wait(left)

    def taken(self) -> list[tuple[float, str]]:
        with self._changed:
            return [(at, str(record.get("msg", ""))) for at, record in self._lines]


PHASES = {
    "opening the database": "interpreter, imports, settings",
    "database checked": "quick_check (not closed cleanly)",
    "database schema migrated": "connect, check writable, migrate",
    "errord serving on": "engine, gRPC server start",
}
"""The phase a line ends, by how its message starts; else the message before its colon."""


def phase_name(message: str) -> str:
    """The phase ``message`` ends, without what changes from start to start (paths,
    ports, counts): ``loaded the calls projection: ...`` ends "loaded the calls projection"."""
    for start, name in PHASES.items():
        if message.startswith(start):
            return name
    return re.sub(r" in [\d.]+ s$", "", message.split(":")[0])


def spawn(db: Path, config: Path, errord_root: Path) -> Start:
    """Start the daemon on ``db``, time it to SERVING, wait for any work it left to the
    background (its last line), and stop it."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = f"{errord_root}:{errord_root / 'clients' / 'python' / 'src'}"
    argv = [sys.executable, "-m", "errord", "serve", "--config", str(config),
            "--listen", "127.0.0.1:0", "--db", str(db)]  # fmt: skip
    spawned = time.perf_counter()
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, cwd=errord_root, env=environment)
    lines = Lines(process, spawned)
    try:
        serving_at, serving = lines.wait_for("serving on", START_TIMEOUT)
        address = serving.split("serving on ")[1].split(",")[0]
        healthy = wait_serving(address, spawned)
        settled = settle(lines)
        start = Start()
        for at, message in lines.taken():
            if message == "decision" or at > settled:
                continue
            (start.marks if at <= serving_at else start.after).append((phase_name(message), at))
        start.marks.append((SERVING, healthy))
        return start
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


def wait_serving(address: str, spawned: float) -> float:
    """Seconds after ``spawned`` when health first answers SERVING at ``address``."""
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                answer = health.Check(health_pb2.HealthCheckRequest(), timeout=5)
            except grpc.RpcError:
                time.sleep(0.002)
                continue
            if answer.status == health_pb2.HealthCheckResponse.SERVING:
                return time.perf_counter() - spawned


PROJECTIONS = ("call", "turn", "breaker", "tool_stats", "memory")
"""Each logs "loaded the NAME projection" once loaded, at open or in the background."""


def settle(lines: Lines) -> float:
    """Wait until every projection is loaded; when the last one was."""
    return max(
        lines.wait_for(f"loaded the {name} projection", START_TIMEOUT)[0] for name in PROJECTIONS
    )


def median_start(starts: list[Start]) -> list[tuple[str, float]]:
    """Per phase, the median of its duration over ``starts`` (phases of the first's order)."""
    names = [name for name, _ in starts[0].phases()]
    durations: dict[str, list[float]] = {name: [] for name in names}
    for start in starts:
        for name, seconds in start.phases():
            durations.setdefault(name, []).append(seconds)
    return [(name, statistics.median(durations[name])) for name in names]


def report(first: Start | None, starts: list[Start], errord_root: Path, episodes: int) -> str:
    serving = [start.serving for start in starts]
    lines = [
        f"# Start-up to SERVING with {episodes:,} episodes ({errord_root})",
        "",
        f"- clean restarts: median {statistics.median(serving):.2f} s"
        f" ({', '.join(f'{s:.2f}' for s in serving)})",
    ]
    if first is not None:
        lines.append(
            f"- start after a crash (quick_check of the whole file first): {first.serving:.2f} s"
        )
    lines += [
        "",
        f"| phase (clean restart) | median s, of {len(starts)} |",
        "|---|---|",
        *(f"| {name} | {seconds:.3f} |" for name, seconds in median_start(starts)),
    ]
    after = [(name, statistics.median(at for _, at in lines)) for name, lines in _after(starts)]
    if after:
        lines += ["", "After SERVING, in the background (median s after spawn):", ""]
        lines += [f"- {name}: {at:.2f}" for name, at in after]
    if first is not None:
        lines += ["", "Start after a crash, phase by phase:", ""]
        lines += [f"- {name}: {seconds:.3f}" for name, seconds in first.phases()]
    return "\n".join(lines)


def _after(starts: list[Start]) -> list[tuple[str, list[tuple[str, float]]]]:
    by_name: dict[str, list[tuple[str, float]]] = {}
    for start in starts:
        for name, at in start.after:
            by_name.setdefault(name, []).append((name, at))
    return list(by_name.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="the built history (reused)")
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--errors", type=int, default=100_000)
    parser.add_argument("--spawns", type=int, default=3, help="clean restarts measured")
    parser.add_argument("--errord-root", type=Path, default=ROOT)
    parser.add_argument(
        "--after-crash", action="store_true", help="first, a start that runs quick_check"
    )
    args = parser.parse_args()
    if not reusable(args.db, args.episodes, args.errors):
        asyncio.run(build(Options(args.episodes, args.errors, args.db, 0.0, 0)))
    with tempfile.TemporaryDirectory(prefix="errord-startup-bench-") as scratch:
        copy = Path(scratch) / "history.db"
        shutil.copy2(args.db, copy)
        if not args.after_crash:
            mark_closed_cleanly(copy)  # as the build left it: closed cleanly
        config = Path(scratch) / "errord.toml"
        config.write_text(
            f"memory_max_errors = {args.errors}\nlog_level = 'debug'\nlog_format = 'json'\n"
        )
        root = args.errord_root.resolve()
        first = spawn(copy, config, root) if args.after_crash else None
        starts = [spawn(copy, config, root) for _ in range(args.spawns)]
    print(report(first, starts, root, args.episodes))


if __name__ == "__main__":
    main()
