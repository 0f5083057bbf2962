"""Soak: the trace database stays within trace_retention_bytes while turns keep coming.

    python -m tests.benchmarks.trace_soak                      # 10 minutes at 1 MB/s
    python -m tests.benchmarks.trace_soak --seconds 20 --bound 16   # the suite's smoke run
    python -m tests.benchmarks.trace_soak --json soak.json

Starts the real daemon (``python -m errord serve``, a fresh database in a temporary
directory, ``trace_retention_bytes`` set to ``--bound`` MiB) and runs turns against it at a
steady rate, each a BeginTurn, ``--reports`` ReportFailures of about ``--kib`` KiB each (a
long error message and arguments, plain words that redaction leaves alone), and an
EndTurn; an open turn with a deadline a day away is begun first, and a tool's breaker
opened. Every ``--every`` seconds it reads the database file's size (and the WAL's).

Prints the size of the file over the run, its peak against the bound, how many turns the
daemon removed (its errord_trace_turns_removed_total), and whether the open turn and the
breaker are still there after a restart of the daemon.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
from errord_client import ErrordClient, pb
from errord_client.operator_token import OPERATOR_TOKEN, operator_token
from errord_client.v1 import errord_pb2_grpc

from tests.benchmarks.report_failure import Server

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20
WORDS = "the upstream pool is exhausted while the flight search backend drains "


@dataclass(frozen=True)
class Options:
    seconds: float
    bound_mib: int
    kib: int
    reports: int
    turns_per_second: float
    every: float
    json_path: Path | None = None


@dataclass
class Figures:
    bound_bytes: int
    written_bytes: int = 0
    """What the reports sent held, about."""
    turns: int = 0
    samples: list[tuple[float, int, int]] = field(default_factory=list)
    """(seconds, database file bytes, WAL bytes)."""
    removed_turns: int = 0
    open_turn_kept: bool = False
    breaker_kept: bool = False
    first_turn_removed: bool = False
    last_turn_kept: bool = False

    @property
    def peak_bytes(self) -> int:
        return max((db for _, db, _ in self.samples), default=0)

    @property
    def peak_wal_bytes(self) -> int:
        return max((wal for _, _, wal in self.samples), default=0)


def daemon(directory: Path, bound: int) -> Server:
    config = directory / "errord.toml"
    lines = [
        'listen = "127.0.0.1:0"',
        'db = "errord.db"',
        'metrics_listen = "127.0.0.1:0"',
        f"trace_retention_bytes = {bound}",
    ]
    config.write_text("\n".join(lines) + "\n")
    return Server([sys.executable, "-m", "errord", "serve", "--config", str(config)], ROOT)


def metrics_url(server: Server) -> str:
    for line in server.lines:
        if "metrics on http://" in line:
            return line.split("metrics on ", 1)[1].split(",", 1)[0].strip('"')
    raise RuntimeError("the daemon does not say where it serves metrics")


def removed_turns(metrics: str) -> int:
    with urllib.request.urlopen(metrics, timeout=30) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("errord_trace_turns_removed_total "):
                return int(float(line.split()[1]))
    return 0


def sizes(db: Path) -> tuple[int, int]:
    wal = db.with_name(db.name + "-wal")
    return (db.stat().st_size if db.exists() else 0, wal.stat().st_size if wal.exists() else 0)


def run_turns(client: ErrordClient, options: Options, figures: Figures, stop: float) -> None:
    """Turns at a steady rate until ``stop`` (a perf_counter time)."""
    # A message at most 16 KiB (errord's bound), the rest in the arguments.
    half = options.kib * 512
    message = "HTTP 503 Service Unavailable: " + WORDS * (min(half, 16_000) // len(WORDS))
    arguments = {"query": WORDS * ((options.kib * 1024 - len(message)) // len(WORDS))}
    started = time.perf_counter()
    while (now := time.perf_counter()) < stop:
        due = started + figures.turns / options.turns_per_second
        if now < due:
            time.sleep(due - now)
            continue
        turn = f"soak-{figures.turns:07}"
        client.begin_turn(turn)
        for call in range(options.reports):
            client.report_failure(
                turn_id=turn, call_id=f"c{call}", tool="search", attempt=1,
                http_status=503, message=message, arguments=arguments,
            )  # fmt: skip
            figures.written_bytes += len(message) + len(arguments["query"])
        client.end_turn(turn)
        figures.turns += 1


def sample(db: Path, options: Options, figures: Figures, done: threading.Event) -> None:
    started = time.perf_counter()
    while not done.wait(options.every):
        figures.samples.append((time.perf_counter() - started, *sizes(db)))


def soak(options: Options) -> Figures:
    bound = options.bound_mib * MIB
    figures = Figures(bound)
    with tempfile.TemporaryDirectory(prefix="errord-soak-") as name:
        directory = Path(name)
        db = directory / "errord.db"
        server = daemon(directory, bound)
        try:
            metrics = metrics_url(server)  # in the line saying where it serves
            token = operator_token(directory / OPERATOR_TOKEN)
            with ErrordClient(server.address, token=token) as client:
                client.begin_turn("soak-open", deadline=datetime.now(UTC) + timedelta(days=1))
                client.report_failure(turn_id="soak-open", call_id="c1", tool="lookup", attempt=1)
                for call in range(5):  # a breaker opened before the soak
                    client.report_failure(
                        turn_id="soak-open", call_id=f"b{call}", tool="flaky", attempt=1,
                        code=pb.ERROR_CODE_TIMEOUT,
                    )  # fmt: skip
                done = threading.Event()
                sampler = threading.Thread(target=sample, args=(db, options, figures, done))
                sampler.start()
                try:
                    run_turns(client, options, figures, time.perf_counter() + options.seconds)
                finally:
                    done.set()
                    sampler.join()
            figures.removed_turns = removed_turns(metrics)
        finally:
            server.stop()
        server = daemon(directory, bound)  # the restart
        try:
            with ErrordClient(server.address, token=token) as client:
                figures.open_turn_kept = bool(client.get_turn_trace("soak-open"))
                figures.first_turn_removed = not _has_turn(client, "soak-0000000")
                figures.last_turn_kept = _has_turn(client, f"soak-{figures.turns - 1:07}")
            with grpc.insecure_channel(server.address) as channel:
                operators = errord_pb2_grpc.OperatorServiceStub(channel)
                breaker = operators.GetBreaker(
                    pb.GetBreakerRequest(tool="flaky"),
                    metadata=(("authorization", f"Bearer {token}"),),
                    timeout=30,
                ).breaker
                figures.breaker_kept = breaker.state.opens == 1
        finally:
            server.stop()
    return figures


def _has_turn(client: ErrordClient, turn: str) -> bool:
    try:
        return bool(client.get_turn_trace(turn))
    except grpc.RpcError as error:
        if error.code() is grpc.StatusCode.NOT_FOUND:
            return False
        raise


def report(options: Options, figures: Figures) -> str:
    mb = 1_000_000
    lines = [
        f"# Trace retention soak: {options.seconds:g} s, {figures.turns} turns "
        f"({options.reports} reports of ~{options.kib} KiB each), "
        f"{figures.written_bytes / mb:.1f} MB of reports, bound {options.bound_mib} MiB",
        "",
        "| seconds | database file (MB) | WAL (MB) |",
        "|---|---|---|",
    ]
    step = max(1, len(figures.samples) // 10)
    for seconds, db, wal in figures.samples[::step]:
        lines.append(f"| {seconds:.0f} | {db / mb:.1f} | {wal / mb:.1f} |")
    lines += [
        "",
        f"peak database file: {figures.peak_bytes / mb:.1f} MB of the bound's "
        f"{figures.bound_bytes / mb:.1f} MB (WAL peak {figures.peak_wal_bytes / mb:.1f} MB)",
        f"turns removed by retention: {figures.removed_turns}; the first turn removed: "
        f"{figures.first_turn_removed}, the last kept: {figures.last_turn_kept}",
        f"after a restart: the open turn kept: {figures.open_turn_kept}, the breaker kept: "
        f"{figures.breaker_kept}",
    ]
    return "\n".join(lines)


def parse(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seconds", type=float, default=600.0, help="(default: 600)")
    parser.add_argument("--bound", type=int, default=64, help="the bound, MiB (default: 64)")
    parser.add_argument("--kib", type=int, default=32, help="KiB a report (default: 32)")
    parser.add_argument("--reports", type=int, default=3, help="reports a turn (default: 3)")
    parser.add_argument(
        "--turns-per-second", type=float, default=10.0, help="(default: 10, ~1 MB/s)"
    )
    parser.add_argument("--every", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    return Options(
        args.seconds, args.bound, args.kib, args.reports, args.turns_per_second, args.every,
        args.json,
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    figures = soak(options)
    if options.json_path is not None:
        found = asdict(figures) | {"peak_bytes": figures.peak_bytes}
        options.json_path.write_text(json.dumps(found))
    print(report(options, figures))


if __name__ == "__main__":
    main()
