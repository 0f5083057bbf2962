"""A tool's figures per execution on the real daemon: a call that succeeded at its fourth
attempt is one execution, a success, in GetToolStats, `errord stats` and Prometheus, and
four attempts, three of them failed."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from errord_client.executor import Executor
from errord_client.tools import function_tool
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from tests.executor_helpers import wait_for
from tests.helpers import DaemonProcess, operator_channel, run_errord, scrape, start_process


@pytest.fixture
def errord(tmp_path: Path) -> Iterator[DaemonProcess]:
    running = start_process(
        "--listen",
        "127.0.0.1:0",
        "--db",
        str(tmp_path / "errord.db"),
        "--metrics-listen",
        "127.0.0.1:0",
    )
    yield running
    running.terminate(signal.SIGKILL)


async def test_a_call_that_succeeded_at_its_fourth_attempt_is_one_execution_that_succeeded(
    errord: DaemonProcess,
) -> None:
    attempts = 0

    async def flaky_lookup(key: str) -> str:
        """Fails three times, then answers."""
        nonlocal attempts
        attempts += 1
        if attempts < 4:
            raise ConnectionError("connection reset by peer")
        return f"value of {key}"

    async with Executor([function_tool(flaky_lookup)], target=errord.address) as executor:
        [result] = await executor.run(
            [{"id": "c1", "name": "flaky_lookup", "arguments": {"key": "k"}}]
        )
    assert result.ok
    assert result.attempts == 4

    async with operator_channel(errord.address, errord.token) as channel:
        operators = errord_pb2_grpc.OperatorServiceStub(channel)

        async def recorded() -> pb.ToolStats | None:
            request = pb.GetToolStatsRequest(tool="flaky_lookup")
            [stats] = (await operators.GetToolStats(request, timeout=10)).tools
            return stats if stats.successes else None

        stats = await wait_for(recorded, "the success to be recorded")
    ran = stats.per_execution
    assert (ran.executions, ran.successes, ran.errors, ran.timeouts) == (1, 1, 0, 0)
    assert ran.failure_rate == 0.0
    assert ran.mean_duration.ToTimedelta().total_seconds() > 0
    assert (stats.executions, stats.successes, stats.errors) == (4, 1, 3)
    assert stats.failure_rate == pytest.approx(0.75)

    shown = run_errord("stats", "flaky_lookup", "--address", errord.address, *errord.token_args)
    assert shown.returncode == 0, shown.stderr
    assert "\n  executions 1: 1 succeeded, 0 failed, 0 timed out; failure rate 0.0%, mean " in (
        shown.stdout
    )
    assert "\n  attempts 4: 1 succeeded, 3 failed (3 transient, 0 permanent), 0 timeouts\n" in (
        shown.stdout
    )

    samples = {
        (sample.name, sample.labels.get("le", "")): sample.value
        for family in text_string_to_metric_families(scrape(errord))
        for sample in family.samples
        if sample.labels.get("tool") == "flaky_lookup"
    }
    assert samples[("errord_tool_call_executions_total", "")] == 1
    assert samples[("errord_tool_call_execution_successes_total", "")] == 1
    assert samples[("errord_tool_call_execution_errors_total", "")] == 0
    assert samples[("errord_tool_call_execution_duration_seconds_count", "")] == 1
    assert samples[("errord_tool_executions_total", "")] == 4
