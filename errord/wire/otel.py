"""Spans exported over OTLP/HTTP with the OpenTelemetry SDK: the one module that imports it.

errord.wire.telemetry imports this module only when export is configured (the
``errord[otel]`` extra). Spans are queued by the SDK's BatchSpanProcessor and exported
from its own thread, never on the decision path; ``close`` flushes the queue at stop.

A span whose call carried no W3C trace context is a root in the trace derived from its
turn id (``turn_trace_id``): the SDK takes a root span's trace id from its id generator,
so TurnTraceIds hands it the one derived for the span about to start.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode, get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import errord
from errord.wire.telemetry import Attributes, Metadata

PROPAGATED = ("traceparent", "tracestate")
"""The metadata keys of W3C trace context, as the OpenTelemetry gRPC instrumentation sends
them (grpc gives keys in lower case)."""
ERROR = Status(StatusCode.ERROR)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def turn_trace_id(turn_id: str) -> int:
    """The trace id of a turn's spans without a caller's context: the first 16 bytes of
    the SHA-256 of the turn id."""
    return int.from_bytes(hashlib.sha256(turn_id.encode()).digest()[:16], "big") or 1


class TurnTraceIds(RandomIdGenerator):
    """Random span ids; a root span's trace id is ``next_trace_id``, set just before the
    span starts (spans start on the event loop's thread alone)."""

    def __init__(self) -> None:
        self.next_trace_id = 0

    def generate_trace_id(self) -> int:
        return self.next_trace_id or super().generate_trace_id()


class OtlpSpans:
    """Spans to the OTLP/HTTP ``endpoint`` (a traces URL), as service ``service_name``."""

    def __init__(self, endpoint: str, service_name: str) -> None:
        self._ids = TurnTraceIds()
        resource = Resource.create(
            {"service.name": service_name, "service.version": errord.__version__}
        )
        self._provider = TracerProvider(resource=resource, id_generator=self._ids)
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint)))
        self._tracer = self._provider.get_tracer("errord", errord.__version__)
        self._propagator = TraceContextTextMapPropagator()

    def emit(
        self,
        name: str,
        metadata: Metadata,
        turn_id: str,
        at: datetime,
        attributes: Attributes,
        failed: bool,
    ) -> None:
        carrier = {
            key: value for key, value in metadata if key in PROPAGATED and isinstance(value, str)
        }
        parent = self._propagator.extract(carrier) if carrier else Context()
        if not get_current_span(parent).get_span_context().is_valid:
            parent = Context()  # no context, or one that does not parse: the turn's trace
            self._ids.next_trace_id = turn_trace_id(turn_id)
        time = (at - EPOCH) // MICROSECOND * 1000
        try:
            span = self._tracer.start_span(
                name, parent, SpanKind.SERVER, attributes, start_time=time
            )
        finally:
            self._ids.next_trace_id = 0
        if failed:
            span.set_status(ERROR)
        span.end(end_time=time)

    def close(self) -> None:
        self._provider.shutdown()
