"""The ErrorHandlerService servicer: decode, validate, call the handler, encode.

Methods take the raw request bytes and decode them here, so that undecodable
bytes are answered with INVALID_ARGUMENT naming the field instead of grpc's own
INTERNAL (errord.wire.decoding); requests are validated and converted in
errord.wire.requests, answers in errord.wire.responses, and every error a method
raises is answered with its status (errord.wire.status).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Iterable, Iterator
from contextlib import aclosing
from typing import Any, TypeAlias

import grpc
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import message

from errord.decide.model.events import TraceEvent
from errord.handler import ErrorHandler
from errord.limits import LimitExceeded, Limits
from errord.wire import requests, responses, tool_policies, turn_requests, turn_responses
from errord.wire.budget import FIELD_OVERHEAD, RESPONSE_BUDGET, grouped
from errord.wire.decoding import decode
from errord.wire.status import Handle, InContext, abort, status_for, unary_handlers
from errord.wire.streams import Streams, peer_address
from errord.wire.telemetry import Telemetry, decisions

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ErrorHandlerService"].full_name
Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"


class ErrorHandlerService:
    """errord.v1.ErrorHandlerService over an ErrorHandler, whose ``after_commit`` feeds
    its watchers."""

    def __init__(self, handler: ErrorHandler, telemetry: Telemetry | None = None) -> None:
        self._handler = handler
        self._decisions = decisions(handler, telemetry)
        """The handler's decisions, with telemetry around them when asked for: ids hashed,
        spans exported (errord.wire.telemetry)."""
        self.streams = Streams.within(Limits())
        """The streams open, and how many may be: WatchTrace's and WatchTools' (one per
        executor) are held here."""

    def enforce(self, limits: Limits, streams: Streams) -> None:
        """Serve within ``limits``: watchers in ``streams``' slots (the server's, shared
        with the health and reflection streams), events per turn in the handler."""
        self.streams = streams
        self._handler.room.max_turn_events = limits.max_turn_events

    async def watch_within_limit(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """WatchTrace: ``watch_trace``'s responses written one at a time, holding one of its
        slots (RESOURCE_EXHAUSTED, before it subscribes, when none is free or the caller
        holds its share: errord.wire.streams). The
        next response is made only once the last is written: what came meanwhile goes in
        it together. A client that goes away ends the watch, as it should (``client_gone``)."""
        try:
            with self.streams.trace.slot(peer_address(context.peer())):
                async with aclosing(self.watch_trace(data, context)) as watched:
                    async for response in watched:
                        await context.write(response)
        except LimitExceeded as error:  # only the slot raises it: watch_trace answers its own
            await abort(context, error)
        except grpc.aio.InternalError:  # the call failed under a write, or under an abort
            await client_gone(context)

    async def admit_call(self, data: bytes, context: Context) -> pb.AdmitCallResponse:
        asked = requests.admission_from_proto(decode(pb.AdmitCallRequest, data))
        admitted = self._decisions.admit_call(asked.key, asked.arguments, asked.scope, context)
        admission, decision, replayed = await admitted
        return tool_policies.admission_to_proto(
            admission, decision, replayed, self._handler.clock.now()
        )

    async def watch_tools_within_limit(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """WatchTools: ``watch_tools``' responses, holding one of its slots."""
        try:
            with self.streams.tools.slot(peer_address(context.peer())):
                async with aclosing(self.watch_tools(data, context)) as watched:
                    async for response in watched:
                        await context.write(response)
        except LimitExceeded as error:
            await abort(context, error)
        except grpc.aio.InternalError:
            await client_gone(context)

    async def watch_tools(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncGenerator[bytes]:
        """Serialized WatchToolsResponses: every tool's policy, then the policies of the
        tools whose breaker or rate-limit window changed since the last response, and
        every tool's again after a manifest reload."""
        watcher = None
        try:
            decode(pb.WatchToolsRequest, data)
            watcher = (
                self._handler.after_commit.tools.subscribe()
            )  # before the snapshot: nothing is missed
            yield self._tool_policies(None).SerializeToString()
            async for changed in watcher.changes():
                yield self._tool_policies(changed).SerializeToString()
        except Exception as error:  # every error is answered with a status, never UNKNOWN
            await abort(context, error)
        finally:
            if watcher is not None:
                self._handler.after_commit.tools.unsubscribe(watcher)

    def _tool_policies(self, changed: set[str] | None) -> pb.WatchToolsResponse:
        handler = self._handler
        return tool_policies.tool_policies_to_proto(
            handler.known_tools() if changed is None else changed,
            handler.manifests,
            handler.breaker,
            handler.clock.now(),
            snapshot=changed is None,
            window_of=handler.window,
        )

    async def begin_turn(self, data: bytes) -> pb.BeginTurnResponse:
        asked = turn_requests.beginning_from_proto(decode(pb.BeginTurnRequest, data))
        event, replayed = await self._handler.begin_turn(
            asked.turn_id, asked.deadline, asked.retry_budget, asked.plan
        )
        return pb.BeginTurnResponse(
            event=turn_responses.trace_event_to_proto(event), replayed=replayed
        )

    async def end_turn(self, data: bytes) -> pb.EndTurnResponse:
        turn_id = turn_requests.turn_id_from_proto(decode(pb.EndTurnRequest, data))
        summary, replayed = await self._handler.end_turn(turn_id)
        return pb.EndTurnResponse(
            summary=turn_responses.turn_summary_to_proto(summary), replayed=replayed
        )

    async def report_failure(self, data: bytes, context: Context) -> pb.ReportFailureResponse:
        report = requests.failure_report_from_proto(decode(pb.ReportFailureRequest, data))
        decision, replayed = await self._decisions.report_failure(report, context)
        return responses.report_failure_response(decision, replayed)

    async def report_failures(self, data: bytes, context: Context) -> pb.ReportFailuresResponse:
        reports = requests.failure_reports_from_proto(decode(pb.ReportFailuresRequest, data))
        results = await self._decisions.report_failures(reports, context)
        response = pb.ReportFailuresResponse()
        for result in results:
            if isinstance(result, Exception):  # refused: the status it alone would have got
                status = status_for(result)
                refused = pb.RefusedReport(code=status.code, message=status.message)
                response.results.add(refused=refused)
            else:
                decision, replayed = result
                responses.report_failure_response(decision, replayed, response.results.add().answer)
        return response

    async def reconcile_results(self, data: bytes) -> pb.ReconcileResultsResponse:
        asked = turn_requests.reconciling_from_proto(decode(pb.ReconcileResultsRequest, data))
        reconciled = await self._handler.reconcile_results(asked.turn_id, asked.calls, asked.held)
        return turn_responses.reconciliation_to_proto(reconciled)

    async def report_outcome(self, data: bytes, context: Context) -> pb.ReportOutcomeResponse:
        report = requests.outcome_report_from_proto(decode(pb.ReportOutcomeRequest, data))
        event, replayed = await self._decisions.report_outcome(report, context)
        return pb.ReportOutcomeResponse(
            event=turn_responses.trace_event_to_proto(event), replayed=replayed
        )

    async def validate_call(self, data: bytes) -> pb.ValidateCallResponse:
        asked = turn_requests.call_to_check_from_proto(decode(pb.ValidateCallRequest, data))
        return responses.call_check_to_proto(
            self._handler.validate_call(asked.tool, asked.arguments)
        )

    async def get_turn_trace(self, data: bytes) -> pb.GetTurnTraceResponse:
        """A page of at most ``page.size`` events that fits RESPONSE_BUDGET bytes."""
        page = turn_requests.trace_page_from_proto(decode(pb.GetTurnTraceRequest, data))
        events = await self._handler.turn_trace(page.turn_id, after=page.after, limit=page.size + 1)
        converted = map(turn_responses.trace_event_to_proto, events[: page.size])
        shown = next(grouped(converted, lambda event: event.ByteSize() + FIELD_OVERHEAD), [])
        response = pb.GetTurnTraceResponse(events=shown)
        if len(shown) < len(events):
            response.next_page_token = str(shown[-1].sequence)
        return response

    async def watch_trace(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncGenerator[bytes]:
        """Serialized WatchTraceResponses: a live event is encoded once for every watcher
        (the feed shares the bytes), one of the history for this watcher alone. Each response
        holds every live event committed since the last was made (or within the watcher's
        batch_interval), within RESPONSE_BUDGET bytes: one in ``event``, several in
        ``events``."""
        subscription = None
        try:
            watch = turn_requests.watch_from_proto(decode(pb.WatchTraceRequest, data))
            # Subscribed before the history is read: nothing committed meanwhile is missed.
            subscription = self._handler.after_commit.trace.subscribe(
                watch.turn_id, after=watch.after
            )
            if watch.history:
                async for event in self._handler.trace_after(watch.after, turn_id=watch.turn_id):
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
                    await asyncio.sleep(self.streams.trace.taken / WATCH_WRITES_PER_SECOND)
        except Exception as error:  # every error is answered with a status, never UNKNOWN
            await abort(context, error)
        finally:
            if subscription is not None:
                self._handler.after_commit.trace.unsubscribe(subscription)

    @staticmethod
    def watch_response(event: TraceEvent) -> bytes:
        """What WatchTrace sends for ``event`` alone: a serialized WatchTraceResponse."""
        return pb.WatchTraceResponse(
            event=turn_responses.trace_event_to_proto(event)
        ).SerializeToString()

    @staticmethod
    def watch_element(event: TraceEvent) -> bytes:
        """``event`` as one element of WatchTraceResponse's ``events``, serialized: a response
        holding several events is their elements one after the other."""
        return pb.WatchTraceResponse(
            events=[turn_responses.trace_event_to_proto(event)]
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
    unary: dict[str, tuple[Handle, type[message.Message]]] = {
        "BeginTurn": (service.begin_turn, pb.BeginTurnResponse),
        "EndTurn": (service.end_turn, pb.EndTurnResponse),
        "ReconcileResults": (service.reconcile_results, pb.ReconcileResultsResponse),
        "ValidateCall": (service.validate_call, pb.ValidateCallResponse),
        "GetTurnTrace": (service.get_turn_trace, pb.GetTurnTraceResponse),
    }
    # The methods that decide read their call's metadata: a caller's trace context.
    deciding: dict[str, tuple[InContext, type[message.Message]]] = {
        "ReportFailure": (service.report_failure, pb.ReportFailureResponse),
        "ReportFailures": (service.report_failures, pb.ReportFailuresResponse),
        "ReportOutcome": (service.report_outcome, pb.ReportOutcomeResponse),
        "AdmitCall": (service.admit_call, pb.AdmitCallResponse),
    }
    watch = grpc.unary_stream_rpc_method_handler(
        service.watch_within_limit,
        # Already serialized: each live event's bytes are shared by every watcher.
        response_serializer=None,
    )
    watch_tools = grpc.unary_stream_rpc_method_handler(
        service.watch_tools_within_limit, response_serializer=None
    )
    return grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {**unary_handlers(unary, deciding), "WatchTrace": watch, "WatchTools": watch_tools},
    )
