"""Requests in: each request message decoded into the domain, every field validated.

Each ``*_from_proto`` raises InvalidRequest naming every bad field of its request
(errord.wire.bounds); the bytes themselves were decoded by errord.wire.decoding.
A failure report, which every decision starts from, is first converted by quick
checks that name nothing (``plain_failure_report``), and by the careful ones only
when a field needs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import TypeVar

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import struct_pb2

from errord.decide.manifest import MAX_COOLDOWN
from errord.decide.model import (
    DefaultValue,
    ErrorCode,
    FailureReport,
    JSONValue,
    Outcome,
    OutcomeReport,
    PlannedCall,
    ReportKey,
    RetryBudget,
    ToolDeclaration,
    ToolFailure,
)
from errord.decide.policy.plan import plan_problems
from errord.decide.texts.tool_results import HeldResult, ToolCall
from errord.wire.bounds import (
    DEFAULT_PAGE_SIZE,
    MAX_BATCH,
    MAX_CALLS,
    MAX_ID_LENGTH,
    MAX_JSON_BYTES,
    MAX_PAGE_TOKEN_LENGTH,
    NotPlain,
    Violations,
    plain_attempt,
    plain_identifier,
    plain_json,
    plain_moment,
    plain_seconds,
    plain_text,
)

E = TypeVar("E", bound=Enum)


def wire_enum(enum: type[E], wire: Callable[[str], int], prefix: str) -> dict[int, E]:
    """Map wire enum numbers to domain members that share their names."""
    return {wire(f"{prefix}_{member.value}"): member for member in enum}


CODES = wire_enum(ErrorCode, pb.ErrorCode.Value, "ERROR_CODE")
OUTCOMES = wire_enum(Outcome, pb.Outcome.Value, "OUTCOME")


def failure_report_from_proto(request: pb.ReportFailureRequest) -> FailureReport:
    """The domain report; raises InvalidRequest naming every bad field."""
    try:
        return plain_failure_report(request)
    except NotPlain:
        check = Violations()
        report = _failure_report(request, check)
        check.raise_any()
        return report  # the quick checks were wary of a value that is valid


def failure_reports_from_proto(request: pb.ReportFailuresRequest) -> list[FailureReport]:
    """The domain reports, in order; raises InvalidRequest naming every bad field of all."""
    check = Violations()
    count = len(request.failures)
    if not 1 <= count <= MAX_BATCH:
        check.add("failures", f"must hold 1 to {MAX_BATCH} failures, got {count}")
        check.raise_any()
    try:
        return [plain_failure_report(failure) for failure in request.failures]
    except NotPlain:
        pass
    reports = [
        _failure_report(failure, check.within(f"failures[{index}]."))
        for index, failure in enumerate(request.failures)
    ]
    check.raise_any()
    return reports


def plain_failure_report(request: pb.ReportFailureRequest) -> FailureReport:
    """The report, when every field of ``request`` is plainly within bounds, as nearly all
    are; NotPlain at the first that needs ``_failure_report``'s checks. Both give the same
    report for any request this passes (tests/unit/test_wire_requests.py)."""
    user_id, session_id, scope = request.user_id, request.session_id, request.scope
    return FailureReport(
        turn_id=plain_identifier(request.turn_id),
        call_id=plain_identifier(request.call_id),
        tool=plain_identifier(request.tool),
        attempt=plain_attempt(request.attempt),
        error=plain_tool_failure(request.error),
        arguments=plain_json(request.arguments) if request.HasField("arguments") else {},
        elapsed=plain_seconds(request.elapsed) if request.HasField("elapsed") else 0.0,
        user_id=plain_identifier(user_id) if user_id else "",
        session_id=plain_identifier(session_id) if session_id else "",
        declaration=plain_declaration(request.tool_declaration)
        if request.HasField("tool_declaration")
        else None,
        scope=plain_identifier(scope) if scope else "",
    )


def plain_declaration(declaration: pb.ToolDeclaration) -> ToolDeclaration:
    """``declaration`` as ``declaration_from_proto`` gives it, by quick checks (NotPlain)."""
    timeout = None
    if declaration.HasField("timeout"):
        timeout = plain_seconds(declaration.timeout)
        if timeout <= 0:
            raise NotPlain
    return ToolDeclaration(
        parameters=plain_struct_json(declaration.parameters)
        if declaration.HasField("parameters")
        else None,
        timeout=timeout,
    )


def plain_struct_json(struct: struct_pb2.Struct) -> dict[str, JSONValue]:
    """A Struct as a plain JSON object (NotPlain as ``plain_json``)."""
    value = plain_json(struct)
    assert isinstance(value, dict)  # a Struct is an object
    return value


def plain_tool_failure(error: pb.ToolError) -> ToolFailure:
    """``error`` as ``tool_failure_from_proto`` gives it, by quick checks (NotPlain)."""
    number, status = error.code, error.http_status
    code = CODES.get(number)
    if (number and code is None) or (status and not 100 <= status <= 599):
        raise NotPlain
    hint = error.WhichOneof("retry_hint")
    return ToolFailure(
        code=code,
        http_status=status or None,
        exception_type=plain_text(error.exception_type, MAX_ID_LENGTH),
        message=plain_text(error.message),
        retry_after=plain_seconds(error.retry_after) if hint == "retry_after" else None,
        retry_at=plain_moment(error.retry_at) if hint == "retry_at" else None,
        partial_result=plain_json(error.partial_result)
        if error.HasField("partial_result")
        else None,
        api_message=plain_text(error.api_message),
        api_parameter=plain_text(error.api_parameter, MAX_ID_LENGTH),
        api_code=plain_text(error.api_code, MAX_ID_LENGTH),
    )


def _failure_report(request: pb.ReportFailureRequest, check: Violations) -> FailureReport:
    return FailureReport(
        turn_id=check.identifier("turn_id", request.turn_id),
        call_id=check.identifier("call_id", request.call_id),
        tool=check.identifier("tool", request.tool),
        attempt=check.attempt(request.attempt),
        error=tool_failure_from_proto(request.error, check),
        arguments=check.json("arguments", request.arguments) or {},
        elapsed=check.seconds("elapsed", request.elapsed),
        user_id=optional_identifier(check, "user_id", request.user_id),
        session_id=optional_identifier(check, "session_id", request.session_id),
        declaration=declaration_from_proto(request.tool_declaration, check)
        if request.HasField("tool_declaration")
        else None,
        scope=optional_identifier(check, "scope", request.scope),
    )


def declaration_from_proto(declaration: pb.ToolDeclaration, check: Violations) -> ToolDeclaration:
    timeout = None
    if declaration.HasField("timeout"):
        timeout = check.seconds("tool_declaration.timeout", declaration.timeout)
        if timeout is not None and timeout <= 0:
            check.add("tool_declaration.timeout", "must be positive")
    parameters = None
    if declaration.HasField("parameters"):
        parameters = check.json("tool_declaration.parameters", declaration.parameters)
    return ToolDeclaration(
        parameters=parameters if isinstance(parameters, dict) else None, timeout=timeout
    )


def optional_identifier(check: Violations, field: str, value: str) -> str:
    """An identifier that may be left empty; when given, bounded as the required ones."""
    return check.identifier(field, value) if value else ""


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
        api_message=check.text("error.api_message", error.api_message),
        api_parameter=check.text("error.api_parameter", error.api_parameter, MAX_ID_LENGTH),
        api_code=check.text("error.api_code", error.api_code, MAX_ID_LENGTH),
    )


@dataclass(frozen=True)
class AttemptToAdmit:
    """AdmitCall's request: the attempt about to run, and its input."""

    key: ReportKey
    arguments: dict[str, JSONValue]
    scope: str = ""


def admission_from_proto(request: pb.AdmitCallRequest) -> AttemptToAdmit:
    """The attempt to admit; raises InvalidRequest naming every bad field."""
    check = Violations()
    key = ReportKey(
        check.identifier("turn_id", request.turn_id),
        check.identifier("call_id", request.call_id),
        check.identifier("tool", request.tool),
        check.attempt(request.attempt),
    )
    arguments = check.json("arguments", request.arguments) or {}
    scope = optional_identifier(check, "scope", request.scope)
    check.raise_any()
    return AttemptToAdmit(key, arguments, scope)


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
        user_id=optional_identifier(check, "user_id", request.user_id),
        session_id=optional_identifier(check, "session_id", request.session_id),
        scope=optional_identifier(check, "scope", request.scope),
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


def turn_id_from_proto(request: pb.EndTurnRequest) -> str:
    check = Violations()
    turn_id = check.identifier("turn_id", request.turn_id)
    check.raise_any()
    return turn_id


# OperatorService's requests.

MAX_FORCED_OPEN_SECONDS = MAX_COOLDOWN
"""The longest timed forced opening (a week); longer ones are until reset."""
MAX_BY_LENGTH = 512
"""Characters of the ``by`` an operator gives a reset, a forced opening or a reload."""


def reload_by_from_proto(request: pb.ReloadManifestsRequest) -> str:
    """Who asked for the reload, as the request says."""
    check = Violations()
    by = check.text("by", request.by, MAX_BY_LENGTH)
    check.raise_any()
    return by


def tool_from_proto(tool: str, scope: str = "") -> tuple[str, str]:
    """The tool an operator request names, and its scope (empty: none)."""
    check = Violations()
    tool = check.identifier("tool", tool)
    scope = optional_identifier(check, "scope", scope)
    check.raise_any()
    return tool, scope


@dataclass(frozen=True)
class BreakerAction:
    """A reset, or a forced opening of ``seconds`` (0: until reset), of the breaker of
    ``tool`` in ``scope``."""

    tool: str
    by: str
    seconds: float = 0.0
    scope: str = ""


def reset_from_proto(request: pb.ResetBreakerRequest) -> BreakerAction:
    check = Violations()
    tool = check.identifier("tool", request.tool)
    by = check.text("by", request.by, MAX_BY_LENGTH)
    scope = optional_identifier(check, "scope", request.scope)
    check.raise_any()
    return BreakerAction(tool, by, scope=scope)


def forced_opening_from_proto(request: pb.ForceOpenBreakerRequest) -> BreakerAction:
    check = Violations()
    tool = check.identifier("tool", request.tool)
    scope = optional_identifier(check, "scope", request.scope)
    by = check.text("by", request.by, MAX_BY_LENGTH)
    problems_before = len(check.found)
    seconds = check.seconds("duration", request.duration)
    if len(check.found) == problems_before and seconds > MAX_FORCED_OPEN_SECONDS:
        check.add(
            "duration",
            f"at most {MAX_FORCED_OPEN_SECONDS:g} s (a week); leave it unset to keep "
            "the breaker open until ResetBreaker",
        )
    check.raise_any()
    return BreakerAction(tool, by, seconds, scope)


@dataclass(frozen=True)
class EpisodeQuery:
    """What RecallEpisodes asks memory: one tool's errors, or the one ``message`` is."""

    tool: str
    message: str | None
    code: ErrorCode | None
    scope: str = ""


def episode_query_from_proto(request: pb.RecallEpisodesRequest) -> EpisodeQuery:
    check = Violations()
    tool = check.identifier("tool", request.tool)
    scope = optional_identifier(check, "scope", request.scope)
    message = check.text("message", request.message) if request.message else None
    code = None
    if request.code != pb.ERROR_CODE_UNSPECIFIED:
        code = check.enum("code", request.code, CODES)
    check.raise_any()
    return EpisodeQuery(tool, message, code, scope)
