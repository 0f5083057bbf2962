"""Typed sync and async clients for errord.v1.ErrorHandlerService.

``ErrordClient`` (blocking) and ``AsyncErrordClient`` (``grpc.aio``) have the
same methods, on one base (``BaseClient``: the channel, the token, the generated
``stub``). They turn plain Python values into wire messages (a mapping into
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
from typing import Any, Generic, Protocol, Self, TypeVar

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

ChannelOptions = Sequence[tuple[str, Any]]
"""gRPC channel arguments (``("grpc.enable_retries", 1)``, ...)."""

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


_Channel = TypeVar("_Channel", grpc.Channel, grpc.aio.Channel)
_Stub = TypeVar("_Stub", _SyncStub, _AsyncStub)


class BaseClient(Generic[_Channel, _Stub]):
    """What ErrordClient and AsyncErrordClient share: a channel to errord, opened or given,
    the token's metadata, and the generated stub.

    The client opens a channel to ``target`` (``host:port`` or ``unix:/path``), plaintext
    unless TLS ``credentials`` are given (``grpc.ssl_channel_credentials``), with the
    gRPC channel arguments ``options``; it closes that channel on ``close()`` or when
    its ``with`` block ends. A ``channel`` passed in is used instead and never closed by
    the client: its owner closes it. With ``token`` every call sends ``authorization:
    Bearer <token>``, which a daemon with ``token_file`` set requires (and operator calls,
    with the operator token).
    """

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        *,
        channel: _Channel | None = None,
        token: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        options: ChannelOptions = (),
    ) -> None:
        if channel is not None and (credentials is not None or options):
            given = "credentials=" if credentials is not None else "options="
            raise ValueError(f"pass {given} or channel=, not both: a channel has its own")
        self.metadata: _Metadata = _bearer(token)
        """What every call carries: the bearer token, when one was given."""
        self._owns_channel = channel is None
        self.channel: _Channel = (
            self._open(target, credentials, tuple(options)) if channel is None else channel
        )
        self.stub: _Stub = errord_pb2_grpc.ErrorHandlerServiceStub(self.channel)
        """The generated stub on the channel, for generated requests: give its calls
        ``metadata=client.metadata``."""

    @staticmethod
    def _open(
        target: str, credentials: grpc.ChannelCredentials | None, options: ChannelOptions
    ) -> _Channel:
        raise NotImplementedError


class ErrordClient(BaseClient[grpc.Channel, _SyncStub]):
    """A blocking errord client; see BaseClient for its channel and token."""

    @staticmethod
    def _open(
        target: str, credentials: grpc.ChannelCredentials | None, options: ChannelOptions
    ) -> grpc.Channel:
        if credentials is None:
            return grpc.insecure_channel(target, options=options)
        return grpc.secure_channel(target, credentials, options=options)

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
            self.channel.close()

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
            scope=scope,
        )
        return self.stub.ReportFailure(request, timeout=timeout, metadata=self.metadata)

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
        return self.stub.BeginTurn(request, timeout=timeout, metadata=self.metadata)

    def end_turn(self, turn_id: str, *, timeout: float | None = None) -> pb.EndTurnResponse:
        """Close a turn; its summary: each call's final status and a notice for the user."""
        return self.stub.EndTurn(
            pb.EndTurnRequest(turn_id=turn_id), timeout=timeout, metadata=self.metadata
        )

    def validate_call(
        self, tool: str, arguments: Mapping[str, Any], *, timeout: float | None = None
    ) -> pb.ValidateCallResponse:
        """Check a call's arguments against the tool's JSON Schema before running it; for an
        invalid call, send ``llm_message`` to the model instead."""
        request = pb.ValidateCallRequest(tool=tool, arguments=struct_of(arguments))
        return self.stub.ValidateCall(request, timeout=timeout, metadata=self.metadata)

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
        return self.stub.ReconcileResults(request, timeout=timeout, metadata=self.metadata)

    def report_failures(
        self, failures: Sequence[pb.ReportFailureRequest], *, timeout: float | None = None
    ) -> pb.ReportFailuresResponse:
        """Report several failed attempts (a turn's parallel calls, built with
        ``failure_request``) in one call: one decision each, in order, committed together."""
        request = pb.ReportFailuresRequest(failures=failures)
        return self.stub.ReportFailures(request, timeout=timeout, metadata=self.metadata)

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
        request = outcome_request(
            turn_id, call_id, tool, attempt, success, duration, decision_id, scope
        )
        return self.stub.ReportOutcome(request, timeout=timeout, metadata=self.metadata)

    def get_turn_trace(self, turn_id: str, *, timeout: float | None = None) -> list[pb.TraceEvent]:
        """Return every trace event of one turn, oldest first, reading page after page.

        ``timeout`` applies to each page.
        """
        events: list[pb.TraceEvent] = []
        token = ""
        while True:
            request = pb.GetTurnTraceRequest(turn_id=turn_id, page_token=token)
            page = self.stub.GetTurnTrace(request, timeout=timeout, metadata=self.metadata)
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
        call = self.stub.WatchTrace(request, metadata=self.metadata)
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
        request = admission_request(turn_id, call_id, tool, attempt, arguments, scope)
        return self.stub.AdmitCall(request, timeout=timeout, metadata=self.metadata)

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
        call = self.stub.WatchTools(pb.WatchToolsRequest(), timeout=timeout, metadata=self.metadata)
        try:
            yield from call
        finally:
            call.cancel()


class AsyncErrordClient(BaseClient[grpc.aio.Channel, _AsyncStub]):
    """An asyncio errord client on ``grpc.aio``, with the methods of ErrordClient; see
    BaseClient for its channel and token."""

    @staticmethod
    def _open(
        target: str, credentials: grpc.ChannelCredentials | None, options: ChannelOptions
    ) -> grpc.aio.Channel:
        if credentials is None:
            return grpc.aio.insecure_channel(target, options=options)
        return grpc.aio.secure_channel(target, credentials, options=options)

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
            await self.channel.close()

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
            scope=scope,
        )
        return await self.stub.ReportFailure(request, timeout=timeout, metadata=self.metadata)

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
        return await self.stub.BeginTurn(request, timeout=timeout, metadata=self.metadata)

    async def end_turn(
        self,
        turn_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.EndTurnResponse:
        """Close a turn; see ErrordClient.end_turn."""
        return await self.stub.EndTurn(
            pb.EndTurnRequest(turn_id=turn_id), timeout=timeout, metadata=self.metadata
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
        return await self.stub.ValidateCall(request, timeout=timeout, metadata=self.metadata)

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
        return await self.stub.ReconcileResults(request, timeout=timeout, metadata=self.metadata)

    async def report_failures(
        self,
        failures: Sequence[pb.ReportFailureRequest],
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - sent as the gRPC deadline
    ) -> pb.ReportFailuresResponse:
        """Report several failed attempts in one call; see ErrordClient.report_failures."""
        request = pb.ReportFailuresRequest(failures=failures)
        return await self.stub.ReportFailures(request, timeout=timeout, metadata=self.metadata)

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
        request = outcome_request(
            turn_id, call_id, tool, attempt, success, duration, decision_id, scope
        )
        return await self.stub.ReportOutcome(request, timeout=timeout, metadata=self.metadata)

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
            page = await self.stub.GetTurnTrace(request, timeout=timeout, metadata=self.metadata)
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
        call = self.stub.WatchTrace(request, metadata=self.metadata)
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
        request = admission_request(turn_id, call_id, tool, attempt, arguments, scope)
        return await self.stub.AdmitCall(request, timeout=timeout, metadata=self.metadata)

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
        call = self.stub.WatchTools(pb.WatchToolsRequest(), timeout=timeout, metadata=self.metadata)
        try:
            async for response in call:
                yield response
        finally:
            call.cancel()


def _events(response: pb.WatchTraceResponse) -> list[pb.TraceEvent]:
    """The response's event, or its events when the watch is batched."""
    return [response.event] if response.HasField("event") else list(response.events)


def _bearer(token: str | None) -> _Metadata:
    """The ``authorization`` metadata errord's ``token_file`` asks for; None without a token."""
    if token is None:
        return None
    if not token or any(not "!" <= character <= "~" for character in token):
        raise ValueError("token must be printable ASCII without spaces, as in errord's token_file")
    return (("authorization", f"Bearer {token}"),)
