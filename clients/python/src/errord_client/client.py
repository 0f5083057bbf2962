"""Typed sync and async clients for errord.v1.ErrorHandlerService.

``ErrordClient`` (blocking) and ``AsyncErrordClient`` (``grpc.aio``) have the
same methods. They turn plain Python values into wire messages (a mapping into
``google.protobuf.Struct``, seconds into ``google.protobuf.Duration``) and
return the generated response messages unchanged.

Failed calls raise ``grpc.RpcError`` (``grpc.aio.AioRpcError`` from the async
client): ``INVALID_ARGUMENT`` for a malformed request, whose fields
``errord_client.errors.field_violations`` names; ``FAILED_PRECONDITION`` for a
report to a turn already ended; ``UNAUTHENTICATED`` without the daemon's bearer
``token``; ``UNAVAILABLE`` when no daemon listens; ``DEADLINE_EXCEEDED`` when
``timeout`` passes. ``errord_client.requests`` builds the requests that take
several values at once (``failure_request``, ``planned_call``).

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

from errord_client.requests import (
    admission_request,
    begin_turn_request,
    failure_request,
    outcome_request,
    struct_of,
    watch_trace_request,
)
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

DEFAULT_TARGET = "127.0.0.1:50051"
"""Where errord listens unless configured otherwise; ``unix:/path`` works too."""

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
        timeout: float | None = None,
    ) -> pb.ReportFailureResponse:
        """Report one failed attempt and return errord's recovery decision.

        Describe the failure either with a ready ``error`` or with the fields
        ``code``, ``message``, ``http_status``, ``exception_type`` and
        ``retry_after`` (seconds), not both. ``arguments`` is the tool input;
        ``elapsed`` how many seconds the attempt ran; ``timeout`` the RPC
        deadline in seconds. Raises ValueError when both forms are given.
        """
        request = failure_request(
            turn_id=turn_id,
            call_id=call_id,
            tool=tool,
            attempt=attempt,
            error=error,
            code=code,
            message=message,
            http_status=http_status,
            exception_type=exception_type,
            retry_after=retry_after,
            arguments=arguments,
            elapsed=elapsed,
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
        request = begin_turn_request(turn_id, deadline, max_retries, max_retry_share, plan)
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
        request = pb.ValidateCallRequest(tool=tool, arguments=struct_of(arguments))
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
        timeout: float | None = None,
    ) -> pb.ReportOutcomeResponse:
        """Record how an attempt ended; ``duration`` in seconds, ``decision_id`` it followed."""
        request = outcome_request(turn_id, call_id, tool, attempt, success, duration, decision_id)
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
        request = watch_trace_request(turn_id, include_history, after_sequence, batch_interval)
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
        request = admission_request(turn_id, call_id, tool, attempt, arguments)
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
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.ReportFailureResponse:
        """Report one failed attempt; see ErrordClient.report_failure."""
        request = failure_request(
            turn_id=turn_id,
            call_id=call_id,
            tool=tool,
            attempt=attempt,
            error=error,
            code=code,
            message=message,
            http_status=http_status,
            exception_type=exception_type,
            retry_after=retry_after,
            arguments=arguments,
            elapsed=elapsed,
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
        request = begin_turn_request(turn_id, deadline, max_retries, max_retry_share, plan)
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
        request = pb.ValidateCallRequest(tool=tool, arguments=struct_of(arguments))
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
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.ReportOutcomeResponse:
        """Record how an attempt ended; see ErrordClient.report_outcome."""
        request = outcome_request(turn_id, call_id, tool, attempt, success, duration, decision_id)
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
        request = watch_trace_request(turn_id, include_history, after_sequence, batch_interval)
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
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.AdmitCallResponse:
        """Ask whether the tool's breaker lets this attempt run; see ErrordClient.admit_call."""
        request = admission_request(turn_id, call_id, tool, attempt, arguments)
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
