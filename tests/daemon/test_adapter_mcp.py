"""The MCP adapter against the real ``mcp`` package and a real errord: in-process MCP servers
(``MCPServer``, and the low-level ``Server`` for paging and content blocks) reached over
memory streams as JSON-RPC (``mcp.Client(server, mode="legacy")``, whose ``session`` is a
``ClientSession``), their tools run by the executor under errord in this event loop.

The acceptance test: a tool that fails with ``isError`` once and then answers is retried
as errord decides; the server's schemas become errord's manifests (generated, checked by
``errord check``, reloaded), and a call breaking one comes back to the model with a
correction naming the parameter.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from errord_client import Executor, ResultStatus, pb
from errord_client.adapters import mcp as adapter
from errord_client.adapters.manifests import manifests_yaml, write_manifest_file
from errord_client.executor import DecidedBy, failure_from_exception
from errord_client.executor.local_policy import local_classification
from errord_client.v1 import errord_pb2_grpc
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp import types as mcp_types
from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from errord.config import Settings
from tests.helpers import (
    START_TIMEOUT,
    InProcessDaemon,
    operator_channel,
    run_errord,
    start_in_process,
)

PATIENCE = 10.0
"""Seconds a test waits for something the server or errord must do: a bound on a hang."""


# The servers


class Weather:
    """An MCP server whose ``weather`` fails with isError (a 503) at its first call and
    answers after; ``search`` takes a ``limit`` of 1 to 10; ``strict`` refuses every call
    with a protocol error; ``slow`` hangs at its first call until cancelled."""

    def __init__(self) -> None:
        self.server = MCPServer("weather")
        self.calls: dict[str, int] = {}
        self.cancelled = asyncio.Event()
        server = self.server

        @server.tool()
        async def weather(city: str) -> str:
            """The weather in a city."""
            if self._count("weather") == 1:
                raise ToolError("503 Service Unavailable")
            return f"sunny in {city}"

        @server.tool()
        async def search(query: str, limit: Annotated[int, Field(ge=1, le=10)] = 5) -> list[str]:
            """Search the forecasts."""
            self._count("search")
            return [query] * limit

        @server.tool()
        async def strict(limit: int) -> str:
            """Refuses every call, as a JSON-RPC error."""
            self._count("strict")
            raise MCPError(mcp_types.INVALID_PARAMS, f"'limit' must be at most 10, not {limit}")

        @server.tool()
        async def slow() -> str:
            """Hangs at its first call."""
            if self._count("slow") == 1:
                try:
                    await asyncio.Event().wait()
                finally:
                    self.cancelled.set()
            return "late but there"

        @server.tool(name="files.read")
        async def read(path: str) -> str:
            """A name with a dot, which MCP allows and model APIs do not."""
            return f"contents of {path}"

    def _count(self, tool: str) -> int:
        self.calls[tool] = self.calls.get(tool, 0) + 1
        return self.calls[tool]


def paged_server() -> Server[Any]:
    """A low-level server listing its two tools on two pages; ``chart`` answers with an
    image and structured content."""
    pages = {
        None: mcp_types.ListToolsResult(tools=[_definition("chart")], next_cursor="2"),
        "2": mcp_types.ListToolsResult(tools=[_definition("table")]),
    }

    async def list_tools(
        context: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return pages[params.cursor if params else None]

    async def call_tool(
        context: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        image = mcp_types.ImageContent(type="image", data="iVBORw0=", mime_type="image/png")
        if params.name == "chart":
            return mcp_types.CallToolResult(content=[image], structured_content={"points": 3})
        return mcp_types.CallToolResult(content=[image])

    return Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


def _definition(name: str, **fields: Any) -> mcp_types.Tool:
    return mcp_types.Tool(name=name, input_schema={"type": "object"}, **fields)


@asynccontextmanager
async def connected(server: MCPServer | Server[Any]) -> AsyncIterator[Client]:
    """A client of ``server`` over memory streams, speaking JSON-RPC as over a transport."""
    async with Client(server, mode="legacy") as client:
        yield client


# errord


@pytest.fixture
def manifest_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "tools.d"
    directory.mkdir()
    return directory


@pytest.fixture
async def errord(tmp_path: Path, manifest_dir: Path) -> AsyncIterator[InProcessDaemon]:
    """errord in this loop, reading its manifests from ``manifest_dir`` (empty at start)."""
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db", manifests=manifest_dir)
    running = await start_in_process(settings)
    yield running
    running.stop.set()
    await asyncio.wait_for(running.task, START_TIMEOUT)


async def reload(errord: InProcessDaemon) -> pb.ReloadManifestsResponse:
    async with operator_channel(errord.address, errord.token) as channel:
        operator = errord_pb2_grpc.OperatorServiceStub(channel)
        response: pb.ReloadManifestsResponse = await operator.ReloadManifests(
            pb.ReloadManifestsRequest(by="test: MCP tools"), timeout=PATIENCE
        )
        return response


async def failures(errord: InProcessDaemon, turn_id: str) -> dict[str, list[pb.FailureEvent]]:
    """The turn's reported failures with errord's decisions, by call."""
    async with operator_channel(errord.address, errord.token) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        page = await stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id=turn_id), timeout=PATIENCE)
    found: dict[str, list[pb.FailureEvent]] = {}
    for event in page.events:
        if event.HasField("failure"):
            found.setdefault(event.call_id, []).append(event.failure)
    return found


async def validate(errord: InProcessDaemon, tool: str, **arguments: Any) -> Any:
    async with operator_channel(errord.address, errord.token) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        request = pb.ValidateCallRequest(tool=tool)
        request.arguments.update(arguments)
        return await stub.ValidateCall(request, timeout=PATIENCE)


# The acceptance test


async def test_errord_retries_an_is_error_tool_and_corrects_a_call_from_the_generated_manifest(
    errord: InProcessDaemon, manifest_dir: Path
) -> None:
    """The weather tool's isError text (a 503) is classified as UNAVAILABLE and retried to
    success; the schemas the server lists become errord's manifests, which ``errord check``
    passes and a reload puts in force; a limit past the schema's maximum comes back to the
    model (RETURN_TO_MODEL) with a correction naming ``limit``, as the result's text does."""
    mcp = Weather()
    async with connected(mcp.server) as client:
        written = await adapter.write_manifests(client.session, manifest_dir)
        checked = await asyncio.to_thread(run_errord, "check", str(manifest_dir))
        assert checked.returncode == 0, checked.stderr
        assert "5 tools valid" in checked.stdout
        reloaded = await reload(errord)
        assert reloaded.applied, reloaded.problems
        assert "search" in reloaded.tools
        assert "files_read" in reloaded.tools
        assert written == manifest_dir / "mcp_tools.yaml"

        tools = await adapter.mcp_tools(client.session)
        async with Executor(tools, target=errord.address) as executor:
            weather, search = await executor.run(
                [
                    {"id": "w1", "name": "weather", "arguments": {"city": "Oslo"}},
                    {"id": "s1", "name": "search", "arguments": {"query": "rain", "limit": 50}},
                ],
                turn_id="turn-mcp",
            )

    assert weather.status is ResultStatus.SUCCEEDED
    assert weather.output == "sunny in Oslo"
    assert (weather.attempts, weather.decided_by) == (2, DecidedBy.ERRORD)
    assert mcp.calls["weather"] == 2
    assert search.status is ResultStatus.RETURNED_TO_MODEL
    assert "Parameter: 'limit'" in search.content()

    decided = await failures(errord, "turn-mcp")
    [retried] = decided["w1"]
    assert retried.error.exception_type == "errord_client.adapters.mcp.MCPToolError"
    assert "503 Service Unavailable" in retried.error.message
    assert retried.decision.action == pb.RECOVERY_ACTION_RETRY
    assert retried.decision.classification.code == pb.ERROR_CODE_UNAVAILABLE
    [corrected] = decided["s1"]
    assert corrected.decision.action == pb.RECOVERY_ACTION_RETURN_TO_MODEL
    correction = corrected.decision.correction
    assert (correction.parameter, correction.type) == ("limit", "out_of_range")
    assert list(correction.required_parameters) == ["query"]  # the manifest's schema says so


async def test_validate_call_reads_the_generated_manifest(
    errord: InProcessDaemon, manifest_dir: Path
) -> None:
    """Once reloaded, errord checks a call to an MCP tool against its inputSchema before
    it runs (ValidateCall), naming the parameter to correct."""
    async with connected(Weather().server) as client:
        await adapter.write_manifests(client, manifest_dir)
    assert (await reload(errord)).applied
    refused = await validate(errord, "search", query="rain", limit=50)
    assert refused.checked
    assert not refused.valid
    assert refused.correction.parameter == "limit"
    assert (await validate(errord, "search", query="rain", limit=3)).valid


# The session's own call_tool


async def test_session_call_tool_returns_the_servers_result_after_errords_retry(
    errord: InProcessDaemon,
) -> None:
    """ErrordMCPSession.call_tool takes what ClientSession.call_tool does and returns the
    server's own CallToolResult (its structured content kept) once errord's retry
    succeeded; the tools are registered with the executor at the first call."""
    mcp = Weather()
    async with connected(mcp.server) as client, Executor(target=errord.address) as executor:
        session = adapter.ErrordMCPSession(client.session, executor)
        answered = await session.call_tool("weather", {"city": "Bergen"})
        again = await session.execute("weather", {"city": "Bergen"})
    assert isinstance(answered, mcp_types.CallToolResult)
    assert not answered.is_error
    assert answered.structured_content == {"result": "sunny in Bergen"}
    assert mcp.calls["weather"] == 3
    assert "search" in executor.registry
    assert (again.status, again.attempts) == (ResultStatus.SUCCEEDED, 1)


async def test_session_call_tool_gives_errords_text_as_an_is_error_result(
    errord: InProcessDaemon,
) -> None:
    """A call errord returns to the model comes back from call_tool as an isError result
    whose text is errord's message for the model, not the server's bare error."""
    async with connected(Weather().server) as client, Executor(target=errord.address) as executor:
        session = adapter.ErrordMCPSession(client, executor)
        refused = await session.call_tool("strict", {"limit": 50}, turn_id="turn-strict")
    assert refused.is_error
    text = adapter.result_text(refused)
    assert text.startswith("Tool Execution Failed\nTool: strict")
    assert "Parameter: 'limit'" in text


# Protocol errors


async def test_a_protocol_error_reaches_errord_as_invalid_input(errord: InProcessDaemon) -> None:
    """An MCPError with INVALID_PARAMS (a JSON-RPC error, no result at all) is reported as
    InvalidParams with the server's message: errord classifies it INVALID_INPUT by its type,
    hands the call back to the model and names the parameter the message quotes."""
    async with connected(Weather().server) as client:
        tools = await adapter.mcp_tools(client)
        async with Executor(tools, target=errord.address) as executor:
            [result] = await executor.run(
                [{"id": "p1", "name": "strict", "arguments": {"limit": 50}}], turn_id="turn-p"
            )
    assert result.status is ResultStatus.RETURNED_TO_MODEL
    [failure] = (await failures(errord, "turn-p"))["p1"]
    assert failure.error.exception_type == "errord_client.adapters.mcp.InvalidParams"
    assert failure.error.message == "'limit' must be at most 10, not 50"
    assert failure.decision.classification.code == pb.ERROR_CODE_INVALID_INPUT
    assert failure.decision.correction.parameter == "limit"


@pytest.mark.parametrize(
    ("code", "kind", "read_as"),
    [
        (mcp_types.INVALID_PARAMS, adapter.InvalidParams, "INVALID_INPUT"),
        (mcp_types.INVALID_REQUEST, adapter.InvalidRequest, "INTERNAL"),
        (mcp_types.METHOD_NOT_FOUND, adapter.MethodNotFound, "UNSUPPORTED"),
        (mcp_types.REQUEST_TIMEOUT, adapter.RequestTimeout, "TIMEOUT"),
        (mcp_types.CONNECTION_CLOSED, adapter.ConnectionClosed, "CONNECTION"),
        (mcp_types.INTERNAL_ERROR, adapter.MCPProtocolError, "UNKNOWN"),
        (mcp_types.PARSE_ERROR, adapter.MCPProtocolError, "INTERNAL"),
    ],
)
def test_each_protocol_error_code_has_the_type_and_code_errord_reads(
    code: int, kind: type[adapter.MCPProtocolError], read_as: str
) -> None:
    """The error's type names its code, and the executor reports the JSON-RPC code as
    api_code, which errord reads (as the local policy does, with errord's rules); the
    message is the server's, with its data. An unknown tool is no -32601: a server answers
    it as an is-error result ("Unknown tool"), the model's mistake; -32601 says the server
    does not do what the client asked of it."""
    error = adapter.protocol_error(MCPError(code, "upstream said no", {"why": "test"}))
    assert type(error) is kind
    assert (str(error), error.code, error.data) == ("upstream said no", code, {"why": "test"})
    failure = failure_from_exception(error)
    assert (failure.code, failure.api_code) == ("", str(code))
    assert failure.api_message == 'upstream said no ({"why": "test"})'
    assert failure.exception_type == f"errord_client.adapters.mcp.{kind.__qualname__}"
    assert local_classification(failure, {}).code.value == read_as


async def test_the_server_checks_an_mcp_tools_arguments(errord: InProcessDaemon) -> None:
    """An MCP server validates its tools' arguments itself: the executor calls it with the
    model's arguments as written (validates_arguments). MCPServer takes 2.0 for an int and
    an extra argument; a call missing ``query`` reaches the server, whose refusal is the
    failure errord decides on."""
    mcp = Weather()
    async with connected(mcp.server) as client:
        tools = await adapter.mcp_tools(client)
        assert all(tool.validates_arguments for tool in tools)
        async with Executor(tools, target=errord.address) as executor:
            taken, refused = await executor.run(
                [
                    {
                        "id": "a1",
                        "name": "search",
                        "arguments": {"query": "rain", "limit": 2.0, "lang": "en"},
                    },
                    {"id": "a2", "name": "search", "arguments": {"limit": 2}},
                ],
                turn_id="turn-args",
            )
    assert (taken.status, taken.ignored_arguments) == (ResultStatus.SUCCEEDED, ())
    assert refused.status is not ResultStatus.SUCCEEDED
    assert mcp.calls["search"] == 1  # MCPServer refused the second before the tool ran
    [failure] = (await failures(errord, "turn-args"))["a2"]
    assert failure.error.exception_type == "errord_client.adapters.mcp.MCPToolError"
    assert "validation error" in failure.error.message


# Timeouts, names, pages, content


async def test_a_call_past_its_manifests_timeout_is_cancelled_on_the_server_and_retried(
    errord: InProcessDaemon, manifest_dir: Path
) -> None:
    """With ``timeout_ms`` given as an override, the executor abandons the hanging first
    call at 300 ms (the MCP request is cancelled: the server's handler ends), errord
    decides TIMEOUT and a retry, and the second call answers."""
    mcp = Weather()
    async with connected(mcp.server) as client:
        overrides = {"slow": {"timeout_ms": 300}}
        await adapter.write_manifests(client, manifest_dir, overrides=overrides)
        assert (await reload(errord)).applied
        async with Executor(await adapter.mcp_tools(client), target=errord.address) as executor:
            [result] = await executor.run(
                [{"id": "t1", "name": "slow", "arguments": {}}], turn_id="turn-slow"
            )
        await asyncio.wait_for(mcp.cancelled.wait(), PATIENCE)
    assert (result.status, result.output, result.attempts) == (
        ResultStatus.SUCCEEDED,
        "late but there",
        2,
    )
    [failure] = (await failures(errord, "turn-slow"))["t1"]
    assert failure.error.code == pb.ERROR_CODE_TIMEOUT
    assert failure.decision.action == pb.RECOVERY_ACTION_RETRY


async def test_a_dotted_mcp_name_is_called_by_a_name_models_accept(
    errord: InProcessDaemon,
) -> None:
    """``files.read`` becomes ``files_read`` (with the prefix given) for errord and the
    model, and the call reaches ``files.read`` on the server; ErrordMCPSession takes the
    MCP name."""
    async with connected(Weather().server) as client:
        tools = await adapter.mcp_tools(client, prefix="wx.")
        assert "wx_files_read" in [tool.name for tool in tools]
        async with Executor(tools, target=errord.address) as executor:
            [result] = await executor.run(
                [{"id": "f1", "name": "wx_files_read", "arguments": {"path": "/a"}}]
            )
            session = adapter.ErrordMCPSession(client, executor, prefix="wx.")
            answered = await session.call_tool("files.read", {"path": "/b"})
    assert result.output == "contents of /a"
    assert adapter.result_text(answered) == "contents of /b"


async def test_every_page_of_the_tool_list_is_read_and_content_blocks_reach_the_model(
    errord: InProcessDaemon,
) -> None:
    """A server listing its tools on two pages has both as tools; a result that is not all
    text gives the model its structured content, or else its blocks as JSON."""
    async with connected(paged_server()) as client:
        tools = await adapter.mcp_tools(client.session)
        assert [tool.name for tool in tools] == ["chart", "table"]
        async with Executor(tools, target=errord.address) as executor:
            chart, table = await executor.run(
                [
                    {"id": "c1", "name": "chart", "arguments": {}},
                    {"id": "c2", "name": "table", "arguments": {}},
                ]
            )
    assert chart.output == {"points": 3}
    assert table.output == [{"type": "image", "data": "iVBORw0=", "mimeType": "image/png"}]


def test_tool_output_is_the_text_when_the_result_is_all_text() -> None:
    """Text blocks are joined a line apart; a result without content gives ""."""
    texts: list[mcp_types.ContentBlock] = [
        mcp_types.TextContent(type="text", text=text) for text in ("a", "b")
    ]
    assert adapter.tool_output(mcp_types.CallToolResult(content=texts)) == "a\nb"
    assert adapter.tool_output(mcp_types.CallToolResult(content=[])) == ""
    structured = mcp_types.CallToolResult(content=[], structured_content={"n": 1})
    assert adapter.tool_output(structured) == {"n": 1}


def test_an_is_error_result_without_text_still_says_which_tool() -> None:
    failed = adapter.MCPToolError("search", mcp_types.CallToolResult(content=[], is_error=True))
    assert str(failed) == "search returned an error without text"


# Manifests


def test_manifests_hold_each_tools_schema_hints_and_overrides() -> None:
    """Each tool's manifest is its errord name, description and inputSchema; a tool the
    server says is not idempotent (and not read-only) gets ``idempotent: false``; overrides
    add or replace keys by errord name."""
    definitions = [
        _definition("search.web", description="Search the web."),
        _definition(
            "send",
            annotations=mcp_types.ToolAnnotations(idempotent_hint=False, destructive_hint=True),
        ),
        _definition(
            "read",
            annotations=mcp_types.ToolAnnotations(read_only_hint=True, idempotent_hint=False),
        ),
    ]
    text = adapter.manifests_from_mcp(
        definitions, overrides={"search_web": {"timeout_ms": 5000, "alternatives": ["read"]}}
    )
    assert text.startswith("# Generated by errord_client.adapters.mcp")
    assert yaml.safe_load(text) == {
        "tools": [
            {
                "name": "search_web",
                "description": "Search the web.",
                "parameters": {"type": "object"},
                "timeout_ms": 5000,
                "alternatives": ["read"],
            },
            {"name": "send", "idempotent": False, "parameters": {"type": "object"}},
            {"name": "read", "parameters": {"type": "object"}},
        ]
    }


def test_an_override_of_a_tool_the_server_does_not_list_is_refused() -> None:
    with pytest.raises(ValueError, match="does not list: \\['serch'\\]"):
        adapter.manifests_from_mcp([_definition("search")], overrides={"serch": {}})


def test_two_mcp_tools_with_one_errord_name_are_refused() -> None:
    with pytest.raises(ValueError, match="both named 'a_b'"):
        adapter.tools_from_mcp(Client(paged_server()), [_definition("a.b"), _definition("a_b")])


def test_a_manifest_file_is_replaced_whole_and_named_as_errord_reads(tmp_path: Path) -> None:
    """The file lands whole under its name, no temporary left beside it; a name errord would
    not read is refused."""
    path = write_manifest_file("tools: []\n", tmp_path / "new", "mcp.yaml")
    assert path.read_text() == "tools: []\n"
    assert sorted(each.name for each in path.parent.iterdir()) == ["mcp.yaml"]
    with pytest.raises(ValueError, match=r"\*\.yaml or \*\.yml"):
        write_manifest_file("tools: []\n", tmp_path, "mcp.json")


def _json_values() -> st.SearchStrategy[Any]:
    text = st.text(st.characters(codec=None, exclude_categories=()))
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4)
        ),
        max_leaves=24,
    )


@given(value=_json_values())
def test_yaml_of_any_json_value_reads_back_as_that_value(value: Any) -> None:
    """What errord's YAML reader (PyYAML's SafeLoader) makes of a manifest holding any JSON
    value (any string, surrogates and YAML's own line breaks included; any float) is that
    value."""
    [read] = yaml.safe_load(manifests_yaml([{"name": "t", "default": value}]))["tools"]
    assert read["default"] == value
