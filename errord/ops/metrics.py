"""Prometheus metrics over HTTP: each tool's statistics, breaker and alerts; reloads,
the store's writes and the streams open of each kind.

The figures are the ones GetToolStats answers with (errord.state.health), read
when Prometheus scrapes: the counters are the projection's, so they survive
restarts and never drift from the trace. prometheus-client serves them from
its own thread; the collector hands the reading to the event loop, which owns
the projections, and waits for it. The loop reads each tool's health, a slice of
tools at a time (errord.state.health: a step per tool, the loop free between
slices, decisions going on); the metric families, and their text, are built here,
in the scrape's thread, off the loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    start_http_server,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from errord.decide.health.alerts import AlertKind
from errord.decide.model import BreakerPhase
from errord.errors import ListenError
from errord.fleet.status import FleetStatus
from errord.handler import ErrorHandler
from errord.ops.fleet_metrics import FleetMetrics
from errord.ops.metric_scopes import scope_rows
from errord.reload import ManifestReloader
from errord.state.health import NO_CANDIDATES, ToolHealth, ToolHealthBoard
from errord.state.store import Store
from errord.state.tool_stats import DURATION_BOUNDS, Durations
from errord.state.trace_retention import Removed

READ_TIMEOUT = 5.0
"""Seconds a scrape waits for the event loop before it fails."""


class ToolMetrics(Collector):
    """Builds the errord_tool_* families from every tool's health, read on the event loop."""

    def __init__(
        self,
        board: ToolHealthBoard,
        now: Callable[[], datetime],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._board = board
        self._now = now
        self._loop = loop

    def collect(self) -> Iterable[Metric]:
        """Called in prometheus-client's thread; the reading happens on the loop, the
        families are built here."""
        if _running_loop() is self._loop:  # called on the loop itself: read right here
            now = self._now()
            board = self._board
            return tool_families(board.health(tool, now, NO_CANDIDATES) for tool in board.tools())
        future = asyncio.run_coroutine_threadsafe(self._read_on_loop(), self._loop)
        try:
            healths = future.result(READ_TIMEOUT)
        except TimeoutError:
            future.cancel()  # a busy loop must not pile up readings nobody waits for
            raise
        return tool_families(healths)

    async def _read_on_loop(self) -> list[ToolHealth]:
        now = self._now()
        read = self._board.read(self._board.tools(), now)
        return [health async for healths in read for health in healths]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def tool_families(healths: Iterable[ToolHealth]) -> list[Metric]:
    """The errord_tool_* metric families of ``healths``, labelled by tool and scope (a
    bounded number of scopes per tool: errord.ops.metric_scopes)."""
    counters = {
        name: CounterMetricFamily(f"errord_tool_{name}", doc, labels=["tool", "scope"])
        for name, doc in (
            (
                "executions",
                "Attempts reported: failures and successful outcomes "
                "(errord_tool_call_executions counts executions).",
            ),
            ("successes", "Successful outcomes reported."),
            ("timeouts", "Failures classified TIMEOUT."),
            ("retries", "RETRY decisions."),
            ("retry_successes", "Successful outcomes of attempts after the first."),
            ("breaker_opens", "Times the tool's circuit breaker opened."),
        )
    }
    ran = {
        name: CounterMetricFamily(f"errord_tool_call_{name}", doc, labels=["tool", "scope"])
        for name, doc in (
            (
                "executions",
                "Executions that ended: a call's attempts of the tool, from the first to the "
                "one that ends it (a success, or a decision other than RETRY).",
            ),
            ("execution_successes", "Executions that ended with a success."),
            ("execution_errors", "Executions that ended without a success."),
            ("execution_timeouts", "Executions that ended without a success, timed out."),
        )
    }
    ran_durations = HistogramMetricFamily(
        "errord_tool_call_execution_duration_seconds",
        "Durations of executions: their attempts and the retry delays between them.",
        labels=["tool", "scope"],
    )
    errors = CounterMetricFamily(
        "errord_tool_errors", "Failures reported, by class.", labels=["tool", "scope", "class"]
    )
    by_code = CounterMetricFamily(
        "errord_tool_errors_by_code",
        "Failures reported, by error code.",
        labels=["tool", "scope", "code"],
    )
    by_exception = CounterMetricFamily(
        "errord_tool_errors_by_exception",
        "Failures reported, by exception type.",
        labels=["tool", "scope", "exception_type"],
    )
    decisions = CounterMetricFamily(
        "errord_tool_decisions",
        "Recovery decisions, by action.",
        labels=["tool", "scope", "action"],
    )
    durations = HistogramMetricFamily(
        "errord_tool_duration_seconds",
        "Durations of attempts, as reported.",
        labels=["tool", "scope"],
    )
    failure_ratio = GaugeMetricFamily(
        "errord_tool_recent_failure_ratio",
        "Failures per execution over the alert window.",
        labels=["tool", "scope"],
    )
    breaker_state = GaugeMetricFamily(
        "errord_tool_breaker_state",
        "1 for the phase the tool's circuit breaker is in, 0 for the others.",
        labels=["tool", "scope", "state"],
    )
    reconciled = CounterMetricFamily(
        "errord_tool_results_reconciled",
        "Calls whose results ReconcileResults answered, since the daemon started.",
        labels=["tool", "scope"],
    )
    repaired = CounterMetricFamily(
        "errord_tool_results_repaired",
        "Of them, results errord synthesized (the executor held none) or dropped (a second "
        "one), since the daemon started.",
        labels=["tool", "scope", "how"],
    )
    alerts = GaugeMetricFamily(
        "errord_tool_alert", "1 while the alert condition holds.", labels=["tool", "scope", "alert"]
    )
    for row in scope_rows(healths):
        tool, scope, stats = row.tool, row.scope, row.stats
        for name, family in counters.items():
            family.add_metric([tool, scope], getattr(stats, name))
        errors.add_metric([tool, scope, "transient"], stats.transient_errors)
        errors.add_metric([tool, scope, "permanent"], stats.permanent_errors)
        for code, count in stats.errors_by_code.items():
            by_code.add_metric([tool, scope, code.value], count)
        for exception, count in stats.errors_by_exception.items():
            by_exception.add_metric([tool, scope, exception], count)
        for action, count in stats.decisions.items():
            decisions.add_metric([tool, scope, action.value], count)
        durations.add_metric([tool, scope], *_histogram(stats.durations))
        executions = stats.per_execution
        for name, count in (
            ("executions", executions.count),
            ("execution_successes", executions.successes),
            ("execution_errors", executions.errors),
            ("execution_timeouts", executions.timeouts),
        ):
            ran[name].add_metric([tool, scope], count)
        ran_durations.add_metric([tool, scope], *_histogram(executions.durations))
        health = row.health
        if health is None:
            continue  # the folded scopes' sum: no breaker of its own
        failure_ratio.add_metric([tool, scope], health.recent_failure_rate)
        checked = health.results
        reconciled.add_metric([tool, scope], checked.reconciled)
        repaired.add_metric([tool, scope, "synthesized"], checked.synthesized)
        repaired.add_metric([tool, scope, "dropped"], checked.dropped)
        for phase in BreakerPhase:
            breaker_state.add_metric(
                [tool, scope, phase.value.lower()], float(phase is health.breaker.phase)
            )
        raised = {alert.kind for alert in health.alerts}
        for kind in AlertKind:
            alerts.add_metric([tool, scope, kind.value.lower()], float(kind in raised))
    return [
        *counters.values(),
        *ran.values(),
        ran_durations,
        errors,
        by_code,
        by_exception,
        decisions,
        durations,
        failure_ratio,
        breaker_state,
        reconciled,
        repaired,
        alerts,
    ]


def _histogram(histogram: Durations) -> tuple[list[tuple[str, float]], float]:
    """The cumulative buckets and the sum of ``histogram``, as a family's sample takes them."""
    cumulative, buckets = 0, []
    bounds = (*DURATION_BOUNDS, float("inf"))
    for bound, count in zip(bounds, histogram.buckets, strict=True):
        cumulative += count
        buckets.append((_bound(bound), float(cumulative)))
    return buckets, histogram.total


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


@dataclass
class MetricsServer:
    """The running HTTP endpoint."""

    server: WSGIServer
    thread: threading.Thread
    address: str

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class ReloadMetrics(Collector):
    """errord_manifest_reloads_total by result, and whether the last reload was refused."""

    def __init__(self, reloader: ManifestReloader) -> None:
        self._reloader = reloader

    def collect(self) -> Iterable[Metric]:
        reloads = CounterMetricFamily(
            "errord_manifest_reloads",
            "Manifest reloads since start (SIGHUP or ReloadManifests), by result.",
            labels=["result"],
        )
        reloads.add_metric(["applied"], self._reloader.applied)
        reloads.add_metric(["refused"], self._reloader.failed)
        refused = GaugeMetricFamily(
            "errord_manifest_reload_refused",
            "1 while the last reload was refused (invalid manifests; the previous set is "
            "in force), else 0.",
        )
        refused.add_metric([], 1 if self._reloader.last_problem else 0)
        return [reloads, refused]


class StoreMetrics(Collector):
    """Whether the trace database can be written, and the batches it refused; with
    ``retention``, its size and the turns trace retention removed."""

    def __init__(self, store: Store, retention: Removed | None = None) -> None:
        self._store = store
        self._retention = retention

    def collect(self) -> Iterable[Metric]:
        refused = CounterMetricFamily(
            "errord_store_write_failures",
            "Write batches the trace database refused since start (disk full, I/O error, "
            "read-only file); their reports were answered UNAVAILABLE.",
        )
        refused.add_metric([], self._store.batches_failed)
        writable = GaugeMetricFamily(
            "errord_store_writable", "1 while the last write to the trace database succeeded."
        )
        writable.add_metric([], 0 if self._store.failing is not None else 1)
        if self._retention is None:
            return [refused, writable]
        removed = self._retention
        used = GaugeMetricFamily(
            "errord_store_used_bytes",
            "Bytes of the database's pages that hold rows, at trace retention's last look "
            "(it keeps them under trace_retention_bytes).",
        )
        used.add_metric([], removed.used_bytes)
        size = GaugeMetricFamily(
            "errord_store_file_bytes", "Bytes of the database file, at retention's last look."
        )
        size.add_metric([], removed.file_bytes)
        turns = CounterMetricFamily(
            "errord_trace_turns_removed",
            "Turns trace retention removed since start (past their age or for room).",
        )
        turns.add_metric([], removed.turns)
        events = CounterMetricFamily(
            "errord_trace_events_removed", "Trace events trace retention removed since start."
        )
        events.add_metric([], removed.events)
        return [refused, writable, used, size, turns, events]


class ToolLimitMetrics(Collector):
    """The tools with state, and the reports refused for naming a new one past max_tools."""

    def __init__(self, handler: ErrorHandler) -> None:
        self._handler = handler

    def collect(self) -> Iterable[Metric]:
        handler = self._handler
        tracked = GaugeMetricFamily(
            "errord_tools_tracked",
            "Tools with state (statistics, a breaker): each is read by every scrape.",
        )
        tracked.add_metric([], handler.room.tools_tracked())
        limit = GaugeMetricFamily(
            "errord_tools_limit",
            "max_tools: past it, a report naming a new tool without a manifest is refused.",
        )
        limit.add_metric([], handler.room.max_tools)
        refused = CounterMetricFamily(
            "errord_tool_limit_refusals",
            "Reports refused since start (RESOURCE_EXHAUSTED) for naming a new tool, without "
            "a manifest, past max_tools.",
        )
        refused.add_metric([], handler.room.tools_refused)
        return [tracked, limit, refused]


class StreamCount(Protocol):
    """One kind of stream's slots, as errord.wire.streams counts them."""

    @property
    def taken(self) -> int:
        """Streams open."""
        ...

    @property
    def refused(self) -> int:
        """Streams refused since the start, past the limit or a peer's share."""
        ...


class StreamMetrics(Collector):
    """errord_streams_open and errord_streams_refused_total by kind (``health_watch``,
    ``watch_trace``, ``watch_tools``, ``reflection``); errord_watchers: WatchTrace's."""

    def __init__(self, streams: Mapping[str, StreamCount]) -> None:
        self._streams = streams

    def collect(self) -> Iterable[Metric]:
        open_ = GaugeMetricFamily("errord_streams_open", "Streams open, by kind.", labels=["kind"])
        refused = CounterMetricFamily(
            "errord_streams_refused",
            "Streams refused past their kind's limit or the caller's share of it.",
            labels=["kind"],
        )
        for kind, slots in self._streams.items():
            open_.add_metric([kind], slots.taken)
            refused.add_metric([kind], slots.refused)
        watchers = GaugeMetricFamily(
            "errord_watchers",
            "WatchTrace streams open; a stream its client cancels is closed at once.",
        )
        watchers.add_metric([], self._streams["watch_trace"].taken)
        return [open_, refused, watchers]


def start_metrics_server(
    listen: str,
    board: ToolHealthBoard,
    now: Callable[[], datetime],
    reloader: ManifestReloader | None = None,
    store: Store | None = None,
    streams: Mapping[str, StreamCount] | None = None,
    handler: ErrorHandler | None = None,
    retention: Removed | None = None,
    fleet: FleetStatus | None = None,
) -> MetricsServer:
    """Serve /metrics on ``listen`` (host:port; port 0 picks one) from a thread;
    ``streams`` counts the streams of each kind (its ``watch_trace``: errord_watchers);
    ``handler`` counts the tools with state and the reports refused past max_tools;
    ``retention``, what trace retention removed and the database's size; ``fleet``, the
    link to the fleet (off without it)."""
    registry = CollectorRegistry(auto_describe=False)
    for standard in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(standard)
    registry.register(ToolMetrics(board, now, asyncio.get_running_loop()))
    if reloader is not None:
        registry.register(ReloadMetrics(reloader))
    if store is not None:
        registry.register(StoreMetrics(store, retention))
    if streams is not None:
        registry.register(StreamMetrics(streams))
    if handler is not None:
        registry.register(ToolLimitMetrics(handler))
    registry.register(FleetMetrics(fleet or FleetStatus()))
    host, port = listen.rsplit(":", 1)
    try:
        server, thread = start_http_server(int(port), addr=host.strip("[]"), registry=registry)
    except OSError as error:
        raise ListenError(f"cannot serve metrics on {listen}: {error.strerror}") from error
    return MetricsServer(server, thread, f"{host}:{server.server_port}")
