"""Benchmark: agents' tool calls through backend faults, with errord and with the retry
stacks agents use today.

    python -m tests.benchmarks.recovery --chart docs/images/recovery.png   # about 3 minutes
    python -m tests.benchmarks.recovery --quick --chart recovery.png        # under a minute

Starts errord (``errord serve`` on a temporary database, its embedded defaults, a manifest
giving each tool its timeout and the credential scenario's backup as its alternative),
then one process per stack (tests/benchmarks/recovery/agents.py). Each round, every stack
runs every scenario at the same time, each against backends of its own with the same
schedule and the same tasks: the stacks are interleaved as closely as they can be. Last,
with the agents gone, it measures the executor's success-path overhead beside tenacity +
pybreaker's (overhead.py). It prints the Markdown table, the goals errord is measured
against with this run's verdicts, and the overhead; writes the chart (``--chart``) and,
with ``--json``, every figure and what each process recorded.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from tests.benchmarks.recovery import chart, figures
from tests.benchmarks.recovery.overhead import Overhead
from tests.benchmarks.recovery.scenarios import FULL, QUICK, SCENARIOS, Profile, manifests
from tests.benchmarks.recovery.stacks import STACKS
from tests.helpers import ROOT, DaemonProcess, start_process, subprocess_env

STARTS_IN = 0.5
"""Seconds between the go and a round's start, for every process to read it."""
READY_WITHIN = 120.0


class Worker:
    """One stack's process: ``ready N``, ``go T`` and ``done N`` lines, a log file."""

    def __init__(self, stack: str, options: list[str], log: Path) -> None:
        self.stack = stack
        self.log = log
        self._log_file = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.benchmarks.recovery.agents", "--stack", stack, *options],
            cwd=ROOT,
            env=subprocess_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
        )

    def expect(self, line: str) -> None:
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        got = stdout.readline().strip()
        if got != line:
            self.stop()
            tail = self.log.read_text()[-3000:]
            raise RuntimeError(f"{self.stack}'s process said {got!r}, not {line!r}:\n{tail}")

    def go(self, start: float) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"go {start}\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(30)
        self._log_file.close()


def run_rounds(
    profile: Profile, daemon: DaemonProcess, directory: Path, scenarios: Sequence[str]
) -> list[dict[str, Any]]:
    """Every round of every stack; what each process wrote of each."""
    options = [
        "--profile", profile.name, "--rounds", str(profile.rounds),
        "--address", daemon.address, "--token-file", str(daemon.token_file),
        "--out", str(directory), *(f"--scenario={name}" for name in scenarios),
    ]  # fmt: skip
    workers = [Worker(stack, options, directory / f"{stack}.log") for stack in STACKS]
    try:
        for round_number in range(1, profile.rounds + 1):
            began = time.monotonic()
            for worker in workers:
                worker.expect(f"ready {round_number}")
            start = time.monotonic() + STARTS_IN
            for worker in workers:
                worker.go(start)
            for worker in workers:
                worker.expect(f"done {round_number}")
            print(
                f"round {round_number} of {profile.rounds}: ready in {start - began:.1f} s, "
                f"ran {time.monotonic() - start:.1f} s",
                file=sys.stderr,
            )
    finally:
        for worker in workers:
            worker.stop()
    return [json.loads(path.read_text()) for path in sorted(directory.glob("round-*.json"))]


def measure_overhead(address: str, calls: int) -> Overhead:
    """The success-path overhead, measured by a process of its own (overhead.py) that
    imports the checkout's client package, as the stacks' processes do."""
    command = [sys.executable, "-m", "tests.benchmarks.recovery.overhead", address]
    done = subprocess.run(
        [*command, "--calls", str(calls)],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    return Overhead(**json.loads(done.stdout))


def report(
    profile: Profile, cells: Sequence[figures.Cell], overhead: Overhead, chart_path: Path | None
) -> str:
    made = figures.goals(cells, overhead)
    scenarios = "\n".join(f"- {s.name}: {s.title}" for s in SCENARIOS)
    parts = [
        f"# Recovery: {len(STACKS)} stacks, {len(SCENARIOS)} scenarios, {profile.rounds} "
        f"round(s) of {profile.horizon:g} s, {profile.agents} agents a stack a scenario, "
        f"{profile.rate:g} tasks/s each",
        scenarios,
        figures.table(cells),
        "## Goals",
        figures.goal_lines(made),
        figures.local_decisions(cells),
        f"## Success-path overhead ({overhead.calls} calls each)",
        figures.overhead_lines(overhead),
    ]
    if chart_path is not None:
        parts.append(f"chart: {chart_path}")
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round: a smoke run")
    parser.add_argument("--rounds", type=int, help="rounds (default: 1 quick, 2 full)")
    parser.add_argument("--chart", type=Path, help="write the chart (PNG) here")
    parser.add_argument("--json", type=Path, help="write every figure and record here")
    parser.add_argument(
        "--scenario", action="append", default=[], choices=[s.name for s in SCENARIOS],
        help="run only this scenario (repeatable; default: every one)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    profile = QUICK if args.quick else FULL
    if args.rounds:
        profile = dataclasses.replace(profile, rounds=args.rounds)
    with tempfile.TemporaryDirectory(prefix="errord-recovery-") as name:
        directory = Path(name)
        (directory / "tools").mkdir()
        (directory / "tools" / "tools.yaml").write_text(manifests(profile))
        daemon = start_process(
            "--listen", "127.0.0.1:0", "--db", str(directory / "errord.db"),
            "--manifests", str(directory / "tools"),
        )  # fmt: skip
        try:
            records = run_rounds(profile, daemon, directory, args.scenario)
            overhead = measure_overhead(daemon.address, profile.overhead_calls)
        finally:
            daemon.terminate()
    cells = figures.cells(records)
    if args.chart:
        chart.draw(cells, records, args.chart)
    print(report(profile, cells, overhead, args.chart))
    if args.json:
        made = figures.goals(cells, overhead)
        args.json.write_text(
            json.dumps(
                {
                    "profile": dataclasses.asdict(profile),
                    "cells": [dataclasses.asdict(cell) for cell in cells],
                    "goals": [dataclasses.asdict(goal) for goal in made],
                    "overhead": dataclasses.asdict(overhead),
                    "records": records,
                },
                default=str,
            )
        )


if __name__ == "__main__":
    main()
