"""OperatorService's answers out: breakers, tool statistics and remembered errors as the
messages errord answers with.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from errord_client.v1 import errord_pb2 as pb

from errord.decide.memory import BURST_GAP, Evidence, MemoryKey, MemoryStats, recall
from errord.decide.model import Action
from errord.state.health import BreakerView, ToolHealth
from errord.wire.responses import (
    WIRE_PHASES,
    breaker_state_to_proto,
    duration,
    rate_window_to_proto,
    timestamp,
)


def breaker_to_proto(view: BreakerView) -> pb.Breaker:
    policy = view.policy
    message = pb.Breaker(
        tool=view.tool,
        scope=view.scope,
        state=breaker_state_to_proto(view.state, view.now),
        effective_phase=WIRE_PHASES[view.phase],
        failure_threshold=policy.failure_threshold,
        success_threshold=policy.success_threshold,
        cooldown=duration(policy.cooldown),
        first_cooldown=duration(policy.first_cooldown),
        cooldown_multiplier=policy.cooldown_multiplier,
        next_break=duration(view.next_break),
        failure_rate=policy.failure_rate,
        min_calls=policy.min_calls,
        window=policy.window,
    )
    if view.half_opens_in is not None:
        message.half_opens_in.CopyFrom(duration(view.half_opens_in.total_seconds()))
    if view.window is not None:
        rate_window_to_proto(view.window, message.rate_limit)
    return message


@dataclass(frozen=True, slots=True)
class MemoryVerdicts:
    """What lifts or times memory's verdicts on a tool's errors, as RecallEpisodes says."""

    min_episodes: float
    succeeded_at: datetime | None = None
    """When the tool last succeeded."""
    reset_at: datetime | None = None
    """When an operator last reset its breaker."""


def remembered_to_proto(
    key: MemoryKey, stats: MemoryStats, now: datetime, verdicts: MemoryVerdicts | None = None
) -> pb.RememberedError:
    return pb.RememberedError(
        signature=key.signature,
        fingerprint=stats.fingerprint,
        recoveries=[
            _evidence_to_proto(name, evidence, now, verdicts)
            for name, evidence in sorted(recall(stats, now).items())
        ],
    )


def _evidence_to_proto(
    name: str, evidence: Evidence, now: datetime, verdicts: MemoryVerdicts | None
) -> pb.RecoveryEvidence:
    message = pb.RecoveryEvidence(
        recovery=name,
        succeeded=evidence.succeeded,
        failed=evidence.failed,
        unknown=evidence.unknown,
        success_rate=evidence.success_rate,
        from_fleet=evidence.from_fleet,
    )
    if evidence.failed_at is not None:
        timestamp(evidence.failed_at, message.last_failed)
    if evidence.succeeded_at is not None:
        timestamp(evidence.succeeded_at, message.last_succeeded)
    if verdicts is None or name != Action.RETRY.value:
        return message
    if evidence.never_fixed(verdicts.min_episodes):
        lifted = lifted_by(evidence, verdicts)
        message.lifted_by = lifted
        message.stops_retries = not lifted
    until = evidence.fades_below(verdicts.min_episodes, now)
    if until is not None:
        timestamp(until, message.applies_until)
    return message


def lifted_by(evidence: Evidence, verdicts: MemoryVerdicts) -> str:
    """What lifts a verdict that retries never fix an error, as the RetriesNeverFix gate
    reads it: "succeeded", "reset", or "" when nothing does."""
    failed = evidence.failed_at
    if failed is None:
        return ""
    if verdicts.succeeded_at is not None and verdicts.succeeded_at > failed:
        return "succeeded"
    if verdicts.reset_at is not None and verdicts.reset_at > failed:
        return "reset"
    return ""


def recalled_to_proto(
    remembered: list[tuple[MemoryKey, MemoryStats]], now: datetime, verdicts: MemoryVerdicts
) -> pb.RecallEpisodesResponse:
    message = pb.RecallEpisodesResponse(
        errors=[remembered_to_proto(key, stats, now, verdicts) for key, stats in remembered],
        min_episodes=verdicts.min_episodes,
        burst_gap=duration(BURST_GAP),
    )
    if verdicts.succeeded_at is not None:
        timestamp(verdicts.succeeded_at, message.tool_succeeded_at)
    if verdicts.reset_at is not None:
        timestamp(verdicts.reset_at, message.breaker_reset_at)
    return message


def tool_health_to_proto(health: ToolHealth) -> pb.ToolStats:
    stats, recent, ran = health.stats, health.recent, health.stats.per_execution
    return pb.ToolStats(
        tool=health.tool,
        scope=health.scope,
        executions=stats.executions,
        successes=stats.successes,
        errors=stats.errors,
        transient_errors=stats.transient_errors,
        permanent_errors=stats.permanent_errors,
        timeouts=stats.timeouts,
        retries=stats.retries,
        retry_successes=stats.retry_successes,
        retry_success_rate=health.retry_success_rate,
        breaker_opens=stats.breaker_opens,
        failure_rate=health.failure_rate,
        mean_duration=duration(stats.durations.mean),
        p95_duration=duration(stats.durations.quantile(0.95)),
        errors_by_code={code.value: count for code, count in stats.errors_by_code.items()},
        errors_by_exception=stats.errors_by_exception,
        decisions={action.value: count for action, count in stats.decisions.items()},
        recent=pb.RecentStats(
            executions=recent.executions,
            errors=recent.errors,
            failure_rate=health.recent_failure_rate,
            mean_duration=duration(health.recent_mean_duration),
        ),
        breaker=breaker_to_proto(health.breaker),
        alerts=[
            pb.ToolAlert(kind=f"ALERT_KIND_{alert.kind.value}", message=alert.message)
            for alert in health.alerts
        ],
        per_execution=pb.ExecutionStats(
            executions=ran.count,
            successes=ran.successes,
            errors=ran.errors,
            timeouts=ran.timeouts,
            failure_rate=ran.failure_rate,
            mean_duration=duration(ran.durations.mean),
            p95_duration=duration(ran.durations.quantile(0.95)),
        ),
        override_candidates=[
            pb.OverrideCandidate(
                signature=candidate.signature,
                fingerprint=candidate.fingerprint,
                retried=candidate.retried,
                recovered=candidate.recovered,
                suggested_rule=candidate.suggested_rule,
            )
            for candidate in health.override_candidates
        ],
    )
