"""The tool execution specification (001) through errord_client.compat.tool_execution,
against errord as a process: each of its scenarios, in its result shape."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from errord_client.compat import TARGET_VARIABLE
from errord_client.compat.tool_execution import ToolExecutor

from tests.helpers import DaemonProcess

CALCULATOR = {
    "name": "calculator",
    "description": "Evaluates arithmetic.",
    "parameters": {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
    "implementation": {"type": "builtin", "handler": "math_eval"},
}
FORECAST = {
    "name": "forecast",
    "description": "The weather forecast of a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
    "implementation": {"type": "internal", "handler": "weather.forecast"},
}
TOOLS = [
    CALCULATOR,
    FORECAST,
    {
        "name": "echo",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        "implementation": {"type": "builtin", "handler": "echo"},
    },
    {"name": "weather_mock", "implementation": {"type": "mock", "mock_response": {"temp": 21}}},
    {"name": "lost_builtin", "implementation": {"type": "builtin", "handler": "no_such"}},
    {"name": "lost_internal", "implementation": {"type": "internal", "handler": "absent"}},
]


@pytest.fixture
async def executor(
    daemon_process: DaemonProcess, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[ToolExecutor, list[dict[str, Any]]]]:
    """The specification's tools, errord found through ERRORD_TARGET; the forecasts run."""
    monkeypatch.setenv(TARGET_VARIABLE, daemon_process.address)
    forecasts: list[dict[str, Any]] = []

    def forecast(city: str, days: int = 1, units: str = "celsius") -> dict[str, Any]:
        if city == "Atlantis":
            raise ValueError("no station in Atlantis")
        forecasts.append({"city": city, "days": days, "units": units})
        return {"city": city, "days": days, "units": units, "sky": "clear"}

    async with ToolExecutor(
        TOOLS, internal_handlers={"weather.forecast": forecast}, decision_timeout=10.0
    ) as running:
        yield running, forecasts


def is_time(value: object) -> bool:
    return isinstance(value, float) and value >= 0


async def test_a_valid_call_succeeds_with_the_result_and_its_time(executor: Any) -> None:
    tools, forecasts = executor
    result = await tools.execute_tool("calculator", {"expression": "2+2"})
    assert result == {
        "success": True,
        "result": {"result": 4},
        "tool_name": "calculator",
        "execution_time_ms": result["execution_time_ms"],
    }
    assert is_time(result["execution_time_ms"])
    internal = await tools.execute_tool("forecast", {"city": "Lyon", "days": 2})
    assert internal["success"] is True
    assert internal["result"] == {"city": "Lyon", "days": 2, "units": "celsius", "sky": "clear"}
    assert forecasts == [{"city": "Lyon", "days": 2, "units": "celsius"}]


async def test_a_tool_that_does_not_exist_is_a_result_not_an_exception(executor: Any) -> None:
    tools, _ = executor
    result = await tools.execute_tool("ghost", {})
    assert result == {
        "success": False,
        "error": "Tool 'ghost' not found",
        "tool_name": "ghost",
        "execution_time_ms": result["execution_time_ms"],
    }
    assert is_time(result["execution_time_ms"])


async def test_a_missing_parameter_fails_validation_and_the_tool_does_not_run(
    executor: Any,
) -> None:
    tools, forecasts = executor
    result = await tools.execute_tool("forecast", {"days": 3})
    assert result["success"] is False
    assert result["error"] == "Invalid parameters: missing 'city'"
    assert (result["tool_name"], is_time(result["execution_time_ms"])) == ("forecast", True)
    assert forecasts == []


async def test_types_are_checked_integer_and_string(executor: Any) -> None:
    tools, forecasts = executor
    not_integer = await tools.execute_tool("forecast", {"city": "Lyon", "days": 1.5})
    assert not_integer["error"] == "Invalid parameters: 'days' must be an integer"
    not_string = await tools.execute_tool("forecast", {"city": 75})
    assert not_string["error"] == "Invalid parameters: 'city' must be a string"
    whole = await tools.execute_tool("forecast", {"city": "Lyon", "days": 2.0})
    assert whole["success"] is True  # 2.0 is an integer (Number.isInteger(2.0) is true)
    assert forecasts[-1]["days"] == 2


async def test_an_enum_value_outside_its_options_lists_the_valid_ones(executor: Any) -> None:
    tools, forecasts = executor
    result = await tools.execute_tool("forecast", {"city": "Lyon", "units": "kelvin"})
    assert result["success"] is False
    assert result["error"] == "Invalid parameters: 'units' must be one of 'celsius', 'fahrenheit'"
    assert forecasts == []


async def test_extra_parameters_are_ignored(executor: Any) -> None:
    tools, forecasts = executor
    result = await tools.execute_tool("forecast", {"city": "Lyon", "mood": "sunny"})
    assert result["success"] is True
    assert forecasts == [{"city": "Lyon", "days": 1, "units": "celsius"}]
    echoed = await tools.execute_tool("echo", {"text": "hi", "extra": 1})
    assert echoed["result"] == {"echo": {"text": "hi"}}


async def test_a_tool_error_is_caught_and_returned_with_its_message(executor: Any) -> None:
    tools, _ = executor
    raised = await tools.execute_tool("forecast", {"city": "Atlantis"})
    assert raised["success"] is False
    assert raised["error"] == "no station in Atlantis"
    assert is_time(raised["execution_time_ms"])
    invalid = await tools.execute_tool("calculator", {"expression": "2+"})
    assert invalid["success"] is False
    assert invalid["error"] == "math_eval: not an arithmetic expression (invalid syntax)"


async def test_a_mock_returns_its_response_in_under_10_ms(executor: Any) -> None:
    tools, _ = executor
    results = [await tools.execute_tool("weather_mock", {"city": "Lyon"}) for _ in range(5)]
    assert all(result["result"] == {"temp": 21} for result in results)
    # The fastest of five: one slow run on a loaded machine says nothing of the mock.
    assert min(result["execution_time_ms"] for result in results) < 10


async def test_handlers_that_do_not_exist_are_execution_errors(executor: Any) -> None:
    tools, _ = executor
    builtin = await tools.execute_tool("lost_builtin", {})
    assert (builtin["success"], builtin["error"]) == (False, "Builtin handler 'no_such' not found")
    internal = await tools.execute_tool("lost_internal", {})
    assert (internal["success"], internal["error"]) == (
        False,
        "Internal handler 'absent' not found",
    )
    assert tools.raw_result is not None
    assert tools.raw_result.attempts == 1  # permanent: errord does not retry it


async def test_a_malformed_call_gets_a_structured_result(executor: Any) -> None:
    tools, _ = executor
    for malformed in (None, {"name": "calculator"}, {"id": "c9"}):
        result = await tools.execute_tool_call(malformed)
        assert result["success"] is False
        assert result["error"]
        assert is_time(result["execution_time_ms"])
    nameless = await tools.execute_tool("", {})
    assert nameless["success"] is False
    assert (
        nameless["error"]
        == "tool call call-1 has no 'name': {'id': 'call-1', 'name': '', 'arguments': {}}"
    )


def test_a_bad_definition_names_the_tool_and_the_field() -> None:
    with pytest.raises(ValueError, match=r"tool 'x': implementation.type must be one of"):
        ToolExecutor([{"name": "x", "implementation": {"type": "remote"}}])
    with pytest.raises(ValueError, match=r"tool 'y': implementation.handler must name"):
        ToolExecutor([{"name": "y", "implementation": {"type": "builtin"}}])
