"""The requests the clients send, built from plain Python values: a mapping becomes a
``google.protobuf.Struct``, seconds a ``google.protobuf.Duration``, a datetime a
``Timestamp``.

``failure_request`` builds one failure for ``report_failures`` from the arguments
``report_failure`` takes; ``planned_call`` one call of a turn's plan for ``begin_turn``.
The other builders are the clients' own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from google.protobuf import duration_pb2, json_format, struct_pb2

from errord_client.v1 import errord_pb2 as pb


def begin_turn_request(
    turn_id: str,
    deadline: datetime | None,
    max_retries: int | None,
    max_retry_share: float | None,
    plan: Sequence[pb.PlannedCall],
) -> pb.BeginTurnRequest:
    """BeginTurn's request; the retry budget is sent only when one of its limits is given."""
    request = pb.BeginTurnRequest(turn_id=turn_id, plan=plan)
    if deadline is not None:
        request.deadline.FromDatetime(deadline)
    if max_retries is not None or max_retry_share is not None:
        request.retry_budget.SetInParent()
        if max_retries is not None:
            request.retry_budget.max_retries = max_retries
        if max_retry_share is not None:
            request.retry_budget.max_share = max_retry_share
    return request


_NO_DEFAULT: Any = object()


def planned_call(
    call_id: str,
    tool: str,
    *,
    depends_on: Sequence[str] = (),
    optional: bool | None = None,
    default: Any = _NO_DEFAULT,
    arguments: Mapping[str, Any] | None = None,
) -> pb.PlannedCall:
    """One call of a turn's plan for ``begin_turn``: the calls whose results it needs,
    whether the turn can go on without it (None: as its tool's manifest says), and its
    default result (any JSON value, None included; not given: the manifest's)."""
    call = pb.PlannedCall(call_id=call_id, tool=tool, depends_on=depends_on)
    if optional is not None:
        call.optional = optional
    if default is not _NO_DEFAULT:
        json_format.ParseDict(default, call.default_value)
    if arguments is not None:
        call.arguments.CopyFrom(struct_of(arguments))
    return call


def failure_request(
    *,
    turn_id: str,
    call_id: str,
    tool: str,
    attempt: int,
    error: pb.ToolError | None = None,
    code: pb.ErrorCode | str = pb.ERROR_CODE_UNSPECIFIED,
    message: str = "",
    http_status: int = 0,
    exception_type: str = "",
    retry_after: float | None = None,
    arguments: Mapping[str, Any] | None = None,
    elapsed: float | None = None,
    scope: str = "",
) -> pb.ReportFailureRequest:
    """One failure for ``report_failures``, from the arguments report_failure takes."""
    return pb.ReportFailureRequest(
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=attempt,
        error=_tool_error(error, code, message, http_status, exception_type, retry_after),
        arguments=None if arguments is None else struct_of(arguments),
        elapsed=as_duration(elapsed),
        scope=scope,
    )


def _tool_error(
    error: pb.ToolError | None,
    code: pb.ErrorCode | str,
    message: str,
    http_status: int,
    exception_type: str,
    retry_after: float | None,
) -> pb.ToolError:
    """Build the ToolError from the convenience fields, or pass ``error`` through."""
    fields = pb.ToolError(
        code=code,
        message=message,
        http_status=http_status,
        exception_type=exception_type,
        retry_after=as_duration(retry_after),
    )
    if error is None:
        return fields
    if fields.ListFields():
        given = ", ".join(field.name for field, _ in fields.ListFields())
        raise ValueError(f"report_failure: pass error= or the error fields, not both (got {given})")
    return error


def admission_request(
    turn_id: str,
    call_id: str,
    tool: str,
    attempt: int,
    arguments: Mapping[str, Any] | None,
    scope: str = "",
) -> pb.AdmitCallRequest:
    """AdmitCall's request."""
    return pb.AdmitCallRequest(
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=attempt,
        arguments=None if arguments is None else struct_of(arguments),
        scope=scope,
    )


def outcome_request(
    turn_id: str,
    call_id: str,
    tool: str,
    attempt: int,
    success: bool,
    duration: float | None,
    decision_id: str,
    scope: str = "",
) -> pb.ReportOutcomeRequest:
    """ReportOutcome's request."""
    return pb.ReportOutcomeRequest(
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=attempt,
        outcome=pb.OUTCOME_SUCCESS if success else pb.OUTCOME_FAILURE,
        duration=as_duration(duration),
        decision_id=decision_id,
        scope=scope,
    )


def watch_trace_request(
    turn_id: str, include_history: bool, after_sequence: int, batch_interval: float | None
) -> pb.WatchTraceRequest:
    """WatchTrace's request; ``batch_interval`` in seconds."""
    request = pb.WatchTraceRequest(
        turn_id=turn_id, include_history=include_history, after_sequence=after_sequence
    )
    if batch_interval is not None:
        request.batch_interval.FromNanoseconds(round(batch_interval * 1e9))
    return request


def struct_of(mapping: Mapping[str, Any]) -> struct_pb2.Struct:
    """A JSON-like mapping as a Struct; raises ValueError for values JSON cannot hold."""
    struct = struct_pb2.Struct()
    struct.update(mapping)
    return struct


def as_duration(seconds: float | None) -> duration_pb2.Duration | None:
    """Seconds as a Duration, to the nanosecond; None stays unset."""
    if seconds is None:
        return None
    duration = duration_pb2.Duration()
    duration.FromNanoseconds(round(seconds * 1_000_000_000))
    return duration
