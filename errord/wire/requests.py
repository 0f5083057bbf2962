"""Reports in: ReportFailure(s), ReportOutcome and AdmitCall decoded into the domain,
every field validated.

Each ``*_from_proto`` raises InvalidRequest naming every bad field of its request
(errord.wire.bounds); the bytes themselves were decoded by errord.wire.decoding.
A failure report, which every decision starts from, is first converted by quick
checks that name nothing (``plain_failure_report``), and by the careful ones only
when a field needs them. A turn's other requests are errord.wire.turn_requests',
OperatorService's errord.wire.operator_requests'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import struct_pb2

from errord.decide.model import (
    ErrorCode,
    FailureReport,
    JSONValue,
    Outcome,
    OutcomeReport,
    ReportKey,
    ToolDeclaration,
    ToolFailure,
)
from errord.wire.bounds import (
    MAX_BATCH,
    MAX_ID_LENGTH,
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
