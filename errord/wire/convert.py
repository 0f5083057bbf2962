"""Protobuf <-> domain, and the validation that goes with it.

The only module besides service.py that sees generated code. Every problem in a
request becomes a FieldViolation naming the field by its proto path, and all of
them are reported together.

Every field is bounded before it is used: identifiers (at most MAX_ID_LENGTH
characters, no control characters), texts, attempts (1 to MAX_ATTEMPT),
durations and timestamps (their protobuf ranges), page tokens (at most
MAX_PAGE_TOKEN_LENGTH digits, never quoted back), JSON values (MAX_JSON_BYTES,
MAX_JSON_DEPTH levels, MAX_JSON_MEMBERS members) and repeated fields
(MAX_BATCH failures, MAX_CALLS calls, dependencies and held results).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import TypeVar

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
from errord.decide.model import (
    Action,
    BreakerChange,
    BreakerPhase,
    BreakerState,
    CallStatus,
    Correction,
    Decision,
    DefaultValue,
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
from errord.decide.plan import plan_problems
from errord.decide.reconcile import HeldResult, Reconciliation, ToolCall
from errord.errors import FieldViolation, InvalidRequest

MAX_ID_LENGTH = 512
MAX_TEXT_LENGTH = 16_384
"""Characters of an error message; a report must stay far below gRPC's 4 MiB message cap."""
MAX_JSON_BYTES = 262_144
"""Serialized bytes of the arguments, and of a partial result."""
MAX_JSON_DEPTH = 32
"""Levels of objects and arrays in one JSON value (protobuf decodes about as many)."""
MAX_JSON_MEMBERS = 10_000
"""Object members and array items in one JSON value, in all."""
MAX_PAGE_TOKEN_LENGTH = 20
"""Characters of a page token: the digits of a sequence number."""
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
"""What an identifier may not hold: NUL, newlines, escapes (logs and terminals show ids)."""
MAX_ATTEMPT = 10_000
MAX_BATCH = 256
"""Failures in one ReportFailures call."""
MAX_CALLS = 1024
"""Tool calls, and held results, in one ReconcileResults call."""
MAX_SEQUENCE = 2**63 - 1  # SQLite's largest integer
DEFAULT_PAGE_SIZE = 1000
MAX_DURATION_SECONDS = 315_576_000_000  # google.protobuf.Duration's range
TIMESTAMP_SECONDS = range(-62_135_596_800, 253_402_300_800)  # 0001-01-01 to 9999-12-31

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

E = TypeVar("E", bound=Enum)


def wire_enum(enum: type[E], wire: Callable[[str], int], prefix: str) -> dict[int, E]:
    """Map wire enum numbers to domain members that share their names."""
    return {wire(f"{prefix}_{member.value}"): member for member in enum}


CODES = wire_enum(ErrorCode, pb.ErrorCode.Value, "ERROR_CODE")
CLASSES = wire_enum(ErrorClass, pb.ErrorClass.Value, "ERROR_CLASS")
ACTIONS = wire_enum(Action, pb.RecoveryAction.Value, "RECOVERY_ACTION")
OUTCOMES = wire_enum(Outcome, pb.Outcome.Value, "OUTCOME")
# Generated constructors take enum values by name, which keeps these maps typed.
WIRE_CODES = {member: f"ERROR_CODE_{member.value}" for member in ErrorCode}
WIRE_CLASSES = {member: f"ERROR_CLASS_{member.value}" for member in ErrorClass}
WIRE_ACTIONS = {member: f"RECOVERY_ACTION_{member.value}" for member in Action}
WIRE_OUTCOMES = {member: f"OUTCOME_{member.value}" for member in Outcome}
WIRE_PHASES = {member: f"BREAKER_PHASE_{member.value}" for member in BreakerPhase}
WIRE_CHANGES = {member: f"BREAKER_CHANGE_{member.value}" for member in BreakerChange}
WIRE_FORGET_REASONS = {member: f"FORGET_REASON_{member.value.upper()}" for member in ForgetReason}


class Violations:
    """Collects field violations; raises them together."""

    def __init__(self, prefix: str = "", found: list[FieldViolation] | None = None) -> None:
        self.prefix = prefix
        """Put before every field named, for a message nested in the request."""
        self.found: list[FieldViolation] = [] if found is None else found

    def within(self, prefix: str) -> Violations:
        """Violations of a nested message (``failures[2].``), collected with these."""
        return Violations(self.prefix + prefix, self.found)

    def add(self, field: str, description: str) -> None:
        self.found.append(FieldViolation(self.prefix + field, description))

    def raise_any(self) -> None:
        if self.found:
            raise InvalidRequest(self.found)

    def identifier(self, field: str, value: str) -> str:
        if not value.strip():
            self.add(field, "required")
        elif len(value) > MAX_ID_LENGTH:
            self.add(field, f"at most {MAX_ID_LENGTH} characters, got {len(value)}")
        elif CONTROL_CHARACTERS.search(value):
            self.add(field, "must not contain control characters (U+0000 to U+001F, U+007F)")
        return value

    def text(self, field: str, value: str, limit: int = MAX_TEXT_LENGTH) -> str:
        if len(value) > limit:
            self.add(field, f"at most {limit} characters, got {len(value)}")
        return value

    def json(self, field: str, message: struct_pb2.Struct | struct_pb2.Value) -> JSONValue:
        """A Struct or Value as plain JSON; must be finite, at most MAX_JSON_BYTES, nest at
        most MAX_JSON_DEPTH levels and hold at most MAX_JSON_MEMBERS members and items."""
        size = message.ByteSize()
        if size > MAX_JSON_BYTES:
            self.add(field, f"at most {MAX_JSON_BYTES} bytes serialized, got {size}")
            return None
        try:
            if isinstance(message, struct_pb2.Struct):
                return plain_struct(message)
            return plain_value(message)
        except NotJSON as error:
            self.add(field, str(error))
            return None

    def moment(self, field: str, timestamp: timestamp_pb2.Timestamp) -> datetime | None:
        if timestamp.seconds not in TIMESTAMP_SECONDS or not 0 <= timestamp.nanos < 1_000_000_000:
            self.add(field, "out of range for a google.protobuf.Timestamp")
            return None
        return timestamp.ToDatetime(UTC)

    def sequence(self, field: str, value: int) -> int:
        if value > MAX_SEQUENCE:
            self.add(field, f"at most {MAX_SEQUENCE}, got {value}")
            return 0
        return value

    def attempt(self, value: int) -> int:
        if not 1 <= value <= MAX_ATTEMPT:
            self.add(
                "attempt", f"must be from 1 to {MAX_ATTEMPT} (attempts count from 1), got {value}"
            )
        return value

    def seconds(self, field: str, duration: duration_pb2.Duration) -> float:
        """A Duration as float seconds; must be valid and not negative."""
        seconds, nanos = duration.seconds, duration.nanos
        if abs(seconds) > MAX_DURATION_SECONDS or abs(nanos) >= 1_000_000_000:
            self.add(field, "out of range for a google.protobuf.Duration")
        elif seconds * nanos < 0:
            self.add(field, "seconds and nanos must have the same sign")
        elif seconds < 0 or nanos < 0:
            self.add(field, "must not be negative")
        return seconds + nanos / 1e9

    def enum(self, field: str, number: int, members: dict[int, E]) -> E | None:
        """The domain member for a wire number; None (and a violation) when unknown."""
        if number in members:
            return members[number]
        self.add(field, f"unknown enum value {number}")
        return None


def failure_report_from_proto(request: pb.ReportFailureRequest) -> FailureReport:
    """The domain report; raises InvalidRequest naming every bad field."""
    check = Violations()
    report = _failure_report(request, check)
    check.raise_any()
    return report


def failure_reports_from_proto(request: pb.ReportFailuresRequest) -> list[FailureReport]:
    """The domain reports, in order; raises InvalidRequest naming every bad field of all."""
    check = Violations()
    count = len(request.failures)
    if not 1 <= count <= MAX_BATCH:
        check.add("failures", f"must hold 1 to {MAX_BATCH} failures, got {count}")
        check.raise_any()
    reports = [
        _failure_report(failure, check.within(f"failures[{index}]."))
        for index, failure in enumerate(request.failures)
    ]
    check.raise_any()
    return reports


def _failure_report(request: pb.ReportFailureRequest, check: Violations) -> FailureReport:
    return FailureReport(
        turn_id=check.identifier("turn_id", request.turn_id),
        call_id=check.identifier("call_id", request.call_id),
        tool=check.identifier("tool", request.tool),
        attempt=check.attempt(request.attempt),
        error=tool_failure_from_proto(request.error, check),
        arguments=check.json("arguments", request.arguments) or {},
        elapsed=check.seconds("elapsed", request.elapsed),
    )


def tool_failure_from_proto(error: pb.ToolError, check: Violations) -> ToolFailure:
    code = None
    if error.code != pb.ERROR_CODE_UNSPECIFIED:
        code = check.enum("error.code", error.code, CODES)
    if error.http_status and not 100 <= error.http_status <= 599:
        check.add(
            "error.http_status", f"must be an HTTP status from 100 to 599, got {error.http_status}"
        )
    hint = error.WhichOneof("retry_hint")
    return ToolFailure(
        code=code,
        http_status=error.http_status or None,
        exception_type=check.text("error.exception_type", error.exception_type, MAX_ID_LENGTH),
        message=check.text("error.message", error.message),
        retry_after=check.seconds("error.retry_after", error.retry_after)
        if hint == "retry_after"
        else None,
        retry_at=check.moment("error.retry_at", error.retry_at) if hint == "retry_at" else None,
        partial_result=check.json("error.partial_result", error.partial_result)
        if error.HasField("partial_result")
        else None,
    )


def outcome_report_from_proto(request: pb.ReportOutcomeRequest) -> OutcomeReport:
    """The domain outcome; raises InvalidRequest naming every bad field."""
    check = Violations()
    outcome = None
    if request.outcome == pb.OUTCOME_UNSPECIFIED:
        check.add("outcome", "required: OUTCOME_SUCCESS or OUTCOME_FAILURE")
    else:
        outcome = check.enum("outcome", request.outcome, OUTCOMES)
    report = OutcomeReport(
        turn_id=check.identifier("turn_id", request.turn_id),
        call_id=check.identifier("call_id", request.call_id),
        tool=check.identifier("tool", request.tool),
        attempt=check.attempt(request.attempt),
        outcome=outcome or Outcome.SUCCESS,
        duration=check.seconds("duration", request.duration),
        decision_id=check.text("decision_id", request.decision_id, MAX_ID_LENGTH),
    )
    check.raise_any()
    return report


@dataclass(frozen=True)
class TracePage:
    """Which page of a turn's trace a GetTurnTrace asks for."""

    turn_id: str
    after: int
    """The sequence the page starts after (0: the first page)."""
    size: int


def trace_page_from_proto(request: pb.GetTurnTraceRequest) -> TracePage:
    check = Violations()
    turn_id = check.identifier("turn_id", request.turn_id)
    if request.page_size < 0:
        check.add("page_size", f"must not be negative, got {request.page_size}")
    after = 0
    token = request.page_token
    if token:
        if len(token) <= MAX_PAGE_TOKEN_LENGTH and token.isascii() and token.isdigit():
            after = check.sequence("page_token", int(token))
        else:  # never quoted: a token may be megabytes long
            check.add("page_token", "not a next_page_token from a previous GetTurnTrace")
    check.raise_any()
    return TracePage(turn_id, after, min(request.page_size or DEFAULT_PAGE_SIZE, DEFAULT_PAGE_SIZE))


MIN_BATCH_INTERVAL, MAX_BATCH_INTERVAL = 0.001, 10.0
"""The batch_interval a watcher may ask for, in seconds."""


@dataclass(frozen=True)
class WatchSelection:
    """Which events a WatchTrace streams."""

    turn_id: str
    """One turn's events; empty for every turn."""
    after: int
    """Replay recorded events after this sequence before following."""
    replay: bool
    batch_interval: float = 0.0
    """Seconds over which live events are coalesced into one response; 0 for none."""


def watch_from_proto(request: pb.WatchTraceRequest) -> WatchSelection:
    check = Violations()
    if request.turn_id or request.include_history:
        check.identifier("turn_id", request.turn_id)
    check.sequence("after_sequence", request.after_sequence)
    interval = 0.0
    if request.HasField("batch_interval"):
        interval = check.seconds("batch_interval", request.batch_interval)
        if not MIN_BATCH_INTERVAL <= interval <= MAX_BATCH_INTERVAL:
            check.add("batch_interval", "must be from 1 ms to 10 s (leave it unset for none)")
    check.raise_any()
    replay = request.include_history or request.after_sequence > 0
    return WatchSelection(request.turn_id, request.after_sequence, replay, interval)


def value_to_proto(value: JSONValue) -> struct_pb2.Value:
    message = struct_pb2.Value()
    json_format.ParseDict(value, message)
    return message


class NotJSON(ValueError):
    """A Struct or Value plain JSON cannot hold, or one beyond errord's bounds."""


class _JSONBudget:
    """What is left of MAX_JSON_MEMBERS while one value is converted."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_JSON_MEMBERS

    def spend(self, members: int, depth: int) -> None:
        self.left -= members
        if self.left < 0:
            raise NotJSON(f"at most {MAX_JSON_MEMBERS} object members and array items in all")
        if depth > MAX_JSON_DEPTH:
            raise NotJSON(f"at most {MAX_JSON_DEPTH} levels of nested objects and arrays")


def plain_struct(
    message: struct_pb2.Struct, budget: _JSONBudget | None = None, depth: int = 1
) -> dict[str, JSONValue]:
    """A Struct as a dict, as json_format.MessageToDict gives it, in a fraction of the time;
    NotJSON beyond MAX_JSON_DEPTH levels and MAX_JSON_MEMBERS members."""
    budget = budget or _JSONBudget()
    fields = message.fields
    budget.spend(len(fields), depth)
    return {key: plain_value(value, budget, depth) for key, value in fields.items()}


def plain_value(
    message: struct_pb2.Value, budget: _JSONBudget | None = None, depth: int = 0
) -> JSONValue:
    """A Value as plain JSON; NotJSON for NaN and Infinity, which JSON cannot hold, and
    beyond MAX_JSON_DEPTH levels and MAX_JSON_MEMBERS members."""
    kind = message.WhichOneof("kind")
    if kind == "struct_value":
        return plain_struct(message.struct_value, budget, depth + 1)
    if kind == "list_value":
        budget = budget or _JSONBudget()
        items = message.list_value.values
        budget.spend(len(items), depth + 1)
        return [plain_value(item, budget, depth + 1) for item in items]
    if kind == "number_value":
        number = message.number_value
        if not math.isfinite(number):
            raise NotJSON("numbers must be finite (NaN and Infinity are not JSON)")
        return number
    if kind == "string_value":
        return message.string_value
    if kind == "bool_value":
        return message.bool_value
    return None


def duration(seconds: float) -> duration_pb2.Duration:
    exact = timedelta(seconds=seconds)  # to the microsecond, as Duration.FromTimedelta
    whole = exact.days * 86_400 + exact.seconds
    return duration_pb2.Duration(seconds=whole, nanos=exact.microseconds * 1000)


def timestamp(moment: datetime) -> timestamp_pb2.Timestamp:
    since = moment - EPOCH
    whole = since.days * 86_400 + since.seconds
    return timestamp_pb2.Timestamp(seconds=whole, nanos=since.microseconds * 1000)


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


@dataclass(frozen=True)
class Reconciling:
    turn_id: str
    calls: list[ToolCall]
    held: list[HeldResult]


def reconciling_from_proto(request: pb.ReconcileResultsRequest) -> Reconciling:
    """The calls and held results; raises InvalidRequest naming every bad field."""
    check = Violations()
    turn_id = check.identifier("turn_id", request.turn_id)
    if not 1 <= len(request.calls) <= MAX_CALLS:
        check.add("calls", f"must hold 1 to {MAX_CALLS} tool calls, got {len(request.calls)}")
    if len(request.results) > MAX_CALLS:
        check.add("results", f"at most {MAX_CALLS} results, got {len(request.results)}")
    check.raise_any()
    first_use: dict[str, int] = {}
    calls = []
    for index, call in enumerate(request.calls):
        field = f"calls[{index}]."
        call_id = check.identifier(field + "call_id", call.call_id)
        if call_id in first_use:
            check.add(field + "call_id", f"repeats calls[{first_use[call_id]}].call_id")
        first_use.setdefault(call_id, index)
        calls.append(ToolCall(call_id, check.identifier(field + "tool", call.tool)))
    held = [
        HeldResult(
            check.text(f"results[{index}].call_id", result.call_id, MAX_ID_LENGTH),
            check.text(f"results[{index}].content", result.content, MAX_JSON_BYTES),
            result.is_error,
        )
        for index, result in enumerate(request.results)
    ]
    check.raise_any()
    return Reconciling(turn_id, calls, held)


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


@dataclass(frozen=True)
class Beginning:
    turn_id: str
    deadline: datetime | None
    retry_budget: RetryBudget | None
    plan: tuple[PlannedCall, ...] = ()


def beginning_from_proto(request: pb.BeginTurnRequest) -> Beginning:
    """The turn to begin; raises InvalidRequest naming every bad field."""
    check = Violations()
    turn_id = check.identifier("turn_id", request.turn_id)
    deadline = check.moment("deadline", request.deadline) if request.HasField("deadline") else None
    budget = None
    if request.HasField("retry_budget"):
        asked = request.retry_budget
        try:
            budget = RetryBudget(
                max_retries=asked.max_retries if asked.HasField("max_retries") else None,
                max_share=asked.max_share if asked.HasField("max_share") else None,
            )
        except ValueError as error:  # "attribute must ...", as RetryBudget checks it
            attribute, _, problem = str(error).partition(" ")
            check.add(f"retry_budget.{attribute}", problem)
    plan = _plan(request, check)
    check.raise_any()
    return Beginning(turn_id, deadline, budget, plan)


def _plan(request: pb.BeginTurnRequest, check: Violations) -> tuple[PlannedCall, ...]:
    if len(request.plan) > MAX_CALLS:
        check.add("plan", f"at most {MAX_CALLS} calls, got {len(request.plan)}")
        return ()
    plan = []
    for index, call in enumerate(request.plan):
        within = check.within(f"plan[{index}].")
        if len(call.depends_on) > MAX_CALLS:
            within.add("depends_on", f"at most {MAX_CALLS} call ids, got {len(call.depends_on)}")
        else:
            for position, needed in enumerate(call.depends_on):
                within.identifier(f"depends_on[{position}]", needed)
        plan.append(
            PlannedCall(
                call_id=within.identifier("call_id", call.call_id),
                tool=within.identifier("tool", call.tool),
                depends_on=tuple(call.depends_on),
                optional=call.optional if call.HasField("optional") else None,
                default=DefaultValue(within.json("default_value", call.default_value))
                if call.HasField("default_value")
                else None,
                arguments=within.json("arguments", call.arguments) or {},
            )
        )
    if not check.found:  # the graph's problems, once every call is well formed
        for problem in plan_problems(plan):
            check.add(f"plan[{problem.index}].{problem.field}", problem.description)
    return tuple(plan)


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


@dataclass(frozen=True)
class CallToCheck:
    tool: str
    arguments: dict[str, JSONValue]


def call_to_check_from_proto(request: pb.ValidateCallRequest) -> CallToCheck:
    check = Violations()
    tool = check.identifier("tool", request.tool)
    arguments = check.json("arguments", request.arguments) or {}
    check.raise_any()
    return CallToCheck(tool, arguments)


def call_check_to_proto(checked: CallCheck) -> pb.ValidateCallResponse:
    message = pb.ValidateCallResponse(
        valid=checked.valid, checked=checked.checked, llm_message=checked.llm_message
    )
    if checked.correction is not None:
        message.correction.CopyFrom(correction_to_proto(checked.correction))
        message.problems.extend(message.correction.problems)
    return message


def turn_id_from_proto(request: pb.EndTurnRequest) -> str:
    check = Violations()
    turn_id = check.identifier("turn_id", request.turn_id)
    check.raise_any()
    return turn_id
