"""The structured-errors document (003) through errord_client.compat.structured_errors,
against errord as a process: its examples as written (only the imports changed), the
error types it lists, and its layout for the model. errord words the corrections (its
message, an example built from the schema, its retry hint) where the document wrote
them by hand for one tool; docs/coming-from.md says so. The document's code is kept as
it is written (fmt: off, and the lint rules it breaks)."""

# ruff: noqa: E501

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from errord_client.compat import TARGET_VARIABLE
from errord_client.compat.structured_errors import (
    ToolCallBuffer,
    ToolExecutionError,
    ToolExecutor,
    format_tool_result_for_llm,
    validate_parameter_not_empty,
    validate_parameter_type,
)
from errord_client.tools import tool

from tests.helpers import DaemonProcess

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1, "description": "What to find"}},
    "required": ["query"],
}


@tool(name="supermemoryToolSearch", parameters=SCHEMA)
def search_documents(query: str) -> list[dict[str, str]]:
    """Search the user's documents."""
    if not query.strip():  # the schema's minLength does not refuse blanks: the tool does
        raise ValueError("Parameter 'query' cannot be empty")
    if query == "auth":
        raise PermissionError("401 Unauthorized: invalid api key")
    if query == "busy":
        raise RuntimeError("429 Too Many Requests")
    if query == "broken":
        raise RuntimeError("index corrupted")
    return [{"title": f"About {query}"}]


@pytest.fixture
async def executor(
    daemon_process: DaemonProcess, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ToolExecutor]:
    """The document's executor, errord found through ERRORD_TARGET."""
    monkeypatch.setenv(TARGET_VARIABLE, daemon_process.address)
    async with ToolExecutor([search_documents], decision_timeout=10.0) as running:
        yield running


async def test_a_missing_parameter_is_corrected_by_the_next_call(executor: ToolExecutor) -> None:
    # fmt: off
    # First attempt (missing query)
    result = await executor.execute_tool_call(
        tool_name="supermemoryToolSearch",
        tool_args={},  # Missing query!
        user_id="user-123",
        tool_call_id="call_1"
    )

    # LLM receives structured error with guidance
    error_msg = executor.format_tool_result_for_llm(result)
    # Contains: parameter name, example, retry hint

    # LLM automatically retries with correct params
    result2 = await executor.execute_tool_call(
        tool_name="supermemoryToolSearch",
        tool_args={"query": "python async"},  # Fixed!
        user_id="user-123",
        tool_call_id="call_2"
    )
    # Returns successful results
    # fmt: on

    error = result["error"]
    assert (result["tool_call_id"], result["results"]) == ("call_1", [])
    assert error["type"] == "missing_parameter"
    assert error["message"] == "Invalid parameters: missing 'query'"
    assert (error["parameter"], error["required_parameters"]) == ("query", ["query"])
    assert isinstance(error["example"]["query"], str)
    assert error["example"]["query"].strip()
    assert "'query'" in error["retry_hint"]
    assert error_msg == (
        "❌ Tool Call Error: Invalid parameters: missing 'query'\n"
        "\n"
        "Missing Parameter: 'query'\n"
        "Required Parameters: query\n"
        "\n"
        "Example Usage:\n"
        f"{json.dumps(error['example'], indent=2)}\n"
        "\n"
        f"💡 {error['retry_hint']}"
    )
    assert result2 == {"tool_call_id": "call_2", "results": [{"title": "About python async"}]}


async def test_each_error_type_the_document_lists(executor: ToolExecutor) -> None:
    async def error_of(arguments: dict[str, Any]) -> dict[str, Any]:
        result = await executor.execute_tool_call("supermemoryToolSearch", arguments, "u", "c")
        assert result["results"] == []
        error: dict[str, Any] = result["error"]
        return error

    invalid_type = await error_of({"query": 123})
    assert (invalid_type["type"], invalid_type["parameter"]) == ("invalid_type", "query")
    assert invalid_type["message"] == "Parameter 'query' must be a string, got number."
    empty = await error_of({"query": "   "})
    assert (empty["type"], empty["parameter"]) == ("invalid_value", "query")
    assert empty["message"] == "Parameter 'query' cannot be empty or only whitespace."
    auth = await error_of({"query": "auth"})
    assert (auth["type"], auth["message"]) == (
        "authentication_error",
        "401 Unauthorized: invalid api key",
    )
    limited = await error_of({"query": "busy"})
    assert (limited["type"], limited["message"]) == ("rate_limit_exceeded", "429 Too Many Requests")
    failed = await error_of({"query": "broken"})
    assert (failed["type"], failed["message"]) == ("execution_error", "index corrupted")
    for error in (auth, limited, failed):
        assert error["retry_hint"]  # errord's next step for the model
        assert (error["parameter"], error["required_parameters"], error["example"]) == (
            None,
            [],
            None,
        )


def test_the_documents_error_and_its_layout() -> None:
    # fmt: off
    error = ToolExecutionError(
        error_type="missing_parameter",  # Classifies error type
        message="The 'query' parameter is required",
        parameter="query",
        required_parameters=["query"],
        example={"query": "search term"},
        retry_hint="Provide a search query"
    )
    # fmt: on
    assert error.to_dict() == {
        "type": "missing_parameter",
        "message": "The 'query' parameter is required",
        "parameter": "query",
        "required_parameters": ["query"],
        "example": {"query": "search term"},
        "retry_hint": "Provide a search query",
    }

    tool_call_id = "call_1"
    query = ""

    # fmt: off
    def after() -> dict[str, Any]:
        if not query:
            error = ToolExecutionError(
                error_type="missing_parameter",
                message="The 'query' parameter is required for document search",
                parameter="query",
                required_parameters=["query"],
                example={"query": "python asyncio patterns"},
                retry_hint="Retry the tool call with a search query string. "
                           "The query should describe what you're looking for."
            )
            return {
                "tool_call_id": tool_call_id,
                "error": error.to_dict(),  # ✅ Structured with guidance
                "results": []
            }
        return {}
    # fmt: on

    # The document's output, with its code's retry hint (its printed output ends the
    # hint with "in the user's documents", which its code does not say).
    assert format_tool_result_for_llm(after()) == (
        "❌ Tool Call Error: The 'query' parameter is required for document search\n"
        "\n"
        "Missing Parameter: 'query'\n"
        "Required Parameters: query\n"
        "\n"
        "Example Usage:\n"
        "{\n"
        '  "query": "python asyncio patterns"\n'
        "}\n"
        "\n"
        "💡 Retry the tool call with a search query string. The query should describe what you're looking for."
    )
    legacy = {"tool_call_id": "call_1", "error": "No query provided", "results": []}
    assert format_tool_result_for_llm(legacy) == "Tool execution error: No query provided"


def test_the_validation_helpers() -> None:
    wrong = validate_parameter_type("query", 123, str, "search term")
    assert wrong is not None
    assert wrong.to_dict() == {
        "type": "invalid_type",
        "message": "Parameter 'query' must be str, got int",
        "parameter": "query",
        "required_parameters": [],
        "example": {"query": "search term"},
        "retry_hint": None,
    }
    assert validate_parameter_type("query", "fine", str) is None
    empty = validate_parameter_not_empty("query", "   ", "search term")
    assert empty is not None
    assert (empty.error_type, empty.message) == (
        "invalid_value",
        "Parameter 'query' cannot be empty",
    )
    assert validate_parameter_not_empty("query", "fine") is None


def test_the_retry_counter() -> None:
    decisions = []
    # fmt: off
    buffer = ToolCallBuffer()

    # Tool call fails with error
    buffer.record_error("call_123", "missing_parameter")
    buffer.increment_retry_count("call_123")

    # Check if should retry
    if buffer.should_retry("call_123", max_retries=2):
        # Retry the tool call
        decisions.append("retry")
    else:
        # Max retries exceeded, escalate to user
        decisions.append("escalate")
    # fmt: on
    buffer.increment_retry_count("call_123")
    assert not buffer.should_retry("call_123", max_retries=2)
    assert decisions == ["retry"]
    assert buffer.get_retry_count("call_123") == 2
    assert buffer.get_error_history("call_123") == ["missing_parameter"]
