"""What a decision records: the ``Decision`` made of a verdict and its texts, the episode
it opens (a recovery whose outcome will be told) and the one it closes, the half-open
breaker's probe, and the breaker's transitions and the rate-limit window as trace
events.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from errord.decide.engine.views import CallHistory
from errord.decide.health import breaker as breakers
from errord.decide.manifest import ManifestSnapshot
from errord.decide.memory import Signature
from errord.decide.model import (
    Action,
    BreakerChanged,
    ClosedEpisode,
    Consequence,
    Correction,
    Decision,
    Episode,
    EpisodeOutcome,
    EventDetail,
    FailureReport,
    Probe,
    RateLimited,
    RateWindow,
    Recalled,
)
from errord.decide.policy import (
    DecisionContext,
    Verdict,
)
from errord.decide.texts import (
    Messages,
)


def decision_of(
    context: DecisionContext,
    verdict: Verdict,
    manifests: ManifestSnapshot,
    messages: Messages,
    correction: Correction | None,
    consequences: tuple[Consequence, ...],
) -> Decision:
    report = context.report
    return Decision(
        decision_id=context.decision_id,
        turn_id=report.turn_id,
        call_id=report.call_id,
        tool=report.tool,
        attempt=report.attempt,
        action=verdict.action,
        classification=context.classification,
        reason=messages.reason,
        llm_message=messages.llm,
        user_message=messages.user,
        technical_message=messages.technical,
        decided_at=context.now,
        delay=verdict.delay,
        next_attempt_timeout=_next_timeout(context, verdict, manifests),
        alternative_tool=verdict.alternative_tool,
        attempts_left=context.retries_left if verdict.action is Action.RETRY else 0,
        default_policy=context.tool.default_policy,
        refusal=verdict.refusal,
        consequences=consequences,
        breaker=context.breaker.state,
        default_value=(
            context.plan.default.value
            if verdict.action is Action.USE_DEFAULT and context.plan.default
            else None
        ),
        correction=correction,
        recalled=tuple(
            Recalled(
                recovery=name,
                succeeded=e.succeeded,
                failed=e.failed,
                unknown=e.unknown,
                from_fleet=e.from_fleet,
            )
            for name, e in context.memory.items()
        ),
    )


RECOVERIES = frozenset({Action.RETRY, Action.USE_ALTERNATIVE})
"""Actions whose outcome the next attempt tells: what episodic memory learns from."""


def opened_episode(
    context: DecisionContext, decision: Decision, manifests: ManifestSnapshot, error: Signature
) -> Episode | None:
    """The episode ``decision`` begins, if it is a recovery whose outcome will be told."""
    if decision.action not in RECOVERIES:
        return None
    report = context.report
    if decision.action is Action.RETRY:
        via, attempt = report.tool, report.attempt + 1
    else:
        via, attempt = decision.alternative_tool or report.tool, 1
    timeout = decision.next_attempt_timeout or manifests.manifest_for(via)[0].timeout
    return Episode(
        tool=report.tool,
        signature=error.key,
        fingerprint=error.fingerprint,
        action=decision.action,
        decision_id=decision.decision_id,
        decided_at=context.now,
        via=via,
        attempt=attempt,
        until=context.now + timedelta(seconds=decision.delay + timeout),
        scope=report.scope,
    )


def closed_episode(
    call: CallHistory | None, tool: str, attempt: int, outcome: EpisodeOutcome, now: datetime
) -> ClosedEpisode | None:
    """The episode attempt ``attempt`` of ``tool`` ends, with ``outcome``, if it ends one."""
    episode = call.awaited_by(tool, attempt) if call is not None else None
    return None if episode is None else ClosedEpisode(episode=episode, outcome=outcome, at=now)


def ended_execution(
    report: FailureReport, action: Action, refused: bool, call: CallHistory | None
) -> float | None:
    """Seconds of the call's execution of the tool that a decision of ``action`` on
    ``report`` ends (errord.state.tool_stats counts it); None when it ends none: a RETRY
    goes on with it, and an attempt refused before any of the tool's ran had none."""
    if action is Action.RETRY:
        return None
    if refused and (call is None or not call.ran_attempts(report.tool)):
        return None
    return (call.run_time(report.tool) if call is not None else 0.0) + report.elapsed


def probe_of(decision: Decision, context: DecisionContext) -> Probe:
    """The retry ``decision`` grants, as the breaker's probe: released if its outcome has
    not arrived after the delay and the timeout the executor enforces."""
    until = context.now + timedelta(seconds=decision.delay + context.breaker.probe_time)
    return Probe(
        turn_id=decision.turn_id,
        call_id=decision.call_id,
        attempt=decision.attempt + 1,
        until=until,
    )


def rate_limited_event(report: FailureReport, window: RateWindow) -> RateLimited:
    return RateLimited(tool=report.tool, window=window, turn_id=report.turn_id, scope=report.scope)


def transitions(
    tool: str, scope: str, turn_id: str, stepped: breakers.Stepped
) -> tuple[EventDetail, ...]:
    return tuple(
        BreakerChanged(tool=tool, change=change, breaker=state, turn_id=turn_id, scope=scope)
        for change, state in stepped.changes
    )


def _next_timeout(
    context: DecisionContext, verdict: Verdict, manifests: ManifestSnapshot
) -> float | None:
    if verdict.action is Action.RETRY:
        return context.manifest.timeout
    if verdict.alternative_tool is not None:
        return manifests.manifest_for(verdict.alternative_tool)[0].timeout
    return None
