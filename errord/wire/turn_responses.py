"""A turn's answers out: its trace events, its summary, its reconciled results, as the
messages errord answers with (BeginTurn, EndTurn, GetTurnTrace, WatchTrace,
ReconcileResults, ReportOutcome's event).

A decision inside a failure event is converted as errord.wire.responses converts every
decision, into the field of the message holding it.
"""

from __future__ import annotations

from errord_client.v1 import errord_pb2 as pb

from errord.decide.memory import MemoryKey
from errord.decide.model import (
    CallStatus,
    FailureReport,
    OutcomeReport,
    PlannedCall,
    RetryBudget,
    TurnSummary,
)
from errord.decide.model.events import (
    BreakerChanged,
    FailureEvent,
    ManifestsReloaded,
    MemoryForgotten,
    OutcomeEvent,
    RateLimited,
    TraceEvent,
    TurnBegan,
    TurnEnded,
)
from errord.decide.model.scope import tool_and_scope
from errord.decide.texts.tool_results import Reconciliation
from errord.wire.responses import (
    WIRE_ACTIONS,
    WIRE_CHANGES,
    WIRE_FORGET_REASONS,
    WIRE_OUTCOMES,
    breaker_state_to_proto,
    decision_to_proto,
    duration,
    rate_window_to_proto,
    timestamp,
    tool_failure_to_proto,
    value_to_proto,
)


def trace_event_to_proto(event: TraceEvent) -> pb.TraceEvent:
    detail = event.detail
    message = pb.TraceEvent(
        sequence=event.sequence, time=timestamp(event.time), turn_id=detail.turn_id
    )
    if isinstance(detail, FailureEvent):
        _name_attempt(message, detail.report)
        failure_event_to_proto(detail, message.failure)
    elif isinstance(detail, OutcomeEvent):
        _name_attempt(message, detail.report)
        message.outcome.CopyFrom(
            pb.OutcomeEvent(
                outcome=WIRE_OUTCOMES[detail.report.outcome],
                duration=duration(detail.report.duration),
                decision_id=detail.report.decision_id,
            )
        )
        if detail.breaker is not None:
            message.outcome.breaker.CopyFrom(breaker_state_to_proto(detail.breaker, event.time))
    elif isinstance(detail, TurnBegan):
        message.turn_began.CopyFrom(
            pb.TurnBeganEvent(
                implicit=detail.implicit, plan=[planned_call_to_proto(c) for c in detail.plan]
            )
        )
        if detail.deadline is not None:
            message.turn_began.deadline.CopyFrom(timestamp(detail.deadline))
        if detail.retry_budget is not None:
            message.turn_began.retry_budget.CopyFrom(retry_budget_to_proto(detail.retry_budget))
    elif isinstance(detail, TurnEnded):
        message.turn_ended.summary.CopyFrom(turn_summary_to_proto(detail.summary))
    elif isinstance(detail, ManifestsReloaded):
        message.manifests_reloaded.CopyFrom(
            pb.ManifestsReloadedEvent(
                applied=detail.applied, tools=detail.tools, problems=detail.problems, by=detail.by
            )
        )
    elif isinstance(detail, MemoryForgotten):
        message.memory_forgotten.CopyFrom(
            pb.MemoryForgottenEvent(
                reason=WIRE_FORGET_REASONS[detail.reason],
                errors=[_forgotten_to_proto(key) for key in detail.errors],
            )
        )
    elif isinstance(detail, BreakerChanged):
        message.tool = detail.tool
        message.scope = detail.scope
        message.breaker.CopyFrom(
            pb.BreakerEvent(
                change=WIRE_CHANGES[detail.change],
                breaker=breaker_state_to_proto(detail.breaker, event.time),
                by=detail.by,
            )
        )
    elif isinstance(detail, RateLimited):
        message.tool = detail.tool
        message.scope = detail.scope
        rate_window_to_proto(detail.window, message.rate_limited.window)
    return message


def _name_attempt(message: pb.TraceEvent, report: FailureReport | OutcomeReport) -> None:
    message.call_id = report.call_id
    message.tool = report.tool
    message.attempt = report.attempt
    message.scope = report.scope


def _forgotten_to_proto(key: MemoryKey) -> pb.ForgottenError:
    tool, scope = tool_and_scope(key.tool)
    return pb.ForgottenError(tool=tool, signature=key.signature, scope=scope)


def failure_event_to_proto(
    detail: FailureEvent, message: pb.FailureEvent | None = None
) -> pb.FailureEvent:
    """``detail`` into ``message`` when given, else into a new FailureEvent."""
    if message is None:
        message = pb.FailureEvent()
    report = detail.report
    tool_failure_to_proto(report.error, message.error)
    message.arguments.SetInParent()  # sent even when empty, as it always was
    message.arguments.update(report.arguments)
    duration(report.elapsed, message.elapsed)
    decision_to_proto(detail.decision, message.decision)
    declaration = report.declaration
    if declaration is not None:
        if declaration.parameters is not None:
            message.tool_declaration.parameters.update(declaration.parameters)
        if declaration.timeout is not None:
            duration(declaration.timeout, message.tool_declaration.timeout)
    return message


def reconciliation_to_proto(reconciliation: Reconciliation) -> pb.ReconcileResultsResponse:
    return pb.ReconcileResultsResponse(
        results=[
            pb.ReconciledResult(
                call_id=result.call_id,
                tool=result.tool,
                content=result.content,
                is_error=result.is_error,
                origin=f"RESULT_ORIGIN_{result.origin.value}",
                note=result.note,
            )
            for result in reconciliation.results
        ],
        dropped=[
            pb.DroppedResult(
                index=dropped.index,
                call_id=dropped.call_id,
                reason=f"DROP_REASON_{dropped.reason.value}",
            )
            for dropped in reconciliation.dropped
        ],
    )


def retry_budget_to_proto(budget: RetryBudget) -> pb.RetryBudget:
    message = pb.RetryBudget()
    if budget.max_retries is not None:
        message.max_retries = budget.max_retries
    if budget.max_share is not None:
        message.max_share = budget.max_share
    return message


def planned_call_to_proto(call: PlannedCall) -> pb.PlannedCall:
    message = pb.PlannedCall(call_id=call.call_id, tool=call.tool, depends_on=call.depends_on)
    if call.arguments:
        message.arguments.update(call.arguments)
    if call.optional is not None:
        message.optional = call.optional
    if call.default is not None:
        message.default_value.CopyFrom(value_to_proto(call.default.value))
    return message


WIRE_STATUSES: dict[CallStatus, str] = {
    member: f"CALL_STATUS_{member.value}" for member in CallStatus if member.value != "PENDING"
}
"""A summary's statuses; PENDING never leaves the daemon (EndTurn settles every call)."""


def turn_summary_to_proto(summary: TurnSummary) -> pb.TurnSummary:
    message = pb.TurnSummary(
        turn_id=summary.turn_id,
        began_at=timestamp(summary.began_at),
        ended_at=timestamp(summary.ended_at),
        deadline_passed=summary.deadline_passed,
        user_notice=summary.user_notice,
    )
    if summary.deadline is not None:
        message.deadline.CopyFrom(timestamp(summary.deadline))
    for call in summary.calls:
        message.calls.add(
            call_id=call.call_id,
            tool=call.tool,
            status=WIRE_STATUSES[call.status],
            detail=call.detail,
            blocked_by=call.blocked_by,
            decisions=[
                pb.TakenDecision(
                    decision_id=taken.decision_id,
                    tool=taken.tool,
                    attempt=taken.attempt,
                    action=WIRE_ACTIONS[taken.action],
                )
                for taken in call.decisions
            ],
        )
    return message
