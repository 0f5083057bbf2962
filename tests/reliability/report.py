"""The reliability report: every fault probe, run, and its figures as Markdown.

    .venv/bin/python -m tests.reliability.report [--short] [--output FILE]

The report goes to stdout, or to FILE with ``--output`` (tests/reliability/REPORT.md is
the one kept in the repository, written only when asked for so). What it runs:

- crash safety: SIGKILLs under load (tests.reliability.crash), 50 kills over 10,000
  decisions (``--short``: 5 over 1,000);
- bad requests: the kept corpus and random bytes against the daemon, 100,000 of them
  (``--short``: 10,000), with a valid report in every 200: the status codes answered
  and the daemon's memory growth;
- a damaged database: a fifth of the middle pages of a database of 2,000 decisions
  (``--short``: 300) overwritten, the daemon restarted on it (tests.reliability.salvage):
  the events saved and lost, and the decisions on sound pages replayed;
- hostile manifests, disk faults and corrupt databases: their test files, run by pytest.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import platform
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc

from tests.fixtures.malformed.requests import bad_payloads, new_report, resident_kib, send
from tests.helpers import ROOT, start_process
from tests.reliability.crash import run as crash
from tests.reliability.salvage import run as salvage

SUITES = (
    "tests/daemon/test_hostile_manifests.py",
    "tests/daemon/test_faults.py",
    "tests/daemon/test_corrupt_database.py",
)


def bad_requests(total: int, directory: Path) -> tuple[collections.Counter[str], int, int]:
    """Status codes answered to ``total`` bad requests (after 2,000 to warm up), the
    daemon's RSS growth in KiB over them, and the valid reports answered meanwhile."""
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(directory / "bad.db"))
    codes: collections.Counter[str] = collections.Counter()
    served = 0
    try:
        bad = bad_payloads(seed=11)
        sent, before = 0, 0
        with grpc.insecure_channel(daemon.address) as channel:
            while sent < 2_000 + total:
                if sent == 2_000:
                    before, codes = resident_kib(daemon.process.pid), collections.Counter()
                requests = list(itertools.islice(bad, 200))
                valid = new_report(turn_id="served", call_id=f"c{sent}").SerializeToString()
                answers = send(channel, [*requests, ("ReportFailure", valid)])
                codes.update(answer.code.name for answer in answers[:-1])
                served += answers[-1].code is grpc.StatusCode.OK
                sent += 200
            grown = resident_kib(daemon.process.pid) - before
    finally:
        daemon.terminate(signal.SIGTERM)
    return codes, grown, served


def pytest_summary(path: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else f"exit {result.returncode}"


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short form CI could run")
    parser.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the report to FILE (default: stdout)",
    )
    return parser.parse_args(argv)


def publish(report: str, output: Path | None) -> None:
    """The report to ``output``, or to stdout without one; no other file is written."""
    if output is None:
        print(report)
    else:
        output.write_text(report)
        print(f"reliability report written to {output}")


def main() -> None:
    args = arguments()
    kills, decisions, bad_total = (5, 1_000, 10_000) if args.short else (50, 10_000, 100_000)
    damaged_decisions = 300 if args.short else 2_000
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="errord-reliability-") as scratch:
        directory = Path(scratch)
        (directory / "crash").mkdir()
        crashed = crash(kills, decisions, directory / "crash")
        codes, grown, served = bad_requests(bad_total, directory)
        (directory / "salvage").mkdir()
        salvaged = salvage(damaged_decisions, directory / "salvage")
    suites = {path: pytest_summary(path) for path in SUITES}
    restarts = sorted(crashed.restart_seconds)
    lines = [
        "# errord reliability report",
        "",
        f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `.venv/bin/python -m"
        " tests.reliability.report"
        f"{' --short' if args.short else ''}` on {platform.machine()}, Python"
        f" {platform.python_version()}, in {time.perf_counter() - started:.0f} s.",
        "",
        "## Crash safety",
        "",
        f"- {crashed.kills} SIGKILLs under load survived; {crashed.decisions_acknowledged:,}"
        f" decisions acknowledged, {crashed.decisions_checked:,} checks that an acknowledged"
        f" decision is in the trace after a restart, {crashed.replays_checked} repeated"
        " reports answered with the decision first given.",
        f"- restart to SERVING: median {restarts[len(restarts) // 2]:.2f} s, slowest"
        f" {restarts[-1]:.2f} s.",
        "- `PRAGMA integrity_check` after every restart, and every projection against the"
        " fold of the trace at the end: "
        + ("all ok." if not crashed.problems else f"{len(crashed.problems)} problems:"),
        *(f"  - {problem}" for problem in crashed.problems[:20]),
        "",
        "## Bad requests",
        "",
        f"- {sum(codes.values()):,} bad requests (the kept corpus and random bytes) after"
        f" 2,000 to warm up; answered: "
        + ", ".join(f"{name} {count:,}" for name, count in codes.most_common())
        + " (OK and FAILED_PRECONDITION: random bytes that happen to be a valid request,"
        " answered as one).",
        f"- valid reports served among them: {served:,}; the daemon's RSS grew by"
        f" {grown / 1024:.1f} MiB.",
        "",
        "## A damaged database",
        "",
        f"- {salvaged.pages_damaged} of {salvaged.pages} pages (a fifth of all but the first"
        f" and the last) overwritten with random bytes under {salvaged.events:,} trace events"
        f" of {damaged_decisions:,} decisions; after a restart: {salvaged.saved:,} events"
        f" saved, {salvaged.lost:,} lost ({salvaged.events - salvaged.on_sound_pages:,} lay on"
        " the overwritten pages).",
        f"- {salvaged.replays_checked:,} decisions whose events lie on sound pages reported"
        " again, each to answer `replayed` with its first decision id; `PRAGMA"
        " integrity_check` of the salvaged database, and every projection against the fold of"
        " its trace: "
        + ("all ok." if not salvaged.problems else f"{len(salvaged.problems)} problems:"),
        *(f"  - {problem}" for problem in salvaged.problems[:20]),
        "",
        "## Hostile manifests, disk faults, corrupt databases",
        "",
        *(f"- `{path}`: {summary}" for path, summary in suites.items()),
        "",
    ]
    publish("\n".join(lines), args.output)
    failed = (
        crashed.problems
        or salvaged.problems
        or {"UNKNOWN", "INTERNAL"} & set(codes)
        or grown >= 10 * 1024
    )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
