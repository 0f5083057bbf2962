"""The ErrorHandlerService servicer: decode, validate, call the engine, map errors.

Handlers take the raw request bytes and decode them here, so that undecodable
bytes are answered with INVALID_ARGUMENT naming the field instead of grpc's own
INTERNAL (errord.wire.decoding). Every expected failure maps to a status code
through ``STATUS_CODES``; anything else is a bug, logged with its traceback and
answered INTERNAL — never UNKNOWN. What an answer carries stays small: at most
``MAX_VIOLATIONS`` field violations, each cut to ``MAX_DESCRIPTION_BYTES``, all
within ``TRAILER_BUDGET`` bytes of trailers, so that no client refuses them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import aclosing
from typing import Any, TypeVar

import grpc
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import any_pb2, message
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from errord.decide.events import TraceEvent
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
from errord.limits import LimitExceeded, Limits, WatcherSlots
from errord.state.feed import TraceFeed
from errord.wire import convert
from errord.wire.budget import FIELD_OVERHEAD, RESPONSE_BUDGET, grouped
from errord.wire.decoding import decode

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
    LimitExceeded: grpc.StatusCode.RESOURCE_EXHAUSTED,
    StoreError: grpc.StatusCode.UNAVAILABLE,
}
MAX_VIOLATIONS = 20
"""Field violations one answer lists; a last one counts the rest."""
MAX_DESCRIPTION_BYTES = 256
"""UTF-8 bytes of a violation's field, and of its description, beyond which they are cut."""
MAX_MESSAGE_BYTES = 1024
"""UTF-8 bytes of any other error's message, beyond which it is cut."""
TRAILER_BUDGET = 4096
"""Bytes the status message and its details may take in the trailers (grpc clients refuse
trailers beyond 8 KiB, and then see RESOURCE_EXHAUSTED instead of the status)."""

Request = TypeVar("Request", bound=message.Message)
Response = TypeVar("Response", bound=message.Message)


def status_for(error: Exception) -> status_pb2.Status:
    """The google.rpc.Status answering ``error``."""
    code = next(
        (status for kind, status in STATUS_CODES.items() if isinstance(error, kind)),
        grpc.StatusCode.INTERNAL,
    )
    violations: list[FieldViolation] = []
    if code is grpc.StatusCode.INTERNAL:
        log.error("bug while serving a request", exc_info=error)
        text = "internal error in errord; the daemon logged it"
    elif isinstance(error, InvalidRequest):
        violations = shown(error.violations)
        text = str(InvalidRequest(violations))
    else:
        text = cut(str(error), MAX_MESSAGE_BYTES)
    status = status_pb2.Status(code=code.value[0], message=text)
    if violations:
        status.details.append(bad_request(violations))
    return status


def shown(violations: Sequence[FieldViolation]) -> list[FieldViolation]:
    """The violations an answer lists: the first ones, cut, within MAX_VIOLATIONS and
    TRAILER_BUDGET; then one (field ``request``) saying how many more there are."""
    listed: list[FieldViolation] = []
    spent = 0
    for index, violation in enumerate(violations):
        field = cut(violation.field, MAX_DESCRIPTION_BYTES)
        description = cut(violation.description, MAX_DESCRIPTION_BYTES)
        cost = trailer_bytes(field) + trailer_bytes(description) + 8
        full = index == MAX_VIOLATIONS or spent + cost > TRAILER_BUDGET - 200
        if full and listed:
            more = len(violations) - index
            listed.append(FieldViolation("request", f"and {more} more, not listed"))
            break
        listed.append(FieldViolation(field, description))
        spent += cost
    return listed


def trailer_bytes(text: str) -> int:
    """Bytes ``text`` takes in the trailers, at most: percent-encoded in grpc-message (bytes
    outside printable ASCII, and %, take three) and base64-encoded in the details."""
    data = text.encode()
    escaped = sum(1 for byte in data if not 0x20 <= byte <= 0x7E or byte == 0x25)
    return len(data) + 2 * escaped + (len(data) * 4 + 2) // 3


def cut(text: str, limit: int) -> str:
    """``text``, or as much of it as fits ``limit`` UTF-8 bytes with an ellipsis."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: limit - len("…".encode())].decode(errors="ignore") + "…"


def bad_request(violations: Sequence[FieldViolation]) -> any_pb2.Any:
    detail = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
            for v in violations
        ]
    )
    packed = any_pb2.Any()
    packed.Pack(detail)
    return packed


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
        self.watchers = WatcherSlots(Limits.max_watchers)
        """The WatchTrace streams open, and how many may be."""

    def enforce(self, limits: Limits) -> None:
        """Serve within ``limits``: its watchers here, its events per turn in the handler."""
        self.watchers = WatcherSlots(limits.max_watchers)
        self._handler.max_turn_events = limits.max_turn_events

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

    async def watch_within_limit(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """WatchTrace: ``watch_trace``'s responses written one at a time, holding one of the
        watcher slots (RESOURCE_EXHAUSTED, before it subscribes, when none is free). The
        next response is made only once the last is written: what came meanwhile goes in
        it together. A client that goes away ends the watch, as it should (``client_gone``)."""
        try:
            with self.watchers.slot():
                async with aclosing(self.watch_trace(data, context)) as responses:
                    async for response in responses:
                        await context.write(response)
        except LimitExceeded as error:  # only the slot raises it: watch_trace answers its own
            await abort(context, error)
        except grpc.aio.InternalError:  # the call failed under a write, or under an abort
            await client_gone(context)

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
        """A page of at most ``page.size`` events that fits RESPONSE_BUDGET bytes."""
        page = convert.trace_page_from_proto(decode(pb.GetTurnTraceRequest, data))
        events = await self._handler.turn_trace(page.turn_id, after=page.after, limit=page.size + 1)
        converted = map(convert.trace_event_to_proto, events[: page.size])
        shown = next(grouped(converted, lambda event: event.ByteSize() + FIELD_OVERHEAD), [])
        response = pb.GetTurnTraceResponse(events=shown)
        if len(shown) < len(events):
            response.next_page_token = str(shown[-1].sequence)
        return response

    async def watch_trace(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncGenerator[bytes]:
        """Serialized WatchTraceResponses: a live event is encoded once for every watcher
        (the feed shares the bytes), a replayed one for this watcher alone. Each response
        holds every live event committed since the last was made (or within the watcher's
        batch_interval), within RESPONSE_BUDGET bytes: one in ``event``, several in
        ``events``."""
        subscription = None
        try:
            watch = convert.watch_from_proto(decode(pb.WatchTraceRequest, data))
            # Subscribe before replaying, so that nothing committed meanwhile is missed.
            subscription = self._feed.subscribe(watch.turn_id, after=watch.after)
            if watch.replay:
                async for event in self._handler.replay(watch.after, turn_id=watch.turn_id):
                    subscription.after = event.sequence
                    yield self.watch_response(event)
            if watch.batch_interval:
                live = subscription.coalesced(self.watch_element, watch.batch_interval)
            else:
                live = subscription.batched(self.watch_element)
            async for elements in live:
                for response in as_responses(elements):
                    yield response
                if not watch.batch_interval:
                    await asyncio.sleep(self.watchers.taken / WATCH_WRITES_PER_SECOND)
        except Exception as error:  # every error is answered with a status, never UNKNOWN
            await abort(context, error)
        finally:
            if subscription is not None:
                self._feed.unsubscribe(subscription)

    @staticmethod
    def watch_response(event: TraceEvent) -> bytes:
        """What WatchTrace sends for ``event`` alone: a serialized WatchTraceResponse."""
        return pb.WatchTraceResponse(event=convert.trace_event_to_proto(event)).SerializeToString()

    @staticmethod
    def watch_element(event: TraceEvent) -> bytes:
        """``event`` as one element of WatchTraceResponse's ``events``, serialized: a response
        holding several events is their elements one after the other."""
        return pb.WatchTraceResponse(
            events=[convert.trace_event_to_proto(event)]
        ).SerializeToString()


CLIENT_GONE_WAIT = 10.0
"""Seconds a watch whose write failed waits for grpc to cancel it (it does at once when
the client went away)."""
WATCH_WRITES_PER_SECOND = 2000
"""Responses all watchers together are sent at most, under load: after each response a
watcher without a batch_interval waits its share (the watchers open / this) before it
takes what came meanwhile; a watcher that was idle longer sends a new event at once."""
ONE_EVENT = b"\x0a"
"""The tag of WatchTraceResponse's field 1 (event), length-delimited; ``events`` is 2."""


async def client_gone(context: grpc.aio.ServicerContext[Any, Any]) -> None:
    """A write failed: the client cancelled the watch or its connection closed. grpc
    learns it from the transport too, and then cancels this handler, which it logs at
    DEBUG; a handler that ended first would have grpc take the failed write for a bug
    and log it at ERROR, with its traceback. Wait for that cancellation, a while at most
    (none comes once a status was sent: an abort that failed)."""
    log.debug("a WatchTrace client went away")
    if not context.done():
        await asyncio.sleep(CLIENT_GONE_WAIT)


def as_responses(elements: list[bytes]) -> Iterator[bytes]:
    """Serialized WatchTraceResponses holding the events of ``elements`` (each one element
    of ``events``, serialized) in order, within RESPONSE_BUDGET bytes each: one event in
    ``event``, several in ``events``. On the wire a repeated field is its elements one after
    the other, so the shared encodings are joined as they are."""
    if sum(map(len, elements)) <= RESPONSE_BUDGET:
        groups: Iterable[list[bytes]] = [elements]
    else:
        groups = grouped(elements, len)
    for group in groups:
        yield ONE_EVENT + group[0][1:] if len(group) == 1 else b"".join(group)


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
                service.watch_within_limit,
                # Already serialized: each live event's bytes are shared by every watcher.
                response_serializer=None,
            ),
        },
    )
