"""The tool registry: tools made from functions, found by name, run on the loop or in a thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import pytest
from errord_client.tools import (
    Tool,
    ToolKind,
    ToolNotFound,
    ToolRegistry,
    function_tool,
    mock_tool,
    tool,
)


def flight_search(origin: str, destination: str, passengers: int = 1) -> dict[str, Any]:
    """Search flights between two airports.

    The second paragraph is not part of the description.
    """
    return {"origin": origin, "destination": destination, "passengers": passengers}


async def hotel_search(city: str) -> list[str]:
    """Search hotels in a city."""
    return [f"{city} Grand"]


def test_a_function_tool_takes_its_name_and_first_docstring_paragraph() -> None:
    made = function_tool(flight_search)
    assert made.name == "flight_search"
    assert made.description == "Search flights between two airports."
    assert made.kind is ToolKind.FUNCTION


def test_a_plain_function_is_blocking_and_a_coroutine_function_is_not() -> None:
    assert function_tool(flight_search).blocking
    assert not function_tool(hotel_search).blocking


def test_name_description_and_parameters_given_replace_the_functions_own() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    made = function_tool(hotel_search, name="hotels", description="Hotels.", parameters=schema)
    assert (made.name, made.description, made.parameters) == ("hotels", "Hotels.", schema)


def test_the_decorator_works_bare_and_with_options() -> None:
    @tool
    def bare(x: int) -> int:
        return x

    @tool(name="renamed", description="Described.")
    async def with_options(x: int) -> int:
        return x

    assert isinstance(bare, Tool)
    assert bare.name == "bare"
    assert isinstance(with_options, Tool)
    assert (with_options.name, with_options.description) == ("renamed", "Described.")


def test_a_name_model_apis_refuse_is_refused_on_construction() -> None:
    with pytest.raises(ValueError, match="letters, digits"):
        function_tool(lambda: None)
    with pytest.raises(ValueError, match="letters, digits"):
        mock_tool("a" * 65)


def test_parameters_that_are_not_an_object_schema_are_refused() -> None:
    with pytest.raises(ValueError, match='"type": "object"'):
        mock_tool("search", parameters={"type": "string"})


def test_the_registry_takes_tools_and_functions_and_keeps_their_order() -> None:
    search = mock_tool("search")
    registry = ToolRegistry([flight_search, search, hotel_search])
    assert registry.names == ("flight_search", "search", "hotel_search")
    assert len(registry) == 3
    assert [each.name for each in registry] == list(registry.names)
    assert registry.get("search") is search
    assert "hotel_search" in registry
    assert "nothing" not in registry
    assert 3 not in registry


def test_register_returns_the_tool_under_the_name_given() -> None:
    registry = ToolRegistry()
    from_function = registry.register(flight_search, name="flights")
    from_tool = registry.register(mock_tool("search"), name="search_v2")
    assert from_function.name == "flights"
    assert from_tool.name == "search_v2"
    assert from_tool.kind is ToolKind.MOCK
    assert registry.names == ("flights", "search_v2")


def test_a_duplicate_name_is_refused() -> None:
    registry = ToolRegistry([flight_search])
    with pytest.raises(ValueError, match="'flight_search' is registered already"):
        registry.register(mock_tool("flight_search"))
    assert len(registry) == 1


def test_an_unknown_tool_is_reported_with_the_seed_text_and_the_closest_names() -> None:
    registry = ToolRegistry([flight_search, hotel_search, mock_tool("weather")])
    with pytest.raises(ToolNotFound) as raised:
        registry.get("flight_serch")
    assert str(raised.value) == "Tool 'flight_serch' not found"
    assert raised.value.name == "flight_serch"
    assert raised.value.available == ("flight_search", "hotel_search", "weather")
    assert raised.value.closest[0] == "flight_search"
    assert "weather" not in raised.value.closest


def test_openai_and_anthropic_definitions_carry_name_description_and_schema() -> None:
    made = function_tool(hotel_search)
    openai = made.to_openai()
    anthropic = made.to_anthropic()
    assert openai == {
        "type": "function",
        "function": {
            "name": "hotel_search",
            "description": "Search hotels in a city.",
            "parameters": made.parameters,
        },
    }
    assert anthropic == {
        "name": "hotel_search",
        "description": "Search hotels in a city.",
        "input_schema": made.parameters,
    }
    assert ToolRegistry([made]).to_openai() == [openai]
    assert ToolRegistry([made]).to_anthropic() == [anthropic]


def test_definitions_are_copies_the_caller_may_change() -> None:
    made = function_tool(hotel_search)
    made.to_openai()["function"]["parameters"]["properties"].clear()
    assert made.parameters["properties"] == {"city": {"type": "string"}}


async def test_a_plain_function_runs_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()
    ran_in: list[int] = []

    def where() -> None:
        ran_in.append(threading.get_ident())

    await function_tool(where).invoke({})
    assert ran_in[0] != loop_thread


async def test_a_plain_function_runs_in_the_threads_given() -> None:
    def thread_name() -> str:
        return threading.current_thread().name

    with concurrent.futures.ThreadPoolExecutor(thread_name_prefix="tools-given") as threads:
        name = await function_tool(thread_name).invoke({}, threads=threads)
    assert name.startswith("tools-given")


async def test_a_coroutine_function_runs_on_the_loops_thread() -> None:
    async def where() -> int:
        return threading.get_ident()

    assert await function_tool(where).invoke({}) == threading.get_ident()


async def test_invoke_passes_the_arguments_as_keywords_and_returns_the_result() -> None:
    result = await function_tool(flight_search).invoke({"origin": "CDG", "destination": "JFK"})
    assert result == {"origin": "CDG", "destination": "JFK", "passengers": 1}
    assert await function_tool(hotel_search).invoke({"city": "Lyon"}) == ["Lyon Grand"]


async def test_invoke_raises_what_the_tool_raises() -> None:
    async def broken() -> None:
        raise ConnectionResetError("peer went away")

    with pytest.raises(ConnectionResetError, match="peer went away"):
        await function_tool(broken).invoke({})


async def test_cancelling_the_awaiting_task_cancels_a_coroutine_tool() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def wait_forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.create_task(function_tool(wait_forever).invoke({}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_cancelling_the_awaiting_task_abandons_a_blocking_tool() -> None:
    loop = asyncio.get_running_loop()
    started = asyncio.Event()
    release = threading.Event()

    def block() -> str:
        loop.call_soon_threadsafe(started.set)
        release.wait()
        return "finished"

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as threads:
        task = asyncio.create_task(function_tool(block).invoke({}, threads=threads))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not release.is_set()  # the thread was still blocked when the task ended
        release.set()
