"""The tools page: each tool with its breaker (and since when), its last hour, its
alerts, and the verdicts of episodic memory that steer its decisions.

Read from what GetToolStats and /metrics read (errord.state.health: the breaker and
statistics projections, the manifests), taken on the event loop a page of tools at a
time (ToolHealth records are immutable), and from a copy of episodic memory; the rows,
their charts and memory's words are built from them in the console's thread.

Each row is a tool in a scope (errord.decide.model.scope: breakers, statistics and memory are
kept per tool and scope): the board lists each tool's key, its scopes right after it, and
the page shows a row's scope beside the tool's name.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from errord.decide.memory import Evidence, MemoryKey, MemoryStats, recall
from errord.decide.model import Action, BreakerPhase
from errord.ops.console.charts import BarChart, MinuteValue, minute_bars
from errord.state.health import NO_CANDIDATES, ToolHealth, ToolHealthBoard
from errord.state.tool_stats import RECENT_MINUTES, Minute, ToolStats

PAGE_SIZE = 100
"""Tools a page lists."""
MAX_REMEMBERED = 5
"""Errors of a tool the page words memory's verdict on: those with the most evidence."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What episodic memory does to a retry of one error of a tool now."""

    fingerprint: str
    """The error's message, its varying details replaced."""
    signature: str
    stops_retries: bool
    words: str
    """The verdict and its evidence, in a sentence."""
    until: datetime | None
    """When the evidence fades below what a verdict needs; None when it does not count."""
    episodes: float


@dataclass(frozen=True, slots=True)
class ToolRow:
    """One tool (and scope) as the page shows it."""

    health: ToolHealth
    scope: str
    """The breaker's scope (a backend, a tenant, ...); empty for the tool alone."""
    hour: Minute
    """Its figures over the last RECENT_MINUTES minutes."""
    failures: BarChart
    durations: BarChart
    verdicts: tuple[Verdict, ...]

    @property
    def tool(self) -> str:
        return self.health.tool

    @property
    def phase(self) -> BreakerPhase:
        return self.health.breaker.phase

    @property
    def since(self) -> datetime | None:
        """When the breaker entered its phase: opened, half-opened (its break ended), or
        closed (last closed or reset; None when it never opened)."""
        state = self.health.breaker.state
        if self.phase is BreakerPhase.OPEN:
            return state.opened_at
        if self.phase is BreakerPhase.HALF_OPEN:
            return state.half_opens_at or state.opened_at
        return state.closed_at

    @property
    def hour_failure_rate(self) -> float:
        return self.hour.errors / self.hour.executions if self.hour.executions else 0.0

    @property
    def hour_mean_duration(self) -> float:
        return self.hour.duration_total / self.hour.durations if self.hour.durations else 0.0


@dataclass(frozen=True, slots=True)
class ToolsPage:
    rows: tuple[ToolRow, ...]
    next_after: str | None
    """The last tool of this page when there are more; the next page lists those after it."""
    now: datetime
    total: int
    """Tools the board knows in all."""
    min_episodes: float


def read_healths(
    board: ToolHealthBoard, now: datetime, after: str = ""
) -> tuple[list[ToolHealth], str | None, int]:
    """On the event loop: the health of the PAGE_SIZE tools (and scopes) after the key
    ``after``, the last key of them when more follow, and how many there are. A step per
    tool listed."""
    names = board.tools()
    start = bisect.bisect_right(names, after) if after else 0
    page = names[start : start + PAGE_SIZE]
    healths = [board.health(tool, now, NO_CANDIDATES) for tool in page if board.knows(tool)]
    more = start + PAGE_SIZE < len(names)
    return healths, (page[-1] if more and page else None), len(names)


def tools_page(
    healths: Sequence[ToolHealth],
    memory: Mapping[MemoryKey, MemoryStats],
    now: datetime,
    min_episodes: float,
    next_after: str | None,
    total: int,
) -> ToolsPage:
    """In the console's thread: the rows of ``healths``, with ``memory``'s verdicts (a copy
    of episodic memory, taken on the loop)."""
    wanted = {health.key for health in healths}  # a MemoryKey's tool is the tool's key too
    remembered: dict[str, list[tuple[MemoryKey, MemoryStats]]] = {key: [] for key in wanted}
    for key, stats in memory.items():
        if key.tool in wanted:
            remembered[key.tool].append((key, stats))
    rows = tuple(tool_row(health, remembered[health.key], now, min_episodes) for health in healths)
    return ToolsPage(rows, next_after, now, total, min_episodes)


def tool_row(
    health: ToolHealth,
    remembered: Iterable[tuple[MemoryKey, MemoryStats]],
    now: datetime,
    min_episodes: float,
) -> ToolRow:
    stats = health.stats
    last_minute = int(now.timestamp() // 60)
    hour = stats.since(datetime.fromtimestamp((last_minute - RECENT_MINUTES + 1) * 60, UTC))
    verdicts = sorted(
        (verdict(key, memory, stats, now, min_episodes) for key, memory in remembered),
        key=lambda found: (not found.stops_retries, -found.episodes),
    )
    return ToolRow(
        health,
        health.scope,
        hour,
        failure_chart(stats.recent, last_minute),
        duration_chart(stats.recent, last_minute),
        tuple(verdicts[:MAX_REMEMBERED]),
    )


def failure_chart(minutes: Sequence[Minute], last_minute: int) -> BarChart:
    values = [
        MinuteValue(
            minute.start,
            minute.errors / minute.executions,
            f"{_clock(minute.start)}: {minute.errors} of {minute.executions} failed "
            f"({minute.errors / minute.executions:.0%})",
        )
        for minute in minutes
        if minute.executions
    ]
    return minute_bars(values, last_minute, 1.0, "100 %")


def duration_chart(minutes: Sequence[Minute], last_minute: int) -> BarChart:
    values = [
        MinuteValue(
            minute.start,
            minute.duration_total / minute.durations,
            f"{_clock(minute.start)}: mean {minute.duration_total / minute.durations:.3g} s "
            f"over {minute.durations} attempts",
        )
        for minute in minutes
        if minute.durations
    ]
    top = max((value.value for value in values), default=0.0) or 1.0
    return minute_bars(values, last_minute, top, f"{top:.3g} s")


def verdict(
    key: MemoryKey, memory: MemoryStats, stats: ToolStats, now: datetime, min_episodes: float
) -> Verdict:
    """What memory's evidence on retries of the error does now (the RetriesNeverFix gate:
    no retry of an error retries fixed none of ``min_episodes`` bursts of, while the tool
    has not succeeded, nor had its breaker reset, since the last retry that failed)."""
    everything = recall(memory, now)
    episodes = sum(evidence.episodes for evidence in everything.values())
    retries = everything.get(Action.RETRY.value)
    fingerprint = memory.fingerprint
    if retries is None:
        others = ", ".join(sorted(everything)) or "no recovery"
        words = f"Remembered episodes of {others}; retries were not tried."
        return Verdict(fingerprint, key.signature, False, words, None, episodes)
    until = retries.fades_below(min_episodes, now)
    told = round(retries.told)
    if retries.never_fixed(min_episodes):
        lifted = _lifted_by(retries, stats)
        if lifted is None:
            words = (
                f"Retries stopped: they fixed none of {told} bursts ({min_episodes:g} are enough)."
            )
            return Verdict(fingerprint, key.signature, True, words, until, episodes)
        words = f"Retries go on: they fixed none of {told} bursts, but {lifted} after the last."
        return Verdict(fingerprint, key.signature, False, words, until, episodes)
    if told < min_episodes:
        words = f"Retries go on: {told} of the {min_episodes:g} bursts a verdict needs."
    else:
        words = f"Retries go on: they fixed {round(retries.succeeded)} of {told} bursts."
    return Verdict(fingerprint, key.signature, False, words, until, episodes)


def _lifted_by(evidence: Evidence, stats: ToolStats) -> str | None:
    failed = evidence.failed_at
    if failed is None:
        return None
    if stats.succeeded_at is not None and stats.succeeded_at > failed:
        return f"the tool succeeded at {_time(stats.succeeded_at)}"
    if stats.reset_at is not None and stats.reset_at > failed:
        return f"an operator reset its breaker at {_time(stats.reset_at)}"
    return None


def _clock(minute: int) -> str:
    return datetime.fromtimestamp(minute * 60, UTC).strftime("%H:%M UTC")


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%H:%M:%S UTC")
