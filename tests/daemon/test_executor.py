"""The executor against errord as a process: it follows errord's decisions on failed
attempts (retry after the delay, the alternative, the plan's cascades), and everything it
did is in the turn's trace.

Each test starts its own daemon with its own manifests; the executors wait for errord's
answers longer than their default (``DECISIONS``) so that a loaded machine cannot turn a
decision into a local one: what is pinned here is what errord decides and the executor
does with it.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from errord_client.executor import DecidedBy, Executor, ResultStatus, ToolCall
from errord_client.tools import Hang, function_tool, mock_tool
from errord_client.v1 import errord_pb2 as pb

from tests.executor_helpers import (
    Errord,
    errord_process,
    failures,
    outcomes,
    seconds,
    timed,
    wait_for,
)
from tests.helpers import operator_channel

DECISIONS = 10.0
"""Seconds each executor gives errord to answer before its local policy would decide."""


async def test_a_tool_that_times_out_twice_then_succeeds_is_retried_after_errords_delays(
    tmp_path: Path,
) -> None:
    """Two attempts past the manifest's 200 ms are reported as TIMEOUT, each retried no
    sooner than errord's decision says; the third succeeds and its outcome is recorded."""
    manifests = """\
        tools:
          - name: flaky
            timeout_ms: 200
        """
    flaky, spans = timed(mock_tool("flaky", {"ok": 1}, script=[Hang(60), Hang(60), {"ok": 2}]))
    with errord_process(tmp_path, manifests) as daemon:
        async with (
            Executor([flaky], target=daemon.address, decision_timeout=DECISIONS) as executor,
            operator_channel(daemon.address, daemon.token) as channel,
        ):
            [result] = await executor.run(
                [{"id": "c1", "name": "flaky", "arguments": {}}], turn_id="turn-flaky"
            )
            errord = Errord(channel)

            async def outcome_recorded() -> list[pb.TraceEvent] | None:
                events = await errord.trace("turn-flaky")
                return events if outcomes(events, "c1") else None

            events = await wait_for(outcome_recorded, "the success's outcome in the trace")

    assert (result.status, result.output, result.attempts) == (ResultStatus.SUCCEEDED, {"ok": 2}, 3)
    assert result.decided_by is DecidedBy.ERRORD
    reported = failures(events, "c1")
    assert [event.attempt for event in reported] == [1, 2]
    assert all(event.failure.error.code == pb.ERROR_CODE_TIMEOUT for event in reported)
    decisions = [event.failure.decision for event in reported]
    assert all(decision.action == pb.RECOVERY_ACTION_RETRY for decision in decisions)
    assert result.decision_ids == tuple(decision.decision_id for decision in decisions)
    [outcome] = outcomes(events, "c1")
    assert (outcome.attempt, outcome.outcome.outcome) == (3, pb.OUTCOME_SUCCESS)
    assert outcome.outcome.decision_id == result.decision_ids[-1]
    assert len(spans.started) == 3
    for attempt, decision in enumerate(decisions):
        waited = spans.started[attempt + 1] - spans.ended[attempt]
        assert waited >= seconds(decision.delay) - 1e-6, (attempt + 1, waited, decision.delay)


class Unauthorized(Exception):
    """A tool's own error carrying its backend's HTTP status, as SDKs' errors do."""

    status_code = 401


def httpx_unauthorized() -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "https://accounts.example/v1/me")
    response = httpx.Response(401, request=request)
    return httpx.HTTPStatusError("401 Unauthorized", request=request, response=response)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(PermissionError("401 Unauthorized"), id="PermissionError"),
        pytest.param(httpx_unauthorized(), id="httpx-401"),
        pytest.param(Unauthorized("token expired"), id="status_code-401"),
    ],
)
async def test_a_permanent_failure_runs_the_manifests_alternative_once(
    tmp_path: Path, error: Exception
) -> None:
    """A tool that fails with an authorization error is not retried: errord names the
    manifest's alternative, which runs once with the same arguments and gives the result."""
    manifests = """\
        tools:
          - name: accounts
            alternatives: [accounts_backup]
          - name: accounts_backup
        """
    accounts = mock_tool("accounts", script=[error])
    backup = mock_tool("accounts_backup", {"from": "backup"})
    arguments = {"user": "ada"}
    with errord_process(tmp_path, manifests) as daemon:
        async with (
            Executor([accounts, backup], target=daemon.address, decision_timeout=DECISIONS) as ex,
            operator_channel(daemon.address, daemon.token) as channel,
        ):
            [result] = await ex.run(
                [{"id": "c1", "name": "accounts", "arguments": arguments}], turn_id="turn-auth"
            )
            events = await Errord(channel).trace("turn-auth")

    assert (accounts.calls, backup.calls) == (1, 1)
    assert backup.received == [arguments]
    assert result.status is ResultStatus.SUCCEEDED
    assert (result.output, result.fallback_used, result.tool_used) == (
        {"from": "backup"},
        True,
        "accounts_backup",
    )
    [failure] = failures(events, "c1")
    decision = failure.failure.decision
    assert decision.action == pb.RECOVERY_ACTION_USE_ALTERNATIVE
    assert decision.alternative_tool == "accounts_backup"
    assert decision.classification.error_class == pb.ERROR_CLASS_PERMANENT
    assert result.decided_by is DecidedBy.ERRORD
    assert result.decision_ids == (decision.decision_id,)


async def test_a_permanent_failure_cascades_to_its_dependents_as_the_plan_says(
    tmp_path: Path,
) -> None:
    """In a batch with dependencies, a call that fails permanently takes its dependents
    with it as errord's consequences say: a default stands in where there is one (the
    call's own or its manifest's), optional ones are skipped, and none of their tools run;
    a call waiting on a defaulted one runs, and independent calls succeed. One result per
    call, in the batch's order."""
    manifests = """\
        tools:
          - name: accounts
          - name: balance
          - name: chart
            default: {points: []}
          - name: tips
          - name: advice
          - name: weather
        """
    accounts = mock_tool("accounts", script=[PermissionError("403 Forbidden")])
    balance = mock_tool("balance", {"balance": 12})
    chart = mock_tool("chart", {"points": [1, 2]})
    tips = mock_tool("tips", {"tips": ["save"]})
    advice = mock_tool("advice", {"advice": "hold"})
    weather = mock_tool("weather", {"sky": "clear"})
    calls = [
        ToolCall("c-balance", "balance", {}, depends_on=("c-accounts",), default={"balance": 0}),
        ToolCall("c-accounts", "accounts", {"user": "ada"}),
        ToolCall("c-chart", "chart", {}, depends_on=("c-accounts",)),
        ToolCall("c-tips", "tips", {}, depends_on=("c-accounts",), optional=True),
        ToolCall("c-advice", "advice", {}, depends_on=("c-balance",)),
        ToolCall("c-weather", "weather", {"city": "Oslo"}),
    ]
    tools = [accounts, balance, chart, tips, advice, weather]
    with errord_process(tmp_path, manifests) as daemon:
        async with (
            Executor(tools, target=daemon.address, decision_timeout=DECISIONS) as executor,
            operator_channel(daemon.address, daemon.token) as channel,
        ):
            results = await executor.run(calls, turn_id="turn-plan")
            events = await Errord(channel).trace("turn-plan")

    assert [result.call_id for result in results] == [call.call_id for call in calls]
    by_id = {result.call_id: result for result in results}
    [failure] = failures(events)
    assert failure.call_id == "c-accounts"
    consequences = {c.call_id: c.action for c in failure.failure.decision.consequences}
    assert consequences == {
        "c-balance": pb.RECOVERY_ACTION_USE_DEFAULT,
        "c-chart": pb.RECOVERY_ACTION_USE_DEFAULT,
        "c-tips": pb.RECOVERY_ACTION_SKIP,
    }
    assert not by_id["c-accounts"].ok
    assert by_id["c-accounts"].decision_ids == (failure.failure.decision.decision_id,)
    assert (by_id["c-balance"].status, by_id["c-balance"].output) == (
        ResultStatus.DEFAULTED,
        {"balance": 0},
    )
    assert (by_id["c-chart"].status, by_id["c-chart"].output) == (
        ResultStatus.DEFAULTED,
        {"points": []},
    )
    assert by_id["c-tips"].status is ResultStatus.SKIPPED
    assert all(by_id[c].decided_by is DecidedBy.ERRORD for c in ("c-balance", "c-chart", "c-tips"))
    assert (balance.calls, chart.calls, tips.calls) == (0, 0, 0)
    for call_id, output in [("c-advice", {"advice": "hold"}), ("c-weather", {"sky": "clear"})]:
        assert (by_id[call_id].status, by_id[call_id].output) == (ResultStatus.SUCCEEDED, output)
    assert (advice.calls, weather.calls) == (1, 1)


async def test_a_result_carries_errords_correction_and_the_exception_the_tool_raised(
    tmp_path: Path,
) -> None:
    """A call handed back to the model has errord's correction on its error (what the
    model reads, structured); a tool's failure names the exception class it raised."""

    def forecast(city: str, days: int = 1) -> str:
        """The forecast of a city."""
        raise PermissionError(f"403 Forbidden: no access to {city}")

    with errord_process(tmp_path, "tools: []\n") as daemon:
        async with Executor(
            [function_tool(forecast)], target=daemon.address, decision_timeout=DECISIONS
        ) as executor:
            corrected, failed = await executor.run(
                [
                    {"id": "c1", "name": "forecast", "arguments": {"days": 2}},
                    {"id": "c2", "name": "forecast", "arguments": {"city": "Lyon"}},
                ]
            )
    assert corrected.status is ResultStatus.RETURNED_TO_MODEL
    assert corrected.error is not None
    correction = corrected.error.correction
    assert correction is not None
    assert (correction.type, correction.parameter) == ("missing_parameter", "city")
    assert correction.required_parameters == ("city",)
    assert correction.example is not None
    assert isinstance(correction.example["city"], str)
    assert correction.retry_hint
    assert corrected.error.exception_type == "InvalidArguments"  # the executor's check
    assert failed.error is not None
    assert failed.error.exception_type == "PermissionError"
    assert failed.error.correction is None
