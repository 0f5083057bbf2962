"""The start-up benchmark runs: it times the real daemon to SERVING, phase by phase.

A smoke run on a small history: it checks that every figure is produced, never how fast.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT, subprocess_env


def test_the_start_up_benchmark_times_each_phase_to_serving(tmp_path: Path) -> None:
    text = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.startup", "--episodes", "3000",
         "--errors", "300", "--spawns", "1", "--after-crash", "--db", str(tmp_path / "built.db")],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, check=True, timeout=300,
    ).stdout  # fmt: skip
    assert "# Start-up to SERVING with 3,000 episodes" in text
    assert "- clean restarts: median " in text
    assert "- start after a crash (quick_check of the whole file first): " in text
    for phase in (
        "interpreter, imports, settings",
        "connect, check writable, migrate",
        "loaded the memory projection",
        "engine, gRPC server start",
        "first health answer SERVING",
    ):
        assert f"| {phase} | " in text
    assert "- quick_check (not closed cleanly): " in text
    for later in ("call", "turn"):  # after SERVING
        assert f"- loaded the {later} projection in the background: " in text
