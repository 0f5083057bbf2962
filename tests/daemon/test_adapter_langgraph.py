"""The LangGraph adapter against a real errord: ErrorHandlingToolNode stands where a
ToolNode does, runs the model's calls through the executor (one errord turn per node
invocation), and answers each call with one ToolMessage carrying errord's text when it
has no output.

Each test starts errord in its own event loop with this module's manifests, and its own
tools and scripted chat model (no network, no real model). The node waits for errord's
answers longer than the executor's default (``DECISIONS``), so that a loaded machine
cannot turn errord's decision into a local one.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from errord_client.adapters.langgraph import (
    PROGRESS_KEY,
    ErrorHandlingToolNode,
    ToolErrorEntry,
    ToolErrorRegistry,
    errord_tool,
    tool_message,
)
from errord_client.executor import ResultStatus, ToolResult, failure_from_exception
from errord_client.tools import InvalidArguments
from errord_client.v1 import errord_pb2 as pb
from langchain_core.callbacks import AsyncCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import (
    BaseTool,
    InjectedToolCallId,
    StructuredTool,
    ToolException,
    tool,
)
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import InjectedState, ToolNode, create_react_agent, tools_condition
from langgraph.types import Command
from pydantic import BaseModel, Field, ValidationError

from errord.config import Settings
from tests.executor_helpers import recorded_trace
from tests.helpers import START_TIMEOUT, InProcessDaemon, start_in_process

DECISIONS = 10.0
"""Seconds the node gives errord to answer a failure before its local policy would."""

MANIFESTS = """\
tools:
  - name: weather
    timeout_ms: 1000
  - name: flight_search
    alternatives: [flight_search_backup]
  - name: flight_search_backup
  - name: hotel_search
    parameters:
      type: object
      required: [city, nights]
      properties:
        city: {type: string, examples: [Paris]}
        nights: {type: integer, minimum: 1}
"""


@pytest.fixture
async def errord(tmp_path: Path) -> AsyncIterator[InProcessDaemon]:
    """errord in this event loop, with MANIFESTS as its tools."""
    manifests = tmp_path / "tools"
    manifests.mkdir()
    (manifests / "tools.yaml").write_text(MANIFESTS)
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db", manifests=manifests)
    running = await start_in_process(settings)
    yield running
    running.stop.set()
    await asyncio.wait_for(running.task, START_TIMEOUT)


def of_kind(events: Sequence[pb.TraceEvent], kind: str) -> dict[str, list[pb.TraceEvent]]:
    """The events of one kind ("failure", "outcome", ...) by call id, in trace order."""
    found: dict[str, list[pb.TraceEvent]] = {}
    for event in events:
        if event.WhichOneof("event") == kind:
            found.setdefault(event.call_id, []).append(event)
    return found


# A scripted chat model and the tools of the trip


class ScriptedModel(FakeMessagesListChatModel):
    """Answers with its ``responses`` in order; records the messages it was shown and the
    tools it was bound to, as a real model would be given them."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[str] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        self.bound = [each.name for each in tools]
        return self  # the model itself answers as bound


def calling(*calls: tuple[str, str, dict[str, Any]]) -> AIMessage:
    """An AI message asking for ``calls`` (id, tool, arguments)."""
    return AIMessage(
        "", tool_calls=[{"id": i, "name": name, "args": args} for i, name, args in calls]
    )


def tool_messages(messages: Sequence[BaseMessage]) -> dict[str, ToolMessage]:
    """The tool messages by tool_call_id."""
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


class Trip:
    """The trip's tools, counting their invocations: weather hangs at its first call
    (errord's 1 s timeout ends it), flight_search's key is refused (its alternative
    answers), hotel_search answers whatever it is given."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        calls = self.calls

        @tool
        async def weather(city: str) -> str:
            """Today's weather in a city."""
            calls["weather"] = calls.get("weather", 0) + 1
            if calls["weather"] == 1:
                await asyncio.Event().wait()
            return f"Sunny in {city}"

        @tool
        def flight_search(origin: str, destination: str) -> str:
            """Search flights."""
            calls["flight_search"] = calls.get("flight_search", 0) + 1
            raise ToolException("the flight API refused the request") from PermissionError(
                "401 Unauthorized: the API key was revoked"
            )

        @tool
        def flight_search_backup(origin: str, destination: str) -> str:
            """Search flights with the backup provider."""
            calls["flight_search_backup"] = calls.get("flight_search_backup", 0) + 1
            return f"AF1234 {origin}-{destination}"

        @tool
        def hotel_search(city: str, nights: int) -> str:
            """Search hotels in a city."""
            calls["hotel_search"] = calls.get("hotel_search", 0) + 1
            return f"Hotel Lutetia, {city}, {nights} nights"

        # LangChain would return this tool's error as its output; errord must see it.
        flight_search.handle_tool_error = True
        self.tools: list[BaseTool] = [weather, flight_search, flight_search_backup, hotel_search]


def agent_graph(model: ScriptedModel, node: ToolNode) -> CompiledStateGraph[Any]:
    """agent -> tools -> agent ... until the model calls no tool: the ReAct loop."""
    bound = model.bind_tools(list(node.tools_by_name.values()))

    async def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def node_for(errord: InProcessDaemon, tools: Sequence[Any]) -> ErrorHandlingToolNode:
    return ErrorHandlingToolNode(
        tools, target=errord.address, decision_timeout=DECISIONS, sync_timeout=DECISIONS
    )


# The acceptance test


async def test_a_graph_runs_to_its_end_through_errords_recoveries(
    errord: InProcessDaemon, caplog: pytest.LogCaptureFixture
) -> None:
    """Three calls of one AI message: weather times out once and is retried, hotel_search's
    argument is wrong and errord's correction goes back to the model, flight_search fails
    for good and its alternative answers. The model sees one ToolMessage per call, then
    sends the corrected call; the graph ends; the trace holds every decision."""
    trip = Trip()
    model = ScriptedModel(
        responses=[
            calling(
                ("c1", "weather", {"city": "Paris"}),
                ("c2", "hotel_search", {"city": "Paris", "nights": "two"}),
                ("c3", "flight_search", {"origin": "JFK", "destination": "CDG"}),
            ),
            calling(("c4", "hotel_search", {"city": "Paris", "nights": 2})),
            AIMessage("Your trip is planned."),
        ]
    )
    node = node_for(errord, trip.tools)
    graph = agent_graph(model, node)
    with caplog.at_level(logging.INFO, logger="errord_client.adapters.langgraph"):
        state = await graph.ainvoke({"messages": [HumanMessage("Two nights in Paris")]})
    await node.aclose()  # sends the outcomes and turn endings still queued

    assert model.bound == ["weather", "flight_search", "flight_search_backup", "hotel_search"]
    assert len(model.seen) == 3
    assert state["messages"][-1].content == "Your trip is planned."
    first = tool_messages(model.seen[1])
    assert [(m.name, m.status) for m in first.values()] == [
        ("weather", "success"),
        ("hotel_search", "error"),
        ("flight_search", "success"),
    ]
    assert first["c1"].content == "Sunny in Paris"
    assert first["c3"].content == "AF1234 JFK-CDG"
    correction = first["c2"].content
    assert isinstance(correction, str)
    assert correction.startswith(
        "Tool Execution Failed\nTool: hotel_search\nError Type: invalid_type\n"
        "Message: Invalid parameters: 'nights' must be an integer\n"
    )
    assert "Parameter: 'nights'\n" in correction
    assert 'Example Usage: {"city": "Paris", "nights": 1}' in correction
    second = tool_messages(model.seen[2])
    assert second["c4"].content == "Hotel Lutetia, Paris, 2 nights"
    assert second["c4"].status == "success"
    assert trip.calls == {
        "weather": 2,
        "flight_search": 1,
        "flight_search_backup": 1,
        "hotel_search": 1,  # the wrong call never ran
    }

    meta = {call_id: m.response_metadata["errord"] for call_id, m in second.items()}
    meta |= {call_id: m.response_metadata["errord"] for call_id, m in first.items()}
    turn, next_turn = meta["c1"]["turn_id"], meta["c4"]["turn_id"]
    assert {meta[c]["turn_id"] for c in ("c1", "c2", "c3")} == {turn} != {next_turn}
    events = await recorded_trace(errord, turn)
    failures = of_kind(events, "failure")
    assert sorted(failures) == ["c1", "c2", "c3"]
    decided = {c: [e.failure.decision for e in failures[c]] for c in failures}
    assert [d.action for d in decided["c1"]] == [pb.RECOVERY_ACTION_RETRY]
    assert failures["c1"][0].failure.error.code == pb.ERROR_CODE_TIMEOUT
    [hotel] = decided["c2"]
    assert hotel.action == pb.RECOVERY_ACTION_RETURN_TO_MODEL
    assert (hotel.correction.parameter, hotel.llm_message) == ("nights", correction)
    [flight] = decided["c3"]
    assert (flight.action, flight.alternative_tool) == (
        pb.RECOVERY_ACTION_USE_ALTERNATIVE,
        "flight_search_backup",
    )
    assert failures["c3"][0].failure.error.exception_type == "PermissionError"
    for call_id, decisions in decided.items():
        assert meta[call_id]["decision_ids"] == [d.decision_id for d in decisions]
    outcomes = of_kind(events, "outcome")
    assert sorted(outcomes) == ["c1", "c3"]
    assert outcomes["c1"][0].outcome.decision_id == decided["c1"][0].decision_id
    assert of_kind(events, "turn_ended")
    later = await recorded_trace(errord, next_turn)
    assert not of_kind(later, "failure")
    assert sorted(of_kind(later, "outcome")) == ["c4"]

    assert node.error_summary() == {"hotel_search:INVALID_INPUT": 1}
    [entry] = node.errors_for_tool("hotel_search")["hotel_search:INVALID_INPUT"]
    assert (entry.call_id, entry.turn_id, entry.status) == (
        "c2",
        turn,
        ResultStatus.RETURNED_TO_MODEL,
    )
    logged = [r.getMessage() for r in caplog.records if r.name.endswith("langgraph")]
    assert sorted(logged) == sorted(
        [
            "[TOOL RECOVERED] weather answered after 2 attempts, decided by errord",
            "[TOOL ERROR] hotel_search failed with INVALID_INPUT: "
            "Invalid parameters: 'nights' must be an integer",
            "[TOOL RECOVERED] flight_search answered by flight_search_backup after 2 attempts, "
            "decided by errord",
        ]
    )  # each call logs as it ends


# Where a ToolNode goes


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
async def test_create_react_agent_takes_the_node_and_sends_each_call_as_its_own_turn(
    errord: InProcessDaemon,
) -> None:
    """The prebuilt ReAct agent accepts the node as its ToolNode and binds its tools; its
    Send API hands the node one call at a time (ToolCallWithContext), each an errord turn
    of its own, and the alternative answers the refused call."""
    trip = Trip()
    model = ScriptedModel(
        responses=[
            calling(
                ("c1", "flight_search", {"origin": "JFK", "destination": "CDG"}),
                ("c2", "hotel_search", {"city": "Paris", "nights": 2}),
            ),
            AIMessage("Booked."),
        ]
    )
    node = node_for(errord, trip.tools)
    agent = create_react_agent(model, node)
    state = await agent.ainvoke({"messages": [HumanMessage("Book it")]})
    await node.aclose()

    assert model.bound == ["weather", "flight_search", "flight_search_backup", "hotel_search"]
    answers = tool_messages(state["messages"])
    assert (answers["c1"].content, answers["c2"].content) == (
        "AF1234 JFK-CDG",
        "Hotel Lutetia, Paris, 2 nights",
    )
    turns = {m.response_metadata["errord"]["turn_id"] for m in answers.values()}
    assert len(turns) == 2
    flight_turn = answers["c1"].response_metadata["errord"]["turn_id"]
    [failure] = of_kind(await recorded_trace(errord, flight_turn), "failure")["c1"]
    assert failure.failure.decision.action == pb.RECOVERY_ACTION_USE_ALTERNATIVE


async def test_graph_invoke_runs_the_node_on_its_own_loop_until_closed(
    errord: InProcessDaemon,
) -> None:
    """A synchronous graph (``graph.invoke``) gets errord's recoveries too: the node runs
    its calls on an event loop of its own, which ``close()`` stops."""
    trip = Trip()
    model = ScriptedModel(
        responses=[
            calling(("c1", "flight_search", {"origin": "JFK", "destination": "CDG"})),
            AIMessage("Booked."),
        ]
    )
    node = node_for(errord, trip.tools)
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    graph = builder.compile()

    def run() -> dict[str, Any]:
        try:
            return graph.invoke({"messages": [HumanMessage("Fly me")]})
        finally:
            node.close()

    # In a thread: this test's loop must stay free to serve as errord.
    state = await asyncio.to_thread(run)

    [answer] = tool_messages(state["messages"]).values()
    assert (answer.content, answer.status) == ("AF1234 JFK-CDG", "success")
    assert answer.response_metadata["errord"]["tool_used"] == "flight_search_backup"
    assert "errord-langgraph" not in {thread.name for thread in threading.enumerate()}


async def test_turn_ids_can_come_from_the_graphs_config(errord: InProcessDaemon) -> None:
    """``turn_id`` names each invocation's turn from its config: the messages carry it and
    errord's trace of that turn holds the call's decision."""
    numbers = itertools.count(1)

    def turn(config: RunnableConfig) -> str:
        return f"{config['configurable']['thread_id']}/{next(numbers)}"

    trip = Trip()
    node = ErrorHandlingToolNode(
        trip.tools, target=errord.address, decision_timeout=DECISIONS, turn_id=turn
    )
    try:
        [answer] = await node.ainvoke(
            [calling(("c1", "flight_search", {"origin": "JFK", "destination": "CDG"}))],
            {"configurable": {"thread_id": "trip-7"}},
        )
    finally:
        await node.aclose()
    record = answer.response_metadata["errord"]
    assert record["turn_id"] == "trip-7/1"
    [failure] = of_kind(await recorded_trace(errord, "trip-7/1"), "failure")["c1"]
    assert record["decision_ids"] == [failure.failure.decision.decision_id]


# ToolNode's input and output shapes


class Probe(TypedDict):
    given: Any
    answer: Any


async def inside_a_graph(node: ToolNode, given: Any) -> Any:
    """What ``node`` answers to ``given`` when a graph's node invokes it with its config
    (ToolNode needs the graph's runtime the config carries)."""

    async def run(state: Probe, config: RunnableConfig) -> dict[str, Any]:
        return {"answer": await node.ainvoke(state["given"], config)}

    builder = StateGraph(Probe)
    builder.add_node("run", run)
    builder.add_edge(START, "run")
    return (await builder.compile().ainvoke(Probe(given=given, answer=None)))["answer"]


async def test_the_node_answers_as_toolnode_does_for_each_input_shape(
    errord: InProcessDaemon,
) -> None:
    """For tools that succeed, the node's messages are ToolNode's (content, id, name,
    status), whatever the input: a state, a list of messages (answered with a list), or
    the tool calls themselves; outputs that are not text become JSON as ToolNode makes
    them, and content blocks stay blocks."""

    @tool
    def profile(user: str) -> dict[str, Any]:
        """A user's profile."""
        return {"user": user, "city": "Zürich", "visits": [1, 2]}

    @tool
    def picture(user: str) -> list[dict[str, str]]:
        """A user's picture, as content blocks."""
        return [{"type": "text", "text": f"picture of {user}"}]

    def greet(name: str) -> str:
        """Greet someone (a plain function)."""
        return f"Hello {name}"

    tools: list[Any] = [profile, picture, greet]
    message = calling(
        ("c1", "profile", {"user": "ada"}),
        ("c2", "picture", {"user": "ada"}),
        ("c3", "greet", {"name": "Ada"}),
    )
    node = node_for(errord, tools)
    reference = ToolNode(tools)
    inputs: list[Any] = [
        {"messages": [HumanMessage("hi"), message]},
        [HumanMessage("hi"), message],
        [{**call, "type": "tool_call"} for call in message.tool_calls],
    ]
    try:
        for given in inputs:
            ours, theirs = await inside_a_graph(node, given), await inside_a_graph(reference, given)
            assert type(ours) is type(theirs)
            if isinstance(ours, dict):
                ours, theirs = ours["messages"], theirs["messages"]
            shown = [(m.content, m.tool_call_id, m.name, m.status) for m in ours]
            assert shown == [(m.content, m.tool_call_id, m.name, m.status) for m in theirs]
    finally:
        await node.aclose()
    assert shown[0][0] == '{"user": "ada", "city": "Zürich", "visits": [1, 2]}'
    assert shown[1][0] == [{"type": "text", "text": "picture of ada"}]


@pytest.mark.parametrize(
    ("given", "error"),
    [
        pytest.param({"messages": []}, "No message found in input", id="no-messages"),
        pytest.param([HumanMessage("hi")], "No AIMessage found in input", id="no-ai-message"),
    ],
)
async def test_an_input_without_tool_calls_raises_as_toolnode_does(given: Any, error: str) -> None:
    """Input with no messages, or no AI message, raises ToolNode's ValueError before
    anything runs or connects."""
    node = ErrorHandlingToolNode([], target="127.0.0.1:9")
    with pytest.raises(ValueError, match=error):
        await inside_a_graph(node, given)
    with pytest.raises(ValueError, match=error):
        await inside_a_graph(ToolNode([]), given)
    assert not node._started  # no executor was made


async def test_an_unknown_tool_gets_errords_text_naming_the_tools_there_are(
    errord: InProcessDaemon,
) -> None:
    """A call of a tool the node does not have is answered with an error message for the
    model (errord's correction), never an exception out of the graph."""
    trip = Trip()
    node = node_for(errord, trip.tools)
    try:
        answer = await node.ainvoke([calling(("c1", "hotel_serch", {"city": "Paris"}))])
    finally:
        await node.aclose()
    [message] = answer
    assert (message.tool_call_id, message.name, message.status) == ("c1", "hotel_serch", "error")
    assert message.content.startswith("Tool Execution Failed\nTool: hotel_serch\n")
    assert node.error_summary() == {"hotel_serch:TOOL_NOT_FOUND": 1}


async def test_tools_run_with_the_nodes_config_so_callbacks_see_them(
    errord: InProcessDaemon,
) -> None:
    """Each tool call is given the node invocation's config, as ToolNode gives it: the
    callbacks of the run see the tool start and end, the alternative's too."""

    class Starts(AsyncCallbackHandler):
        def __init__(self) -> None:
            self.started: list[str] = []

        async def on_tool_start(
            self, serialized: dict[str, Any], input_str: str, **kwargs: Any
        ) -> None:
            self.started.append(serialized["name"])

    starts = Starts()
    trip = Trip()
    node = node_for(errord, trip.tools)
    try:
        await node.ainvoke(
            [calling(("c1", "flight_search", {"origin": "JFK", "destination": "CDG"}))],
            {"callbacks": [starts]},
        )
    finally:
        await node.aclose()
    assert starts.started == ["flight_search", "flight_search_backup"]


# The conversion and the message, without errord


async def test_errord_tool_lets_the_tools_own_exception_through() -> None:
    """errord_tool keeps the schema the model is bound with, and raises what the tool
    raised although LangChain's own handlers are on: a ToolException's cause, a
    ToolException without one, the pydantic ValidationError of a bad argument."""

    @tool
    def fetch(url: str, retries: int = 0) -> str:
        """Fetch a page."""
        if url == "cause":
            raise ToolException("fetch failed") from ConnectionError("connection reset")
        raise ToolException(f"no page at {url}")

    fetch.handle_tool_error = True
    fetch.handle_validation_error = True
    converted = errord_tool(fetch)

    assert converted.name == "fetch"
    assert converted.description == "Fetch a page."
    assert converted.parameters == {
        "type": "object",
        "properties": {"url": {"type": "string"}, "retries": {"type": "integer", "default": 0}},
        "required": ["url"],
    }
    with pytest.raises(ConnectionError, match="connection reset"):
        await converted.invoke({"url": "cause"})
    with pytest.raises(ToolException, match="no page at /x"):
        await converted.invoke({"url": "/x"})
    assert fetch.handle_tool_error is True  # the tool itself is left as it was


async def test_the_tools_own_pydantic_model_decides_its_arguments() -> None:
    """A LangChain tool checks its arguments itself, so the executor does not
    (validates_arguments): 2.0 for an int and an extra argument are taken as LangChain
    takes them; a refusal is InvalidArguments naming the parameter, raised before the tool
    runs, from pydantic's error; a pydantic error the tool's own code raises is the tool's,
    not the model's."""
    calls: list[tuple[str, int]] = []

    @tool
    def fetch(url: str, retries: int = 0) -> str:
        """Fetch a page."""
        calls.append((url, retries))
        if url == "parse":
            Page.model_validate({"title": 3})  # the tool's own parsing fails
        return f"{url} after {retries!r}"

    converted = errord_tool(fetch)
    assert converted.validates_arguments
    assert await converted.invoke({"url": "/x", "retries": 2.0, "verbose": True}) == "/x after 2"
    with pytest.raises(InvalidArguments) as refused:
        await converted.invoke({"url": "/x", "retries": "many"})
    assert (str(refused.value), refused.value.parameter) == (
        "Invalid parameters: 'retries' must be an integer",
        "retries",
    )
    assert isinstance(refused.value.__cause__, ValidationError)
    failure = failure_from_exception(refused.value)
    assert (failure.code, failure.api_parameter) == ("INVALID_INPUT", "retries")
    with pytest.raises(ValidationError) as own:
        await converted.invoke({"url": "parse"})
    assert failure_from_exception(own.value).code == ""  # errord judges it the tool's
    assert calls == [("/x", 2), ("parse", 0)]


class Page(BaseModel):
    title: str


def test_a_tool_given_a_json_schema_as_a_dict_is_checked_by_the_executor() -> None:
    """LangChain passes a dict args_schema through unchecked: the executor checks it."""
    search = StructuredTool.from_function(
        func=lambda **kwargs: "found",
        name="search",
        description="Search.",
        args_schema={
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
        },
    )
    assert not errord_tool(search).validates_arguments


async def test_an_artifact_a_command_and_injected_state_are_as_toolnodes(
    errord: InProcessDaemon,
) -> None:
    """Each attempt is ToolNode's own execution of the call: a tool's artifact is kept, a
    Command it returns is the node's answer, and a tool reading the injected state gets
    it, exactly as from ToolNode."""

    @tool(response_format="content_and_artifact")
    def rooms(city: str) -> tuple[str, dict[str, Any]]:
        """The free rooms of a city's hotels."""
        return f"2 rooms in {city}", {"rooms": [1, 2]}

    @tool
    def book(room: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Book a room."""
        return Command(
            update={"messages": [ToolMessage(f"booked {room}", tool_call_id=tool_call_id)]}
        )

    @tool
    def remember(fact: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
        """Remember a fact."""
        return f"{fact} ({len(state['messages'])} messages)"

    tools: list[Any] = [rooms, book, remember]
    message = calling(
        ("c1", "rooms", {"city": "Paris"}),
        ("c2", "book", {"room": 2}),
        ("c3", "remember", {"fact": "window seat"}),
    )
    node = node_for(errord, tools)
    try:
        ours = await inside_a_graph(node, {"messages": [HumanMessage("hi"), message]})
    finally:
        await node.aclose()
    theirs = await inside_a_graph(ToolNode(tools), {"messages": [HumanMessage("hi"), message]})
    assert [type(each) for each in ours] == [type(each) for each in theirs]
    answers = [m for each in ours if isinstance(each, dict) for m in each["messages"]]
    expected = [m for each in theirs if isinstance(each, dict) for m in each["messages"]]
    shown = [(m.content, m.artifact, m.status) for m in answers]
    assert shown == [(m.content, m.artifact, m.status) for m in expected]
    assert shown == [
        ("2 rooms in Paris", {"rooms": [1, 2]}, "success"),
        ("window seat (2 messages)", None, "success"),
    ]
    [command] = [each for each in ours if isinstance(each, Command)]
    assert isinstance(command.update, dict)
    assert command.update["messages"][0].content == "booked 2"
    assert node.error_summary() == {}


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
async def test_a_run_inside_the_nodes_turn_is_one_errord_turn_with_progress_streamed(
    errord: InProcessDaemon,
) -> None:
    """create_react_agent invokes the node once per call (its Send API); inside
    ``async with node.turn()`` the whole run is one errord turn, and the graph's custom
    stream carries each step of each call (the refused call's switch to its alternative)."""
    trip = Trip()
    model = ScriptedModel(
        responses=[
            calling(
                ("c1", "flight_search", {"origin": "JFK", "destination": "CDG"}),
                ("c2", "hotel_search", {"city": "Paris", "nights": 2}),
            ),
            calling(("c3", "hotel_search", {"city": "Lyon", "nights": 1})),
            AIMessage("Booked."),
        ]
    )
    node = node_for(errord, trip.tools)
    agent = create_react_agent(model, node)
    steps: list[dict[str, Any]] = []
    try:
        async with node.turn("turn-react") as turn:
            async for chunk in agent.astream(
                {"messages": [HumanMessage("Book it")]}, stream_mode="custom"
            ):
                steps.append(chunk[PROGRESS_KEY])
    finally:
        await node.aclose()
    assert turn.turn_id == "turn-react"
    events = await recorded_trace(errord, "turn-react")
    [ended] = of_kind(events, "turn_ended")[""]
    assert {call.call_id for call in ended.turn_ended.summary.calls} == {"c1", "c2", "c3"}
    kinds = [(step["call_id"], step["kind"]) for step in steps]
    assert ("c1", "alternative") in kinds
    assert [kind for call_id, kind in kinds if call_id == "c3"] == ["attempt", "done"]
    assert {step["turn_id"] for step in steps} == {"turn-react"}


def test_errord_tool_alone_refuses_a_tool_with_injected_arguments_by_name() -> None:
    """Outside a tool node nothing fills in graph state: errord_tool raises TypeError
    naming the tool and the argument (the node runs such tools, as ToolNode does)."""

    @tool
    def remember(fact: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
        """Remember a fact."""
        return fact

    with pytest.raises(TypeError, match=r"Tool 'remember' has injected arguments \(state\)"):
        errord_tool(remember)
    assert ErrorHandlingToolNode([remember]).errord_tools.get("remember").name == "remember"


def test_tool_message_says_what_the_model_reads_and_keeps_errords_record() -> None:
    """A result with an output is a success message with the output; one without is an
    error message with errord's text; both carry the turn and the decisions."""
    ok = ToolResult("c1", "weather", ResultStatus.DEFAULTED, output={"sky": "unknown"})
    failed = ToolResult(
        "c2",
        "weather",
        ResultStatus.FAILED,
        decision_ids=("d1",),
        model_text="Tool Execution Failed\nTool: weather",
    )
    first, second = tool_message(ok, turn_id="t1"), tool_message(failed, turn_id="t1")
    assert (first.content, first.status) == ('{"sky": "unknown"}', "success")
    assert (second.content, second.status) == ("Tool Execution Failed\nTool: weather", "error")
    assert second.response_metadata["errord"]["decision_ids"] == ["d1"]
    assert second.response_metadata["errord"]["turn_id"] == "t1"
    assert "output" not in first.response_metadata["errord"]


def test_the_error_registry_counts_every_error_and_keeps_the_last_few() -> None:
    """Errors are counted by tool and type for good; only the last ``keep`` entries of each
    kind are kept; one tool's errors are found by its name alone."""
    registry = ToolErrorRegistry(keep=2)
    for number in range(3):
        registry.record(
            ToolErrorEntry("search", "TIMEOUT", f"slow {number}", ResultStatus.TIMED_OUT, "c", "t")
        )
    registry.record(ToolErrorEntry("search_v2", "AUTH", "401", ResultStatus.FAILED, "c", "t"))
    assert registry.summary() == {"search:TIMEOUT": 3, "search_v2:AUTH": 1}
    kept = registry.for_tool("search")
    assert [entry.message for entry in kept["search:TIMEOUT"]] == ["slow 1", "slow 2"]
    assert list(kept) == ["search:TIMEOUT"]
    registry.clear()
    assert registry.summary() == {}
