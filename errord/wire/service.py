"""The ErrorHandlerService servicer: decode, validate, call the engine, map errors.

Handlers take the raw request bytes and decode them here, so that undecodable
bytes are answered with INVALID_ARGUMENT instead of grpc's own INTERNAL. Every
expected failure maps to a status code through ``STATUS_CODES``; anything else
is a bug, logged with its traceback and answered INTERNAL — never UNKNOWN.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import any_pb2, message
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from errord.errors import (
    ErrordError,
    FieldViolation,
    InvalidRequest,
    NoManifestDirectory,
    ReportConflict,
    StoreError,
    ToolNotFound,
    TurnClosed,
    TurnNotFound,
    WatcherFellBehind,
)
from errord.handler import ErrorHandler
from errord.state.feed import TraceFeed
from errord.wire import convert

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ErrorHandlerService"].full_name

STATUS_CODES: dict[type[ErrordError], grpc.StatusCode] = {
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    TurnNotFound: grpc.StatusCode.NOT_FOUND,
    ToolNotFound: grpc.StatusCode.NOT_FOUND,
    ReportConflict: grpc.StatusCode.ALREADY_EXISTS,
    TurnClosed: grpc.StatusCode.FAILED_PRECONDITION,
    NoManifestDirectory: grpc.StatusCode.FAILED_PRECONDITION,
    WatcherFellBehind: grpc.StatusCode.RESOURCE_EXHAUSTED,
    StoreError: grpc.StatusCode.UNAVAILABLE,
}

Request = TypeVar("Request", bound=message.Message)
Response = TypeVar("Response", bound=message.Message)


def status_for(error: Exception) -> status_pb2.Status:
    """The google.rpc.Status answering ``error``."""
    code = next(
        (status for kind, status in STATUS_CODES.items() if isinstance(error, kind)),
        grpc.StatusCode.INTERNAL,
    )
    if code is grpc.StatusCode.INTERNAL:
        log.error("bug while serving a request", exc_info=error)
        text = "internal error in errord; the daemon logged it"
    else:
        text = str(error)
    status = status_pb2.Status(code=code.value[0], message=text)
    if isinstance(error, InvalidRequest):
        status.details.append(bad_request(error.violations))
    return status


def bad_request(violations: tuple[FieldViolation, ...]) -> any_pb2.Any:
    detail = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
            for v in violations
        ]
    )
    packed = any_pb2.Any()
    packed.Pack(detail)
    return packed


def decode(kind: type[Request], data: bytes) -> Request:
    try:
        return kind.FromString(data)
    except message.DecodeError as error:
        name = kind.DESCRIPTOR.name
        raise InvalidRequest(
            [FieldViolation("request", f"cannot decode the bytes as {name}: {error}")]
        ) from error


async def abort(context: grpc.aio.ServicerContext[Any, Any], error: Exception) -> None:
    await context.abort_with_status(rpc_status.to_status(status_for(error)))


async def answer(
    context: grpc.aio.ServicerContext[Any, Any], handle: Callable[[], Awaitable[Response]]
) -> Response:
    """Run ``handle``; answer any error it raises with its status code."""
    try:
        return await handle()
    except Exception as error:  # every error is answered with a status, never UNKNOWN
        await abort(context, error)
        raise AssertionError("unreachable: abort raises") from error


class ErrorHandlerService:
    """errord.v1.ErrorHandlerService over an ErrorHandler and a TraceFeed."""

    def __init__(self, handler: ErrorHandler, feed: TraceFeed) -> None:
        self._handler = handler
        self._feed = feed

    async def begin_turn(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.BeginTurnResponse:
        return await answer(context, lambda: self._begin_turn(data))

    async def end_turn(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.EndTurnResponse:
        return await answer(context, lambda: self._end_turn(data))

    async def report_failure(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ReportFailureResponse:
        return await answer(context, lambda: self._report_failure(data))

    async def report_failures(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ReportFailuresResponse:
        return await answer(context, lambda: self._report_failures(data))

    async def reconcile_results(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ReconcileResultsResponse:
        return await answer(context, lambda: self._reconcile_results(data))

    async def report_outcome(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ReportOutcomeResponse:
        return await answer(context, lambda: self._report_outcome(data))

    async def validate_call(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ValidateCallResponse:
        return await answer(context, lambda: self._validate_call(data))

    async def get_turn_trace(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetTurnTraceResponse:
        return await answer(context, lambda: self._get_turn_trace(data))

    async def _begin_turn(self, data: bytes) -> pb.BeginTurnResponse:
        asked = convert.beginning_from_proto(decode(pb.BeginTurnRequest, data))
        event, replayed = await self._handler.begin_turn(
            asked.turn_id, asked.deadline, asked.retry_budget, asked.plan
        )
        return pb.BeginTurnResponse(event=convert.trace_event_to_proto(event), replayed=replayed)

    async def _end_turn(self, data: bytes) -> pb.EndTurnResponse:
        turn_id = convert.turn_id_from_proto(decode(pb.EndTurnRequest, data))
        summary, replayed = await self._handler.end_turn(turn_id)
        return pb.EndTurnResponse(summary=convert.turn_summary_to_proto(summary), replayed=replayed)

    async def _report_failure(self, data: bytes) -> pb.ReportFailureResponse:
        report = convert.failure_report_from_proto(decode(pb.ReportFailureRequest, data))
        decision, replayed = await self._handler.report_failure(report)
        return pb.ReportFailureResponse(
            decision=convert.decision_to_proto(decision), replayed=replayed
        )

    async def _report_failures(self, data: bytes) -> pb.ReportFailuresResponse:
        reports = convert.failure_reports_from_proto(decode(pb.ReportFailuresRequest, data))
        response = pb.ReportFailuresResponse()
        for result in await self._handler.report_failures(reports):
            if isinstance(result, Exception):  # refused: the status it alone would have got
                status = status_for(result)
                refused = pb.RefusedReport(code=status.code, message=status.message)
                response.results.add(refused=refused)
            else:
                decision, replayed = result
                answer = pb.ReportFailureResponse(
                    decision=convert.decision_to_proto(decision), replayed=replayed
                )
                response.results.add(answer=answer)
        return response

    async def _reconcile_results(self, data: bytes) -> pb.ReconcileResultsResponse:
        asked = convert.reconciling_from_proto(decode(pb.ReconcileResultsRequest, data))
        reconciled = await self._handler.reconcile_results(asked.turn_id, asked.calls, asked.held)
        return convert.reconciliation_to_proto(reconciled)

    async def _report_outcome(self, data: bytes) -> pb.ReportOutcomeResponse:
        report = convert.outcome_report_from_proto(decode(pb.ReportOutcomeRequest, data))
        event, replayed = await self._handler.report_outcome(report)
        return pb.ReportOutcomeResponse(
            event=convert.trace_event_to_proto(event), replayed=replayed
        )

    async def _validate_call(self, data: bytes) -> pb.ValidateCallResponse:
        asked = convert.call_to_check_from_proto(decode(pb.ValidateCallRequest, data))
        return convert.call_check_to_proto(self._handler.validate_call(asked.tool, asked.arguments))

    async def _get_turn_trace(self, data: bytes) -> pb.GetTurnTraceResponse:
        page = convert.trace_page_from_proto(decode(pb.GetTurnTraceRequest, data))
        events = await self._handler.turn_trace(page.turn_id, after=page.after, limit=page.size + 1)
        response = pb.GetTurnTraceResponse(
            events=[convert.trace_event_to_proto(event) for event in events[: page.size]]
        )
        if len(events) > page.size:
            response.next_page_token = str(events[page.size - 1].sequence)
        return response

    async def watch_trace(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.WatchTraceResponse]:
        subscription = None
        try:
            watch = convert.watch_from_proto(decode(pb.WatchTraceRequest, data))
            # Subscribe before replaying, so that nothing committed meanwhile is missed.
            subscription = self._feed.subscribe(watch.turn_id)
            last_sent = watch.after
            if watch.replay:
                async for event in self._handler.replay(last_sent, turn_id=watch.turn_id):
                    last_sent = event.sequence
                    yield pb.WatchTraceResponse(event=convert.trace_event_to_proto(event))
            async for event in subscription.events():
                if event.sequence > last_sent:
                    yield pb.WatchTraceResponse(event=convert.trace_event_to_proto(event))
        except Exception as error:  # every error is answered with a status, never UNKNOWN
            await abort(context, error)
        finally:
            if subscription is not None:
                self._feed.unsubscribe(subscription)


def rpc_handlers(service: ErrorHandlerService) -> grpc.GenericRpcHandler:
    """The service's method handlers; requests arrive as bytes, responses are serialized here."""
    return grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "BeginTurn": grpc.unary_unary_rpc_method_handler(
                service.begin_turn,
                response_serializer=pb.BeginTurnResponse.SerializeToString,
            ),
            "EndTurn": grpc.unary_unary_rpc_method_handler(
                service.end_turn,
                response_serializer=pb.EndTurnResponse.SerializeToString,
            ),
            "ReportFailure": grpc.unary_unary_rpc_method_handler(
                service.report_failure,
                response_serializer=pb.ReportFailureResponse.SerializeToString,
            ),
            "ReportFailures": grpc.unary_unary_rpc_method_handler(
                service.report_failures,
                response_serializer=pb.ReportFailuresResponse.SerializeToString,
            ),
            "ReconcileResults": grpc.unary_unary_rpc_method_handler(
                service.reconcile_results,
                response_serializer=pb.ReconcileResultsResponse.SerializeToString,
            ),
            "ReportOutcome": grpc.unary_unary_rpc_method_handler(
                service.report_outcome,
                response_serializer=pb.ReportOutcomeResponse.SerializeToString,
            ),
            "ValidateCall": grpc.unary_unary_rpc_method_handler(
                service.validate_call,
                response_serializer=pb.ValidateCallResponse.SerializeToString,
            ),
            "GetTurnTrace": grpc.unary_unary_rpc_method_handler(
                service.get_turn_trace,
                response_serializer=pb.GetTurnTraceResponse.SerializeToString,
            ),
            "WatchTrace": grpc.unary_stream_rpc_method_handler(
                service.watch_trace,
                response_serializer=pb.WatchTraceResponse.SerializeToString,
            ),
        },
    )
