"""OpenTelemetry: errord as a process exports a span per decided report over OTLP/HTTP to a
receiver decoding the real protocol. Spans join the executor's trace (its context goes
with the call's metadata), or share a trace derived from the turn id; user and session
ids are recorded, exported, hashed when asked, and never logged. With export off, nothing
of opentelemetry is imported."""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from errord_client import Executor, ResultStatus
from errord_client.tools import mock_tool
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc
from google.protobuf import json_format
from opentelemetry.sdk.trace import TracerProvider

from tests.executor_helpers import Errord, wait_for, write_manifests
from tests.fixtures.leaks import LEAKS, Leak
from tests.helpers import (
    DaemonProcess,
    operator_channel,
    scrape,
    start_process,
    subprocess_env,
    sync_operator_channel,
)
from tests.otlp_sink import OtlpReceiver, attributes

SERVICE = "errord.v1.ErrorHandlerService"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def exporting(
    receiver: OtlpReceiver, tmp_path: Path, *settings: str, manifests: str = ""
) -> DaemonProcess:
    """errord exporting to ``receiver`` (quickly: a 50 ms batch delay), with the settings
    file lines ``settings`` and the tool manifests ``manifests`` (YAML), if any."""
    config = tmp_path / "errord.toml"
    config.write_text("\n".join(settings) + "\n")
    env = subprocess_env(
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY="50",
        OTEL_SERVICE_NAME="errord-under-test",
    )
    args = ["--config", str(config), "--listen", "127.0.0.1:0", "--db", str(tmp_path / "db")]
    if manifests:
        args += ["--manifests", str(write_manifests(tmp_path, manifests))]
    return start_process(*args, env=env)


def of_turn(turn_id: str, method: str) -> Any:
    """A predicate: the spans hold one of ``method`` for ``turn_id``."""

    def found(spans: list[Any]) -> bool:
        return any(
            attributes(span).get("errord.turn_id") == turn_id
            and attributes(span)["rpc.method"] == method
            for span in spans
        )

    return found


def spans_of(spans: list[Any], turn_id: str) -> list[Any]:
    return [span for span in spans if attributes(span).get("errord.turn_id") == turn_id]


async def test_an_executors_failure_is_a_child_of_its_span_in_its_trace(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    daemon = exporting(receiver, tmp_path)
    tracer = TracerProvider().get_tracer("agent")
    flaky = mock_tool("flaky", {"ok": 2}, script=[TimeoutError("upstream timed out")])
    try:
        async with Executor([flaky], target=daemon.address) as executor:
            with tracer.start_as_current_span("agent turn") as agent:
                [result] = await executor.run(
                    [{"id": "c1", "name": "flaky", "arguments": {}}], turn_id="turn-otel"
                )
        spans = receiver.wait_for(of_turn("turn-otel", "ReportOutcome"))
    finally:
        daemon.terminate()
    assert result.status is ResultStatus.SUCCEEDED
    context = agent.get_span_context()
    by_method = {attributes(span)["rpc.method"]: span for span in spans_of(spans, "turn-otel")}
    assert set(by_method) == {"ReportFailure", "ReportOutcome"}
    for span in by_method.values():
        assert int.from_bytes(span.trace_id, "big") == context.trace_id
        assert int.from_bytes(span.parent_span_id, "big") == context.span_id
    failure = by_method["ReportFailure"]
    assert failure.name == f"{SERVICE}/ReportFailure"
    assert failure.status.code == failure.status.STATUS_CODE_ERROR
    assert failure.start_time_unix_nano == failure.end_time_unix_nano > 0
    seen = attributes(failure)
    assert seen == seen | {
        "rpc.system": "grpc",
        "rpc.service": SERVICE,
        "rpc.method": "ReportFailure",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "flaky",
        "gen_ai.tool.call.id": "c1",
        "errord.turn_id": "turn-otel",
        "errord.attempt": 1,
        "errord.classification.class": "TRANSIENT",
        "errord.classification.code": "TIMEOUT",
        "errord.action": "RETRY",
        "errord.breaker.phase": "CLOSED",
        "error.type": "TimeoutError",
    }
    assert seen["errord.delay_ms"] >= 0
    assert seen["errord.classification.rule"]
    assert (
        seen["errord.decision_id"] == attributes(by_method["ReportOutcome"])["errord.decision_id"]
    )
    assert attributes(by_method["ReportOutcome"])["errord.outcome"] == "SUCCESS"
    resource = {item.key: item.value.string_value for item in receiver.resources[0].attributes}
    assert resource["service.name"] == "errord-under-test"


def report(turn_id: str, call_id: str, **fields: Any) -> pb.ReportFailureRequest:
    error = pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="timed out")
    return pb.ReportFailureRequest(
        turn_id=turn_id, call_id=call_id, tool="search", attempt=1, error=error, **fields
    )


def test_without_a_context_a_turns_spans_are_roots_of_the_trace_its_id_derives(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    daemon = exporting(receiver, tmp_path)
    try:
        with sync_operator_channel(daemon.address, daemon.token) as channel:
            stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            stub.ReportFailure(report("turn-alone", "c1"), timeout=10)
            stub.ReportFailures(
                pb.ReportFailuresRequest(failures=[report("turn-alone", "c2")]), timeout=10
            )
            stub.ReportFailure(report("turn-alone", "c1"), timeout=10)  # replayed: no span
            stub.ReportFailure(report("turn-other", "c1"), timeout=10)
        spans = receiver.wait_for(of_turn("turn-other", "ReportFailure"))
    finally:
        daemon.terminate()
    derived = hashlib.sha256(b"turn-alone").digest()[:16]
    alone = spans_of(spans, "turn-alone")
    assert sorted(attributes(span)["rpc.method"] for span in alone) == [
        "ReportFailure",
        "ReportFailures",
    ]
    assert [span.trace_id for span in alone] == [derived, derived]
    assert [span.parent_span_id for span in alone] == [b"", b""]
    assert alone[0].span_id != alone[1].span_id
    [other] = spans_of(spans, "turn-other")
    assert other.trace_id == hashlib.sha256(b"turn-other").digest()[:16]


@pytest.mark.parametrize("hashed", [False, True])
def test_user_and_session_ids_are_recorded_and_exported_never_logged(
    receiver: OtlpReceiver, tmp_path: Path, hashed: bool
) -> None:
    settings = ["telemetry_hash_ids = true", 'telemetry_id_salt = "pepper"'] if hashed else []
    daemon = exporting(receiver, tmp_path, 'log_level = "debug"', *settings)
    ids: dict[str, Any] = {"user_id": "alice-7f3", "session_id": "session-9c1"}
    try:
        with sync_operator_channel(daemon.address, daemon.token) as channel:
            stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            decision = stub.ReportFailure(report("turn-ids", "c1", **ids), timeout=10).decision
            outcome = pb.ReportOutcomeRequest(
                turn_id="turn-ids",
                call_id="c1",
                tool="search",
                attempt=2,
                outcome=pb.OUTCOME_SUCCESS,
                decision_id=decision.decision_id,
                **ids,
            )
            stub.ReportOutcome(outcome, timeout=10)
        spans = receiver.wait_for(of_turn("turn-ids", "ReportOutcome"))
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    expected = {
        name: hashlib.sha256(f"pepper{value}".encode()).hexdigest() if hashed else value
        for name, value in ids.items()
    }
    for span in spans_of(spans, "turn-ids"):
        assert attributes(span)["user.id"] == expected["user_id"]
        assert attributes(span)["session.id"] == expected["session_id"]
    recorded = b"".join(
        body if isinstance(body, bytes) else body.encode()
        for (body,) in sqlite3.connect(tmp_path / "db").execute(
            "SELECT body FROM events WHERE turn_id = 'turn-ids'"
        )
    )
    for name, value in ids.items():
        assert expected[name].encode() in recorded
        assert (value.encode() in recorded) is not hashed
        assert value not in daemon.stderr
        assert expected[name] not in daemon.stderr
    assert "decision" in daemon.stderr  # the log was there to look in


@pytest.mark.parametrize("hashed", [False, True])
async def test_an_executors_user_and_session_are_in_the_trace_and_the_span(
    receiver: OtlpReceiver, tmp_path: Path, hashed: bool
) -> None:
    """``Executor(user_id=..., session_id=...)``: its reports carry them, so errord records
    them with the turn (hashed when configured) and exports them on the span."""
    settings = ["telemetry_hash_ids = true", 'telemetry_id_salt = "pepper"'] if hashed else []
    daemon = exporting(receiver, tmp_path, *settings)
    ids = {"user_id": "ada-42", "session_id": "chat-17"}
    flaky = mock_tool("flaky", {"ok": 2}, script=[TimeoutError("upstream timed out")])
    try:
        async with Executor(
            [flaky],
            target=daemon.address,
            decision_timeout=10,
            user_id=ids["user_id"],
            session_id=ids["session_id"],
        ) as ex:
            [result] = await ex.run(
                [{"id": "c1", "name": "flaky", "arguments": {}}], turn_id="turn-user"
            )
        spans = receiver.wait_for(of_turn("turn-user", "ReportOutcome"))
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    assert result.status is ResultStatus.SUCCEEDED
    expected = {
        name: hashlib.sha256(f"pepper{value}".encode()).hexdigest() if hashed else value
        for name, value in ids.items()
    }
    for span in spans_of(spans, "turn-user"):
        assert attributes(span)["user.id"] == expected["user_id"]
        assert attributes(span)["session.id"] == expected["session_id"]
    recorded = b"".join(
        body if isinstance(body, bytes) else body.encode()
        for (body,) in sqlite3.connect(tmp_path / "db").execute(
            "SELECT body FROM events WHERE turn_id = 'turn-user'"
        )
    )
    for name, value in ids.items():
        assert expected[name].encode() in recorded
        assert (value.encode() in recorded) is not hashed


ALTERNATIVES = """\
    tools:
      - name: search
        alternatives: [search_backup]
      - name: search_backup
    """


async def test_an_admission_refused_or_claiming_the_probe_is_a_span_of_its_breaker(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    """AdmitCall refused by an open breaker is an error span carrying errord's decision
    (the alternative) and the phase OPEN; once it half-opens, the admission that claims
    the probe is a span without error, saying probe_claimed and HALF_OPEN."""
    daemon = exporting(receiver, tmp_path, manifests=ALTERNATIVES)
    try:
        async with operator_channel(daemon.address, daemon.token) as channel:
            errord = Errord(channel)
            await errord.force_open("search", seconds=0.3)
            asked = pb.AdmitCallRequest(turn_id="turn-admit", tool="search", attempt=1)
            asked.call_id = "c-refused"
            refused = await errord.errors.AdmitCall(asked, timeout=10)

            async def half_open() -> bool:
                breaker = await errord.breaker("search")
                return breaker.effective_phase == pb.BREAKER_PHASE_HALF_OPEN

            await wait_for(half_open, "the forced-open breaker to half-open")
            asked.call_id = "c-probe"
            probe = await errord.errors.AdmitCall(asked, timeout=10)
        spans = receiver.wait_for(lambda spans: len(spans_of(spans, "turn-admit")) == 2)
    finally:
        daemon.terminate()
    assert (refused.admitted, probe.admitted, probe.probe) == (False, True, True)
    by_call = {
        attributes(span)["gen_ai.tool.call.id"]: span for span in spans_of(spans, "turn-admit")
    }
    refusal, claim = by_call["c-refused"], by_call["c-probe"]
    assert refusal.name == claim.name == f"{SERVICE}/AdmitCall"
    assert refusal.status.code == refusal.status.STATUS_CODE_ERROR
    assert claim.status.code == claim.status.STATUS_CODE_UNSET
    seen = attributes(refusal)
    assert seen == seen | {
        "rpc.method": "AdmitCall",
        "gen_ai.tool.name": "search",
        "errord.attempt": 1,
        "errord.classification.code": "CIRCUIT_OPEN",
        "errord.action": "USE_ALTERNATIVE",
        "errord.alternative_tool": "search_backup",
        "errord.breaker.phase": "OPEN",
        "errord.decision_id": refused.decision.decision_id,
    }
    seen = attributes(claim)
    assert seen == seen | {
        "rpc.method": "AdmitCall",
        "gen_ai.tool.name": "search",
        "errord.attempt": 1,
        "errord.admission": "probe_claimed",
        "errord.breaker.phase": "HALF_OPEN",
    }
    assert "errord.action" not in seen
    derived = hashlib.sha256(b"turn-admit").digest()[:16]
    assert refusal.trace_id == claim.trace_id == derived


OFF_OR_ON = """
import asyncio, sys
from pathlib import Path
from errord.config import Settings
from tests.helpers import start_in_process
import grpc
from errord_client.v1 import errord_pb2 as pb, errord_pb2_grpc

async def main() -> None:
    daemon = await start_in_process(Settings(listen="127.0.0.1:0", db=Path(sys.argv[1])))
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        error = pb.ToolError(code=pb.ERROR_CODE_TIMEOUT)
        await stub.ReportFailure(pb.ReportFailureRequest(
            turn_id="t", call_id="c", tool="search", attempt=1, error=error, user_id="u"))
        await stub.ReportOutcome(pb.ReportOutcomeRequest(
            turn_id="t", call_id="c", tool="search", attempt=2, outcome=pb.OUTCOME_SUCCESS))
    daemon.stop.set()
    await daemon.task
    print(sorted({name.split(".")[0] for name in sys.modules} & {"opentelemetry"}))

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("environment", "imported"),
    [({}, "[]"), ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, "['opentelemetry']")],
)
def test_with_export_off_serving_reports_imports_nothing_of_opentelemetry(
    tmp_path: Path, environment: dict[str, str], imported: str
) -> None:
    env = {name: value for name, value in subprocess_env().items() if not name.startswith("OTEL_")}
    env["PYTHONPATH"] += f":{Path(__file__).parents[2]}"  # the script imports tests.helpers
    env.update(environment)
    ran = subprocess.run(
        [sys.executable, "-c", OFF_OR_ON, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == imported


def leaking(index: int, leak: Leak) -> pb.ReportFailureRequest:
    """A report carrying ``leak`` in its exception type, message, arguments (in a value
    and under a secret-named key) and partial result."""
    error = pb.ToolError(
        code=pb.ERROR_CODE_UNAVAILABLE,
        exception_type=leak.shown,
        message=f"upstream said: {leak.shown}",
    )
    json_format.ParseDict({"rows": [{"text": leak.shown}, leak.shown]}, error.partial_result)
    request = pb.ReportFailureRequest(
        turn_id="turn-leaks", call_id=f"c{index}", tool="search", attempt=1, error=error
    )
    json_format.ParseDict(
        {"note": leak.shown, "api_key": leak.secret, "origin": "SFO"}, request.arguments
    )
    return request


def test_no_secret_of_a_report_reaches_the_collector(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    """Every fake credential of tests/fixtures/leaks.py (over 60, of over 30 formats: a
    Bearer token, an AWS secret, a JWT, a PEM block, the docs' ``sk-live-123``...) in a
    report's exception type, message, arguments and partial result, over ReportFailure
    and ReportFailures: none is in the bytes the collector received, nor in any span or
    attribute value decoded from them, nor in the metrics (errord_tool_errors_by_exception
    is labelled by exception type) or the debug log. Each span's ``error.type`` is the
    exception type as the trace records it, masked."""
    assert len({leak.kind for leak in LEAKS}) >= 15
    daemon = exporting(receiver, tmp_path, 'log_level = "debug"', 'metrics_listen = "127.0.0.1:0"')
    reports = [leaking(index, leak) for index, leak in enumerate(LEAKS)]
    try:
        with grpc.insecure_channel(daemon.address) as channel:
            stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            for one in reports[:10]:
                stub.ReportFailure(one, timeout=10)
            stub.ReportFailures(pb.ReportFailuresRequest(failures=reports[10:]), timeout=30)
        spans = receiver.wait_for(lambda spans: len(spans_of(spans, "turn-leaks")) == len(LEAKS))
        metrics = scrape(daemon)
    finally:
        daemon.terminate()
    values = [value for span in spans for value in attributes(span).values()]
    places = {
        "received bytes": b"\n".join(receiver.bodies),
        "decoded spans": "\n".join(str(span) for span in spans).encode(),
        "attribute values": "\n".join(map(str, values)).encode(),
        "metrics": metrics.encode(),
        "log": daemon.stderr.encode(),
    }
    leaked = {
        place: sorted({leak.kind for leak in LEAKS if leak.needle.encode() in found})
        for place, found in places.items()
    }
    assert leaked == {place: [] for place in places}
    error_types = [attributes(span)["error.type"] for span in spans_of(spans, "turn-leaks")]
    assert all("[REDACTED:" in error_type for error_type in error_types), error_types
    assert 'exception_type="[REDACTED:' in metrics  # the search looks where they would be
    assert "level=debug" in daemon.stderr
