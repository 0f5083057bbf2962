"""Typed sync and async clients for errord.v1.ErrorHandlerService.

``ErrordClient`` (blocking) and ``AsyncErrordClient`` (``grpc.aio``) have the
same methods. They turn plain Python values into wire messages (a mapping into
``google.protobuf.Struct``, seconds into ``google.protobuf.Duration``) and
return the generated response messages unchanged.

Failed calls raise ``grpc.RpcError`` (``grpc.aio.AioRpcError`` from the async
client): ``INVALID_ARGUMENT`` for a malformed request, whose fields
``field_violations`` names; ``FAILED_PRECONDITION`` for a report to a turn
already ended; ``UNAUTHENTICATED`` without the daemon's bearer ``token``;
``UNAVAILABLE`` when no daemon listens; ``DEADLINE_EXCEEDED`` when
``timeout`` passes.

Executors that admit calls themselves keep each tool's timeout and circuit
breaker from ``watch_tools`` and, when a breaker is not closed, ask
``admit_call`` before an attempt runs.
"""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

import grpc
import grpc.aio
from google.protobuf import duration_pb2, json_format, struct_pb2

from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

DEFAULT_TARGET = "127.0.0.1:50051"
"""Where errord listens unless configured otherwise; ``unix:/path`` works too."""

_STATUS_DETAILS_KEY = "grpc-status-details-bin"

_Metadata = tuple[tuple[str, str], ...] | None
"""Metadata sent with every call: the bearer token, when one was given."""

_Request = TypeVar("_Request", contravariant=True)
_Response = TypeVar("_Response", covariant=True)


class _Unary(Protocol[_Request, _Response]):
    """A blocking unary callable of the generated stub."""

    def __call__(
        self, request: _Request, *, timeout: float | None = None, metadata: _Metadata = None
    ) -> _Response: ...


class _AsyncUnary(Protocol[_Request, _Response]):
    """A ``grpc.aio`` unary callable of the generated stub."""

    def __call__(
        self, request: _Request, *, timeout: float | None = None, metadata: _Metadata = None
    ) -> Awaitable[_Response]: ...


class _StreamCall(Protocol[_Response]):
    """A blocking server-streaming call: iterate for responses, cancel to stop."""

    def __iter__(self) -> Iterator[_Response]: ...

    def cancel(self) -> bool: ...


class _AsyncStreamCall(Protocol[_Response]):
    """A ``grpc.aio`` server-streaming call: iterate for responses, cancel to stop."""

    def __aiter__(self) -> AsyncIterator[_Response]: ...

    def cancel(self) -> bool: ...


class _SyncStub(Protocol):
    """The generated ErrorHandlerServiceStub over a blocking channel, typed."""

    ReportFailure: _Unary[pb.ReportFailureRequest, pb.ReportFailureResponse]
    ReportFailures: _Unary[pb.ReportFailuresRequest, pb.ReportFailuresResponse]
    ReportOutcome: _Unary[pb.ReportOutcomeRequest, pb.ReportOutcomeResponse]
    BeginTurn: _Unary[pb.BeginTurnRequest, pb.BeginTurnResponse]
    EndTurn: _Unary[pb.EndTurnRequest, pb.EndTurnResponse]
    ValidateCall: _Unary[pb.ValidateCallRequest, pb.ValidateCallResponse]
    ReconcileResults: _Unary[pb.ReconcileResultsRequest, pb.ReconcileResultsResponse]
    GetTurnTrace: _Unary[pb.GetTurnTraceRequest, pb.GetTurnTraceResponse]
    WatchTrace: _Unary[pb.WatchTraceRequest, _StreamCall[pb.WatchTraceResponse]]
    AdmitCall: _Unary[pb.AdmitCallRequest, pb.AdmitCallResponse]
    WatchTools: _Unary[pb.WatchToolsRequest, _StreamCall[pb.WatchToolsResponse]]


class _AsyncStub(Protocol):
    """The generated ErrorHandlerServiceStub over a ``grpc.aio`` channel, typed."""

    ReportFailure: _AsyncUnary[pb.ReportFailureRequest, pb.ReportFailureResponse]
    ReportFailures: _AsyncUnary[pb.ReportFailuresRequest, pb.ReportFailuresResponse]
    ReportOutcome: _AsyncUnary[pb.ReportOutcomeRequest, pb.ReportOutcomeResponse]
    BeginTurn: _AsyncUnary[pb.BeginTurnRequest, pb.BeginTurnResponse]
    EndTurn: _AsyncUnary[pb.EndTurnRequest, pb.EndTurnResponse]
    ValidateCall: _AsyncUnary[pb.ValidateCallRequest, pb.ValidateCallResponse]
    ReconcileResults: _AsyncUnary[pb.ReconcileResultsRequest, pb.ReconcileResultsResponse]
    GetTurnTrace: _AsyncUnary[pb.GetTurnTraceRequest, pb.GetTurnTraceResponse]
    WatchTrace: _Unary[pb.WatchTraceRequest, _AsyncStreamCall[pb.WatchTraceResponse]]
    AdmitCall: _AsyncUnary[pb.AdmitCallRequest, pb.AdmitCallResponse]
    WatchTools: _Unary[pb.WatchToolsRequest, _AsyncStreamCall[pb.WatchToolsResponse]]


class ErrordClient:
    """A blocking errord client.

    It opens a channel to ``target`` (``host:port`` or ``unix:/path``),
    plaintext unless TLS ``credentials`` are given (``grpc.ssl_channel_credentials``),
    and closes it on ``close()`` or when its ``with`` block ends. A ``channel``
    passed in is used instead of ``target`` and never closed by the client: its
    owner closes it. With ``token`` every call sends ``authorization: Bearer
    <token>``, which a daemon with ``token_file`` set requires.
    """

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        *,
        channel: grpc.Channel | None = None,
        token: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        _check_channel_options(channel, credentials)
        self._metadata = _bearer(token)
        self._owns_channel = channel is None
        if channel is None:
            channel = (
                grpc.insecure_channel(target)
                if credentials is None
                else grpc.secure_channel(target, credentials)
            )
        self._channel = channel
        self._stub: _SyncStub = errord_pb2_grpc.ErrorHandlerServiceStub(self._channel)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel if this client opened it."""
        if self._owns_channel:
            self._channel.close()

    def report_failure(
        self,
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
        timeout: float | None = None,
    ) -> pb.ReportFailureResponse:
        """Report one failed attempt and return errord's recovery decision.

        Describe the failure either with a ready ``error`` or with the fields
        ``code``, ``message``, ``http_status``, ``exception_type`` and
        ``retry_after`` (seconds), not both. ``arguments`` is the tool input;
        ``elapsed`` how many seconds the attempt ran; ``timeout`` the RPC
        deadline in seconds. Raises ValueError when both forms are given.
        """
        tool_error = _tool_error(error, code, message, http_status, exception_type, retry_after)
        request = _failure_request(
            turn_id, call_id, tool, attempt, tool_error, arguments, elapsed, scope
        )
        return self._stub.ReportFailure(request, timeout=timeout, metadata=self._metadata)

    def begin_turn(
        self,
        turn_id: str,
        *,
        deadline: datetime | None = None,
        max_retries: int | None = None,
        max_retry_share: float | None = None,
        plan: Sequence[pb.PlannedCall] = (),
        timeout: float | None = None,
    ) -> pb.BeginTurnResponse:
        """Begin a turn with its deadline (None: errord's default, 300 s), its own retry
        budget (neither given: errord's) and its plan (calls built with ``planned_call``)."""
        request = _begin_turn_request(turn_id, deadline, max_retries, max_retry_share, plan)
        return self._stub.BeginTurn(request, timeout=timeout, metadata=self._metadata)

    def end_turn(self, turn_id: str, *, timeout: float | None = None) -> pb.EndTurnResponse:
        """Close a turn; its summary: each call's final status and a notice for the user."""
        return self._stub.EndTurn(
            pb.EndTurnRequest(turn_id=turn_id), timeout=timeout, metadata=self._metadata
        )

    def validate_call(
        self, tool: str, arguments: Mapping[str, Any], *, timeout: float | None = None
    ) -> pb.ValidateCallResponse:
        """Check a call's arguments against the tool's JSON Schema before running it; for an
        invalid call, send ``llm_message`` to the model instead."""
        request = pb.ValidateCallRequest(tool=tool, arguments=_struct(arguments))
        return self._stub.ValidateCall(request, timeout=timeout, metadata=self._metadata)

    def reconcile_results(
        self,
        turn_id: str,
        calls: Sequence[pb.ToolCallRef],
        results: Sequence[pb.HeldToolResult] = (),
        *,
        timeout: float | None = None,
    ) -> pb.ReconcileResultsResponse:
        """Exactly one result per tool call of the model's message, in call order (see
        errord_client.results for the shapes model APIs take)."""
        request = pb.ReconcileResultsRequest(turn_id=turn_id, calls=calls, results=results)
        return self._stub.ReconcileResults(request, timeout=timeout, metadata=self._metadata)

    def report_failures(
        self, failures: Sequence[pb.ReportFailureRequest], *, timeout: float | None = None
    ) -> pb.ReportFailuresResponse:
        """Report several failed attempts (a turn's parallel calls, built with
        ``failure_request``) in one call: one decision each, in order, committed together."""
        request = pb.ReportFailuresRequest(failures=failures)
        return self._stub.ReportFailures(request, timeout=timeout, metadata=self._metadata)

    def report_outcome(
        self,
        *,
        turn_id: str,
        call_id: str,
        tool: str,
        attempt: int,
        success: bool,
        duration: float | None = None,
        decision_id: str = "",
        scope: str = "",
        timeout: float | None = None,
    ) -> pb.ReportOutcomeResponse:
        """Record how an attempt ended; ``duration`` in seconds, ``decision_id`` it followed."""
        request = _outcome_request(
            turn_id, call_id, tool, attempt, success, duration, decision_id, scope
        )
        return self._stub.ReportOutcome(request, timeout=timeout, metadata=self._metadata)

    def get_turn_trace(self, turn_id: str, *, timeout: float | None = None) -> list[pb.TraceEvent]:
        """Return every trace event of one turn, oldest first, reading page after page.

        ``timeout`` applies to each page.
        """
        events: list[pb.TraceEvent] = []
        token = ""
        while True:
            request = pb.GetTurnTraceRequest(turn_id=turn_id, page_token=token)
            page = self._stub.GetTurnTrace(request, timeout=timeout, metadata=self._metadata)
            events.extend(page.events)
            token = page.next_page_token
            if not token:
                return events

    def watch_trace(
        self,
        turn_id: str = "",
        *,
        include_history: bool = False,
        after_sequence: int = 0,
        batch_interval: float | None = None,
    ) -> Generator[pb.TraceEvent, None, None]:
        """Yield trace events as errord commits them, until the stream ends.

        Only events of ``turn_id`` when given, that turn's recorded events
        first with ``include_history``; recorded events after ``after_sequence``
        first when given (to resume a watch). The daemon sends what was committed
        while it wrote its last response together; with ``batch_interval``
        (seconds, 0.001 to 10) it sends the events of each interval together
        instead. Either way the events come one by one here. The call starts at
        the first ``next()`` and is cancelled when the iterator is closed.
        """
        request = _watch_request(turn_id, include_history, after_sequence, batch_interval)
        call = self._stub.WatchTrace(request, metadata=self._metadata)
        try:
            for response in call:
                yield from _events(response)
        finally:
            call.cancel()

    def admit_call(
        self,
        *,
        turn_id: str,
        call_id: str,
        tool: str,
        attempt: int,
        arguments: Mapping[str, Any] | None = None,
        scope: str = "",
        timeout: float | None = None,
    ) -> pb.AdmitCallResponse:
        """Ask whether the tool's circuit breaker and rate-limit window let this attempt
        run, before it runs.

        ``admitted``: run it and report how it ended (at once when it is the
        half-open breaker's one ``probe``). Refused: do not run the tool and follow
        ``decision``, errord's recorded decision for the attempt (code
        CIRCUIT_OPEN, or RATE_LIMITED while a rate-limit window holds the tool).
        ``arguments`` (the tool input) is recorded with a refusal; ``timeout`` is the
        RPC deadline in seconds. Asking again for the same attempt gives the same
        answer.
        """
        request = _admission_request(turn_id, call_id, tool, attempt, arguments, scope)
        return self._stub.AdmitCall(request, timeout=timeout, metadata=self._metadata)

    def watch_tools(
        self, *, timeout: float | None = None
    ) -> Generator[pb.WatchToolsResponse, None, None]:
        """Yield every tool's timeout and circuit breaker, then the changes, until the
        stream ends.

        The first response is a ``snapshot`` of every tool errord knows (a manifest
        or a breaker); the next hold the tools whose breaker changed, and after a
        manifest reload a snapshot again, which replaces what was held. ``timeout``
        (seconds) ends the stream with DEADLINE_EXCEEDED; None watches until the
        iterator is closed, which cancels the call. The call starts at the first
        ``next()``.
        """
        call = self._stub.WatchTools(
            pb.WatchToolsRequest(), timeout=timeout, metadata=self._metadata
        )
        try:
            yield from call
        finally:
            call.cancel()


class AsyncErrordClient:
    """An asyncio errord client on ``grpc.aio``, with the methods of ErrordClient.

    It opens a channel to ``target`` (TLS with ``credentials``, else
    plaintext) and closes it on ``await close()`` or when its ``async with``
    block ends; a ``channel`` passed in is never closed by the client. With
    ``token`` every call sends ``authorization: Bearer <token>``.
    """

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        *,
        channel: grpc.aio.Channel | None = None,
        token: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        _check_channel_options(channel, credentials)
        self._metadata = _bearer(token)
        self._owns_channel = channel is None
        if channel is None:
            channel = (
                grpc.aio.insecure_channel(target)
                if credentials is None
                else grpc.aio.secure_channel(target, credentials)
            )
        self._channel = channel
        self._stub: _AsyncStub = errord_pb2_grpc.ErrorHandlerServiceStub(self._channel)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the channel if this client opened it."""
        if self._owns_channel:
            await self._channel.close()

    async def report_failure(
        self,
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
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.ReportFailureResponse:
        """Report one failed attempt; see ErrordClient.report_failure."""
        tool_error = _tool_error(error, code, message, http_status, exception_type, retry_after)
        request = _failure_request(
            turn_id, call_id, tool, attempt, tool_error, arguments, elapsed, scope
        )
        return await self._stub.ReportFailure(request, timeout=timeout, metadata=self._metadata)

    async def begin_turn(
        self,
        turn_id: str,
        *,
        deadline: datetime | None = None,
        max_retries: int | None = None,
        max_retry_share: float | None = None,
        plan: Sequence[pb.PlannedCall] = (),
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.BeginTurnResponse:
        """Begin a turn; see ErrordClient.begin_turn."""
        request = _begin_turn_request(turn_id, deadline, max_retries, max_retry_share, plan)
        return await self._stub.BeginTurn(request, timeout=timeout, metadata=self._metadata)

    async def end_turn(
        self,
        turn_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.EndTurnResponse:
        """Close a turn; see ErrordClient.end_turn."""
        return await self._stub.EndTurn(
            pb.EndTurnRequest(turn_id=turn_id), timeout=timeout, metadata=self._metadata
        )

    async def validate_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.ValidateCallResponse:
        """Check a call's arguments; see ErrordClient.validate_call."""
        request = pb.ValidateCallRequest(tool=tool, arguments=_struct(arguments))
        return await self._stub.ValidateCall(request, timeout=timeout, metadata=self._metadata)

    async def reconcile_results(
        self,
        turn_id: str,
        calls: Sequence[pb.ToolCallRef],
        results: Sequence[pb.HeldToolResult] = (),
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.ReconcileResultsResponse:
        """One result per tool call; see ErrordClient.reconcile_results."""
        request = pb.ReconcileResultsRequest(turn_id=turn_id, calls=calls, results=results)
        return await self._stub.ReconcileResults(request, timeout=timeout, metadata=self._metadata)

    async def report_failures(
        self,
        failures: Sequence[pb.ReportFailureRequest],
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.ReportFailuresResponse:
        """Report several failed attempts in one call; see ErrordClient.report_failures."""
        request = pb.ReportFailuresRequest(failures=failures)
        return await self._stub.ReportFailures(request, timeout=timeout, metadata=self._metadata)

    async def report_outcome(
        self,
        *,
        turn_id: str,
        call_id: str,
        tool: str,
        attempt: int,
        success: bool,
        duration: float | None = None,
        decision_id: str = "",
        scope: str = "",
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.ReportOutcomeResponse:
        """Record how an attempt ended; see ErrordClient.report_outcome."""
        request = _outcome_request(
            turn_id, call_id, tool, attempt, success, duration, decision_id, scope
        )
        return await self._stub.ReportOutcome(request, timeout=timeout, metadata=self._metadata)

    async def get_turn_trace(
        self,
        turn_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> list[pb.TraceEvent]:
        """Return every trace event of one turn, oldest first; see ErrordClient."""
        events: list[pb.TraceEvent] = []
        token = ""
        while True:
            request = pb.GetTurnTraceRequest(turn_id=turn_id, page_token=token)
            page = await self._stub.GetTurnTrace(request, timeout=timeout, metadata=self._metadata)
            events.extend(page.events)
            token = page.next_page_token
            if not token:
                return events

    async def watch_trace(
        self,
        turn_id: str = "",
        *,
        include_history: bool = False,
        after_sequence: int = 0,
        batch_interval: float | None = None,
    ) -> AsyncGenerator[pb.TraceEvent, None]:
        """Yield trace events as errord commits them; see ErrordClient.watch_trace.

        The call is cancelled when the iterator is closed: leave early through
        ``contextlib.aclosing`` rather than leaving that to garbage collection.
        """
        request = _watch_request(turn_id, include_history, after_sequence, batch_interval)
        call = self._stub.WatchTrace(request, metadata=self._metadata)
        try:
            async for response in call:
                for event in _events(response):
                    yield event
        finally:
            call.cancel()

    async def admit_call(
        self,
        *,
        turn_id: str,
        call_id: str,
        tool: str,
        attempt: int,
        arguments: Mapping[str, Any] | None = None,
        scope: str = "",
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.AdmitCallResponse:
        """Ask whether the tool's breaker lets this attempt run; see ErrordClient.admit_call."""
        request = _admission_request(turn_id, call_id, tool, attempt, arguments, scope)
        return await self._stub.AdmitCall(request, timeout=timeout, metadata=self._metadata)

    async def watch_tools(
        self,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> AsyncGenerator[pb.WatchToolsResponse, None]:
        """Yield every tool's timeout and breaker, then the changes; see
        ErrordClient.watch_tools.

        The call is cancelled when the iterator is closed: leave early through
        ``contextlib.aclosing`` rather than leaving that to garbage collection.
        """
        call = self._stub.WatchTools(
            pb.WatchToolsRequest(), timeout=timeout, metadata=self._metadata
        )
        try:
            async for response in call:
                yield response
        finally:
            call.cancel()


def _watch_request(
    turn_id: str, include_history: bool, after_sequence: int, batch_interval: float | None
) -> pb.WatchTraceRequest:
    request = pb.WatchTraceRequest(
        turn_id=turn_id, include_history=include_history, after_sequence=after_sequence
    )
    if batch_interval is not None:
        request.batch_interval.FromNanoseconds(round(batch_interval * 1e9))
    return request


def _events(response: pb.WatchTraceResponse) -> list[pb.TraceEvent]:
    """The response's event, or its events when the watch is batched."""
    return [response.event] if response.HasField("event") else list(response.events)


def _check_channel_options(channel: object, credentials: grpc.ChannelCredentials | None) -> None:
    if channel is not None and credentials is not None:
        raise ValueError("pass credentials= or channel=, not both: a channel has its own")


def _bearer(token: str | None) -> _Metadata:
    """The ``authorization`` metadata errord's ``token_file`` asks for; None without a token."""
    if token is None:
        return None
    if not token or any(not "!" <= character <= "~" for character in token):
        raise ValueError("token must be printable ASCII without spaces, as in errord's token_file")
    return (("authorization", f"Bearer {token}"),)


def field_violations(error: grpc.RpcError) -> list[tuple[str, str]]:
    """Return the ``(field, description)`` pairs of an INVALID_ARGUMENT error.

    errord names each bad request field in a ``google.rpc.BadRequest`` detail
    of the status it sends in the ``grpc-status-details-bin`` trailer; an
    error without one gives ``[]``. Decoding needs the ``google.rpc`` messages
    (googleapis-common-protos, which grpcio-status brings): install the
    package's ``status`` extra, ``pip install './clients/python[status]'``.
    """
    try:
        from google.rpc import error_details_pb2, status_pb2
    except ImportError as missing:
        raise ImportError(
            "field_violations needs google.rpc: install errord-client's 'status' extra "
            "(from errord's checkout: pip install './clients/python[status]')"
        ) from missing
    status = status_pb2.Status.FromString(_status_details(error))
    violations: list[tuple[str, str]] = []
    for detail in status.details:
        bad_request = error_details_pb2.BadRequest()
        if detail.Unpack(bad_request):
            violations.extend((v.field, v.description) for v in bad_request.field_violations)
    return violations


def _status_details(error: grpc.RpcError) -> bytes:
    """The serialized google.rpc.Status an error carries, or b"" when it carries none."""
    trailing_metadata = getattr(error, "trailing_metadata", None)
    for key, value in (trailing_metadata() if trailing_metadata else None) or ():
        if key == _STATUS_DETAILS_KEY:
            return bytes(value)
    return b""


def _begin_turn_request(
    turn_id: str,
    deadline: datetime | None,
    max_retries: int | None,
    max_retry_share: float | None,
    plan: Sequence[pb.PlannedCall],
) -> pb.BeginTurnRequest:
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
        call.arguments.CopyFrom(_struct(arguments))
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
    tool_error = _tool_error(error, code, message, http_status, exception_type, retry_after)
    return _failure_request(turn_id, call_id, tool, attempt, tool_error, arguments, elapsed, scope)


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


def _failure_request(
    turn_id: str,
    call_id: str,
    tool: str,
    attempt: int,
    error: pb.ToolError,
    arguments: Mapping[str, Any] | None,
    elapsed: float | None,
    scope: str = "",
) -> pb.ReportFailureRequest:
    return pb.ReportFailureRequest(
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=attempt,
        error=error,
        arguments=None if arguments is None else _struct(arguments),
        elapsed=as_duration(elapsed),
        scope=scope,
    )


def _admission_request(
    turn_id: str,
    call_id: str,
    tool: str,
    attempt: int,
    arguments: Mapping[str, Any] | None,
    scope: str = "",
) -> pb.AdmitCallRequest:
    return pb.AdmitCallRequest(
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=attempt,
        arguments=None if arguments is None else _struct(arguments),
        scope=scope,
    )


def _outcome_request(
    turn_id: str,
    call_id: str,
    tool: str,
    attempt: int,
    success: bool,
    duration: float | None,
    decision_id: str,
    scope: str = "",
) -> pb.ReportOutcomeRequest:
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


def _struct(mapping: Mapping[str, Any]) -> struct_pb2.Struct:
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
