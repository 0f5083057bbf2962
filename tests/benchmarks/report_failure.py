"""Benchmark: ReportFailure on errord against an echo and a durable echo server.

    python -m tests.benchmarks.report_failure                # 3 rounds, about 4 minutes
    python -m tests.benchmarks.report_failure --quick        # 1 round, about 30 seconds
    python -m tests.benchmarks.report_failure --errord-root /tmp/old-checkout --json out.json
    python -m tests.benchmarks.report_failure --quick --otlp-sink   # spans exported, discarded
    python -m tests.benchmarks.report_failure --errord-env OTEL_BSP_SCHEDULE_DELAY=1000

Three servers, each its own process, all grpc.aio on loopback with the same options:

- errord: the daemon as deployed, ``python -m errord serve`` with a real database file
  and its default durability (WAL, synchronous=FULL): it decides, records the decision
  durably, and only then answers.
- echo: answers every request with one canned decision of realistic size. What gRPC
  and protobuf cost alone: the floor no server goes under.
- durable-echo: the echo server that first commits a ~1.7 KB row per request to SQLite
  (WAL, synchronous=FULL), group-committed by a writer thread. The least any server
  must pay that, like errord, records its answer durably before giving it.

errord/echo measures how far the daemon is from free, but most of that gap is the
price of durability, which errord owes by contract and cannot optimize away.
errord/durable-echo is the figure that matters: what errord's own work (decoding,
validation, the decision, conversion, encoding, its store) costs above an honest
durable minimum. At 1.0 nothing is left to gain without giving up durability.

Each measured point runs its own load generator process (tests/benchmarks/loadgen.py)
against one server while the others idle, so that on a 2-core machine one server and
one generator share the cores. Closed loop at 1, 16 and 64 in flight gives throughput;
open loop at a fixed rate (default: 30 % of echo's closed-loop throughput at 64 in
flight, measured in the same run) gives latency without coordinated omission. The
servers keep running across rounds; each round measures every server in turn, the
order rotated, and the tables show the medians over rounds. Last, errord alone
takes ReportFailures of 8 failures a call, 8 calls in flight (64 failures, as at the
widest closed loop), and its decisions per second are compared with ReportFailure's.

The daemon runs in ``--errord-root`` with PYTHONPATH set to that checkout and its client
package, so that another checkout's code is what runs (the header says which), and with
each ``--errord-env KEY=VALUE`` in its environment. ``--otlp-sink`` starts an OTLP/HTTP
receiver that discards what it gets (tests/otlp_sink.py) and points errord's
OpenTelemetry export at it (OTEL_EXPORTER_OTLP_ENDPOINT), to measure the decision path
with export on. The harness imports nothing from errord, so it measures any commit
whatever state this checkout's daemon code is in.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from tests.benchmarks.loadgen import LATE_AFTER, Measurement
from tests.benchmarks.servers import canned_response
from tests.otlp_sink import OtlpReceiver

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ("errord", "echo", "durable-echo")
CONCURRENCIES = (1, 16, 64)
SERVING = re.compile(r"serving on (\S+),")
START_TIMEOUT = 30.0
KEPT_LINES = 200
"""Lines of a server's stderr kept, for the message when it fails."""
OPEN_SHARE = 0.30
"""The default open-loop rate, as a share of echo's closed-loop throughput at 64 in flight."""
BEHIND = 0.01
"""A generator that sends more than this share of its requests late has fallen behind."""


@dataclass(frozen=True)
class Options:
    rounds: int
    warmup: float
    duration: float
    rate: float | None
    servers: tuple[str, ...]
    errord_root: Path
    json_path: Path | None
    errord_env: dict[str, str] = field(default_factory=dict)
    """Set in errord's environment (``--errord-env``)."""
    otlp_sink: bool = False
    """Export errord's spans to a discarding OTLP/HTTP receiver of the harness."""


@dataclass(frozen=True)
class Load:
    mode: str
    """closed or open."""
    level: float
    """Requests in flight (closed loop) or requests per second (open loop)."""
    batch: int = 1
    """Failures per request: above 1, each request is a ReportFailures of that many."""

    @property
    def argv(self) -> list[str]:
        batch = ["--batch", str(self.batch)] if self.batch > 1 else []
        if self.mode == "closed":
            return [*batch, "closed", "--concurrency", str(int(self.level))]
        return [*batch, "open", "--rate", f"{self.level:.1f}"]

    @property
    def title(self) -> str:
        if self.batch > 1:
            return f"ReportFailures of {self.batch}, {int(self.level)} in flight"
        if self.mode == "closed":
            return f"Closed loop, {int(self.level)} in flight"
        return f"Open loop at {self.level:.0f} req/s"


BATCHED = Load("closed", 8, batch=8)
"""errord alone: 8 ReportFailures of 8 in flight, as many failures as the widest closed loop."""


@dataclass(frozen=True)
class Record:
    round: int
    server: str
    load: Load
    measurement: Measurement


# Processes.


def checkout_env(root: Path) -> dict[str, str]:
    """An environment in which Python imports the checkout at ``root`` and its client first."""
    paths = [str(root), str(root / "clients" / "python" / "src"), os.environ.get("PYTHONPATH")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}


class Server:
    """A server process, started in ``cwd`` with ``env`` added to its environment; its
    address once stderr says ``serving on A,``. Its stderr is read as it comes (a daemon
    logs a line per decision: a pipe left unread would block it), and only its last
    lines are kept."""

    def __init__(self, command: list[str], cwd: Path, env: Mapping[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env={**checkout_env(cwd), **(env or {})},
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.address = ""
        self.lines: deque[str] = deque(maxlen=KEPT_LINES)
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(START_TIMEOUT) or not self.address:
            self.stop()
            raise RuntimeError(f"{command} did not start:\n{self.stderr}")

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(START_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(START_TIMEOUT)
        assert self.process.stderr is not None
        self.process.stderr.close()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            match = SERVING.search(line)
            if match and not self.address:
                self.address = match[1]
                self._ready.set()
        self._ready.set()


def errord_origin(root: Path) -> str:
    """Where ``python -m errord`` in ``root`` imports errord from, and that checkout's commit."""
    probe = [sys.executable, "-c", "import errord.app, errord; print(errord.__file__)"]
    found = subprocess.run(
        probe, cwd=root, env=checkout_env(root), capture_output=True, text=True, check=False
    )
    if found.returncode != 0:
        raise SystemExit(f"errord in {root} does not import:\n{found.stderr}")
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{Path(found.stdout.strip()).parent} (commit {commit or 'unknown'})"


def start_server(
    name: str, directory: Path, errord_root: Path, errord_env: Mapping[str, str] | None = None
) -> Server:
    home = directory / name
    home.mkdir()
    if name == "errord":
        serve = ["serve", "--listen", "127.0.0.1:0", "--db", str(home / "errord.db")]
        return Server([sys.executable, "-m", "errord", *serve], errord_root, errord_env)
    command = [sys.executable, "-m", "tests.benchmarks.servers", name]
    if name == "durable-echo":
        command += ["--db", str(home / "rows.db")]
    return Server(command, ROOT)


@contextlib.contextmanager
def running_servers(options: Options, directory: Path) -> Iterator[dict[str, Server]]:
    """Every chosen server, started once, stopped when the block ends."""
    with contextlib.ExitStack() as stack:
        errord_env = dict(options.errord_env)
        if options.otlp_sink:
            sink = stack.enter_context(OtlpReceiver(keep=False))
            errord_env.setdefault("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint)
        servers: dict[str, Server] = {}
        for name in options.servers:
            servers[name] = start_server(name, directory, options.errord_root, errord_env)
            stack.callback(servers[name].stop)
        yield servers


def measure(server: Server, load: Load, options: Options) -> Measurement:
    """Run one load generator against ``server``; its measurement."""
    timing = ["--warmup", str(options.warmup), "--duration", str(options.duration)]
    command = [sys.executable, "-m", "tests.benchmarks.loadgen", server.address]
    command += ["--pid", str(server.process.pid), *timing, *load.argv]
    done = subprocess.run(
        command,
        env=checkout_env(ROOT),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=options.warmup + options.duration + 120,
    )
    if done.returncode != 0 or server.process.poll() is not None:
        raise RuntimeError(
            f"{load.title} failed:\n{done.stderr}\nserver stderr:\n{server.stderr[-4000:]}"
        )
    return cast(Measurement, json.loads(done.stdout))


# Rounds.


def rotated(names: Sequence[str], number: int) -> list[str]:
    shift = number % len(names)
    return [*names[shift:], *names[:shift]]


def run_rounds(
    servers: dict[str, Server],
    loads: Sequence[Load],
    options: Options,
    names: Sequence[str] | None = None,
) -> list[Record]:
    """Every load on every server (of ``names``), round after round, one server at a time."""
    records: list[Record] = []
    for number in range(1, options.rounds + 1):
        for name in rotated(names or options.servers, number - 1):
            for load in loads:
                record = Record(number, name, load, measure(servers[name], load, options))
                progress(record, options.rounds)
                records.append(record)
    return records


def progress(record: Record, rounds: int) -> None:
    figures = record.measurement
    print(
        f"round {record.round}/{rounds} {record.server:<12} {record.load.title:<28} "
        f"{figures['throughput']:7.0f} req/s  p99 {figures['p99_ms']:7.2f} ms",
        file=sys.stderr,
        flush=True,
    )


def open_rate(records: Sequence[Record]) -> float:
    """OPEN_SHARE of echo's median closed-loop throughput at the highest concurrency."""
    return OPEN_SHARE * median(records, "echo", Load("closed", max(CONCURRENCIES)), "throughput")


def benchmark(options: Options) -> tuple[float, list[Record]]:
    """The open-loop rate and every record of the run."""
    closed = [Load("closed", concurrency) for concurrency in CONCURRENCIES]
    with (
        tempfile.TemporaryDirectory(prefix="errord-bench-") as directory,
        running_servers(options, Path(directory)) as servers,
    ):
        records = run_rounds(servers, closed, options)
        rate = options.rate or open_rate(records)
        records += run_rounds(servers, [Load("open", rate)], options)
        if "errord" in servers:
            records += run_rounds(servers, [BATCHED], options, names=["errord"])
    return rate, records


# Report.


def figure(record: Record, key: str) -> float:
    figures: Mapping[str, object] = record.measurement
    value = figures[key]
    assert isinstance(value, int | float), key
    return float(value)


def values(records: Sequence[Record], server: str, load: Load, key: str) -> list[float]:
    """One figure of every round, for one server and load."""
    return [
        figure(record, key) for record in records if record.server == server and record.load == load
    ]


def median(records: Sequence[Record], server: str, load: Load, key: str) -> float:
    """The median over rounds; NaN when ``server`` was not measured."""
    found = values(records, server, load, key)
    return statistics.median(found) if found else math.nan


def headline(load: Load) -> tuple[str, str]:
    """The figure a load measures: throughput in a closed loop, p99 latency in an open one."""
    return ("throughput", "throughput") if load.mode == "closed" else ("p99_ms", "p99")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Names left-aligned in the first column, figures right-aligned in the others."""
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        name, *figures = cells
        padded = [name.ljust(widths[0])]
        padded += [cell.rjust(width) for cell, width in zip(figures, widths[1:], strict=True)]
        return "| " + " | ".join(padded) + " |"

    rule = [":" + "-" * (widths[0] + 1), *("-" * (width + 1) + ":" for width in widths[1:])]
    return "\n".join([line(header), "|" + "|".join(rule) + "|", *(line(row) for row in rows)])


COLUMNS: dict[str, tuple[str, str]] = {
    "req/s": ("throughput", "{:.0f}"),
    "p50 ms": ("p50_ms", "{:.2f}"),
    "p99 ms": ("p99_ms", "{:.2f}"),
    "p99.9 ms": ("p999_ms", "{:.2f}"),
    "server CPU µs/req": ("server_cpu_us_per_request", "{:.0f}"),
    "RSS MiB": ("server_vm_rss_kib", "{:.1f}"),
    "peak RSS MiB": ("server_vm_hwm_kib", "{:.1f}"),
    "generator CPU": ("generator_cpu_share", "{:.0%}"),
}
OPEN_COLUMNS: dict[str, tuple[str, str]] = {
    f"late >{LATE_AFTER * 1000:.0f} ms": ("late", "{:.0f}"),
    "send lag p99 ms": ("send_lag_p99_ms", "{:.2f}"),
}


STYLES = dict(COLUMNS.values())


def spread(found: Sequence[float], style: str) -> str:
    return f"{style.format(min(found))}-{style.format(max(found))}" if found else "n/a"


def table(records: Sequence[Record], load: Load, servers: Sequence[str]) -> str:
    """Medians over rounds, and the range of the load's headline figure."""
    columns = COLUMNS | (OPEN_COLUMNS if load.mode == "open" else {})
    key, figure = headline(load)
    rows = []
    for server in servers:
        cells = [server]
        for column, style in columns.values():
            value = median(records, server, load, column)
            cells.append(style.format(value / 1024 if column.endswith("_kib") else value))
        cells.append(spread(values(records, server, load, key), STYLES[key]))
        rows.append(cells)
    return markdown_table(["server", *columns, f"{figure} min-max"], rows)


def ratio(records: Sequence[Record], load: Load, key: str, baseline: str) -> str:
    value = median(records, "errord", load, key) / median(records, baseline, load, key)
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def ratios(records: Sequence[Record], load: Load) -> str:
    """errord over each baseline, for the load's headline figure and for CPU per request."""
    lines = []
    for key, figure in (headline(load), ("server_cpu_us_per_request", "server CPU/request")):
        lines.append(
            f"{figure}: errord/durable-echo = {ratio(records, load, key, 'durable-echo')}, "
            f"errord/echo = {ratio(records, load, key, 'echo')}"
        )
    return "\n".join(lines)


def notes(records: Sequence[Record]) -> list[str]:
    """Anything that makes a figure doubtful: failed calls, a generator that fell behind."""
    found = []
    for record in records:
        figures, where = record.measurement, f"round {record.round} {record.server}"
        if figures["errors"]:
            found.append(f"{where} {record.load.title}: failed calls {figures['errors']}")
        if figures["late"] > BEHIND * max(1, figures["requests"]):
            found.append(
                f"{where} {record.load.title}: the load generator fell behind, "
                f"{figures['late']} of {figures['requests']} requests sent late "
                f"(max {figures['send_lag_max_ms']:.1f} ms)"
            )
    return found


def batched(records: Sequence[Record]) -> str:
    """errord's decisions per second through ReportFailures against ReportFailure's."""
    unary = median(records, "errord", Load("closed", max(CONCURRENCIES)), "decisions_per_s")
    batch = median(records, "errord", BATCHED, "decisions_per_s")
    cpu = median(records, "errord", BATCHED, "server_cpu_us_per_request") / BATCHED.batch
    return (
        f"## {BATCHED.title}\n\n"
        f"errord: {batch:.0f} decisions/s, {cpu:.0f} µs server CPU per decision; "
        f"ReportFailure at {max(CONCURRENCIES)} in flight: {unary:.0f} decisions/s; "
        f"ratio {batch / unary:.2f}\n"
    )


def report(records: Sequence[Record], rate: float, options: Options) -> str:
    loads = [load for load in dict.fromkeys(record.load for record in records) if load.batch == 1]
    servers = [name for name in SERVERS if name in options.servers]
    parts = [
        f"## {load.title}\n\n{table(records, load, servers)}\n\n{ratios(records, load)}\n"
        for load in loads
    ]
    if any(record.load == BATCHED for record in records):
        parts.append(batched(records))
    widest = Load("closed", max(CONCURRENCIES))
    opened = Load("open", rate)
    parts.append(rate_origin(rate, options))
    parts.append(
        f"throughput at {int(widest.level)} in flight: "
        f"errord/durable-echo = {ratio(records, widest, 'throughput', 'durable-echo')}, "
        f"errord/echo = {ratio(records, widest, 'throughput', 'echo')}\n"
        f"open-loop p99 at {rate:.0f} req/s: "
        f"errord/durable-echo = {ratio(records, opened, 'p99_ms', 'durable-echo')}"
    )
    return "\n".join(parts + [f"note: {note}" for note in notes(records)])


def rate_origin(rate: float, options: Options) -> str:
    if options.rate is not None:
        return f"open-loop rate: {rate:.0f} req/s, as asked\n"
    return (
        f"open-loop rate: {rate:.0f} req/s, {OPEN_SHARE:.0%} of echo's median throughput at "
        f"{max(CONCURRENCIES)} in flight; compare other runs with --rate {rate:.0f}\n"
    )


def header(options: Options) -> str:
    response = canned_response().ByteSize()
    return (
        f"# ReportFailure benchmark, {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}\n\n"
        f"{os.cpu_count()} cores, Python {platform.python_version()}; "
        f"rounds: {options.rounds} (tables show medians), {options.warmup:g} s warm-up and "
        f"{options.duration:g} s measured per point\n"
        f"errord code: {errord_origin(options.errord_root)}\n"
        f"errord environment: {environment(options)}\n"
        f"echo answer: a canned ReportFailureResponse of {response} bytes\n"
    )


def environment(options: Options) -> str:
    """What the errord process gets in its environment besides the checkout's path."""
    added = [f"{key}={value}" for key, value in options.errord_env.items()]
    if options.otlp_sink:
        added.append("spans exported to a discarding OTLP/HTTP receiver (--otlp-sink)")
    return ", ".join(added) or "as the harness's"


def write_json(path: Path, options: Options, rate: float, records: Sequence[Record]) -> None:
    document = {
        "errord_root": str(options.errord_root),
        "errord_env": options.errord_env,
        "otlp_sink": options.otlp_sink,
        "rounds": options.rounds,
        "warmup_s": options.warmup,
        "duration_s": options.duration,
        "open_rate": rate,
        "response_bytes": canned_response().ByteSize(),
        "records": [
            {"round": record.round, "server": record.server, **record.measurement}
            for record in records
        ],
    }
    path.write_text(json.dumps(document, indent=1) + "\n")


# Command line.


def server_list(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = sorted(set(names) - set(SERVERS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(SERVERS)}; got {text!r}")
    return names


def parse(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="default: 3")
    parser.add_argument("--warmup", type=float, default=1.0, metavar="SECONDS", help="per point")
    parser.add_argument("--duration", type=float, default=4.0, metavar="SECONDS", help="per point")
    parser.add_argument("--rate", type=float, help="open-loop req/s (default: 30%% of echo's)")
    parser.add_argument(
        "--servers",
        "--only",
        type=server_list,
        default=SERVERS,
        metavar="NAMES",
        help=f"comma-separated, from {','.join(SERVERS)} (default: all)",
    )
    parser.add_argument("--errord-root", type=Path, default=ROOT, metavar="PATH")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every round's figures")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 round of 1 s points")
    parser.add_argument(
        "--errord-env",
        type=setting,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set in errord's environment (repeatable)",
    )
    parser.add_argument(
        "--otlp-sink",
        action="store_true",
        help="export errord's spans to a receiver that discards them (OpenTelemetry on)",
    )
    args = parser.parse_args(argv)
    if args.rate is None and "echo" not in args.servers:
        parser.error("without echo among the servers, --rate is needed")
    if args.quick:
        args.rounds, args.warmup, args.duration = 1, 0.3, 1.0
    return Options(
        args.rounds,
        args.warmup,
        args.duration,
        args.rate,
        args.servers,
        args.errord_root.resolve(),
        args.json,
        dict(args.errord_env),
        args.otlp_sink,
    )


def setting(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    print(header(options), flush=True)
    rate, records = benchmark(options)
    print(report(records, rate, options))
    if options.json_path:
        write_json(options.json_path, options, rate, records)


if __name__ == "__main__":
    main()
