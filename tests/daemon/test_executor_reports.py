"""What the executor sends errord: a batch's simultaneous failures in one ReportFailures,
nothing on a successful call's own path, the registry's refusals as the model's mistakes."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

from errord_client import AsyncErrordClient, Executor, ResultStatus
from errord_client.tools import builtin_tool, mock_tool
from errord_client.v1 import errord_pb2 as pb

from tests.helpers import InProcessDaemon


def count_calls(stub: Any) -> Counter[str]:
    """Wrap the stub's unary methods so that each call is counted by method name."""
    counted: Counter[str] = Counter()

    def wrap(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(request: Any, **kwargs: Any) -> Any:
            counted[name] += 1
            if name == "ReportFailures":
                counted["failures in ReportFailures"] += len(request.failures)
            return method(request, **kwargs)

        return call

    for name in ("ReportFailure", "ReportFailures", "ReportOutcome", "AdmitCall", "EndTurn"):
        setattr(stub, name, wrap(name, getattr(stub, name)))
    return counted


async def test_parallel_calls_failing_together_are_reported_in_one_request(
    daemon: InProcessDaemon,
) -> None:
    tools = [mock_tool(f"tool_{n}", "fine", script=[TimeoutError("slow")]) for n in range(4)]
    executor = Executor(tools, target=daemon.address)
    try:
        counted = count_calls(executor._started().client.stub)
        results = await executor.run(
            [{"id": f"c{n}", "name": f"tool_{n}", "arguments": {}} for n in range(4)]
        )
    finally:
        await executor.close()
    assert [result.status for result in results] == [ResultStatus.SUCCEEDED] * 4
    assert counted["ReportFailures"] == 1
    assert counted["failures in ReportFailures"] == 4
    assert counted["ReportFailure"] == 0
    assert counted["ReportOutcome"] == 4
    assert counted["EndTurn"] == 1


async def test_a_successful_call_awaits_no_rpc_on_its_own_path(daemon: InProcessDaemon) -> None:
    executor = Executor([mock_tool("quick", {"ok": True})], target=daemon.address)
    path: list[str] = []
    try:
        stub = executor._started().client.stub
        running: asyncio.Task[Any] | None = asyncio.current_task()

        def watch(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                if asyncio.current_task() is running:
                    path.append(name)
                return method(*args, **kwargs)

            return call

        for name in ("ReportOutcome", "EndTurn", "AdmitCall", "ReportFailure", "BeginTurn"):
            setattr(stub, name, watch(name, getattr(stub, name)))
        call = {"id": "c1", "name": "quick", "arguments": {}}
        result = await executor.run_one(call, turn_id="turn-quick")
    finally:
        await executor.close()  # the outcome and the turn's end go out in the background
    assert result.status is ResultStatus.SUCCEEDED
    assert path == []
    async with AsyncErrordClient(daemon.address, token=daemon.token) as errord:
        trace = await errord.get_turn_trace("turn-quick")
    outcomes = [event.outcome.outcome for event in trace if event.HasField("outcome")]
    assert outcomes == [pb.OUTCOME_SUCCESS]
    assert trace[-1].HasField("turn_ended")


async def test_a_refused_math_expression_goes_back_to_the_model(daemon: InProcessDaemon) -> None:
    async with Executor([builtin_tool("calc", "math_eval")], target=daemon.address) as executor:
        call = {"id": "c1", "name": "calc", "arguments": {"expression": "x + 1"}}
        [result] = await executor.run([call])
    assert result.status is ResultStatus.RETURNED_TO_MODEL
    assert result.attempts == 1
    assert "names are not allowed" in result.content()
