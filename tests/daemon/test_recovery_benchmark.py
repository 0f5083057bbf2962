"""The recovery benchmark's quick form runs every stack on every scenario and reports
figures that hang together: never how fast or how well anything did, only what holds
whatever the timing (tests/benchmarks/recovery)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tests.benchmarks.recovery import figures
from tests.benchmarks.recovery.scenarios import QUICK, SCENARIOS, tasks
from tests.benchmarks.recovery.scripted_model import Ending
from tests.benchmarks.recovery.stacks import STACKS
from tests.helpers import ROOT, subprocess_env

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_quick_recovery_benchmark_runs_every_stack_on_every_scenario(tmp_path: Path) -> None:
    written, chart = tmp_path / "recovery.json", tmp_path / "recovery.png"
    text = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.recovery", "--quick",
         "--json", str(written), "--chart", str(chart)],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, check=True, timeout=300,
    ).stdout  # fmt: skip
    run: dict[str, Any] = json.loads(written.read_text())
    cells = {(cell["scenario"], cell["stack"]): cell for cell in run["cells"]}
    records = {(r["stack"], name): s for r in run["records"] for name, s in r["scenarios"].items()}

    # Every stack on every scenario, in the table and in the figures.
    pairs = {(scenario.name, stack) for scenario in SCENARIOS for stack in STACKS}
    rows = re.findall(r"^\| (\w+) \| ([\w+-]+) \| \d+% \|", text, re.MULTILINE)
    assert Counter(rows) == Counter(pairs)
    assert set(cells) == pairs

    for (name, stack), cell in cells.items():
        scenario = next(s for s in SCENARIOS if s.name == name)
        record = records[(stack, name)]
        # Every stack ran the same tasks, and each ended once.
        assert cell["tasks"] == len(tasks(scenario, QUICK, 1)) > 0
        assert sum(cell["endings"].values()) == cell["tasks"]
        assert set(cell["endings"]) <= {ending.value for ending in Ending}
        assert cell["useful"] == cell["endings"].get("useful", 0) / cell["tasks"]
        # A request the backend received was sent by a tool (a refused one was not received).
        assert record["received"] <= len(record["sent"]) + len(record["sent_backup"])
        # Only the backup's scenario calls the backup; only the rate limit answers 429.
        assert bool(record["sent_backup"]) <= scenario.backup
        assert bool(record["limited"]) <= (name == "rate_limit")
        assert (cell["while_down"] is not None) == scenario.down
        assert (record["window"] is not None) == scenario.windowed
        if record["window"] is not None:
            assert record["window"][0] < record["window"][1]
        # A useful task's answer came from a request that succeeded.
        assert cell["endings"].get("useful", 0) <= len(record["succeeded"]) + len(
            record["sent_backup"]
        )

    # The stack without handling calls each task's tool once: its errors never say to
    # try again, nor name the wrong parameter or another tool.
    assert all(cells[(s.name, "none")]["requests_per_call"] == 1.0 for s in SCENARIOS)
    # tenacity tries five times at most, and the model is never told to call again.
    assert all(cells[(s.name, "tenacity")]["requests_per_call"] <= 5.0 for s in SCENARIOS)
    # No errord agent sends into a Retry-After it has received itself.
    assert sum(cells[(s.name, "errord")]["early_own"] for s in SCENARIOS) == 0

    # The goals, the overhead and the chart.
    goals = run["goals"]
    assert len(goals) == 5
    for goal in goals:
        verdict = "met" if goal["met"] else "SHORT"
        assert f"- {verdict}: {goal['text']} (" in text
    # How many of errord's agents' failed calls its executor's local policy decided.
    errord = [cells[(s.name, "errord")]["notes"] for s in SCENARIOS]
    local = re.findall(r"the 250 ms decision_timeout\): (\d+) of (\d+)", text)
    decided = (
        sum(n.get("decided by local", 0) for n in errord),
        sum(sum(n.values()) for n in errord),
    )
    assert [(int(a), int(b)) for a, b in local] == [decided]
    assert run["overhead"]["calls"] == QUICK.overhead_calls
    assert "| errord executor | " in text
    assert "| tenacity + pybreaker | " in text
    assert chart.read_bytes().startswith(PNG)

    # A run of some scenarios only (--scenario) has the figures of those.
    some = [{**r, "scenarios": {"overload": r["scenarios"]["overload"]}} for r in run["records"]]
    made = figures.cells(some)
    assert [(f.scenario, f.stack) for f in made] == [("overload", stack) for stack in STACKS]
    assert [goal.text for goal in figures.goals(made, None)] == [
        "the best useful-result share of any stack in every scenario",
        "no request before a Retry-After expires",
    ]
