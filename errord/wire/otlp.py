"""Spans to an OTLP/HTTP receiver: the one module that imports opentelemetry (its
generated protocol messages, opentelemetry-proto), none of its SDK.

Each span's record (``SpanRecord``, a plain tuple) is encoded at once into the
ExportTraceServiceRequest being filled (``Encoder``: the resource and the
instrumentation scope once per request, the attributes spans share encoded once per
combination). A full request (``max_export_batch_size`` spans) waits for the export
thread, which posts it as ``application/x-protobuf``, as the OTLP specification says;
every ``schedule_delay`` seconds the request being filled is sent as it is. Encoding
where the span is made, rather than in the export thread, costs the decision path a few
microseconds but spares the process two threads contending for the GIL, which measured
costlier. Nothing waits for the receiver: with too many requests waiting
(``max_queue_size`` spans), a span is dropped and counted. A receiver answering 429,
502, 503 or 504, or not answering, is asked again after a growing pause, up to
``MAX_ATTEMPTS`` times; at stop, what is waiting is posted, once.

The settings are the OpenTelemetry SDK's environment variables (``OTEL_BSP_*``,
``OTEL_EXPORTER_OTLP_[TRACES_]HEADERS``, ``_TIMEOUT``, ``_COMPRESSION``,
``OTEL_RESOURCE_ATTRIBUTES``), read by ``ExportSettings.from_environ``.
"""

from __future__ import annotations

import gzip
import logging
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from errord.errors import ConfigError

log = logging.getLogger(__name__)

Value: TypeAlias = str | int | float | bool
SpanRecord: TypeAlias = tuple[str, bytes, bytes, bytes, str, int, datetime, dict[str, Value], bool]
"""A span as the decision path records it: name, trace id, span id, parent span id (b""
for a root), W3C trace state, trace flags, time (start and end alike), attributes,
and whether it failed."""
Spans: TypeAlias = RepeatedCompositeFieldContainer[Span]
Post: TypeAlias = Callable[[bytes], int]
"""Sends one encoded request; the receiver's HTTP status (0 when it could not be reached)."""

RETRYABLE = frozenset({0, 429, 502, 503, 504})
"""The statuses after which the OTLP/HTTP specification asks the exporter to try again."""
MAX_ATTEMPTS = 6
"""Tries of one request before its spans are given up (pauses of 1, 2, 4, 8, 16 s, as
``retry_pause`` is 1 s)."""
STOP_TIMEOUT = 30.0
"""Seconds ``close`` waits for the queue to be exported."""
SHARED_KEYS = frozenset(
    {
        "rpc.system",
        "rpc.service",
        "rpc.method",
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "errord.classification.class",
        "errord.classification.code",
        "errord.classification.rule",
        "errord.action",
        "errord.breaker.phase",
        "errord.admission",
        "errord.outcome",
        "errord.alternative_tool",
        "errord.correction.type",
        "errord.attempt",
        "error.type",
    }
)
"""Attributes whose values repeat from span to span (none of them bool-valued, since
True == 1 as a key of the templates)."""
MAX_TEMPLATES = 4096
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
SERVER = Span.SPAN_KIND_SERVER
HAS_IS_REMOTE = 0x100
IS_REMOTE = 0x200


@dataclass(frozen=True)
class ExportSettings:
    """How spans are queued and posted (the OpenTelemetry SDK's variables and defaults)."""

    schedule_delay: float = 5.0
    """Seconds between exports of a queue that has not filled a batch (OTEL_BSP_SCHEDULE_DELAY,
    in ms)."""
    max_queue_size: int = 2048
    """Spans waiting to be posted at most, in whole requests; more are dropped
    (OTEL_BSP_MAX_QUEUE_SIZE)."""
    max_export_batch_size: int = 512
    """Spans in one request at most (OTEL_BSP_MAX_EXPORT_BATCH_SIZE)."""
    timeout: float = 10.0
    """Seconds one request may take (OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT, in ms)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Sent with each request (OTEL_EXPORTER_OTLP_[TRACES_]HEADERS: key=value,...)."""
    gzip: bool = False
    """Requests compressed (OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION=gzip)."""
    resource: tuple[tuple[str, str], ...] = field(default=())
    """Resource attributes besides the service's (OTEL_RESOURCE_ATTRIBUTES: key=value,...)."""

    def __post_init__(self) -> None:
        for name in ("schedule_delay", "max_queue_size", "max_export_batch_size", "timeout"):
            if getattr(self, name) <= 0:
                raise ConfigError(f'OpenTelemetry export: "{name}" should be positive')

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ExportSettings:
        """The settings ``environ`` gives; ConfigError naming a variable that is malformed."""

        def exporter(name: str) -> tuple[str, str]:
            """The traces-only variable when set, else the one for every signal."""
            traces = f"OTEL_EXPORTER_OTLP_TRACES_{name}"
            if environ.get(traces, "").strip():
                return traces, environ[traces].strip()
            return f"OTEL_EXPORTER_OTLP_{name}", environ.get(
                f"OTEL_EXPORTER_OTLP_{name}", ""
            ).strip()

        def number(name: str, default: float) -> float:
            text = environ.get(name, "").strip()
            try:
                return float(text) if text else default
            except ValueError:
                raise ConfigError(f"{name} should be a number, not {text!r}") from None

        return cls(
            schedule_delay=number("OTEL_BSP_SCHEDULE_DELAY", 5000) / 1000,
            max_queue_size=int(number("OTEL_BSP_MAX_QUEUE_SIZE", 2048)),
            max_export_batch_size=int(number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)),
            timeout=number(exporter("TIMEOUT")[0], 10000) / 1000,
            headers=pairs(*reversed(exporter("HEADERS"))),
            gzip=exporter("COMPRESSION")[1].lower() == "gzip",
            resource=pairs(environ.get("OTEL_RESOURCE_ATTRIBUTES", ""), "OTEL_RESOURCE_ATTRIBUTES"),
        )


def pairs(text: str, variable: str) -> tuple[tuple[str, str], ...]:
    """``key=value,key=value`` (W3C baggage's format, values percent-encoded) as pairs."""
    found = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ConfigError(f"{variable} should be key=value pairs, not {item!r}")
        found.append((key.strip(), urllib.parse.unquote(value.strip())))
    return tuple(found)


def http_post(endpoint: str, settings: ExportSettings) -> Post:
    """A Post to ``endpoint`` over urllib, with the settings' headers, timeout and compression."""
    headers = dict(settings.headers) | {"Content-Type": "application/x-protobuf"}
    if settings.gzip:
        headers["Content-Encoding"] = "gzip"

    def post(body: bytes) -> int:
        data = gzip.compress(body) if settings.gzip else body
        request = urllib.request.Request(endpoint, data, headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=settings.timeout) as response:
                response.read()
                status: int = response.status
                return status
        except urllib.error.HTTPError as error:
            error.read()
            return error.code
        except (OSError, ValueError):  # refused, reset, timed out, no such host
            return 0

    return post


class Encoder:
    """Spans' records to ExportTraceServiceRequests of one resource and scope.

    Spans of a name share most of their attributes (the RPC, the tool, the
    classification, the action: ``SHARED_KEYS``): for each such combination a
    template span is encoded once, and each span starts as a parse of it (protobuf's
    merge of a serialized message), its own ids, time and other attributes set after.
    """

    def __init__(self, resource: Iterable[tuple[str, Value]], scope: tuple[str, str]) -> None:
        self._resource = Resource(attributes=[key_value(k, v) for k, v in resource])
        self._scope = InstrumentationScope(name=scope[0], version=scope[1])
        self._templates: dict[tuple[str, bool, tuple[tuple[str, Value], ...]], bytes] = {}

    def request(self) -> tuple[ExportTraceServiceRequest, Spans]:
        """An empty request of the resource and scope, and where its spans go."""
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.CopyFrom(self._resource)
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.CopyFrom(self._scope)
        return request, scope_spans.spans

    def fill(self, span: Span, record: SpanRecord) -> None:
        """``span`` as ``record`` says."""
        name, trace_id, span_id, parent_id, trace_state, flags, at, attributes, failed = record
        shared = tuple([(key, value) for key, value in attributes.items() if key in SHARED_KEYS])
        span.MergeFromString(self._template(name, failed, shared))
        span.trace_id = trace_id
        span.span_id = span_id
        if parent_id:
            span.parent_span_id = parent_id
            span.flags = flags | HAS_IS_REMOTE | IS_REMOTE
        else:
            span.flags = flags | HAS_IS_REMOTE
        if trace_state:
            span.trace_state = trace_state
        span.start_time_unix_nano = span.end_time_unix_nano = (at - EPOCH) // MICROSECOND * 1000
        add = span.attributes.add
        for key, value in attributes.items():
            if key not in SHARED_KEYS:
                set_value(add(key=key).value, value)

    def _template(self, name: str, failed: bool, shared: tuple[tuple[str, Value], ...]) -> bytes:
        found = self._templates.get((name, failed, shared))
        if found is None:
            if len(self._templates) >= MAX_TEMPLATES:
                self._templates.clear()
            template = Span(name=name, kind=SERVER, attributes=[key_value(*kv) for kv in shared])
            if failed:
                template.status.code = Status.STATUS_CODE_ERROR
            found = self._templates[name, failed, shared] = template.SerializeToString()
        return found


def key_value(key: str, value: Value) -> KeyValue:
    """An attribute as OTLP carries it."""
    attribute = KeyValue(key=key)
    set_value(attribute.value, value)
    return attribute


def set_value(into: AnyValue, value: Value) -> None:
    """``into`` holding ``value``, as the one field of its type."""
    if isinstance(value, str):
        into.string_value = value
    elif isinstance(value, bool):
        into.bool_value = value
    elif isinstance(value, int):
        into.int_value = value
    else:
        into.double_value = value


class OtlpExport:
    """Spans encoded into requests as they come, and the thread that posts the requests
    with ``post``."""

    def __init__(
        self, encoder: Encoder, post: Post, settings: ExportSettings, *, retry_pause: float = 1.0
    ) -> None:
        self.dropped = 0
        """Spans dropped because the requests waiting to be posted were too many."""
        self.given_up = 0
        """Spans of requests the receiver did not take."""
        self._encoder = encoder
        self._post = post
        self._settings = settings
        self._retry_pause = retry_pause
        self._batch = settings.max_export_batch_size
        self._max_ready = max(1, settings.max_queue_size // self._batch)
        self._lock = threading.Lock()
        self._filling: tuple[ExportTraceServiceRequest, Spans] | None = None
        self._filled = 0
        self._ready: deque[tuple[ExportTraceServiceRequest, int]] = deque()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="errord-otlp", daemon=True)
        self._thread.start()

    def add(self, record: SpanRecord) -> None:
        """Encode ``record`` into the request being filled; never blocks on the receiver
        (with too many requests waiting, the span is dropped)."""
        with self._lock:
            if len(self._ready) >= self._max_ready:
                self.dropped += 1
                return
            if self._filling is None:
                self._filling = self._encoder.request()
            self._encoder.fill(self._filling[1].add(), record)
            self._filled += 1
            if self._filled >= self._batch:
                self._ship()

    def close(self) -> None:
        """Export what is queued, then stop the thread (blocks up to ``STOP_TIMEOUT``)."""
        self._stopping.set()
        self._wake.set()
        self._thread.join(STOP_TIMEOUT)
        if self.dropped:
            log.warning("OpenTelemetry export: %d spans dropped, the queue full", self.dropped)

    def _ship(self) -> None:
        """The request being filled joins those waiting (the lock held)."""
        if self._filling is not None:
            self._ready.append((self._filling[0], self._filled))
            self._filling, self._filled = None, 0
            self._wake.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            if not self._wake.wait(self._settings.schedule_delay):
                with self._lock:  # the delay passed without a full batch: what there is
                    self._ship()
            self._wake.clear()
            self._send()
        with self._lock:
            self._ship()
        self._send()

    def _send(self) -> None:
        while self._ready:
            request, spans = self._ready.popleft()
            if not self._deliver(request.SerializeToString()):
                self.given_up += spans

    def _deliver(self, body: bytes) -> bool:
        pause = self._retry_pause
        for _ in range(MAX_ATTEMPTS):
            status = self._post(body)
            if 200 <= status < 300:
                return True
            if status not in RETRYABLE or self._stopping.wait(pause):
                break
            pause *= 2
        log.warning("OpenTelemetry export failed (HTTP status %d): spans dropped", status)
        return False
