"""The benchmarks run: the harness against the real daemon, and the engine micro-benchmark.

Smoke runs only: they check that every figure is produced, never how fast anything is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, DaemonProcess, subprocess_env


def run(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout


def test_the_benchmark_compares_errord_with_both_echo_servers(tmp_path: Path) -> None:
    output = tmp_path / "figures.json"
    text = run(
        "tests.benchmarks.report_failure",
        "--quick",
        "--warmup", "0.2",
        "--duration", "0.5",
        "--rate", "50",
        "--json", str(output),
    )  # fmt: skip
    assert "throughput at 64 in flight: errord/durable-echo = " in text
    assert "open-loop p99 at 50 req/s: errord/durable-echo = " in text
    records = json.loads(output.read_text())["records"]
    points = {(r["server"], r["mode"], r["concurrency"] or r["rate"]) for r in records}
    assert points == {
        (server, mode, level)
        for server in ("errord", "echo", "durable-echo")
        for mode, level in [("closed", 1), ("closed", 16), ("closed", 64), ("open", 50)]
    } | {("errord", "closed", 8)}
    assert "## ReportFailures of 8, 8 in flight" in text
    assert all(not r["errors"] and r["server_cpu_us_per_request"] > 0 for r in records)


def test_the_engine_micro_benchmark_reports_each_step() -> None:
    text = run("tests.benchmarks.engine", "--reports", "200")
    for step in ("decide", "reserve+stage+commit", "encode rows", "convert", "total"):
        assert f"{step} " in text


def test_the_decision_path_benchmark_reports_cpu_per_decision_and_each_phase() -> None:
    text = run(
        "tests.benchmarks.decision_path", "--requests", "300", "--rounds", "1", "--phases"
    )  # fmt: skip
    assert "CPU per decision: " in text
    for phase in ("convert request", "decide", "submit", "writer: stage", "convert response"):
        assert f"  {phase} " in text


def test_the_decision_path_benchmark_compares_a_fleet_with_a_daemon_alone() -> None:
    text = run(
        "tests.benchmarks.decision_path", "--requests", "300", "--rounds", "1", "--fleet"
    )  # fmt: skip
    assert "CPU per decision, alone: " in text
    assert "CPU per decision, fleet_url set: " in text
    assert "fleet_url set / alone: " in text


def test_the_fleet_propagation_benchmark_reports_its_percentiles() -> None:
    text = run("tests.benchmarks.fleet_propagation", "--openings", "5")
    assert "| openings | p50 | p90 | p99 | max | mean |" in text
    assert "| 5 | " in text


def test_the_replay_benchmark_builds_a_trace_and_replays_it_unchanged(tmp_path: Path) -> None:
    text = run(
        "tests.benchmarks.replay", "--failures", "500", "--db", str(tmp_path / "trace.db")
    )  # fmt: skip
    assert "500 failures re-decided" in text
    assert "replay rate: " in text  # and it exited 0: no decision changed


def test_the_load_generator_sends_batches_of_failures(daemon_process: DaemonProcess) -> None:
    pid = str(daemon_process.process.pid)
    text = run(
        "tests.benchmarks.loadgen", daemon_process.address, "--pid", pid,
        "--warmup", "0.1", "--duration", "0.5", "--batch", "8", "closed", "--concurrency", "2",
    )  # fmt: skip
    figures = json.loads(text)
    assert figures["batch"] == 8
    assert not figures["errors"]
    assert figures["decisions_per_s"] == pytest.approx(8 * figures["throughput"])


def test_the_memory_benchmark_measures_recall_decisions_and_start_up(tmp_path: Path) -> None:
    text = run(
        "tests.benchmarks.memory",
        "--episodes", "3000",
        "--errors", "300",
        "--duration", "0.5",
        "--rounds", "1",
        "--db", str(tmp_path / "built.db"),
    )  # fmt: skip
    assert "# Episodic memory with 3,000 episodes of 300 errors" in text
    assert "memory holds 300 errors" in text
    for figure in (
        "- start-up: database opened and every projection loaded in ",
        "- recall of one error's statistics, in process: p50 ",
        "- RecallEpisodes RPC of one error over a unix socket: p50 ",
        "remembered/empty throughput = ",
    ):
        assert figure in text
    again = run(
        "tests.benchmarks.memory", "--episodes", "3000", "--errors", "300",
        "--duration", "0.2", "--rounds", "1", "--db", str(tmp_path / "built.db"),
    )  # fmt: skip
    assert "reusing " in again


def test_the_executor_benchmark_measures_the_overhead_and_the_rpcs_on_a_calls_path(
    tmp_path: Path,
) -> None:
    output = tmp_path / "executor.json"
    text = run("tests.benchmarks.executor", "--calls", "200", "--json", str(output))
    assert "overhead               p50 " in text
    figures = json.loads(output.read_text())
    assert figures["calls"] == 200
    assert figures["executor_p50_us"] > figures["direct_p50_us"]
    assert figures["rpcs_on_the_path"] == 0


def test_the_scrape_benchmark_scrapes_every_tool_while_reports_are_decided() -> None:
    text = run("tests.benchmarks.scrape", "--tools", "300", "--scrapes", "1")
    assert "# /metrics and GetToolStats with 300 tools" in text
    assert "- scrape 1 of /metrics: HTTP 200 in " in text
    assert "300 of 300 tools; ReportFailure meanwhile: " in text
    assert "- GetToolStats of every tool: 300 tools in " in text


def test_the_tool_failures_benchmark_prints_each_familys_accuracy_and_the_local_policy() -> None:
    text = run(
        "tests.benchmarks.tool_failures",
        "--family", "re", "--family", "json", "--misses", "--local",
    )  # fmt: skip
    assert "# errord's decisions on 8 real tool failures" in text
    assert "| family | cases | fault | action | parameter |" in text
    for row in ("| json | 5 | ", "| re | 3 | ", "| all | 8 | "):
        assert row in text
    assert "## Misses" in text
    assert "cases as errord does." in text
