"""The RSS benchmark runs: a smoke run against the real daemon, never a memory target."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.benchmarks.rss import Point, slope
from tests.helpers import ROOT, subprocess_env


def test_the_rss_benchmark_samples_the_daemon_every_n_decisions(tmp_path: Path) -> None:
    output = tmp_path / "curve.json"
    text = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.rss", "--decisions", "400", "--every", "100",
         "--batch", "8", "--concurrency", "2", "--json", str(output)],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    figures = json.loads(output.read_text())
    assert [point["decisions"] for point in figures["points"]] == [0, 104, 200, 304, 400]
    assert all(point["rss_kib"] > 0 for point in figures["points"])
    assert not figures["failed"]
    assert "RSS at the end: " in text
    assert "MB per 100k decisions" in text


def test_the_slope_is_the_least_squares_mb_per_100k_decisions() -> None:
    points = [
        Point(n * 100_000, 0.0, round(mb * 1e6 / 1024), 0, 0, 0.0)
        for n, mb in enumerate([100, 102, 104])
    ]
    assert abs(slope(points) - 2.0) < 0.01
    assert slope(points[:1]) == 0.0
