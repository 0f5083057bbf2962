"""The max_tools setting: reports cannot make state for more tools than it allows.

A report naming a new tool (no manifest, no state) past the limit is refused; tools with a
manifest, and tools already tracked, are always taken. The count is one step (the tools'
statistics held, plus those being committed), reserved with the report's events, so that
concurrent reports of new tools cannot pass it together.
"""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from errord.config import Settings
from errord.decide.manifest import ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import Action, Outcome, OutcomeReport
from errord.decide.model.events import TraceEvent, TurnBegan
from errord.errors import ConfigError
from errord.limits import MAX_TOOLS, LimitExceeded
from errord.state.projection import Projection
from errord.state.projections import Projections
from errord.state.turns import TurnFold
from tests.harness import Harness, failure_report

START = datetime(2026, 1, 1, tzinfo=UTC)
failure = functools.partial(failure_report, "c")


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return ManifestSnapshot([ToolManifest(name="search")])


async def tracking(harness: Harness, limit: int, tools: int = 0) -> None:
    """The harness' handler allows ``limit`` tools, and ``tools`` of them have state."""
    harness.handler.room.max_tools = limit
    for number in range(tools):
        await harness.handler.report_failure(failure(f"tool-{number}", turn=f"t{number}"))


def outcome(tool: str, turn: str) -> OutcomeReport:
    return OutcomeReport(turn_id=turn, call_id="c", tool=tool, attempt=1, outcome=Outcome.SUCCESS)


def test_by_default_errord_tracks_ten_thousand_tools() -> None:
    assert Settings().max_tools == MAX_TOOLS == 10_000


@pytest.mark.parametrize("limit", [0, 1_000_001])
def test_a_max_tools_out_of_range_is_refused_naming_the_setting(limit: int) -> None:
    with pytest.raises(ConfigError, match="max_tools: must be from 1 to 1000000"):
        Settings(max_tools=limit)


def test_the_tools_are_held_in_memory_whole_whatever_the_state_capacity() -> None:
    """Else the count, of the tools held, could stop short of the limit as tools are
    dropped for room, and new tools would be taken without end."""
    state = Projections(1_000, max_tools=50_000)
    assert state.calls.capacity == state.turns.capacity == 1_000
    assert state.tool_stats.capacity == state.breakers.capacity == 50_000


def test_a_new_key_counts_from_its_reservation_until_it_commits_or_is_released() -> None:
    turns: Projection[str, Any] = Projection(TurnFold())
    began = [TraceEvent(0, START, TurnBegan(turn_id=turn)) for turn in ("a", "a", "b")]
    turns.reserve(began[:2])
    assert (len(turns), turns.reserved_new) == (0, 1)  # two events of one new key
    turns.reserve(began[2:])
    assert (len(turns), turns.reserved_new) == (0, 2)
    turns.commit(turns.stage(began[:2]).states, began[:2])
    assert (len(turns), turns.reserved_new) == (1, 1)
    turns.release(began[2:])
    assert (len(turns), turns.reserved_new) == (1, 0)
    again = [TraceEvent(0, START, TurnBegan(turn_id="a"))]
    turns.reserve(again)  # a key with a committed state is not new
    assert (len(turns), turns.reserved_new) == (1, 0)


async def test_a_report_of_a_new_tool_past_max_tools_is_refused_naming_it_and_the_setting(
    harness: Harness,
) -> None:
    await tracking(harness, limit=3, tools=3)
    with pytest.raises(LimitExceeded) as refused:
        await harness.handler.report_failure(failure("tool-new", turn="late"))
    message = str(refused.value)
    assert "'tool-new'" in message
    assert "max_tools" in message
    assert "tracks 3 tools" in message
    assert harness.handler.room.tools_refused == 1
    assert harness.handler.room.tools_tracked() == 3
    assert not harness.state.has_tool("tool-new")
    assert harness.state.turns.view("late") is None  # nothing of the report was recorded


async def test_past_max_tools_tracked_tools_and_tools_with_a_manifest_are_still_decided(
    harness: Harness,
) -> None:
    await tracking(harness, limit=2, tools=2)
    again, _ = await harness.handler.report_failure(failure("tool-0", turn="again"))
    assert again.action is Action.RETRY
    await harness.handler.report_outcome(outcome("tool-1", "t1"))
    manifest, _ = await harness.handler.report_failure(failure("search", turn="manifest"))
    assert manifest.action is Action.RETRY
    assert harness.handler.room.tools_tracked() == 3  # a tool with a manifest counts, and passes
    assert harness.handler.room.tools_refused == 0


async def test_an_outcome_of_a_new_tool_past_max_tools_is_refused(harness: Harness) -> None:
    await tracking(harness, limit=1, tools=1)
    with pytest.raises(LimitExceeded, match="max_tools"):
        await harness.handler.report_outcome(outcome("tool-new", "late"))
    assert harness.handler.room.tools_refused == 1


async def test_a_batch_past_max_tools_refuses_each_new_tool_alone(harness: Harness) -> None:
    await tracking(harness, limit=3, tools=1)
    batch = [failure(f"tool-{number}", turn=f"b{number}") for number in range(5)]
    results = await harness.handler.report_failures(batch)
    refused = [number for number, result in enumerate(results) if isinstance(result, Exception)]
    assert refused == [3, 4]
    assert all(isinstance(results[number], LimitExceeded) for number in refused)
    assert harness.handler.room.tools_tracked() == 3


async def test_concurrent_reports_of_new_tools_never_pass_max_tools(harness: Harness) -> None:
    """Each report checks the count and reserves its tool in one step, before it awaits."""
    await tracking(harness, limit=10)
    reports = [failure(f"racer-{number}", turn=f"r{number}") for number in range(60)]
    results = await asyncio.gather(
        *map(harness.handler.report_failure, reports), return_exceptions=True
    )
    refused = [result for result in results if isinstance(result, BaseException)]
    assert all(isinstance(result, LimitExceeded) for result in refused)
    assert len(refused) == 50
    assert harness.handler.room.tools_tracked() == 10
    assert len(harness.state.tool_stats.snapshot()) == 10


async def test_the_tools_tracked_survive_a_restart(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    await harness.start()
    try:
        await tracking(harness, limit=2, tools=2)
        await harness.restart()
        harness.handler.room.max_tools = 2
        assert harness.handler.room.tools_tracked() == 2
        with pytest.raises(LimitExceeded):
            await harness.handler.report_failure(failure("tool-new", turn="after"))
    finally:
        await harness.close()
