"""Spans of decisions, recorded on the decision path and exported over OTLP/HTTP.

errord.wire.telemetry imports this module only when export is configured (the
``errord[otel]`` extra); it, through errord.wire.otlp, is what imports opentelemetry.
A span's ids are made here, from the caller's W3C ``traceparent`` (a fixed format,
parsed here, with no OpenTelemetry SDK) or from its turn; errord.wire.otlp encodes it
into the request being filled, and posts the requests from its own thread.

A span whose call carried no valid trace context is a root in the trace derived from
its turn id (``turn_trace_id``). A caller's context whose sampled flag is clear gets no
span, as the OpenTelemetry SDK's default sampler (parent-based, always on) decides.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping
from datetime import datetime

import errord
from errord.wire.otlp import Encoder, ExportSettings, OtlpExport, http_post
from errord.wire.telemetry import Attributes, Metadata

TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
"""W3C Trace Context's traceparent: version, trace id, parent id, flags; a later version
may add fields after them."""
INVALID_TRACE_ID = "0" * 32
INVALID_SPAN_ID = "0" * 16
SAMPLED = 0x01
MAX_TRACE_STATE = 512
"""Characters of tracestate kept at most (W3C: 32 members of at most 256 characters
may be cut to 512)."""


def turn_trace_id(turn_id: str) -> bytes:
    """The trace id of a turn's spans without a caller's context: the first 16 bytes of
    the SHA-256 of the turn id."""
    return hashlib.sha256(turn_id.encode()).digest()[:16]


def parent_of(metadata: Metadata) -> tuple[bytes, bytes, int, str] | None:
    """The trace id, parent span id, flags and trace state that ``metadata``'s W3C trace
    context gives; None without one, or with one that does not parse."""
    traceparent, tracestate = "", ""
    for key, value in metadata:
        if key == "traceparent" and isinstance(value, str):
            traceparent = value
        elif key == "tracestate" and isinstance(value, str):
            tracestate = value
    if not traceparent:
        return None
    match = TRACEPARENT.fullmatch(traceparent.strip())
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    if trace_id == INVALID_TRACE_ID or span_id == INVALID_SPAN_ID:
        return None
    state = tracestate.strip() if len(tracestate) <= MAX_TRACE_STATE else ""
    return bytes.fromhex(trace_id), bytes.fromhex(span_id), int(flags, 16), state


class OtlpSpans:
    """Spans to the OTLP/HTTP ``endpoint`` (a traces URL), as service ``service_name``,
    exported as ``environ``'s OpenTelemetry variables say (errord.wire.otlp)."""

    def __init__(self, endpoint: str, service_name: str, environ: Mapping[str, str]) -> None:
        settings = ExportSettings.from_environ(environ)
        resource = dict(settings.resource) | {
            "service.name": service_name,
            "service.version": errord.__version__,
        }
        encoder = Encoder(resource.items(), ("errord", errord.__version__))
        self.export = OtlpExport(encoder, http_post(endpoint, settings), settings)
        self._span_ids = random.Random()

    def emit(
        self,
        name: str,
        metadata: Metadata,
        turn_id: str,
        at: datetime,
        attributes: Attributes,
        failed: bool,
    ) -> None:
        span_id = (self._span_ids.getrandbits(64) or 1).to_bytes(8, "big")
        parent = parent_of(metadata) if metadata else None
        if parent is None:
            record = (
                name,
                turn_trace_id(turn_id),
                span_id,
                b"",
                "",
                SAMPLED,
                at,
                attributes,
                failed,
            )
        else:
            trace_id, parent_id, flags, state = parent
            if not flags & SAMPLED:
                return
            record = (name, trace_id, span_id, parent_id, state, flags, at, attributes, failed)
        self.export.add(record)

    def close(self) -> None:
        self.export.close()
