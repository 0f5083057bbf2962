"""Turns with no errord to answer: a turn's deadline cuts its batch short with what
finished; calls run one by one inside ``executor.turn()`` share it; progress tells each
step; what a turn, a tool's timeout or progress is given is checked on construction."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from errord_client.executor import (
    Executor,
    LocalPolicy,
    Progress,
    ProgressKind,
    ResultStatus,
    ToolCall,
)
from errord_client.tools import Hang, function_tool, mock_tool


def nothing_listening() -> str:
    """A loopback address no one listens on: connections are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def executor(tools: list[Any], **options: Any) -> Executor:
    return Executor(tools, target=nothing_listening(), decision_timeout=0.05, **options)


async def test_a_deadline_ends_the_hung_call_timed_out_and_keeps_what_finished() -> None:
    hung = mock_tool("hung", "never", script=[Hang(60)])
    quick = mock_tool("quick", {"ok": 1})
    waiting = mock_tool("waiting", "never asked")
    calls = [
        ToolCall(call_id="a", name="hung", arguments={}),
        ToolCall(call_id="b", name="quick", arguments={}),
        ToolCall(call_id="c", name="waiting", arguments={}, depends_on=("a",)),
        ToolCall(call_id="d", name="waiting", arguments={}, depends_on=("a",), default=[]),
    ]
    running = executor([hung, quick, waiting], default_timeout=60)
    try:
        results = await running.run(calls, deadline=1.0)  # BeginTurn waits 0.2 s unanswered
    finally:
        await running.close(patience=0.1)
    assert [result.status for result in results] == [
        ResultStatus.TIMED_OUT,
        ResultStatus.SUCCEEDED,
        ResultStatus.SKIPPED,
        ResultStatus.DEFAULTED,
    ]
    assert (results[0].attempts, results[3].output, waiting.calls) == (1, [], 0)
    assert "deadline" in results[0].content()


async def test_a_call_whose_last_attempt_timed_out_is_timed_out() -> None:
    slow = mock_tool("slow", "never", script=[Hang(60), Hang(60)])
    running = executor([slow], default_timeout=0.05, local_policy=LocalPolicy(max_attempts=2))
    try:
        [result] = await running.run([ToolCall(call_id="a", name="slow", arguments={})])
    finally:
        await running.close(patience=0.1)
    assert (result.status, result.attempts) == (ResultStatus.TIMED_OUT, 2)


async def test_calls_one_by_one_inside_a_turn_share_it_and_progress_tells_each_step() -> None:
    flaky = mock_tool("flaky", {"ok": 2}, script=[ConnectionError("reset")])
    heard: list[Progress] = []
    running = executor([flaky], on_progress=heard.append)
    try:
        async with running.turn("turn-1") as turn:
            await running.run_one({"id": "c1", "name": "flaky", "arguments": {}})
            await running.run_one({"id": "c2", "name": "flaky", "arguments": {}})
    finally:
        await running.close(patience=0.1)
    assert {step.turn_id for step in heard} == {turn.turn_id} == {"turn-1"}
    assert [(step.call_id, step.kind) for step in heard] == [
        ("c1", ProgressKind.ATTEMPT),
        ("c1", ProgressKind.RETRY),
        ("c1", ProgressKind.ATTEMPT),
        ("c1", ProgressKind.DONE),
        ("c2", ProgressKind.ATTEMPT),
        ("c2", ProgressKind.DONE),
    ]
    assert heard[1].delay > 0
    assert heard[1].to_dict()["kind"] == "retry"
    assert heard[-1].to_dict()["status"] == "succeeded"


async def test_a_turn_that_ended_refuses_more_calls() -> None:
    quick = mock_tool("quick", "ok")
    running = executor([quick])
    try:
        async with running.turn("turn-done") as turn:
            await turn.run_one({"id": "c1", "name": "quick", "arguments": {}})
        with pytest.raises(RuntimeError, match="turn turn-done has ended"):
            await turn.run_one({"id": "c2", "name": "quick", "arguments": {}})
    finally:
        await running.close(patience=0.1)


async def test_what_a_progress_callback_raises_never_costs_the_call_its_result() -> None:
    def broken(progress: Progress) -> None:
        raise ValueError("the UI broke")

    quick = mock_tool("quick", "ok")
    running = executor([quick], on_progress=broken)
    try:
        [result] = await running.run([{"id": "c1", "name": "quick", "arguments": {}}])
    finally:
        await running.close(patience=0.1)
    assert result.status is ResultStatus.SUCCEEDED


@pytest.mark.parametrize("deadline", [0, -1.0])
async def test_a_deadline_must_be_positive(deadline: float) -> None:
    running = executor([mock_tool("quick", "ok")])
    try:
        with pytest.raises(ValueError, match="deadline should be positive"):
            running.turn(deadline=deadline)
    finally:
        await running.close(patience=0.1)


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), float("inf")])
def test_a_tools_own_timeout_must_be_positive_and_finite(timeout: float) -> None:
    with pytest.raises(ValueError, match="Tool 'quick': timeout must be a positive number"):
        function_tool(lambda: "ok", name="quick", timeout=timeout)


async def test_while_errord_is_away_a_turn_with_a_deadline_does_not_wait_to_begin() -> None:
    """The first turn's BeginTurn goes unanswered (its 0.2 s wait outlasts a 0.1 s
    deadline: its call never started, SKIPPED); the next turn, errord known to be away,
    starts its call at once, which the deadline ends TIMED_OUT."""
    hung = mock_tool("hung", "never", script=[Hang(60), Hang(60)])
    running = executor([hung], default_timeout=60)
    call = ToolCall(call_id="a", name="hung", arguments={})
    try:
        [first] = await running.run([call], deadline=0.1)
        [second] = await running.run([call], deadline=0.1)
    finally:
        await running.close(patience=0.1)
    assert (first.status, second.status) == (ResultStatus.SKIPPED, ResultStatus.TIMED_OUT)
    assert hung.calls == 1
