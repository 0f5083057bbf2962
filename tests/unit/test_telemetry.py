"""Reports' user and session ids: bounded like other ids, optional, hashed when asked; export
is off by default and configured the standard way (errord.wire.telemetry); spans encoded
and posted without the OpenTelemetry SDK (errord.wire.otel, errord.wire.otlp)."""

from __future__ import annotations

import hashlib
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from errord_client.v1 import errord_pb2 as pb
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

import errord
from errord.config import Settings
from errord.decide.model import (
    Action,
    Classification,
    Correction,
    Decision,
    ErrorClass,
    FailureReport,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.decide.model import ErrorCode as Code
from errord.errors import ConfigError, InvalidRequest
from errord.wire import requests
from errord.wire.bounds import MAX_ID_LENGTH
from errord.wire.otel import OtlpSpans, parent_of
from errord.wire.otlp import MAX_ATTEMPTS, Encoder, ExportSettings, OtlpExport, Post, SpanRecord
from errord.wire.telemetry import (
    IdHashing,
    Telemetry,
    failure_attributes,
    telemetry_from,
    traces_endpoint,
)
from tests.otlp_sink import OtlpReceiver, attributes

DISABLED = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}
CALL: Any = {"turn_id": "t", "call_id": "c", "tool": "search", "attempt": 1}


def test_ids_are_optional_and_converted_as_given() -> None:
    plain = requests.failure_report_from_proto(pb.ReportFailureRequest(**CALL))
    assert (plain.user_id, plain.session_id) == ("", "")
    named = requests.failure_report_from_proto(
        pb.ReportFailureRequest(**CALL, user_id="u-1", session_id="s-1")
    )
    assert (named.user_id, named.session_id) == ("u-1", "s-1")
    outcome = requests.outcome_report_from_proto(
        pb.ReportOutcomeRequest(**CALL, outcome=pb.OUTCOME_SUCCESS, user_id="u", session_id="s")
    )
    assert (outcome.user_id, outcome.session_id) == ("u", "s")


@pytest.mark.parametrize(
    ("value", "problem"),
    [("x" * (MAX_ID_LENGTH + 1), "at most"), ("a\nb", "control characters"), ("  ", "required")],
)
def test_ids_have_the_bounds_of_other_ids(value: str, problem: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        requests.failure_report_from_proto(
            pb.ReportFailureRequest(**CALL, user_id=value, session_id=value)
        )
    fields = {violation.field: violation.description for violation in refused.value.violations}
    assert problem in fields["user_id"]
    assert problem in fields["session_id"]


def test_hashing_is_the_hex_sha256_of_salt_and_id_and_leaves_empty_ids_empty() -> None:
    assert IdHashing()("alice") == hashlib.sha256(b"alice").hexdigest()
    assert IdHashing("pepper")("alice") == hashlib.sha256(b"pepperalice").hexdigest()
    assert IdHashing("pepper")("") == ""


def test_private_reports_carry_hashed_ids_and_compare_equal_when_repeated() -> None:
    telemetry = Telemetry(IdHashing("s"), None)
    report = FailureReport(**CALL, error=ToolFailure(), user_id="alice", session_id="one")
    hashed = telemetry.private(report)
    assert hashed.user_id == hashlib.sha256(b"salice").hexdigest()
    assert hashed.session_id == hashlib.sha256(b"sone").hexdigest()
    assert telemetry.private(report) == hashed  # a repeat is the same recorded report
    outcome = OutcomeReport(**CALL, outcome=Outcome.SUCCESS, user_id="alice")
    assert telemetry.private(outcome).user_id == hashed.user_id
    assert Telemetry(None, None).private(report) is report


def test_without_settings_or_environment_there_is_no_telemetry() -> None:
    assert telemetry_from(Settings(), {}) is None
    assert telemetry_from(Settings(telemetry_hash_ids=True), {}) is not None


@pytest.mark.parametrize(
    ("settings", "environ", "endpoint"),
    [
        (Settings(), {}, None),
        (Settings(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, "http://c:4318/v1/traces"),
        (Settings(), {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/t"}, "http://c/t"),
        (
            Settings(otel_endpoint="http://file:4318"),
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"},
            "http://file:4318/v1/traces",
        ),
        (Settings(), DISABLED, None),
    ],
)
def test_export_is_off_unless_an_endpoint_is_configured(
    settings: Settings, environ: dict[str, str], endpoint: str | None
) -> None:
    assert traces_endpoint(settings, environ) == endpoint


def test_an_otel_endpoint_must_be_an_http_url() -> None:
    with pytest.raises(ConfigError, match="otel_endpoint"):
        Settings(otel_endpoint="collector:4317")


# Spans without the OpenTelemetry SDK (errord.wire.otel, errord.wire.otlp)

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"


@pytest.mark.parametrize(
    ("traceparent", "parsed"),
    [
        (f"00-{TRACE}-{PARENT}-01", (bytes.fromhex(TRACE), bytes.fromhex(PARENT), 1)),
        (f"00-{TRACE}-{PARENT}-00", (bytes.fromhex(TRACE), bytes.fromhex(PARENT), 0)),
        (f"01-{TRACE}-{PARENT}-01-later", (bytes.fromhex(TRACE), bytes.fromhex(PARENT), 1)),
        (f"00-{TRACE}-{PARENT}-01-later", None),
        (f"ff-{TRACE}-{PARENT}-01", None),
        (f"00-{'0' * 32}-{PARENT}-01", None),
        (f"00-{TRACE}-{'0' * 16}-01", None),
        (f"00-{TRACE.upper()}-{PARENT}-01", None),
        (f"00-{TRACE}-{PARENT}", None),
        ("", None),
    ],
)
def test_a_w3c_traceparent_parses_as_the_specification_says(
    traceparent: str, parsed: tuple[bytes, bytes, int] | None
) -> None:
    """Version 00 exactly, a later version with more fields, lower-case hex, no all-zero
    ids, never version ff; anything else is no context."""
    found = parent_of([("traceparent", traceparent), ("tracestate", "a=1")])
    assert (found and found[:3]) == parsed
    if found:
        assert found[3] == "a=1"


def test_export_settings_are_the_sdks_variables_traces_ones_first() -> None:
    assert ExportSettings.from_environ({}) == ExportSettings()
    settings = ExportSettings.from_environ(
        {
            "OTEL_BSP_SCHEDULE_DELAY": "250",
            "OTEL_BSP_MAX_QUEUE_SIZE": "100",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "10",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1000",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2000",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x=1",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod",
        }
    )
    assert settings == ExportSettings(
        schedule_delay=0.25,
        max_queue_size=100,
        max_export_batch_size=10,
        timeout=2.0,
        headers=(("api-key", "a b"), ("x", "1")),
        gzip=True,
        resource=(("deployment.environment", "prod"),),
    )


@pytest.mark.parametrize(
    "environ",
    [
        {"OTEL_BSP_SCHEDULE_DELAY": "soon"},
        {"OTEL_BSP_MAX_QUEUE_SIZE": "0"},
        {"OTEL_EXPORTER_OTLP_HEADERS": "no-equals-sign"},
    ],
)
def test_a_malformed_export_variable_is_a_config_error_naming_it(
    environ: dict[str, str],
) -> None:
    [(name, _)] = environ.items()
    expected = {"OTEL_BSP_MAX_QUEUE_SIZE": "max_queue_size"}.get(name, name)
    with pytest.raises(ConfigError, match=expected):
        ExportSettings.from_environ(environ)


AT = datetime(2026, 1, 1, 0, 0, 1, 500, tzinfo=UTC)


def record(n: int, parent: bytes = b"", failed: bool = True) -> SpanRecord:
    """The n-th span of a turn, with shared and own attributes."""
    attributes: dict[str, str | int | float | bool] = {
        "rpc.method": "ReportFailure",
        "gen_ai.tool.call.id": f"c{n}",
        "errord.attempt": 1,
        "errord.delay_ms": 250,
        "errord.jitter": 0.5,
        "errord.probe": True,
    }
    span_id = (n + 1).to_bytes(8, "big")
    return ("S/ReportFailure", b"t" * 16, span_id, parent, "", 1, AT, attributes, failed)


def decoded(body: bytes) -> list[Any]:
    request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
    return [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]


def test_a_record_is_encoded_as_the_otlp_span_it_describes() -> None:
    encoder = Encoder([("service.name", "errord")], ("errord", "1"))
    request, spans = encoder.request()
    encoder.fill(spans.add(), record(0, parent=b"p" * 8))
    encoder.fill(spans.add(), record(1, failed=False))
    [child, root] = decoded(request.SerializeToString())
    assert request.resource_spans[0].resource.attributes[0].value.string_value == "errord"
    assert request.resource_spans[0].scope_spans[0].scope.name == "errord"
    assert (child.trace_id, child.span_id, child.parent_span_id) == (
        b"t" * 16,
        (1).to_bytes(8, "big"),
        b"p" * 8,
    )
    assert child.flags == 0x301  # sampled; the parent is remote
    assert root.flags == 0x101
    assert child.start_time_unix_nano == child.end_time_unix_nano == 1767225601000500000
    assert child.kind == child.SPAN_KIND_SERVER
    assert child.status.code == child.status.STATUS_CODE_ERROR
    assert root.status.code == root.status.STATUS_CODE_UNSET
    assert attributes(child) == record(0)[7]
    assert attributes(root) == record(1)[7]


class Receiving:
    """A Post that answers each body with the next of ``statuses`` (then 200), and an
    event set once it has answered ``expected`` bodies."""

    def __init__(self, *statuses: int, expected: int = 1) -> None:
        self.statuses = list(statuses)
        self.bodies: list[bytes] = []
        self.expected = expected
        self.done = threading.Event()

    def __call__(self, body: bytes) -> int:
        self.bodies.append(body)
        if len(self.bodies) >= self.expected:
            self.done.set()
        return self.statuses.pop(0) if self.statuses else 200


def export(post: Post, **settings: Any) -> OtlpExport:
    encoder = Encoder([], ("errord", "1"))
    return OtlpExport(encoder, post, ExportSettings(**settings), retry_pause=0.001)


def test_a_full_batch_is_posted_at_once_and_the_rest_at_stop() -> None:
    post = Receiving()
    exporting = export(post, schedule_delay=3600, max_export_batch_size=2)
    for n in range(3):
        exporting.add(record(n))
    assert post.done.wait(10)  # the full batch, long before the delay
    exporting.close()
    assert [len(decoded(body)) for body in post.bodies] == [2, 1]


def test_a_receiver_answering_503_is_asked_again_and_a_400_is_not() -> None:
    post = Receiving(503, 429, 400, expected=4)
    exporting = export(post, max_export_batch_size=1)
    exporting.add(record(0))
    exporting.add(record(1))
    assert post.done.wait(10)
    exporting.close()
    assert [len(decoded(body)) for body in post.bodies] == [1, 1, 1, 1]
    assert post.bodies[0] == post.bodies[1] == post.bodies[2] != post.bodies[3]
    assert exporting.given_up == 1  # the 400's


def test_a_receiver_that_keeps_failing_is_given_up_after_the_bounded_attempts() -> None:
    post = Receiving(*[503] * 10, expected=MAX_ATTEMPTS)
    exporting = export(post, max_export_batch_size=1)
    exporting.add(record(0))
    assert post.done.wait(10)
    exporting.close()
    assert len(post.bodies) == MAX_ATTEMPTS
    assert exporting.given_up == 1


def test_at_stop_what_waits_is_posted_once_without_retries() -> None:
    """A stopping daemon does not wait out a receiver's backoff: one attempt a request."""
    post = Receiving(503)
    exporting = export(post, schedule_delay=3600)
    exporting.add(record(0))
    exporting.close()
    assert len(post.bodies) == 1
    assert exporting.given_up == 1


def test_spans_are_dropped_and_counted_never_waited_for_when_too_many_wait() -> None:
    """With the receiver stuck on the first request and two more waiting (a queue of two
    batches of one), the next span is dropped; the others are posted once it answers."""
    posting, answer = threading.Event(), threading.Event()
    bodies: list[bytes] = []

    def stuck(body: bytes) -> int:
        bodies.append(body)
        posting.set()
        answer.wait(10)
        return 200

    exporting = export(stuck, max_export_batch_size=1, max_queue_size=2)
    exporting.add(record(0))
    assert posting.wait(10)
    for n in (1, 2, 3):
        exporting.add(record(n))
    assert exporting.dropped == 1
    answer.set()
    exporting.close()
    assert [decoded(body)[0].span_id for body in bodies] == [
        (n + 1).to_bytes(8, "big") for n in (0, 1, 2)
    ]


def test_otlp_spans_post_gzip_and_honour_the_sampled_flag() -> None:
    """OtlpSpans over HTTP to a receiver: compressed as asked, the caller's unsampled
    context gets no span, its sampled one a child span, none a root of the turn's trace."""
    with OtlpReceiver() as receiver:
        environ = {"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_RESOURCE_ATTRIBUTES": "a=b"}
        spans = OtlpSpans(receiver.endpoint + "/v1/traces", "errord-test", environ)
        for flags in ("00", "01"):
            metadata = [("traceparent", f"00-{TRACE}-{PARENT}-{flags}")]
            spans.emit("S/M", metadata, "turn", AT, {"errord.turn_id": flags}, False)
        spans.emit("S/M", [], "turn", AT, {"errord.turn_id": "none"}, False)
        spans.close()
        received = receiver.spans
        resource = {item.key: item.value.string_value for item in receiver.resources[0].attributes}
    assert [attributes(span)["errord.turn_id"] for span in received] == ["01", "none"]
    assert received[0].parent_span_id == bytes.fromhex(PARENT)
    assert received[1].trace_id == hashlib.sha256(b"turn").digest()[:16]
    assert resource == {
        "a": "b",
        "service.name": "errord-test",
        "service.version": errord.__version__,
    }


def test_a_call_handed_back_to_the_model_names_the_correction_on_its_span() -> None:
    def decision(correction: Correction | None) -> Decision:
        return Decision(
            decision_id="d1",
            turn_id="t",
            call_id="c",
            tool="search",
            attempt=1,
            action=Action.RETURN_TO_MODEL,
            classification=Classification(ErrorClass.PERMANENT, Code.INVALID_INPUT, "test"),
            reason="",
            llm_message="",
            user_message="",
            technical_message="",
            decided_at=datetime(2026, 1, 1, tzinfo=UTC),
            correction=correction,
        )

    missing = Correction(kind="missing_parameter", message="query is required", parameter="query")
    attributes = failure_attributes("ReportFailure", decision(missing), None)
    assert attributes["errord.correction.type"] == "missing_parameter"
    assert attributes["errord.correction.parameter"] == "query"
    unnamed = Correction(kind="invalid_arguments", message="?")
    attributes = failure_attributes("ReportFailure", decision(unnamed), None)
    assert attributes["errord.correction.type"] == "invalid_arguments"
    assert "errord.correction.parameter" not in attributes
    assert "errord.correction.type" not in failure_attributes("ReportFailure", decision(None), None)
