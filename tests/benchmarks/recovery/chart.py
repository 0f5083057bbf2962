"""The run's chart, a PNG: useful-result share, time to a useful result and requests per
call, by scenario and stack, and the requests each stack sent through the outage of the
first round, second by second, the outage shaded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: the chart is a file

import matplotlib.pyplot as plt

from tests.benchmarks.recovery.figures import Cell
from tests.benchmarks.recovery.scenarios import SCENARIOS
from tests.benchmarks.recovery.stacks import STACKS

BIN = 0.5
"""Seconds per bar of the outage's timeline."""


def _bars(axes: Any, figures: Sequence[Cell], value: str, label: str) -> None:
    stacks = list(STACKS)
    width = 0.8 / len(stacks)
    by = {(f.stack, f.scenario): f for f in figures}
    for position, stack in enumerate(stacks):
        xs, heights = [], []
        for index, scenario in enumerate(SCENARIOS):
            figure = by.get((stack, scenario.name))
            height = getattr(figure, value) if figure is not None else None
            if height is not None and height != float("inf"):
                xs.append(index - 0.4 + width * (position + 0.5))
                heights.append(height)
        axes.bar(xs, heights, width, label=stack, color=f"C{position}")
    axes.set_xticks(range(len(SCENARIOS)))
    axes.set_xticklabels([s.name.replace("_", " ") for s in SCENARIOS], rotation=20, fontsize=8)
    axes.set_ylabel(label)
    axes.grid(axis="y", alpha=0.3)


def _outage(axes: Any, records: Sequence[Mapping[str, Any]]) -> None:
    first = [r for r in records if r["round"] == 1]
    window: list[float] = []
    end = 0.0
    for position, stack in enumerate(STACKS):
        record = next((r for r in first if r["stack"] == stack), None)
        if record is None or "outage" not in record["scenarios"]:
            continue
        outage = record["scenarios"]["outage"]
        window = outage["window"] or window
        sent = [at for at, _ in outage["sent"]]
        end = max([end, *sent])
        counts: dict[int, int] = {}
        for at in sent:
            counts[int(at // BIN)] = counts.get(int(at // BIN), 0) + 1
        bins = range(int(end // BIN) + 1)
        axes.step(
            [b * BIN for b in bins],
            [counts.get(b, 0) / BIN for b in bins],
            where="post",
            label=stack,
            color=f"C{position}",
            linewidth=1.2,
        )
    if len(window) == 2:
        axes.axvspan(window[0], window[1], color="grey", alpha=0.2, label="backend down")
    axes.set_xlabel("seconds into the round")
    axes.set_ylabel("requests sent per second")
    axes.set_title("Outage: requests to the backend over time", fontsize=10)
    axes.grid(alpha=0.3)


def draw(figures: Sequence[Cell], records: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Write the chart of ``figures`` (and the outage of ``records``) to ``path``."""
    figure, grid = plt.subplots(2, 2, figsize=(14, 9))
    _bars(grid[0][0], figures, "useful", "useful-result share")
    grid[0][0].set_title("Tasks that ended with a useful result", fontsize=10)
    grid[0][0].set_ylim(0, 1.05)
    _bars(grid[0][1], figures, "p50", "seconds")
    grid[0][1].set_title("Median time to a useful result", fontsize=10)
    _bars(grid[1][0], figures, "requests_per_call", "requests per task")
    grid[1][0].set_title("Backend requests per task (amplification)", fontsize=10)
    _outage(grid[1][1], records)
    handles, labels = grid[1][1].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=9)
    figure.tight_layout(rect=(0, 0, 1, 0.95))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
