"""The response-validation alert: a tool's calls whose result reconciliation had to
synthesize (the executor held none) or drop (a second one), as a share of its calls
reconciled over the alert window, beside failure_rate, slow and breaker_tripped."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from errord.decide.health.alerts import AlertKind
from errord.decide.texts.tool_results import HeldResult, ToolCall
from errord.ops.metrics import ToolMetrics
from errord.state.health import ToolHealthBoard
from tests.harness import Harness, failure_report


def board_of(harness: Harness) -> ToolHealthBoard:
    return ToolHealthBoard(harness.state, lambda: harness.handler.manifests)


async def reconcile(harness: Harness, turn: str, *held: HeldResult) -> None:
    calls = [ToolCall("c1", "search"), ToolCall("c2", "search")]
    await harness.handler.reconcile_results(turn, calls, held)


def kept(call: str) -> HeldResult:
    return HeldResult(call, "ok")


async def test_results_synthesized_or_dropped_past_the_threshold_raise_the_alert(
    harness: Harness,
) -> None:
    await harness.handler.report_failure(failure_report("c1"))  # the tool has statistics
    for turn in range(9):
        await reconcile(harness, f"good-{turn}", kept("c1"), kept("c2"))
    await reconcile(harness, "lost", kept("c1"))  # c2's result synthesized
    health = board_of(harness).health("search", harness.clock.now())
    assert (health.results.reconciled, health.results.synthesized) == (20, 1)
    assert AlertKind.RESPONSE_VALIDATION not in {alert.kind for alert in health.alerts}  # 5 %

    await reconcile(harness, "twice", kept("c1"), kept("c2"), kept("c2"))  # one dropped
    health = board_of(harness).health("search", harness.clock.now())
    [alert] = [a for a in health.alerts if a.kind is AlertKind.RESPONSE_VALIDATION]
    assert alert.message == (
        "9.1% of its results over the last 5 min (2 of 22: 1 synthesized, 1 dropped) had to "
        "be repaired, above 5.0%"
    )


async def test_the_alert_needs_enough_calls_and_leaves_with_the_window(harness: Harness) -> None:
    await harness.handler.report_failure(failure_report("c1"))
    for turn in range(4):
        await reconcile(harness, f"lost-{turn}")  # 8 calls, none held
    board = board_of(harness)
    assert board.health("search", harness.clock.now()).recent_results.repaired == 8
    assert not [
        a for a in board.health("search", harness.clock.now()).alerts
        if a.kind is AlertKind.RESPONSE_VALIDATION
    ]  # fmt: skip
    await reconcile(harness, "lost-4")
    raised = board.health("search", harness.clock.now()).alerts
    assert AlertKind.RESPONSE_VALIDATION in {alert.kind for alert in raised}
    harness.clock.advance(6 * 60.0)
    later = board.health("search", harness.clock.now())
    assert AlertKind.RESPONSE_VALIDATION not in {alert.kind for alert in later.alerts}
    assert later.results.repaired == 10  # the totals stay


async def test_prometheus_counts_the_repairs_and_shows_the_alert(harness: Harness) -> None:
    await harness.handler.report_failure(failure_report("c1"))
    for turn in range(5):
        await reconcile(harness, f"lost-{turn}")
    metrics = ToolMetrics(board_of(harness), harness.clock.now, asyncio.get_running_loop())
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    text = (await asyncio.to_thread(generate_latest, registry)).decode()
    samples = {
        (sample.name, sample.labels.get("how", sample.labels.get("alert", ""))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.labels.get("tool") == "search"
    }
    assert samples[("errord_tool_results_reconciled_total", "")] == 10
    assert samples[("errord_tool_results_repaired_total", "synthesized")] == 10
    assert samples[("errord_tool_results_repaired_total", "dropped")] == 0
    assert samples[("errord_tool_alert", "response_validation")] == 1
