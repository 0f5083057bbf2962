"""The real daemon process, driven by the real grpcurl binary, as an operator would."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import DaemonProcess, GrpcurlFailed, grpcurl, start_process

SERVICE = "errord.v1.ErrorHandlerService"


@pytest.fixture(scope="module")
def errord(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """One daemon for the module: each test that reports uses turns and tools of its own."""
    database = tmp_path_factory.mktemp("grpcurl") / "errord.db"
    running = start_process("--listen", "127.0.0.1:0", "--db", str(database))
    yield running
    assert running.terminate(signal.SIGTERM) == 0


def report(errord: DaemonProcess, **fields: Any) -> dict[str, Any]:
    request = {"turn_id": "turn-1", "call_id": "call_1", "tool": "flight_search", "attempt": 1}
    out = grpcurl(errord.address, f"{SERVICE}/ReportFailure", data=request | fields)
    return json.loads(out)["decision"]  # type: ignore[no-any-return]


def test_grpcurl_lists_the_service_with_health_and_reflection(errord: DaemonProcess) -> None:
    services = grpcurl(errord.address, "list").split()
    assert SERVICE in services
    assert "grpc.health.v1.Health" in services
    assert "grpc.reflection.v1alpha.ServerReflection" in services
    methods = set(grpcurl(errord.address, "list", SERVICE).split())
    names = (
        "BeginTurn",
        "EndTurn",
        "ReportFailure",
        "ReportFailures",
        "ReportOutcome",
        "ReconcileResults",
        "ValidateCall",
        "GetTurnTrace",
        "WatchTrace",
        "AdmitCall",
        "WatchTools",
    )
    assert methods == {f"{SERVICE}.{name}" for name in names}


def test_grpcurl_describes_the_service_and_its_messages(errord: DaemonProcess) -> None:
    service = grpcurl(errord.address, "describe", SERVICE)
    assert "rpc ReportFailure ( .errord.v1.ReportFailureRequest ) returns" in service
    assert "rpc WatchTrace ( .errord.v1.WatchTraceRequest ) returns ( stream" in service
    decision = grpcurl(errord.address, "describe", "errord.v1.RecoveryDecision")
    for name in (
        "decision_id",
        "action",
        "delay",
        "alternative_tool",
        "classification",
        "attempts_left",
        "reason",
        "llm_message",
        "user_message",
    ):
        assert f" {name} = " in decision


def test_grpcurl_health_check_reports_serving(errord: DaemonProcess) -> None:
    overall = json.loads(grpcurl(errord.address, "grpc.health.v1.Health/Check"))
    named = json.loads(
        grpcurl(errord.address, "grpc.health.v1.Health/Check", data={"service": SERVICE})
    )
    assert overall == named == {"status": "SERVING"}


def test_grpcurl_timeout_report_gets_a_transient_retry(errord: DaemonProcess) -> None:
    decision = report(
        errord, error={"code": "ERROR_CODE_TIMEOUT", "message": "Connection timeout after 30s"}
    )
    assert decision["action"] == "RECOVERY_ACTION_RETRY"
    assert decision["classification"] == {
        "error_class": "ERROR_CLASS_TRANSIENT",
        "code": "ERROR_CODE_TIMEOUT",
        "rule": "default:code:TIMEOUT",
        "fault": "FAULT_BACKEND",
    }
    assert 0.09 <= float(decision["delay"].removesuffix("s")) <= 0.11
    assert decision["attempts_left"] == 4
    assert decision["default_policy"] is True
    assert "Connection timeout after 30s" in decision["llm_message"]
    assert decision["user_message"] == "Flight search is taking too long; trying again."


def test_grpcurl_401_report_is_permanent_and_escalated(errord: DaemonProcess) -> None:
    decision = report(
        errord,
        turn_id="turn-2",
        call_id="call_2",
        tool="calendar",
        error={"http_status": 401, "message": "Unauthorized"},
    )
    assert decision["action"] == "RECOVERY_ACTION_ESCALATE"
    assert decision["classification"]["error_class"] == "ERROR_CLASS_PERMANENT"
    assert decision["classification"]["code"] == "ERROR_CODE_AUTH"
    assert decision["classification"]["rule"] == "default:http_status:401"
    assert "delay" not in decision


def test_grpcurl_reads_the_turn_trace_in_order(errord: DaemonProcess) -> None:
    first = report(
        errord, turn_id="turn-trace", tool="train_search", error={"code": "ERROR_CODE_TIMEOUT"}
    )
    second = report(
        errord,
        turn_id="turn-trace",
        tool="train_search",
        attempt=2,
        error={"code": "ERROR_CODE_TIMEOUT"},
    )
    grpcurl(
        errord.address,
        f"{SERVICE}/ReportOutcome",
        data={
            "turn_id": "turn-trace",
            "call_id": "call_1",
            "tool": "train_search",
            "attempt": 3,
            "outcome": "OUTCOME_SUCCESS",
            "duration": "0.250s",
        },
    )
    trace = json.loads(
        grpcurl(
            errord.address,
            f"{SERVICE}/GetTurnTrace",
            data={"turn_id": "turn-trace"},
            header=f"authorization: Bearer {errord.token}",
        )
    )
    events = trace["events"]
    assert events[0]["turn_began"]["implicit"] is True
    assert "deadline" in events[0]["turn_began"]  # the default: 300 s after it began
    assert "call_id" not in events[0]
    assert [e["failure"]["decision"]["decision_id"] for e in events[1:3]] == [
        first["decision_id"],
        second["decision_id"],
    ]
    assert events[3]["outcome"] == {
        "outcome": "OUTCOME_SUCCESS",
        "duration": "0.250s",
        # The success ended the two consecutive failures the breaker had counted; they stay
        # among its recent attempts, with the success.
        "breaker": {
            "phase": "BREAKER_PHASE_CLOSED",
            "recent_attempts": 3,
            "recent_failures": 2,
        },
    }
    sequences = [int(e["sequence"]) for e in events]
    assert sequences == sorted(sequences)


def test_grpcurl_bad_request_gets_invalid_argument_naming_the_field(errord: DaemonProcess) -> None:
    with pytest.raises(GrpcurlFailed) as failed:
        report(errord, call_id="")
    assert "Code: InvalidArgument" in str(failed.value)
    assert '"field":"call_id"' in str(failed.value).replace(" ", "")


def test_grpcurl_unknown_turn_is_not_found(errord: DaemonProcess) -> None:
    with pytest.raises(GrpcurlFailed, match="Code: NotFound"):
        grpcurl(
            errord.address,
            f"{SERVICE}/GetTurnTrace",
            data={"turn_id": "no-such-turn"},
            header=f"authorization: Bearer {errord.token}",
        )


def test_grpcurl_a_planned_turn_from_begin_to_end(daemon_process: DaemonProcess) -> None:
    """The README's walkthrough: a plan, a failure that takes its dependent along, EndTurn.
    A daemon of its own: flight_search is the module daemon's tool of another test."""
    errord = daemon_process
    grpcurl(
        errord.address,
        f"{SERVICE}/BeginTurn",
        data={
            "turn_id": "turn-5",
            "plan": [
                {"call_id": "call_1", "tool": "flight_search"},
                {"call_id": "call_2", "tool": "hotel_search"},
                {
                    "call_id": "call_3",
                    "tool": "hotel_reviews",
                    "depends_on": ["call_2"],
                    "optional": True,
                },
            ],
        },
    )
    decision = report(
        errord,
        turn_id="turn-5",
        call_id="call_2",
        tool="hotel_search",
        error={"http_status": 404, "message": "no such city"},
    )
    assert decision["action"] == "RECOVERY_ACTION_FAIL"  # no such city: nobody can help
    assert decision["consequences"] == [
        {
            "call_id": "call_3",
            "tool": "hotel_reviews",
            "action": "RECOVERY_ACTION_SKIP",
            "reason": "needs the result of call_2, which has none; skipped",
            "blocked_by": "call_2",
        }
    ]
    grpcurl(
        errord.address,
        f"{SERVICE}/ReportOutcome",
        data={
            "turn_id": "turn-5",
            "call_id": "call_1",
            "tool": "flight_search",
            "attempt": 1,
            "outcome": "OUTCOME_SUCCESS",
        },
    )
    ended = json.loads(grpcurl(errord.address, f"{SERVICE}/EndTurn", data={"turn_id": "turn-5"}))
    summary = ended["summary"]
    assert [(c["call_id"], c["status"]) for c in summary["calls"]] == [
        ("call_1", "CALL_STATUS_SUCCEEDED"),
        ("call_2", "CALL_STATUS_FAILED"),
        ("call_3", "CALL_STATUS_SKIPPED"),
    ]
    assert summary["user_notice"] == (
        "Completed flight search, but hotel search failed and hotel reviews was skipped."
    )
    assert summary["calls"][1]["detail"] == "attempt 1 of hotel_search failed; decided FAIL"
    assert summary["calls"][1]["decisions"][0]["decision_id"] == decision["decision_id"]


def test_grpcurl_an_error_the_model_caused_goes_back_to_it(errord: DaemonProcess) -> None:
    decision = report(
        errord,
        turn_id="turn-6",
        tool="document_search",
        error={"message": "The 'query' parameter is required"},
    )
    assert decision["action"] == "RECOVERY_ACTION_RETURN_TO_MODEL"
    assert decision["classification"]["code"] == "ERROR_CODE_INVALID_INPUT"
    assert decision["correction"] == {
        "type": "missing_parameter",
        "message": "The 'query' parameter is required",
        "parameter": "query",
        "retry_hint": "Call document_search again with 'query' corrected. If the user did not "
        "give the information it needs, ask them for it.",
        "corrections_left": 1,
    }
    assert decision["llm_message"].startswith(
        "Tool Execution Failed\nTool: document_search\nError Type: missing_parameter\n"
    )
    with pytest.raises(GrpcurlFailed) as unknown:
        grpcurl(
            errord.address,
            f"{SERVICE}/ValidateCall",
            data={"tool": "flight_search", "arguments": {"origin": "SFO"}},
        )
    assert "Code: NotFound" in str(unknown.value)
    assert "no manifest for tool 'flight_search'" in str(unknown.value)
