"""The executor's calls carry the current OpenTelemetry context (W3C traceparent) when one is
current, and their metadata is left as it was when none is."""

from __future__ import annotations

from errord_client.executor.link import traced
from opentelemetry.sdk.trace import TracerProvider

TOKEN = (("authorization", "Bearer t"),)


def test_without_a_current_span_the_metadata_is_unchanged() -> None:
    assert traced(None) is None
    assert traced(TOKEN) is TOKEN


def test_the_current_span_goes_with_the_call_as_traceparent() -> None:
    tracer = TracerProvider().get_tracer("agent")
    with tracer.start_as_current_span("turn") as span:
        metadata = traced(TOKEN)
    assert metadata is not None
    assert metadata[0] == TOKEN[0]
    context = span.get_span_context()
    version_trace_parent = f"00-{context.trace_id:032x}-{context.span_id:016x}-"
    assert dict(metadata)["traceparent"].startswith(version_trace_parent)  # then the flags
