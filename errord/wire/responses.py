"""Decisions out: what a report is answered with, as the messages errord answers with.

Decisions (with their classification, correction and breaker), and call checks; the
conversions every answer shares (durations, timestamps, JSON values, the wire enums).
A turn's answers are errord.wire.turn_responses', OperatorService's
errord.wire.operator_responses'. Domain enums map to wire enum numbers (``WIRE_*``),
which generated messages store (a name would be looked up at each use).

A decision is answered for every report, so its conversion builds each message in
place, in the field of the message holding it (``message=``): a nested message built
apart is copied whole when it is put in its place. Its fields left at their defaults
are not set, as proto3 does not send them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import TypeVar

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, json_format, struct_pb2, timestamp_pb2

from errord.decide.classify import fault_of
from errord.decide.engine import CallCheck
from errord.decide.model import (
    Action,
    BreakerChange,
    BreakerPhase,
    BreakerState,
    Correction,
    Decision,
    ErrorClass,
    ErrorCode,
    Fault,
    JSONValue,
    Outcome,
    RateWindow,
    ToolFailure,
)
from errord.decide.model.events import ForgetReason

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


def call_check_to_proto(checked: CallCheck) -> pb.ValidateCallResponse:
    message = pb.ValidateCallResponse(
        valid=checked.valid, checked=checked.checked, llm_message=checked.llm_message
    )
    if checked.correction is not None:
        message.correction.CopyFrom(correction_to_proto(checked.correction))
        message.problems.extend(message.correction.problems)
    return message
