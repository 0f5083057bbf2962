"""Responses out: domain records encoded as the messages errord answers with.

Decisions, trace events, turn summaries, reconciliations and call checks for
ErrorHandlerService; breakers, tool statistics and remembered errors for
OperatorService. Domain enums map to wire enum numbers (``WIRE_*``), which generated
messages store (a name would be looked up at each use).

A decision is answered for every report, so its conversion builds each message in
place, in the field of the message holding it (``message=``): a nested message built
apart is copied whole when it is put in its place. Its fields left at their defaults
are not set, as proto3 does not send them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import TypeVar

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, json_format, struct_pb2, timestamp_pb2

from errord.decide.classify import fault_of
from errord.decide.engine import CallCheck
from errord.decide.events import (
    BreakerChanged,
    FailureEvent,
    ForgetReason,
    ManifestsReloaded,
    MemoryForgotten,
    OutcomeEvent,
    RateLimited,
    TraceEvent,
    TurnBegan,
    TurnEnded,
)
from errord.decide.memory import BURST_GAP, Evidence, MemoryKey, MemoryStats, recall
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
    Fault,
    JSONValue,
    Outcome,
    OutcomeReport,
    PlannedCall,
    RateWindow,
    RetryBudget,
    ToolFailure,
    TurnSummary,
)
from errord.decide.reconcile import Reconciliation
from errord.decide.scope import tool_and_scope
from errord.state.health import BreakerView, ToolHealth

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
E = TypeVar("E", bound=Enum)
W = TypeVar("W", bound=int)


def wire_numbers(enum: type[E], wire: type[W], prefix: str) -> dict[E, W]:
    """Domain members to the wire enum ``wire``'s numbers named ``{prefix}_{NAME}``."""
    return {member: getattr(wire, f"{prefix}_{member.name}") for member in enum}


WIRE_CODES = wire_numbers(ErrorCode, pb.ErrorCode, "ERROR_CODE")
WIRE_CLASSES = wire_numbers(ErrorClass, pb.ErrorClass, "ERROR_CLASS")
WIRE_FAULTS = wire_numbers(Fault, pb.Fault, "FAULT")
WIRE_ACTIONS = wire_numbers(Action, pb.RecoveryAction, "RECOVERY_ACTION")
WIRE_OUTCOMES = wire_numbers(Outcome, pb.Outcome, "OUTCOME")
WIRE_PHASES = wire_numbers(BreakerPhase, pb.BreakerPhase, "BREAKER_PHASE")
WIRE_CHANGES = wire_numbers(BreakerChange, pb.BreakerChange, "BREAKER_CHANGE")
WIRE_FORGET_REASONS = wire_numbers(ForgetReason, pb.ForgetReason, "FORGET_REASON")
MICROSECONDS = 1_000_000


def duration(seconds: float, message: duration_pb2.Duration | None = None) -> duration_pb2.Duration:
    """``seconds`` to the microsecond, rounded as ``timedelta(seconds=...)`` rounds them
    (the whole seconds exactly, their fraction half to even), into ``message`` when given."""
    whole = int(seconds)
    micros = whole * MICROSECONDS + round((seconds - whole) * MICROSECONDS)
    if message is None:
        message = duration_pb2.Duration()
    message.seconds, micros = divmod(micros, MICROSECONDS)
    message.nanos = micros * 1000
    return message


def timestamp(
    moment: datetime, message: timestamp_pb2.Timestamp | None = None
) -> timestamp_pb2.Timestamp:
    """``moment`` into ``message`` when given, else into a new Timestamp."""
    if message is None:
        message = timestamp_pb2.Timestamp()
    since = moment - EPOCH
    message.seconds = since.days * 86_400 + since.seconds
    message.nanos = since.microseconds * 1000
    return message


def value_to_proto(value: JSONValue, message: struct_pb2.Value | None = None) -> struct_pb2.Value:
    """``value`` into ``message`` when given, else into a new Value."""
    if message is None:
        message = struct_pb2.Value()
    json_format.ParseDict(value, message)
    return message


def tool_failure_to_proto(
    failure: ToolFailure, message: pb.ToolError | None = None
) -> pb.ToolError:
    """``failure`` into ``message`` when given, else into a new ToolError."""
    if message is None:
        message = pb.ToolError()
    message.code = WIRE_CODES[failure.code] if failure.code else pb.ERROR_CODE_UNSPECIFIED
    if failure.http_status:
        message.http_status = failure.http_status
    if failure.exception_type:
        message.exception_type = failure.exception_type
    message.message = failure.message
    if failure.retry_after is not None:
        duration(failure.retry_after, message.retry_after)
    if failure.retry_at is not None:
        timestamp(failure.retry_at, message.retry_at)
    if failure.partial_result is not None:
        value_to_proto(failure.partial_result, message.partial_result)
    if failure.api_message:
        message.api_message = failure.api_message
    if failure.api_parameter:
        message.api_parameter = failure.api_parameter
    if failure.api_code:
        message.api_code = failure.api_code
    return message


def report_failure_response(
    decision: Decision, replayed: bool, message: pb.ReportFailureResponse | None = None
) -> pb.ReportFailureResponse:
    """ReportFailure's answer, into ``message`` when given (an answer of ReportFailures)."""
    if message is None:
        message = pb.ReportFailureResponse()
    decision_to_proto(decision, message.decision)
    if replayed:
        message.replayed = True
    return message


def decision_to_proto(
    decision: Decision, message: pb.RecoveryDecision | None = None
) -> pb.RecoveryDecision:
    """``decision`` into ``message`` when given, else into a new RecoveryDecision."""
    if message is None:
        message = pb.RecoveryDecision()
    message.decision_id = decision.decision_id
    message.action = WIRE_ACTIONS[decision.action]
    if decision.alternative_tool:
        message.alternative_tool = decision.alternative_tool
    verdict, classification = decision.classification, message.classification
    classification.error_class = WIRE_CLASSES[verdict.error_class]
    classification.code = WIRE_CODES[verdict.code]
    classification.rule = verdict.rule
    classification.fault = WIRE_FAULTS[fault_of(verdict)]
    if verdict.parameter:
        classification.parameter = verdict.parameter
    if decision.attempts_left:
        message.attempts_left = decision.attempts_left
    message.reason = decision.reason
    message.llm_message = decision.llm_message
    message.user_message = decision.user_message
    message.turn_id = decision.turn_id
    message.call_id = decision.call_id
    message.tool = decision.tool
    message.attempt = decision.attempt
    timestamp(decision.decided_at, message.decided_at)
    if decision.default_policy:
        message.default_policy = True
    message.technical_message = decision.technical_message
    if decision.action is Action.RETRY:
        duration(decision.delay, message.delay)
    if decision.next_attempt_timeout is not None:
        duration(decision.next_attempt_timeout, message.next_attempt_timeout)
    if decision.breaker is not None:
        breaker_state_to_proto(decision.breaker, decision.decided_at, message.breaker)
        if decision.probe:
            message.probe = True
    if decision.action is Action.USE_DEFAULT:
        value_to_proto(decision.default_value, message.default_value)
    if decision.correction is not None:
        correction_to_proto(decision.correction, message.correction)
    for recalled in decision.recalled:
        told = recalled.succeeded + recalled.failed
        message.recalled.add(
            recovery=recalled.recovery,
            succeeded=recalled.succeeded,
            failed=recalled.failed,
            unknown=recalled.unknown,
            success_rate=recalled.succeeded / told if told else 0.0,
            from_fleet=recalled.from_fleet,
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
            value_to_proto(each.default_value, consequence.default_value)
    return message


def correction_to_proto(
    correction: Correction, message: pb.Correction | None = None
) -> pb.Correction:
    """``correction`` into ``message`` when given, else into a new Correction."""
    if message is None:
        message = pb.Correction()
    message.type = correction.kind
    message.message = correction.message
    if correction.parameter:
        message.parameter = correction.parameter
    if correction.required_parameters:
        message.required_parameters.extend(correction.required_parameters)
    if correction.example is not None:
        message.example.update(correction.example)
    message.retry_hint = correction.retry_hint
    for problem in correction.problems:
        message.problems.add(
            type=problem.kind, parameter=problem.parameter, message=problem.message
        )
    if correction.known_tools:
        message.available_tools.extend(correction.known_tools)
    message.corrections_left = correction.corrections_left
    return message


def breaker_state_to_proto(
    state: BreakerState, at: datetime, message: pb.BreakerState | None = None
) -> pb.BreakerState:
    """``state`` as it stood at ``at`` (a probe whose time ran out is no longer in flight),
    into ``message`` when given, else into a new BreakerState."""
    if message is None:
        message = pb.BreakerState()
    message.phase = WIRE_PHASES[state.phase]
    if state.failures:
        message.consecutive_failures = state.failures
    if state.successes:
        message.consecutive_successes = state.successes
    if state.opens:
        message.opens = state.opens
    if state.opened_at is not None:
        timestamp(state.opened_at, message.opened_at)
    if state.half_opens_at is not None:
        timestamp(state.half_opens_at, message.half_opens_at)
    probe = state.probe_in_flight(at)
    if probe is not None:
        message.probe_in_flight = True
        timestamp(probe.until, message.probe_until)
    if state.streak:
        message.streak = state.streak
    length = state.break_length
    if length is not None:
        duration(length, message.break_length)
    if state.seen:
        message.recent_attempts = state.seen
        message.recent_failures = state.recent_failures
    return message


def rate_window_to_proto(
    window: RateWindow, message: pb.RateLimitWindow | None = None
) -> pb.RateLimitWindow:
    if message is None:
        message = pb.RateLimitWindow()
    timestamp(window.opened_at, message.opened_at)
    timestamp(window.until, message.until)
    if window.asked is not None:
        duration(window.asked, message.retry_after)
    return message


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
    stats, recent = health.stats, health.recent
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
