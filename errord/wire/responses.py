"""Responses out: domain records encoded as the messages errord answers with.

Decisions, trace events, turn summaries, reconciliations and call checks for
ErrorHandlerService; breakers, tool statistics and remembered errors for
OperatorService. Domain enums map to wire enum names (``WIRE_*``), which generated
constructors take.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, json_format, struct_pb2, timestamp_pb2

from errord.decide.engine import CallCheck
from errord.decide.events import (
    BreakerChanged,
    FailureEvent,
    ForgetReason,
    ManifestsReloaded,
    MemoryForgotten,
    OutcomeEvent,
    TraceEvent,
    TurnBegan,
    TurnEnded,
)
from errord.decide.memory import MemoryKey, MemoryStats, recall
from errord.decide.model import (
    Action,
    BreakerChange,
    BreakerPhase,
    BreakerState,
    CallStatus,
    Correction,
    Decision,
    ErrorClass,
    ErrorCode,
    FailureReport,
    JSONValue,
    Outcome,
    OutcomeReport,
    PlannedCall,
    RetryBudget,
    ToolFailure,
    TurnSummary,
)
from errord.decide.reconcile import Reconciliation
from errord.state.health import BreakerView, ToolHealth

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Generated constructors take enum values by name, which keeps these maps typed.
WIRE_CODES = {member: f"ERROR_CODE_{member.value}" for member in ErrorCode}
WIRE_CLASSES = {member: f"ERROR_CLASS_{member.value}" for member in ErrorClass}
WIRE_ACTIONS = {member: f"RECOVERY_ACTION_{member.value}" for member in Action}
WIRE_OUTCOMES = {member: f"OUTCOME_{member.value}" for member in Outcome}
WIRE_PHASES = {member: f"BREAKER_PHASE_{member.value}" for member in BreakerPhase}
WIRE_CHANGES = {member: f"BREAKER_CHANGE_{member.value}" for member in BreakerChange}
WIRE_FORGET_REASONS = {member: f"FORGET_REASON_{member.value.upper()}" for member in ForgetReason}


def duration(seconds: float) -> duration_pb2.Duration:
    exact = timedelta(seconds=seconds)  # to the microsecond, as Duration.FromTimedelta
    whole = exact.days * 86_400 + exact.seconds
    return duration_pb2.Duration(seconds=whole, nanos=exact.microseconds * 1000)


def timestamp(moment: datetime) -> timestamp_pb2.Timestamp:
    since = moment - EPOCH
    whole = since.days * 86_400 + since.seconds
    return timestamp_pb2.Timestamp(seconds=whole, nanos=since.microseconds * 1000)


def value_to_proto(value: JSONValue) -> struct_pb2.Value:
    message = struct_pb2.Value()
    json_format.ParseDict(value, message)
    return message


def tool_failure_to_proto(failure: ToolFailure) -> pb.ToolError:
    message = pb.ToolError(
        code=WIRE_CODES[failure.code] if failure.code else "ERROR_CODE_UNSPECIFIED",
        http_status=failure.http_status or 0,
        exception_type=failure.exception_type,
        message=failure.message,
    )
    if failure.retry_after is not None:
        message.retry_after.CopyFrom(duration(failure.retry_after))
    if failure.retry_at is not None:
        message.retry_at.CopyFrom(timestamp(failure.retry_at))
    if failure.partial_result is not None:
        message.partial_result.CopyFrom(value_to_proto(failure.partial_result))
    return message


def decision_to_proto(decision: Decision) -> pb.RecoveryDecision:
    verdict = decision.classification
    message = pb.RecoveryDecision(
        decision_id=decision.decision_id,
        action=WIRE_ACTIONS[decision.action],
        alternative_tool=decision.alternative_tool or "",
        classification=pb.Classification(
            error_class=WIRE_CLASSES[verdict.error_class],
            code=WIRE_CODES[verdict.code],
            rule=verdict.rule,
        ),
        attempts_left=decision.attempts_left,
        reason=decision.reason,
        llm_message=decision.llm_message,
        user_message=decision.user_message,
        turn_id=decision.turn_id,
        call_id=decision.call_id,
        tool=decision.tool,
        attempt=decision.attempt,
        decided_at=timestamp(decision.decided_at),
        default_policy=decision.default_policy,
        technical_message=decision.technical_message,
    )
    if decision.action is Action.RETRY:
        message.delay.CopyFrom(duration(decision.delay))
    if decision.next_attempt_timeout is not None:
        message.next_attempt_timeout.CopyFrom(duration(decision.next_attempt_timeout))
    if decision.breaker is not None:
        message.breaker.CopyFrom(breaker_state_to_proto(decision.breaker, decision.decided_at))
        message.probe = decision.probe
    if decision.action is Action.USE_DEFAULT:
        message.default_value.CopyFrom(value_to_proto(decision.default_value))
    if decision.correction is not None:
        message.correction.CopyFrom(correction_to_proto(decision.correction))
    for recalled in decision.recalled:
        told = recalled.succeeded + recalled.failed
        message.recalled.add(
            recovery=recalled.recovery,
            succeeded=recalled.succeeded,
            failed=recalled.failed,
            unknown=recalled.unknown,
            success_rate=recalled.succeeded / told if told else 0.0,
        )
    for each in decision.consequences:
        consequence = message.consequences.add(
            call_id=each.call_id,
            tool=each.tool,
            action=WIRE_ACTIONS[each.action],
            reason=each.reason,
            blocked_by=each.blocked_by,
        )
        if each.action is Action.USE_DEFAULT:
            consequence.default_value.CopyFrom(value_to_proto(each.default_value))
    return message


def correction_to_proto(correction: Correction) -> pb.Correction:
    message = pb.Correction(
        type=correction.kind,
        message=correction.message,
        parameter=correction.parameter,
        required_parameters=correction.required_parameters,
        retry_hint=correction.retry_hint,
        problems=[
            pb.ParameterProblem(type=p.kind, parameter=p.parameter, message=p.message)
            for p in correction.problems
        ],
        available_tools=correction.known_tools,
        corrections_left=correction.corrections_left,
    )
    if correction.example is not None:
        message.example.update(correction.example)
    return message


def breaker_state_to_proto(state: BreakerState, at: datetime) -> pb.BreakerState:
    """``state`` as it stood at ``at`` (a probe whose time ran out is no longer in flight)."""
    probe = state.probe_in_flight(at)
    message = pb.BreakerState(
        phase=WIRE_PHASES[state.phase],
        consecutive_failures=state.failures,
        consecutive_successes=state.successes,
        opens=state.opens,
        probe_in_flight=probe is not None,
    )
    if state.opened_at is not None:
        message.opened_at.CopyFrom(timestamp(state.opened_at))
    if state.half_opens_at is not None:
        message.half_opens_at.CopyFrom(timestamp(state.half_opens_at))
    if probe is not None:
        message.probe_until.CopyFrom(timestamp(probe.until))
    return message


def trace_event_to_proto(event: TraceEvent) -> pb.TraceEvent:
    detail = event.detail
    message = pb.TraceEvent(
        sequence=event.sequence, time=timestamp(event.time), turn_id=detail.turn_id
    )
    if isinstance(detail, FailureEvent):
        _name_attempt(message, detail.report)
        message.failure.CopyFrom(failure_event_to_proto(detail))
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
                errors=[
                    pb.ForgottenError(tool=k.tool, signature=k.signature) for k in detail.errors
                ],
            )
        )
    elif isinstance(detail, BreakerChanged):
        message.tool = detail.tool
        message.breaker.CopyFrom(
            pb.BreakerEvent(
                change=WIRE_CHANGES[detail.change],
                breaker=breaker_state_to_proto(detail.breaker, event.time),
                by=detail.by,
            )
        )
    return message


def _name_attempt(message: pb.TraceEvent, report: FailureReport | OutcomeReport) -> None:
    message.call_id = report.call_id
    message.tool = report.tool
    message.attempt = report.attempt


def failure_event_to_proto(detail: FailureEvent) -> pb.FailureEvent:
    arguments = struct_pb2.Struct()
    arguments.update(detail.report.arguments)
    return pb.FailureEvent(
        error=tool_failure_to_proto(detail.report.error),
        arguments=arguments,
        elapsed=duration(detail.report.elapsed),
        decision=decision_to_proto(detail.decision),
    )


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


def call_check_to_proto(checked: CallCheck) -> pb.ValidateCallResponse:
    message = pb.ValidateCallResponse(
        valid=checked.valid, checked=checked.checked, llm_message=checked.llm_message
    )
    if checked.correction is not None:
        message.correction.CopyFrom(correction_to_proto(checked.correction))
        message.problems.extend(message.correction.problems)
    return message


# OperatorService's responses.


def breaker_to_proto(view: BreakerView) -> pb.Breaker:
    policy = view.policy
    message = pb.Breaker(
        tool=view.tool,
        state=breaker_state_to_proto(view.state, view.now),
        effective_phase=WIRE_PHASES[view.phase],
        failure_threshold=policy.failure_threshold,
        success_threshold=policy.success_threshold,
        cooldown=duration(policy.cooldown),
    )
    if view.half_opens_in is not None:
        message.half_opens_in.CopyFrom(duration(view.half_opens_in.total_seconds()))
    return message


def remembered_to_proto(key: MemoryKey, stats: MemoryStats, now: datetime) -> pb.RememberedError:
    return pb.RememberedError(
        signature=key.signature,
        fingerprint=stats.fingerprint,
        recoveries=[
            pb.RecoveryEvidence(
                recovery=name,
                succeeded=evidence.succeeded,
                failed=evidence.failed,
                unknown=evidence.unknown,
                success_rate=evidence.success_rate,
            )
            for name, evidence in sorted(recall(stats, now).items())
        ],
    )


def tool_health_to_proto(health: ToolHealth) -> pb.ToolStats:
    stats, recent = health.stats, health.recent
    return pb.ToolStats(
        tool=health.tool,
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
