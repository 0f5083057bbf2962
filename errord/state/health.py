"""Each tool's health, per scope, as operators read it: breaker, statistics, alerts.

One read model over the breaker and statistics projections and the manifests,
shared by GetToolStats, the breaker RPCs, ``errord stats`` and the Prometheus
endpoint, so that they always agree.

Reading every tool costs a step per tool, and the projections belong to the event
loop: ``read`` reads them a slice of tools at a time, the loop free between slices,
and the override candidates (a pass over all of episodic memory) are found once per
read, in a worker thread, from a copy of memory taken on the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType

from errord.decide.health.alerts import Alert, AlertKind, AlertThresholds
from errord.decide.health.breaker import opening_streak
from errord.decide.manifest import BreakerPolicy
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory.overrides import OverrideCandidate, override_candidates
from errord.decide.model import CLOSED_BREAKER, BreakerPhase, BreakerState, RateWindow
from errord.decide.model.scope import tool_and_scope, tool_of
from errord.state.projections import Projections
from errord.state.result_checks import NO_RESULTS, ResultCounts
from errord.state.tool_stats import Minute, ToolStats

READ_SLICE = 500
"""Tools whose health one step of ``ToolHealthBoard.read`` reads, a few milliseconds of
the event loop; other work runs between steps."""
NO_CANDIDATES: Mapping[str, list[OverrideCandidate]] = MappingProxyType({})
"""For a read that does not show the override candidates (the Prometheus endpoint)."""


@dataclass(frozen=True, slots=True)
class BreakerView:
    """A tool's breaker in a scope with its policy, and its rate-limit window, at one
    moment."""

    key: str
    """The tool's key: its name, and its scope if any (errord.decide.model.scope)."""
    state: BreakerState
    policy: BreakerPolicy
    now: datetime
    window: RateWindow | None = None
    """The tool's last rate-limit window, if it had one."""

    @property
    def tool(self) -> str:
        return tool_of(self.key)

    @property
    def scope(self) -> str:
        return tool_and_scope(self.key)[1]

    @property
    def next_break(self) -> float:
        """Seconds the breaker's next opening would last, were it to open now."""
        return self.policy.break_for(opening_streak(self.state, self.policy, self.now))

    @property
    def limited(self) -> bool:
        """True while a rate-limit window holds the tool."""
        return self.window is not None and self.window.holds(self.now)

    @property
    def phase(self) -> BreakerPhase:
        return self.state.effective_phase(self.now)

    @property
    def half_opens_in(self) -> timedelta | None:
        """Time left until an open breaker half-opens; None when it is not counting down."""
        until = self.state.half_opens_at
        if self.phase is not BreakerPhase.OPEN or until is None:
            return None
        return until - self.now


@dataclass(frozen=True, slots=True)
class ToolHealth:
    """One tool's statistics, recent figures, breaker and alerts, in one scope."""

    key: str
    """The tool's key: its name, and its scope if any (errord.decide.model.scope)."""
    stats: ToolStats
    recent: Minute
    breaker: BreakerView
    alerts: tuple[Alert, ...]
    override_candidates: tuple[OverrideCandidate, ...] = ()
    """Its errors that retries never fixed."""
    results: ResultCounts = NO_RESULTS
    """Its calls' results reconciled since the daemon started, and those repaired."""
    recent_results: ResultCounts = NO_RESULTS
    """The same over the alert window."""

    @property
    def tool(self) -> str:
        return tool_of(self.key)

    @property
    def scope(self) -> str:
        return tool_and_scope(self.key)[1]

    @property
    def failure_rate(self) -> float:
        return _rate(self.stats.errors, self.stats.executions)

    @property
    def retry_success_rate(self) -> float:
        """Successes after the first attempt per RETRY granted; at most 1 (an executor may
        retry without asking errord)."""
        return min(1.0, _rate(self.stats.retry_successes, self.stats.retries))

    @property
    def recent_failure_rate(self) -> float:
        return _rate(self.recent.errors, self.recent.executions)

    @property
    def recent_mean_duration(self) -> float:
        return _rate(self.recent.duration_total, self.recent.durations)


class ToolHealthBoard:
    """Reads tools' health from the projections and the manifests in force."""

    def __init__(
        self,
        state: Projections,
        manifests: Callable[[], ManifestSnapshot],
        thresholds: AlertThresholds | None = None,
        min_episodes: float = 5.0,
    ) -> None:
        self._state = state
        self._manifests = manifests
        self.thresholds = thresholds or AlertThresholds()
        self.min_episodes = min_episodes
        """Told retries episodic memory needs to stop retrying an error."""

    def tools(self) -> list[str]:
        """The key of every tool with a manifest, and of every tool and scope with a
        breaker or statistics, in order: each tool's scopes after it."""
        names = set(self._manifests().names)
        names.update(self._state.breakers.snapshot())
        names.update(self._state.tool_stats.snapshot())
        return sorted(names)

    def knows(self, tool: str) -> bool:
        return tool in self._manifests() or self._state.has_tool(tool)

    def breaker(self, key: str, now: datetime) -> BreakerView:
        """The breaker of the tool and scope ``key`` (errord.decide.model.scope)."""
        state = self._state.breakers.view(key) or CLOSED_BREAKER
        policy = self._manifests().breaker_policy(tool_of(key))
        return BreakerView(key, state, policy, now, self._state.windows.view(key))

    def activity(self, key: str) -> ToolStats | None:
        """The statistics of the tool and scope ``key``: when it last succeeded, when its
        breaker was reset."""
        return self._state.tool_stats.view(key)

    def health(
        self,
        key: str,
        now: datetime,
        candidates: Mapping[str, list[OverrideCandidate]] | None = None,
    ) -> ToolHealth:
        """The health of the tool and scope ``key``; ``candidates``:
        override_candidates(now), when the caller reads several tools."""
        stats = self._state.tool_stats.view(key) or ToolStats()
        recent = stats.since(now - timedelta(seconds=self.thresholds.window))
        breaker = self.breaker(key, now)
        checks = self._state.results
        results = checks.total(key)
        recent_results = checks.since(key, now - timedelta(seconds=self.thresholds.window))
        health = ToolHealth(key, stats, recent, breaker, (), (), results, recent_results)
        if candidates is None:
            candidates = self.override_candidates(now)
        return ToolHealth(
            key,
            stats,
            recent,
            breaker,
            self._alerts(health),
            tuple(candidates.get(key, ())),
            results,
            recent_results,
        )

    async def read(
        self,
        tools: Sequence[str],
        now: datetime,
        candidates: Mapping[str, list[OverrideCandidate]] = NO_CANDIDATES,
    ) -> AsyncIterator[list[ToolHealth]]:
        """The health of ``tools`` at ``now``, READ_SLICE tools at a time, the event loop
        free between slices; ``candidates``: read_override_candidates(now), for a read that
        shows them. Each tool is read whole in one step; one dropped from memory meanwhile
        (beyond capacity) is left out rather than shown as zeros."""
        for start in range(0, len(tools), READ_SLICE):
            if start:
                await asyncio.sleep(0)
            yield [
                self.health(tool, now, candidates)
                for tool in tools[start : start + READ_SLICE]
                if self.knows(tool)
            ]

    def override_candidates(self, now: datetime) -> dict[str, list[OverrideCandidate]]:
        """Per tool, the errors retries never fixed (of those memory holds in RAM)."""
        return override_candidates(self._state.memory.snapshot(), now, self.min_episodes)

    async def read_override_candidates(self, now: datetime) -> dict[str, list[OverrideCandidate]]:
        """override_candidates(now), found in a worker thread: memory may hold a hundred
        thousand errors. The copy it reads is taken here, on the loop; the states are
        immutable."""
        memory = self._state.memory.snapshot()
        return await asyncio.to_thread(override_candidates, memory, now, self.min_episodes)

    def _alerts(self, health: ToolHealth) -> tuple[Alert, ...]:
        limits, alerts = self.thresholds, []
        minutes = round(limits.window / 60)
        recent = health.recent
        if recent.executions >= limits.min_executions and (
            health.recent_failure_rate > limits.failure_rate
        ):
            alerts.append(
                Alert(
                    AlertKind.FAILURE_RATE,
                    f"failure rate {health.recent_failure_rate:.1%} over the last {minutes} min "
                    f"({recent.errors} of {recent.executions}) is above "
                    f"{limits.failure_rate:.1%}",
                )
            )
        if recent.durations and health.recent_mean_duration > limits.mean_duration:
            alerts.append(
                Alert(
                    AlertKind.SLOW,
                    f"mean duration {health.recent_mean_duration:.2f} s over the last {minutes} "
                    f"min is above {limits.mean_duration:g} s",
                )
            )
        checked = health.recent_results
        if checked.reconciled >= limits.min_executions and (
            checked.repair_rate > limits.failure_rate
        ):
            alerts.append(
                Alert(
                    AlertKind.RESPONSE_VALIDATION,
                    f"{checked.repair_rate:.1%} of its results over the last {minutes} min "
                    f"({checked.repaired} of {checked.reconciled}: {checked.synthesized} "
                    f"synthesized, {checked.dropped} dropped) had to be repaired, above "
                    f"{limits.failure_rate:.1%}",
                )
            )
        phase = health.breaker.phase
        if phase is not BreakerPhase.CLOSED:
            alerts.append(
                Alert(AlertKind.BREAKER_TRIPPED, f"circuit breaker is {phase.value.lower()}")
            )
        return tuple(alerts)


def _rate(part: float, whole: float) -> float:
    return part / whole if whole else 0.0
