"""Mock tools: a static response, or a script consumed one step per invocation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from errord_client.tools import ANY_ARGUMENTS, Hang, Sleep, ToolKind, mock_tool


async def test_a_static_mock_returns_its_response_every_time_and_counts_the_calls() -> None:
    search = mock_tool("search", {"hits": 3})
    assert search.kind is ToolKind.MOCK
    assert not search.blocking
    assert search.parameters == ANY_ARGUMENTS
    assert [await search.invoke({"q": "a"}) for _ in range(3)] == [{"hits": 3}] * 3
    assert search.calls == 3


async def test_a_mock_records_the_arguments_it_ignores() -> None:
    search = mock_tool("search", "ok")
    await search.invoke({"q": "first"})
    await search.invoke({})
    assert search.received == [{"q": "first"}, {}]


async def test_a_mock_without_a_response_returns_none() -> None:
    assert await mock_tool("search").invoke({}) is None


async def test_a_script_is_taken_step_by_step_then_the_response_every_time() -> None:
    search = mock_tool("search", "steady", script=["first", "second"])
    results = [await search.invoke({}) for _ in range(4)]
    assert results == ["first", "second", "steady", "steady"]
    assert search.script.remaining == 0


async def test_an_exception_step_is_raised_and_an_exception_class_is_raised_new() -> None:
    search = mock_tool("search", "ok", script=[ConnectionError("reset"), TimeoutError])
    with pytest.raises(ConnectionError, match="reset"):
        await search.invoke({})
    with pytest.raises(TimeoutError):
        await search.invoke({})
    assert await search.invoke({}) == "ok"


async def test_an_exception_response_fails_every_call_after_the_script() -> None:
    search = mock_tool("search", PermissionError("denied"), script=["once"])
    assert await search.invoke({}) == "once"
    for _ in range(2):
        with pytest.raises(PermissionError, match="denied"):
            await search.invoke({})


async def test_sleep_then_returns_or_raises_its_step() -> None:
    search = mock_tool("search", script=[Sleep(0, then="late"), Sleep(0, then=ValueError("bad"))])
    assert await search.invoke({}) == "late"
    with pytest.raises(ValueError, match="bad"):
        await search.invoke({})


async def test_hang_sleeps_its_seconds_then_raises_timeout_error() -> None:
    with pytest.raises(TimeoutError, match="hung for 0 s"):
        await mock_tool("search", script=[Hang(0)]).invoke({})


async def test_a_hang_does_not_return_until_cancelled() -> None:
    search = mock_tool("search", script=[Hang()])
    task = asyncio.create_task(search.invoke({}))
    for _ in range(10):
        await asyncio.sleep(0)  # let the loop run the task, which must still be sleeping
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_concurrent_invocations_take_the_steps_in_invocation_order() -> None:
    """A step that sleeps does not let the next invocation take it: invocation i gets step i,
    whichever finishes first."""
    search = mock_tool(
        "search",
        "after",
        script=[Sleep(0, then="slow"), KeyError("boom"), "fast", Sleep(0, then=OSError("late"))],
    )
    finished: list[int] = []

    async def invoke(i: int) -> Any:
        try:
            return await search.invoke({"i": i})
        finally:
            finished.append(i)

    results = await asyncio.gather(*(invoke(i) for i in range(5)), return_exceptions=True)
    assert results[0] == "slow"
    assert isinstance(results[1], KeyError)
    assert results[2] == "fast"
    assert isinstance(results[3], OSError)
    assert results[4] == "after"
    assert finished.index(2) < finished.index(0)  # step 0 slept, step 2 did not
    assert search.calls == 5
    assert [received["i"] for received in search.received] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("step", [Hang, Sleep])
def test_a_negative_sleep_is_refused(step: type[Hang] | type[Sleep]) -> None:
    with pytest.raises(ValueError, match="seconds must be 0 or more"):
        step(-1)
