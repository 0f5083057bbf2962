"""What a scrape of /metrics, and GetToolStats, cost: a step per tool, never a pass over
episodic memory per tool, and the event loop free between slices of tools.

The scrape reads on the loop (which owns the projections) and builds its families in
the scrape's thread, as prometheus-client calls it: here ``generate_latest`` runs in a
worker thread while the test's loop serves the reading.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable
from typing import Any

import pytest
from errord_client.v1 import errord_pb2 as pb
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric

from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import Outcome, OutcomeReport, ToolFailure
from errord.ops.metric_scopes import MAX_SCOPES_PER_TOOL, OTHER_SCOPES
from errord.ops.metrics import ToolMetrics, tool_families
from errord.state import health
from errord.state.health import ToolHealthBoard
from errord.wire.operator import OperatorService
from tests.harness import Harness, failure_report

failure = functools.partial(failure_report, "c")


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return ManifestSnapshot(
        [
            ToolManifest(name="search", breaker=BreakerPolicy(failure_threshold=2)),
            ToolManifest(name="idle"),  # a manifest, no report: zeros, a closed breaker
        ]
    )


class Families:
    """A collector of families built beforehand."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


def registry_of(collector: Any) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


async def some_tools(harness: Harness, tools: int) -> ToolHealthBoard:
    """``tools`` tools without a manifest, each with a failure (and an error in memory);
    search's breaker open, a success with a duration; the board reading them."""
    handler = harness.handler
    for number in range(tools):
        error = ToolFailure(exception_type=f"Error{number % 3}", message="upstream timed out")
        await handler.report_failure(failure(f"tool-{number}", turn=f"t{number}", error=error))
    for turn in ("s1", "s2"):
        await handler.report_failure(failure("search", turn=turn))
    success = OutcomeReport(
        turn_id="t0", call_id="c", tool="tool-0", attempt=2, outcome=Outcome.SUCCESS, duration=0.3
    )
    await handler.report_outcome(success)
    return ToolHealthBoard(harness.state, lambda: handler.manifests)


async def scraped(board: ToolHealthBoard, harness: Harness) -> bytes:
    """The text of a scrape from prometheus-client's side: another thread."""
    metrics = ToolMetrics(board, harness.clock.now, asyncio.get_running_loop())
    return await asyncio.to_thread(generate_latest, registry_of(metrics))


async def test_a_scrape_shows_every_tools_health_as_reading_each_whole_would(
    harness: Harness,
) -> None:
    board = await some_tools(harness, 30)
    text = await scraped(board, harness)
    now = harness.clock.now()
    each = tool_families(board.health(tool, now) for tool in board.tools())
    assert text == generate_latest(registry_of(Families(each)))
    assert b'errord_tool_breaker_state{scope="",state="open",tool="search"} 1.0' in text
    assert b'errord_tool_executions_total{scope="",tool="idle"} 0.0' in text
    assert b'errord_tool_duration_seconds_count{scope="",tool="tool-0"} 1.0' in text
    assert text.count(b"errord_tool_executions_total{") == 32


async def test_a_scrape_reads_each_tool_once_and_never_searches_memory_per_tool(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The override candidates are a pass over all of episodic memory: once per tool
    made a scrape quadratic in the tools. /metrics does not show them: none at all."""
    board = await some_tools(harness, 40)
    searches = counting(monkeypatch, health, "override_candidates")
    reads = counting(monkeypatch, board, "health")
    await scraped(board, harness)
    assert searches == []
    assert len(reads) == len(board.tools()) == 42


async def test_get_tool_stats_searches_memory_once_whatever_the_number_of_tools(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = await some_tools(harness, 40)
    searches = counting(monkeypatch, health, "override_candidates")
    service = OperatorService(board, harness.actions, harness.clock)
    answer = await service.get_tool_stats(pb.GetToolStatsRequest().SerializeToString())
    assert len(answer.tools) == 42
    assert len(searches) == 1
    one = await service.get_tool_stats(pb.GetToolStatsRequest(tool="tool-1").SerializeToString())
    assert [stats.tool for stats in one.tools] == ["tool-1"]
    assert len(searches) == 2


async def test_a_read_of_every_tool_lets_the_loop_serve_other_work_between_slices(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = await some_tools(harness, 33)
    monkeypatch.setattr(health, "READ_SLICE", 10)
    slices: list[list[health.ToolHealth]] = []
    seen: list[int] = []

    async def elsewhere() -> None:
        seen.append(len(slices))

    other = asyncio.create_task(elsewhere())  # ready to run, waiting for the loop
    async for healths in board.read(board.tools(), harness.clock.now()):
        slices.append(healths)
    await other
    assert [len(healths) for healths in slices] == [10, 10, 10, 5]
    assert seen == [1]  # it ran after the first slice, before the second


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls of ``module.name`` from now on: one entry per call."""
    calls: list[int] = []
    function = getattr(module, name)

    def counted(*args: Any) -> Any:
        calls.append(1)
        return function(*args)

    monkeypatch.setattr(module, name, counted)
    return calls


async def test_each_scope_of_a_tool_has_its_series_and_the_quietest_beyond_the_bound_one(
    harness: Harness,
) -> None:
    """A tool's scopes are label values: its own state and its MAX_SCOPES_PER_TOOL
    busiest scopes have series of their own, the counters of the rest are added up under
    scope="(other)", which has no breaker or alert series."""
    handler = harness.handler
    scopes = MAX_SCOPES_PER_TOOL + 5
    for number in range(scopes):
        busy = number < MAX_SCOPES_PER_TOOL
        for call in range(3 if busy else 1):
            report = failure_report(
                f"c{call}", "fetch", turn=f"t{number}", scope=f"tenant-{number:02}"
            )
            await handler.report_failure(report)
    await handler.report_failure(failure_report("c", "fetch", turn="own"))
    board = ToolHealthBoard(harness.state, lambda: handler.manifests)
    text = (await scraped(board, harness)).decode()
    lines = [line for line in text.splitlines() if 'tool="fetch"' in line]
    executions = [line for line in lines if line.startswith("errord_tool_executions")]
    assert len(executions) == 1 + MAX_SCOPES_PER_TOOL + 1
    assert 'errord_tool_executions_total{scope="",tool="fetch"} 1.0' in executions
    assert 'errord_tool_executions_total{scope="tenant-00",tool="fetch"} 3.0' in executions
    assert f'errord_tool_executions_total{{scope="{OTHER_SCOPES}",tool="fetch"}} 5.0' in executions
    assert not any(f"tenant-{number}" in text for number in range(MAX_SCOPES_PER_TOOL, scopes))
    breaker_series = [line for line in lines if line.startswith("errord_tool_breaker_state")]
    assert not any(OTHER_SCOPES in line for line in breaker_series)
    assert len(breaker_series) == (1 + MAX_SCOPES_PER_TOOL) * 3  # a phase each
