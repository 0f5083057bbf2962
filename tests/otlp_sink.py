"""An OTLP/HTTP receiver on loopback: what an OpenTelemetry collector is to errord's export.

``OtlpReceiver`` decodes each ExportTraceServiceRequest with opentelemetry-proto and keeps
its spans (the tests of tests/daemon/test_otel.py wait for them); with ``keep=False`` it
only counts the requests and discards them (the benchmark's sink). It imports nothing
from errord, and opentelemetry-proto only when it keeps spans.
"""

from __future__ import annotations

import gzip
import http.server
import threading
from collections.abc import Callable
from typing import Any


class OtlpReceiver:
    """Answers POST /v1/traces on 127.0.0.1 at a free port, in a thread of its own."""

    def __init__(self, *, keep: bool = True) -> None:
        self.spans: list[Any] = []
        """Every span received (opentelemetry.proto.trace.v1.Span), with ``resources``."""
        self.resources: list[Any] = []
        """The Resource each span of ``spans`` came with, at the same index."""
        self.bodies: list[bytes] = []
        """Every request body as received (decompressed), when spans are kept."""
        self.requests = 0
        self._keep = keep
        self._changed = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.received(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: the tests' output is theirs

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        """The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def received(self, body: bytes) -> None:
        spans: list[tuple[Any, Any]] = []
        if self._keep:
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

            request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            spans = [
                (span, resource_spans.resource)
                for resource_spans in request.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            ]
        with self._changed:
            self.requests += 1
            if self._keep:
                self.bodies.append(body)
            for span, resource in spans:
                self.spans.append(span)
                self.resources.append(resource)
            self._changed.notify_all()

    def wait_for(self, found: Callable[[list[Any]], bool], timeout: float = 30.0) -> list[Any]:
        """The spans received, once ``found(spans)`` is true; AssertionError after ``timeout``."""
        with self._changed:
            if not self._changed.wait_for(lambda: found(self.spans), timeout):
                raise AssertionError(f"not received in {timeout} s; got {self.spans}")
            return list(self.spans)


def attributes(span: Any) -> dict[str, Any]:
    """A received span's attributes as plain values."""
    return {
        item.key: getattr(item.value, item.value.WhichOneof("value")) for item in span.attributes
    }
