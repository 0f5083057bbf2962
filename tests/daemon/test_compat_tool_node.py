"""The error-handling tool node's document (002) through errord_client.compat.tool_node,
against errord as a process: its examples, transcribed (only the imports changed), give
what it says they give, except where errord answers better on purpose (its retries, its
text for the model), which the tests assert and docs/coming-from.md explains. The
document's code is kept as it is written (fmt: off, and the lint rules it breaks)."""

# ruff: noqa: B904, RET504, RUF012

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import requests
from errord_client.compat import TARGET_VARIABLE
from errord_client.compat.tool_node import (
    ErrorHandlingToolNode,
    ToolErrorRegistry,
    ToolExecutionError,
    create_tool_error_message,
    format_tool_error_for_llm,
    wrap_tool_with_error_handling,
)
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph

from tests.helpers import DaemonProcess

State = MessagesState
logger = logging.getLogger("tests.compat.tool_node")


@pytest.fixture(autouse=True)
def errord_target(daemon_process: DaemonProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """The document's code names no address: errord is found through ERRORD_TARGET."""
    monkeypatch.setenv(TARGET_VARIABLE, daemon_process.address)


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="errord_client.compat.tool_node")
    return caplog


class Api:
    """What the document's tools call: a search API that times out on "slow" and answers
    HTTP 503 on "down"."""

    def search(self, query: str) -> str:
        if query == "slow":
            raise requests.Timeout("read timed out")
        if query == "down":
            response = requests.Response()
            response.status_code = 503
            raise requests.HTTPError("503 Service Unavailable", response=response)
        if query == "empty":
            raise LookupError("nothing found")
        return f"Results for {query}"


api = Api()


# The document's best practices: tools with clear, specific exceptions.
# fmt: off
@tool
def search(query: str) -> str:
    """Search the web."""
    try:
        result = api.search(query)
        return result
    except requests.Timeout:
        raise TimeoutError(f"Search timeout for query: {query}")
    except requests.HTTPError as e:
        raise ValueError(f"Search API error: {e.response.status_code}")


@tool
def bad_search(query: str) -> str:
    """Search the web."""
    try:
        result = api.search(query)
        return result
    except Exception:
        return ""  # Silent failure - don't do this!
# fmt: on


@tool
def failing_search(query: str) -> str:
    """Search the web."""
    raise ValueError("Bad query")


@pytest.fixture
def node() -> Iterator[ErrorHandlingToolNode]:
    made = ErrorHandlingToolNode(tools=[search, bad_search])
    yield made
    made.close()


def extra(record: logging.LogRecord, *names: str) -> tuple[Any, ...]:
    """The fields a log line's ``extra`` set on ``record``."""
    return tuple(vars(record)[name] for name in names)


def calls_of(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [AIMessage(content="", tool_calls=list(calls))]}


def test_tool_execution_error_names_the_original_exceptions_type(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tool = failing_search
    # fmt: off
    try:
        tool.invoke({"query": "test"})
    except Exception as e:
        error = ToolExecutionError(
            tool_name="search",
            original_error=e,
            tool_input={"query": "test"}
        )
        print(error.error_type)  # "ValueError", "TimeoutError", etc.
    # fmt: on
    assert capsys.readouterr().out == "ValueError\n"
    error = ToolExecutionError("search", TimeoutError("slow"), {"query": "test"})
    assert (error.error_type, error.message, error.tool_input) == (
        "TimeoutError",
        "slow",
        {"query": "test"},
    )
    assert isinstance(error.timestamp, datetime)
    record = error.to_dict()
    assert record["tool_name"] == "search"
    assert record["error_type"] == "TimeoutError"
    assert ToolExecutionError("search", ValueError("x"), message="Bad query").message == "Bad query"


def test_wrap_tool_with_error_handling_returns_the_tool_itself() -> None:
    assert wrap_tool_with_error_handling(search) is search


def test_format_tool_error_for_llm_is_the_documents_text() -> None:
    # fmt: off
    error_msg = format_tool_error_for_llm(
        tool_name="search",
        error_type="RateLimitError",
        error_message="Too many requests"
    )
    # fmt: on
    assert error_msg == (
        "Tool Execution Failed\n"
        "Tool: search\n"
        "Error Type: RateLimitError\n"
        "Message: Too many requests\n"
        "\n"
        "The tool failed and cannot be used for this request."
    )


def test_create_tool_error_message_is_a_tool_message_for_the_call() -> None:
    # fmt: off
    error = ValueError("Invalid input")
    tool_call_id = "call_xyz_123"
    tool_msg = create_tool_error_message(
        tool_name="processor",
        error=error,
        tool_call_id=tool_call_id
    )
    # fmt: on
    assert isinstance(tool_msg, ToolMessage)
    assert (tool_msg.content, tool_msg.tool_call_id, tool_msg.name) == (
        "[TOOL ERROR] processor failed with ValueError: Invalid input",
        "call_xyz_123",
        "processor",
    )
    long = create_tool_error_message("processor", ValueError("x" * 500), "c")
    assert long.content == "[TOOL ERROR] processor failed with ValueError: " + "x" * 200


def test_the_error_registry_counts_by_tool_and_type() -> None:
    registry = ToolErrorRegistry()

    # Record errors
    registry.record_error("search", ValueError("Bad query"))
    registry.record_error("search", TimeoutError("Timeout"))
    registry.record_error("api", ConnectionError("No connection"))

    # Get summary
    summary = registry.get_error_summary()
    # {"search:ValueError": 1, "search:TimeoutError": 1, "api:ConnectionError": 1}

    # Get specific tool errors
    search_errors = registry.get_errors_for_tool("search")
    # {"search:ValueError": [...], "search:TimeoutError": [...]}

    assert summary == {"search:ValueError": 1, "search:TimeoutError": 1, "api:ConnectionError": 1}
    assert set(search_errors) == {"search:ValueError", "search:TimeoutError"}
    [entry] = search_errors["search:ValueError"]
    assert entry["error_message"] == "Bad query"
    datetime.fromisoformat(entry["timestamp"])


def test_a_successful_call_is_a_tool_message_with_its_result(
    node: ErrorHandlingToolNode, logged: pytest.LogCaptureFixture
) -> None:
    assert set(node.tools) == {"search", "bad_search"}
    answer = node(calls_of({"id": "call_1", "name": "search", "args": {"query": "python"}}))
    [message] = answer["messages"]
    assert (message.content, message.tool_call_id, message.name) == (
        "Results for python",
        "call_1",
        "search",
    )
    assert node.get_error_summary() == {}
    # The node's own lines: asyncio's or grpc's, of an earlier test's channels, may be there.
    records = [r for r in logged.records if r.name == "errord_client.compat.tool_node"]
    lines = [(record.levelname, record.getMessage()) for record in records]
    assert lines == [
        ("INFO", "Processing 1 tool call(s)"),
        ("INFO", "Executing tool: search"),
        ("INFO", "Tool succeeded: search"),
        ("INFO", "Tool execution batch completed"),
    ]
    succeeded, completed = records[2], records[3]
    assert extra(succeeded, "tool_name", "result_length") == ("search", len("Results for python"))
    assert extra(completed, "successful", "total") == (1, 1)


def test_a_failed_call_is_logged_tracked_and_told_to_the_model_in_errords_words(
    node: ErrorHandlingToolNode, logged: pytest.LogCaptureFixture
) -> None:
    answer = node(
        calls_of(
            {"id": "call_2", "name": "search", "args": {"query": "down"}},
            {"id": "call_3", "name": "search", "args": {"query": "python"}},
        )
    )
    failed, succeeded = answer["messages"]
    assert (failed.tool_call_id, failed.name, failed.status) == ("call_2", "search", "error")
    # errord's text begins as the document's, then says what to do next instead of
    # "cannot be used for this request".
    # errord reads the 503 in the message: transient, retried after its delays, then
    # "call search again later".
    assert failed.content.startswith(
        "Tool Execution Failed\nTool: search\nError Type: UNAVAILABLE (transient)\n"
        "Message: Search API error: 503\n\n"
    )
    assert "call search again later" in failed.content
    assert succeeded.content == "Results for python"

    # Monitoring errors, as the document does it
    error_summary = node.get_error_summary()
    if error_summary:
        logger.warning(f"Tools encountered errors: {error_summary}")
    [entry] = error_summary["search"]
    assert (entry["error_type"], entry["error_message"]) == ("ValueError", "Search API error: 503")
    datetime.fromisoformat(entry["timestamp"])

    [failure] = [r for r in logged.records if r.getMessage() == "Tool execution failed: search"]
    assert failure.levelname == "ERROR"
    assert extra(failure, "tool_name", "error_type", "error_message") == (
        "search",
        "ValueError",
        "Search API error: 503",
    )
    [batch] = [r for r in logged.records if r.getMessage() == "Tool execution batch completed"]
    assert extra(batch, "successful", "total") == (1, 2)


def test_the_debug_guide_reads_the_errors_of_one_tool(
    node: ErrorHandlingToolNode, capsys: pytest.CaptureFixture[str]
) -> None:
    node(calls_of({"id": "call_4", "name": "search", "args": {"query": "empty"}}))

    # Get all errors
    errors = node.get_error_summary()

    # Check specific tool
    if "search" in errors:
        search_errors = errors["search"]
        for error_entry in search_errors:
            print(f"{error_entry['error_type']}: {error_entry['error_message']}")

    assert capsys.readouterr().out == "LookupError: nothing found\n"


def test_a_transient_failure_is_retried_by_errord_before_the_model_hears_of_it(
    node: ErrorHandlingToolNode,
) -> None:
    """The document's node runs a call once; errord retries a timeout after its delays,
    so the call that timed out twice answers."""
    answers = iter([requests.Timeout("read timed out"), requests.Timeout("again"), "Found it"])
    original = api.search

    def flaky(query: str) -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return str(answer)

    api.search = flaky  # type: ignore[method-assign]
    try:
        answer = node(calls_of({"id": "call_5", "name": "search", "args": {"query": "x"}}))
    finally:
        api.search = original  # type: ignore[method-assign]
    [message] = answer["messages"]
    assert (message.content, message.status) == ("Found it", "success")
    assert node.get_error_summary() == {}


def test_the_node_goes_where_the_documents_build_graph_puts_it() -> None:
    class Sidekick:
        tools = [search, bad_search]

        async def build_graph(self):  # type: ignore[no-untyped-def]
            graph_builder = StateGraph(State)

            # Using ErrorHandlingToolNode (comprehensive error handling)
            error_handling_tool_node = ErrorHandlingToolNode(tools=self.tools)
            graph_builder.add_node("tools", error_handling_tool_node)

            # ... rest of graph setup ...
            graph_builder.add_edge(START, "tools")
            self.node = error_handling_tool_node
            return graph_builder.compile()

    sidekick = Sidekick()
    graph = asyncio.run(sidekick.build_graph())  # type: ignore[no-untyped-call]
    try:
        state = graph.invoke(calls_of({"id": "c1", "name": "bad_search", "args": {"query": "q"}}))
    finally:
        sidekick.node.close()
    assert state["messages"][-1].content == "Results for q"


def test_a_tool_not_found_and_a_call_without_an_id_are_answered_not_raised(
    node: ErrorHandlingToolNode,
) -> None:
    answer = node(
        calls_of(
            {"id": "call_6", "name": "api_call", "args": {"endpoint": "/data"}},
            {"id": None, "name": "search", "args": {"query": "python"}},
        )
    )
    missing, unnamed = answer["messages"]
    assert (missing.tool_call_id, missing.status) == ("call_6", "error")
    assert missing.content.startswith("Tool Execution Failed\nTool: api_call\n")
    assert "Message: Tool 'api_call' not found" in missing.content
    assert (unnamed.tool_call_id, unnamed.status) == ("", "error")
    assert "has no 'id'" in unnamed.content
    errors = node.get_error_summary()
    assert [entry["error_type"] for entry in errors["api_call"]] == ["ToolNotFound"]
