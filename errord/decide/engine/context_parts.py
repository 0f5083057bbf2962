"""The parts of a decision's context (errord.decide.policy.context), built from the
state the engine is handed: the turn, the call's plan and the calls waiting on it, the
reported arguments' problems, the tool's recent activity, the alternatives whose
breaker is open.
"""

from __future__ import annotations

from datetime import datetime

from errord.decide.arguments import CallValidator
from errord.decide.engine.views import BreakerGate, BreakerViews, ToolActivity, TurnHistory, ungated
from errord.decide.manifest import ManifestSnapshot, ToolManifest
from errord.decide.model import (
    CLOSED_BREAKER,
    BreakerPhase,
    CallStatus,
    DefaultValue,
    ErrorCode,
    FailureReport,
    ParameterProblem,
    PlannedCall,
    tool_key,
)
from errord.decide.policy import (
    PlanPart,
    ToolHistory,
    TurnPart,
    Waiting,
    waiting_on,
)
from errord.decide.texts import (
    problems_of,
)


def turn_part(report: FailureReport, turn: TurnHistory | None, mistake: str) -> TurnPart:
    if turn is None:
        return TurnPart()
    calls = len(turn.calls) + (report.call_id not in turn.calls)
    return TurnPart(
        began_at=turn.began_at,
        calls=calls,
        retries=turn.retries,
        deadline=turn.deadline,
        retry_budget=turn.retry_budget,
        corrections=turn.corrections,
        told=turn.told(mistake) if mistake else 0,
    )


ARGUMENT_CODES = frozenset({ErrorCode.INVALID_INPUT, ErrorCode.SCHEMA_VIOLATION})
"""Codes of failures whose reported arguments errord checks against the tool's schema."""


def reported_problems(
    report: FailureReport, code: ErrorCode, validator: CallValidator | None
) -> tuple[ParameterProblem, ...]:
    """How the reported arguments break the tool's schema, for a failure that says they
    may be invalid."""
    if validator is None or code not in ARGUMENT_CODES or not report.arguments:
        return ()
    return problems_of(validator, report.arguments)


def plan_part(
    call_id: str, manifest: ToolManifest, turn: TurnHistory | None, manifests: ManifestSnapshot
) -> PlanPart:
    """The call's fallbacks, from the turn's plan where it says, else from the tool's
    manifest; and the calls of the plan that wait on it."""
    plan = turn.plan if turn is not None else ()
    planned = next((call for call in plan if call.call_id == call_id), None) if plan else None
    if turn is None or planned is None:
        return PlanPart(optional=manifest.optional, default=manifest.default)
    waiting = tuple(
        _waiting(call, manifests.manifest_for(call.tool)[0], turn)
        for call in waiting_on(plan, call_id)
    )
    return PlanPart(_optional(planned, manifest), _default(planned, manifest), waiting)


def _waiting(call: PlannedCall, manifest: ToolManifest, turn: TurnHistory) -> Waiting:
    return Waiting(
        call,
        optional=_optional(call, manifest),
        default=_default(call, manifest),
        pending=_pending(turn, call.call_id),
    )


def _optional(call: PlannedCall, manifest: ToolManifest) -> bool:
    return manifest.optional if call.optional is None else call.optional


def _default(call: PlannedCall, manifest: ToolManifest) -> DefaultValue | None:
    return manifest.default if call.default is None else call.default


def _pending(turn: TurnHistory, call_id: str) -> bool:
    progress = turn.progress.get(call_id)
    return progress is None or progress.status is CallStatus.PENDING


def tool_history(activity: ToolActivity | None) -> ToolHistory:
    if activity is None:
        return NO_HISTORY
    return ToolHistory(activity.succeeded_at, activity.reset_at)


NO_HISTORY = ToolHistory()


def open_tools(
    tools: tuple[str, ...],
    scope: str,
    breaker_of: BreakerViews,
    now: datetime,
    gate: BreakerGate = ungated,
) -> frozenset[str]:
    """Those of ``tools`` whose breaker in ``scope`` (the failed call's: an alternative
    is read where the call ran), as ``gate`` lets it act, is open at ``now``."""
    open_tools = []
    for tool in tools:
        key = tool_key(tool, scope)
        breaker = breaker_of(key)
        if gate is not ungated:
            breaker = gate(key, breaker or CLOSED_BREAKER, now)
        if breaker is not None and breaker.effective_phase(now) is BreakerPhase.OPEN:
            open_tools.append(tool)
    return frozenset(open_tools)
