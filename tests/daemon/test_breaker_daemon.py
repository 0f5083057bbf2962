"""Breakers and tool statistics on the real daemon process: many clients, SIGKILL, Prometheus."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import (
    DaemonProcess,
    grpcurl,
    operator_channel,
    run_errord,
    start_process,
    sync_operator_channel,
)

COOLDOWN = 2.0
METRICS = re.compile(r"metrics on http://(\S+)/metrics")


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    directory = tmp_path / "tools"
    directory.mkdir()
    (directory / "search.yaml").write_text(
        textwrap.dedent(
            f"""\
            tools:
              - name: search
                timeout_ms: 5000
                circuit_breaker:
                  failure_threshold: 3
                  first_timeout_ms: {int(COOLDOWN * 1000)}
                  timeout_ms: {int(COOLDOWN * 1000)}
                  success_threshold: 2
                alternatives: [search_backup]
              - name: search_backup
            """
        )
    )
    return directory


def start(tmp_path: Path, tools: Path, *extra: str) -> DaemonProcess:
    return start_process(
        "--listen",
        "127.0.0.1:0",
        "--db",
        str(tmp_path / "errord.db"),
        "--manifests",
        str(tools),
        *extra,
    )


@pytest.fixture
def errord(tmp_path: Path, tools: Path) -> Iterator[DaemonProcess]:
    running = start(tmp_path, tools, "--metrics-listen", "127.0.0.1:0")
    yield running
    running.terminate(signal.SIGKILL)


def failure(call: str, attempt: int = 1, turn: str = "turn") -> pb.ReportFailureRequest:
    return pb.ReportFailureRequest(
        turn_id=turn,
        call_id=call,
        tool="search",
        attempt=attempt,
        error=pb.ToolError(
            code=pb.ERROR_CODE_TIMEOUT, exception_type="TimeoutError", message="timed out"
        ),
    )


def success(
    call: str, attempt: int, turn: str = "turn", seconds: float = 0.2
) -> pb.ReportOutcomeRequest:
    request = pb.ReportOutcomeRequest(
        turn_id=turn, call_id=call, tool="search", attempt=attempt, outcome=pb.OUTCOME_SUCCESS
    )
    request.duration.FromTimedelta(timedelta(seconds=seconds))
    return request


def stubs(daemon: DaemonProcess) -> tuple[grpc.Channel, Any, Any]:
    """A channel to ``daemon`` whose calls carry its operator token, and its two stubs."""
    channel = sync_operator_channel(daemon.address, daemon.token)
    return (
        channel,
        errord_pb2_grpc.ErrorHandlerServiceStub(channel),
        errord_pb2_grpc.OperatorServiceStub(channel),
    )


def trip(errors: Any, turn: str = "turn") -> list[Any]:
    return [errors.ReportFailure(failure(f"trip-{n}", turn=turn)).decision for n in range(3)]


def wait_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()) + 0.05)


async def test_fifty_concurrent_reports_for_a_half_open_tool_get_one_probe(
    errord: DaemonProcess,
) -> None:
    channel, errors, _ = stubs(errord)
    with channel:
        *_, tripped = trip(errors)
        assert tripped.breaker.phase == pb.BREAKER_PHASE_OPEN
        wait_until(tripped.breaker.half_opens_at.ToDatetime(tzinfo=UTC))
    channels = [operator_channel(errord.address, errord.token) for _ in range(50)]
    try:
        decisions = await asyncio.gather(
            *(
                errord_pb2_grpc.ErrorHandlerServiceStub(channel).ReportFailure(
                    failure(f"concurrent-{n}")
                )
                for n, channel in enumerate(channels)
            )
        )
    finally:
        await asyncio.gather(*(channel.close() for channel in channels))
    actions = [response.decision.action for response in decisions]
    assert actions.count(pb.RECOVERY_ACTION_RETRY) == 1
    assert actions.count(pb.RECOVERY_ACTION_USE_ALTERNATIVE) == 49
    assert sum(response.decision.probe for response in decisions) == 1


def test_an_open_breaker_survives_sigkill_then_one_probe_and_two_successes_close_it(
    tmp_path: Path, tools: Path
) -> None:
    first = start(tmp_path, tools)
    channel, errors, operators = stubs(first)
    with channel:
        trip(errors)
        before = operators.GetBreaker(pb.GetBreakerRequest(tool="search")).breaker
    first.terminate(signal.SIGKILL)
    assert (
        'level=warning logger=errord msg="circuit breaker of search opened after 3 consecutive '
        "transient failures (3 of its last 3 attempts failed); half-opens at "
    ) in first.stderr

    second = start(tmp_path, tools)
    try:
        channel, errors, operators = stubs(second)
        with channel:
            after = operators.GetBreaker(pb.GetBreakerRequest(tool="search")).breaker
            assert after.effective_phase == pb.BREAKER_PHASE_OPEN
            assert after.state.half_opens_at == before.state.half_opens_at
            left = after.half_opens_in.ToTimedelta().total_seconds()
            assert 0 < left < COOLDOWN
            refused = errors.ReportFailure(failure("after-restart")).decision
            assert refused.action == pb.RECOVERY_ACTION_USE_ALTERNATIVE
            assert "the circuit breaker of search is open" in refused.reason

            wait_until(after.state.half_opens_at.ToDatetime(tzinfo=UTC))
            probe = errors.ReportFailure(failure("probe-1")).decision
            assert (probe.action, probe.probe) == (pb.RECOVERY_ACTION_RETRY, True)
            assert errors.ReportFailure(failure("meanwhile")).decision.action == (
                pb.RECOVERY_ACTION_USE_ALTERNATIVE
            )
            errors.ReportOutcome(success("probe-1", attempt=2))
            second_probe = errors.ReportFailure(failure("probe-2")).decision
            assert second_probe.probe
            errors.ReportOutcome(success("probe-2", attempt=2))
            closed = operators.GetBreaker(pb.GetBreakerRequest(tool="search")).breaker
            assert closed.effective_phase == pb.BREAKER_PHASE_CLOSED

            events = errors.GetTurnTrace(pb.GetTurnTraceRequest(turn_id="turn")).events
            changes = [
                pb.BreakerChange.Name(event.breaker.change)
                for event in events
                if event.WhichOneof("event") == "breaker"
            ]
            assert changes == [
                "BREAKER_CHANGE_OPENED",
                "BREAKER_CHANGE_HALF_OPENED",
                "BREAKER_CHANGE_CLOSED",
            ]
            assert all(e.tool == "search" for e in events if e.WhichOneof("event") == "breaker")
    finally:
        second.terminate(signal.SIGTERM)
    assert 'level=info logger=errord msg="circuit breaker of search half-opened' in second.stderr
    assert 'level=info logger=errord msg="circuit breaker of search closed' in second.stderr


def scrape(errord: DaemonProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    match = METRICS.search(errord.stderr)
    assert match, errord.stderr
    with urllib.request.urlopen(f"http://{match[1]}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.labels.get("tool") == "search"
    }


def counter(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted({"tool": "search", "scope": "", **labels}.items())))]


def test_the_prometheus_endpoint_moves_with_reports_and_agrees_with_get_tool_stats(
    errord: DaemonProcess,
) -> None:
    channel, errors, operators = stubs(errord)
    with channel:
        errors.ReportFailure(failure("a"))
        errors.ReportOutcome(success("a", attempt=2, seconds=0.3))
        before = scrape(errord)
        assert counter(before, "errord_tool_executions_total") == 2
        trip(errors)
        errors.ReportFailure(failure("b", turn="other"))
        after = scrape(errord)
        [stats] = operators.GetToolStats(pb.GetToolStatsRequest(tool="search")).tools

    assert counter(after, "errord_tool_executions_total") == stats.executions == 6
    assert counter(after, "errord_tool_successes_total") == stats.successes == 1
    assert counter(after, "errord_tool_errors_total", **{"class": "transient"}) == 5
    assert stats.transient_errors == 5
    assert counter(after, "errord_tool_timeouts_total") == stats.timeouts == 5
    assert counter(after, "errord_tool_retries_total") == stats.retries == 3
    assert counter(after, "errord_tool_retry_successes_total") == stats.retry_successes == 1
    assert counter(after, "errord_tool_breaker_opens_total") == stats.breaker_opens == 1
    assert counter(after, "errord_tool_errors_by_code_total", code="TIMEOUT") == 5
    assert stats.errors_by_code == {"TIMEOUT": 5}
    assert (
        counter(after, "errord_tool_errors_by_exception_total", exception_type="TimeoutError")
        == (stats.errors_by_exception["TimeoutError"])
    )
    assert (
        counter(after, "errord_tool_decisions_total", action="USE_ALTERNATIVE")
        == (stats.decisions["USE_ALTERNATIVE"])
    )
    assert counter(after, "errord_tool_duration_seconds_count") == 1
    assert counter(after, "errord_tool_duration_seconds_sum") == pytest.approx(0.3)
    assert counter(after, "errord_tool_breaker_state", state="open") == 1
    assert counter(after, "errord_tool_alert", alert="breaker_tripped") == 1
    assert [pb.AlertKind.Name(alert.kind) for alert in stats.alerts] == [
        "ALERT_KIND_BREAKER_TRIPPED"
    ]
    assert stats.failure_rate == pytest.approx(5 / 6)


def test_operators_use_grpcurl_and_the_cli(errord: DaemonProcess) -> None:
    assert "errord.v1.OperatorService" in grpcurl(errord.address, "list").split()
    channel, errors, _ = stubs(errord)
    with channel:
        trip(errors)
    listed = json.loads(
        grpcurl(
            errord.address,
            "errord.v1.OperatorService/ListBreakers",
            header=f"authorization: Bearer {errord.token}",
        )
    )
    by_tool = {breaker["tool"]: breaker for breaker in listed["breakers"]}
    assert by_tool["search"]["effective_phase"] == "BREAKER_PHASE_OPEN"
    assert by_tool["search_backup"]["effective_phase"] == "BREAKER_PHASE_CLOSED"

    reset = json.loads(
        grpcurl(
            errord.address,
            "errord.v1.OperatorService/ResetBreaker",
            data={"tool": "search", "by": "ops: backend fixed"},
            header=f"authorization: Bearer {errord.token}",
        )
    )
    assert reset["event"]["breaker"]["change"] == "BREAKER_CHANGE_RESET"
    assert reset["event"]["breaker"]["by"] == "ops: backend fixed"

    stats = run_errord("stats", "search", "--address", errord.address, *errord.token_args)
    assert stats.returncode == 0, stats.stderr
    assert stats.stdout.startswith("search  breaker CLOSED, opened 1 time\n")
    assert "attempts 3: 0 succeeded, 3 failed (3 transient, 0 permanent), 3 timeouts" in (
        stats.stdout
    )
    forced = run_errord(
        "breaker", "open", "search_backup", "--address", errord.address, *errord.token_args
    )
    assert (
        forced.stdout.strip()
        == "search_backup  breaker OPEN (forced open until reset), opened 1 time"
    )
    unknown = run_errord(
        "breaker", "reset", "serch", "--address", errord.address, *errord.token_args
    )
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == (
        "errord: NOT_FOUND: no tool 'serch': it has no manifest and errord has no report of it"
    )


def test_the_cli_says_when_no_daemon_answers(tmp_path: Path) -> None:
    result = run_errord("stats", "--address", "127.0.0.1:9")
    assert result.returncode == 1
    assert result.stderr.startswith("errord: UNAVAILABLE: no errord answering at 127.0.0.1:9")
