"""The executor with no errord to answer: the local policy decides, results say so, the batch
keeps its order and its dependencies, and nothing raises."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import pytest
from errord_client.executor import (
    DecidedBy,
    Executor,
    LocalPolicy,
    ResultStatus,
    ToolCall,
    ToolFailure,
)
from errord_client.executor.plan import plan_of
from errord_client.tools import Hang, function_tool, mock_tool


def nothing_listening() -> str:
    """A loopback address no one listens on: connections are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


async def run(tools: list[Any], calls: list[Any], **options: Any) -> list[Any]:
    executor = Executor(tools, target=nothing_listening(), decision_timeout=0.05, **options)
    try:
        return await executor.run(calls)
    finally:
        await executor.close(patience=0.1)


@pytest.fixture
def warnings_logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level("WARNING", logger="errord_client.executor")
    return caplog


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id=call_id, name=name, arguments=arguments)


async def test_a_transient_failure_is_retried_by_the_local_policy_and_says_so() -> None:
    flaky = mock_tool("flaky", {"ok": True}, script=[TimeoutError("slow"), ConnectionError("x")])
    [result] = await run([flaky], [call("c1", "flaky")])
    assert result.status is ResultStatus.SUCCEEDED
    assert result.output == {"ok": True}
    assert result.attempts == 3
    assert result.decided_by is DecidedBy.LOCAL
    assert result.decision_ids == ()


async def test_the_local_policy_gives_up_after_five_attempts_for_now() -> None:
    down = mock_tool("down", TimeoutError("still slow"))
    [result] = await run([down], [call("c1", "down")])
    assert result.status is ResultStatus.TIMED_OUT  # failed for now, its last attempt timed out
    assert result.attempts == 5
    assert result.decided_by is DecidedBy.LOCAL
    assert result.error is not None
    assert result.error.retryable
    assert result.error.user_message == (
        "Couldn't reach down right now; continuing with the rest of the request."
    )
    assert "failed 5 times with a temporary error (TIMEOUT)" in result.content()
    assert "unavailable for now" in result.content()


async def test_a_permanent_failure_is_escalated_at_once() -> None:
    forbidden = mock_tool("forbidden", PermissionError("403 Forbidden"))
    [result] = await run([forbidden], [call("c1", "forbidden")])
    assert result.status is ResultStatus.ESCALATED
    assert result.attempts == 1
    assert result.error is not None
    assert not result.error.retryable


async def test_an_unknown_tool_and_bad_arguments_go_back_to_the_model() -> None:
    def search(query: str) -> str:
        return query

    results = await run(
        [function_tool(search)], [call("c1", "serch", query="x"), call("c2", "search")]
    )
    assert [r.status for r in results] == [ResultStatus.RETURNED_TO_MODEL] * 2
    assert "Tool 'serch' not found" in results[0].content()
    assert "missing 'query'" in results[1].content()
    assert all(r.attempts == 0 for r in results)


async def test_results_come_back_one_per_call_in_order_whatever_finishes_first() -> None:
    async def slow(n: int) -> int:
        await asyncio.sleep(0.02 * (5 - n))
        return n

    calls = [call(f"c{n}", "slow", n=n) for n in range(5)]
    results = await run([function_tool(slow)], calls)
    assert [r.call_id for r in results] == [f"c{n}" for n in range(5)]
    assert [r.output for r in results] == list(range(5))


async def test_a_sync_tool_runs_in_a_worker_thread_and_is_abandoned_past_its_timeout() -> None:
    release = threading.Event()
    threads: list[str] = []

    def stuck() -> str:
        threads.append(threading.current_thread().name)
        release.wait(10)
        return "late"

    executor = Executor(
        [function_tool(stuck)],
        target=nothing_listening(),
        decision_timeout=0.05,
        default_timeout=0.05,
        local_policy=LocalPolicy(max_attempts=1),
    )
    try:
        [result] = await executor.run([call("c1", "stuck")])
    finally:
        release.set()
        await executor.close(patience=0.1)
    assert result.status is ResultStatus.TIMED_OUT
    assert result.error is not None
    assert result.error.code == "TIMEOUT"
    assert threads
    assert threads[0].startswith("errord-tool")
    assert threading.current_thread().name not in threads


async def test_a_coroutine_past_its_timeout_is_cancelled() -> None:
    cancelled = asyncio.Event()

    async def hangs() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    executor = Executor(
        [function_tool(hangs)],
        target=nothing_listening(),
        decision_timeout=0.05,
        default_timeout=0.05,
        local_policy=LocalPolicy(max_attempts=1),
    )
    try:
        [result] = await executor.run([call("c1", "hangs")])
    finally:
        await executor.close(patience=0.1)
    assert cancelled.is_set()
    assert result.error is not None
    assert "did not answer within 0.05 s" in result.error.message


async def test_a_dependent_of_a_call_without_a_result_is_skipped_or_defaulted() -> None:
    broken = mock_tool("broken", PermissionError("401 Unauthorized"))
    fine = mock_tool("fine", "fine")
    after = mock_tool("after", "never")
    calls = [
        ToolCall(call_id="a", name="broken", arguments={}),
        ToolCall(call_id="b", name="after", arguments={}, depends_on=("a",)),
        ToolCall(call_id="c", name="after", arguments={}, depends_on=("a",), default=[]),
        ToolCall(call_id="d", name="fine", arguments={}),
    ]
    results = await run([broken, fine, after], calls)
    assert [r.status for r in results] == [
        ResultStatus.ESCALATED,
        ResultStatus.SKIPPED,
        ResultStatus.DEFAULTED,
        ResultStatus.SUCCEEDED,
    ]
    assert results[2].output == []
    assert after.calls == 0


async def test_a_dependency_cycle_and_a_repeated_id_are_not_run() -> None:
    echo = mock_tool("echo", "ran")
    calls = [
        ToolCall(call_id="a", name="echo", arguments={}, depends_on=("b",)),
        ToolCall(call_id="b", name="echo", arguments={}, depends_on=("a",)),
        ToolCall(call_id="c", name="echo", arguments={}),
        ToolCall(call_id="c", name="echo", arguments={}),
    ]
    results = await run([echo], calls)
    assert [r.status for r in results] == [
        ResultStatus.FAILED,
        ResultStatus.FAILED,
        ResultStatus.SUCCEEDED,
        ResultStatus.FAILED,
    ]
    assert "dependency cycle" in results[0].content()
    assert "earlier call of the batch" in results[3].content()
    assert echo.calls == 1


async def test_one_warning_per_outage(warnings_logged: pytest.LogCaptureFixture) -> None:
    flaky = mock_tool("flaky", {"ok": True}, script=[TimeoutError(), TimeoutError()])
    await run([flaky], [call(f"c{n}", "flaky") for n in range(3)])
    outages = [r for r in warnings_logged.records if "did not answer" in r.getMessage()]
    assert len(outages) == 1


async def test_a_hanging_mock_fails_within_its_timeout_not_after_its_hang() -> None:
    hang = mock_tool("hang", "never", script=[Hang(30)])
    started = time.monotonic()
    [result] = await run(
        [hang], [call("c1", "hang")], default_timeout=0.05, local_policy=LocalPolicy(max_attempts=1)
    )
    assert result.status is ResultStatus.TIMED_OUT
    assert time.monotonic() - started < 30  # the hang was cut short, not waited out


async def test_a_call_run_alone_that_succeeds_never_waits_behind_the_event_loop() -> None:
    """execute() runs a lone call in the caller's task: a tool that returns at once returns
    without the loop running anything else ready meanwhile (the executor's own background
    reports among them), which would count in the call's time."""

    async def at_once() -> str:
        return "done"

    ran_meanwhile: list[bool] = []
    executor = Executor([function_tool(at_once)], target=nothing_listening(), watch_tools=False)
    try:
        asyncio.get_running_loop().call_soon(ran_meanwhile.append, True)
        result = await executor.run_one({"id": "c1", "name": "at_once", "arguments": {}})
        assert result.ok
        assert ran_meanwhile == []
    finally:
        await executor.close(patience=0.1)


def test_the_local_policy_follows_the_seed_delays_and_honours_retry_after() -> None:
    policy = LocalPolicy()
    timeout = ToolFailure("slow", "TimeoutError", "TIMEOUT")
    delays = [policy.decide("t", timeout, attempt, 0.0).delay for attempt in (1, 2, 3, 4)]
    assert delays == [0.1, 0.2, 0.4, 0.8]
    limited = ToolFailure("429", http_status=429, retry_after=1.5)
    assert policy.decide("t", limited, 1, 0.0).delay == 1.5
    assert policy.decide("t", limited, 1, 28.0).delay == 1.5
    past = policy.decide("t", limited, 1, 29.0)  # past 30 s of delays
    assert past.action.value == "FAIL"
    assert "unavailable for now" in past.llm_message


def test_the_local_policy_waits_out_a_rate_limit_past_five_attempts_as_errord_does() -> None:
    """A rate limit that says how long to wait is retried past the fifth attempt, within
    30 s of delays; one that does not say, and any other transient failure, is not."""
    policy = LocalPolicy()
    limited = ToolFailure("429", http_status=429, retry_after=1.0)
    sixth = policy.decide("t", limited, 6, 5.0)
    assert (sixth.action.value, sixth.delay) == ("RETRY", 1.0)
    assert "retry 6, a rate limit's wait past the 4" in sixth.reason
    assert policy.decide("t", limited, 6, 29.5).action.value == "FAIL"  # past 30 s of delays
    unsaid = ToolFailure("429", http_status=429)
    assert policy.decide("t", unsaid, 5, 1.5).action.value == "FAIL"
    unavailable = ToolFailure("503", http_status=503, retry_after=1.0)
    assert policy.decide("t", unavailable, 5, 1.5).action.value == "FAIL"


def test_the_plan_ignores_dependencies_outside_the_batch() -> None:
    plan = plan_of([ToolCall(call_id="a", name="x", arguments={}, depends_on=("zz", "a"))])
    assert plan.needed == {"a": ()}
    assert not plan.dependencies


async def test_an_executor_runs_again_after_it_was_closed() -> None:
    def plain() -> str:
        return "ran in a thread"

    executor = Executor([function_tool(plain)], target=nothing_listening(), decision_timeout=0.05)
    try:
        first = await executor.run([call("c1", "plain")])
        await executor.close(patience=0.1)
        second = await executor.run([call("c2", "plain")])
    finally:
        await executor.close(patience=0.1)
    assert [r.output for r in first + second] == ["ran in a thread"] * 2


async def test_a_call_that_cannot_be_read_gets_a_structured_result_in_its_place() -> None:
    echo = mock_tool("echo", {"ok": True})
    calls = [None, {"name": "echo"}, call("c1", "echo"), {"id": "c2"}, {"id": 7, "name": "echo"}]
    results = await run([echo], calls)
    assert [(r.call_id, r.tool, r.status) for r in results] == [
        ("", "", ResultStatus.FAILED),
        ("", "echo", ResultStatus.FAILED),
        ("c1", "echo", ResultStatus.SUCCEEDED),
        ("c2", "", ResultStatus.FAILED),
        ("", "echo", ResultStatus.FAILED),
    ]
    assert echo.calls == 1
    unread = results[3]
    assert unread.error is not None
    assert (unread.error.code, unread.error.fault, unread.error.retryable) == (
        "INVALID_INPUT",
        "ARGUMENTS",
        False,
    )
    assert (
        unread.content()
        == "Error: the tool call could not be read: tool call c2 has no 'name': {'id': 'c2'}"
    )
    [alone] = await run([echo], [None])
    assert alone.status is ResultStatus.FAILED
