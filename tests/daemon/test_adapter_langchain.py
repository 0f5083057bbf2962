"""The create_agent middleware against errord as a process: ``create_agent(model, tools,
middleware=[ErrordMiddleware(...)])`` runs a scripted conversation in which a timeout is
retried to success, a wrong argument is corrected by the model and a permanent failure
goes to the alternative, all in one errord turn for the run; a tool's artifact, a
``Command`` it returns and a tool reading the injected state come out as they do without
the middleware; the custom stream carries errord's progress.

Each test starts its own daemon and uses its own tools and scripted chat model (no
network, no real model). The middleware waits for errord's answers longer than the
executor's default (``DECISIONS``) so that a loaded machine cannot turn errord's decision
into a local one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from errord_client.adapters.langchain import PROGRESS_KEY, ErrordMiddleware
from errord_client.v1 import errord_pb2 as pb
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import InjectedState
from langgraph.types import Command, interrupt
from pydantic import Field

from tests.executor_helpers import errord_process, recorded_trace, wait_for

DECISIONS = 10.0
"""Seconds the middleware gives errord to answer a failure before its local policy would."""

MANIFESTS = """\
tools:
  - name: weather
    timeout_ms: 500
    retry_policy: {initial_delay_ms: 10}
  - name: flight_search
    alternatives: [flight_search_backup]
  - name: flight_search_backup
"""


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
    (errord's 500 ms timeout ends it), flight_search's key is refused (its alternative
    answers), hotel_search takes a whole number of nights."""

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
            raise PermissionError("401 Unauthorized: the API key was revoked")

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

        self.tools: list[BaseTool] = [weather, flight_search, hotel_search]
        self.backup = flight_search_backup


@tool(response_format="content_and_artifact")
def rooms(city: str) -> tuple[str, dict[str, Any]]:
    """The free rooms of a city's hotels."""
    return f"2 rooms in {city}", {"rooms": [{"id": 1}, {"id": 2}], "city": city}


@tool
def book(room: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Book a room."""
    answer = ToolMessage(f"booked room {room}", tool_call_id=tool_call_id, name="book")
    return Command(update={"messages": [answer]})


@tool
def conversation_length(state: Annotated[dict[str, Any], InjectedState]) -> int:
    """How many messages the conversation holds."""
    return len(state["messages"])


FRAMEWORK_TOOLS = [rooms, book, conversation_length]
"""Tools whose answers the framework shapes (an artifact, a Command, injected state)."""

FRAMEWORK_SCRIPT: list[BaseMessage] = [
    calling(
        ("r1", "rooms", {"city": "Paris"}),
        ("b1", "book", {"room": 2}),
        ("n1", "conversation_length", {}),
    ),
    AIMessage("Room 2 is booked."),
]


async def test_create_agent_runs_a_conversation_through_errord_in_one_turn(
    tmp_path: Path,
) -> None:
    """The acceptance conversation: weather hangs once and is retried to success;
    hotel_search is called with nights="two", errord's correction names the parameter and
    the model calls it again with 2; flight_search's key is refused and its alternative
    (not shown to the model) answers. The run is one errord turn, ended with the run,
    whose summary counts every call; the custom stream told each retry and the switch."""
    trip = Trip()
    model = ScriptedModel(
        responses=[
            calling(
                ("w1", "weather", {"city": "Paris"}),
                ("h1", "hotel_search", {"city": "Paris", "nights": "two"}),
                ("f1", "flight_search", {"origin": "SFO", "destination": "CDG"}),
            ),
            calling(("h2", "hotel_search", {"city": "Paris", "nights": 2})),
            AIMessage("Sunny; AF1234; Hotel Lutetia for 2 nights."),
        ]
    )
    with errord_process(tmp_path, MANIFESTS) as daemon:
        errord = ErrordMiddleware(
            alternatives=[trip.backup],
            target=daemon.address,
            decision_timeout=DECISIONS,
            sync_timeout=DECISIONS,
            turn_id=lambda config: "turn-agent",
            user_id="ada",
        )
        agent = create_agent(model, trip.tools, middleware=[errord])
        steps: list[dict[str, Any]] = []
        final: dict[str, Any] = {}
        try:
            async for mode, chunk in agent.astream(
                {"messages": [HumanMessage("A trip to Paris")]}, stream_mode=["custom", "values"]
            ):
                streamed: dict[str, Any] = chunk  # type: ignore[assignment]  # by its mode
                if mode == "custom":
                    steps.append(streamed[PROGRESS_KEY])
                else:
                    final = streamed
        finally:
            await errord.aclose()

        async def ended() -> list[pb.TraceEvent] | None:
            events = await recorded_trace(daemon, "turn-agent")
            return events if any(e.WhichOneof("event") == "turn_ended" for e in events) else None

        events = await wait_for(ended, "the end of the agent's turn")
    answers = tool_messages(final["messages"])
    assert answers["w1"].content == "Sunny in Paris"
    assert answers["w1"].status == "success"
    assert answers["h1"].status == "error"
    assert "nights" in str(answers["h1"].content)
    assert answers["h2"].content == "Hotel Lutetia, Paris, 2 nights"
    assert answers["f1"].content == "AF1234 SFO-CDG"
    assert trip.calls == {
        "weather": 2,
        "hotel_search": 1,
        "flight_search": 1,
        "flight_search_backup": 1,
    }
    assert final["messages"][-1].content == "Sunny; AF1234; Hotel Lutetia for 2 nights."
    assert model.bound == ["weather", "flight_search", "hotel_search"]
    [summary] = [e.turn_ended.summary for e in events if e.WhichOneof("event") == "turn_ended"]
    assert {call.call_id for call in summary.calls} == {"w1", "h1", "f1", "h2"}
    decided = [
        (e.call_id, pb.RecoveryAction.Name(e.failure.decision.action))
        for e in events
        if e.WhichOneof("event") == "failure"
    ]
    assert sorted(decided) == [
        ("f1", "RECOVERY_ACTION_USE_ALTERNATIVE"),
        ("h1", "RECOVERY_ACTION_RETURN_TO_MODEL"),
        ("w1", "RECOVERY_ACTION_RETRY"),
    ]
    kinds = {(step["call_id"], step["kind"]) for step in steps}
    assert {("w1", "retry"), ("f1", "alternative"), ("h2", "done")} <= kinds
    [retry] = [step for step in steps if step["kind"] == "retry"]
    assert (retry["tool"], retry["turn_id"]) == ("weather", "turn-agent")
    assert retry["message"]


async def test_an_artifact_a_command_and_injected_state_are_as_without_the_middleware(
    tmp_path: Path,
) -> None:
    """The same conversation with and without the middleware: the artifact is kept, the
    Command's message is the call's answer, the injected-state tool reads the state; the
    messages the run ends with are the same."""

    async def run(middleware: list[ErrordMiddleware]) -> list[BaseMessage]:
        model = ScriptedModel(responses=FRAMEWORK_SCRIPT)
        agent = create_agent(model, FRAMEWORK_TOOLS, middleware=middleware)
        state = await agent.ainvoke({"messages": [HumanMessage("Book me a room in Paris")]})
        messages: list[BaseMessage] = state["messages"]
        return messages

    plain = await run([])
    with errord_process(tmp_path, "tools: []\n") as daemon:
        errord = ErrordMiddleware(
            target=daemon.address, decision_timeout=DECISIONS, sync_timeout=DECISIONS
        )
        try:
            guarded = await run([errord])
        finally:
            await errord.aclose()
    expected = tool_messages(plain)
    answers = tool_messages(guarded)
    assert answers["r1"].artifact == {"rooms": [{"id": 1}, {"id": 2}], "city": "Paris"}
    assert answers["b1"].content == "booked room 2"
    assert answers["n1"].content == expected["n1"].content == "2"
    for call_id in ("r1", "b1", "n1"):
        seen = (answers[call_id].content, answers[call_id].artifact, answers[call_id].status)
        assert seen == (expected[call_id].content, expected[call_id].artifact, "success")
    assert [type(m).__name__ for m in guarded] == [type(m).__name__ for m in plain]
    assert errord.errors.summary() == {}


def test_a_synchronous_run_is_one_turn_too(tmp_path: Path) -> None:
    """``agent.invoke`` (with synchronous tools, as LangChain requires): the calls run on
    the middleware's own loop, in one turn."""
    trip = Trip()
    model = ScriptedModel(
        responses=[
            calling(("h1", "hotel_search", {"city": "Paris", "nights": 2})),
            calling(("h2", "hotel_search", {"city": "Lyon", "nights": 1})),
            AIMessage("done"),
        ]
    )
    with errord_process(tmp_path, MANIFESTS) as daemon:
        errord = ErrordMiddleware(
            target=daemon.address,
            decision_timeout=DECISIONS,
            sync_timeout=DECISIONS,
            turn_id=lambda config: "turn-sync",
        )
        agent = create_agent(model, trip.tools, middleware=[errord])
        try:
            state = agent.invoke({"messages": [HumanMessage("Paris?")]})
        finally:
            errord.close()

        async def ended() -> pb.TurnSummary | None:
            for event in await recorded_trace(daemon, "turn-sync"):
                if event.WhichOneof("event") == "turn_ended":
                    summary: pb.TurnSummary = event.turn_ended.summary
                    return summary
            return None

        summary = asyncio.run(wait_for(ended, "the end of the synchronous run's turn"))
    answers = tool_messages(state["messages"])
    assert answers["h2"].content == "Hotel Lutetia, Lyon, 1 nights"
    assert {call.call_id for call in summary.calls} == {"h1", "h2"}


@tool
def confirm(booking: str) -> str:
    """Ask the user to confirm a booking."""
    answer = interrupt(f"Book {booking}?")
    return f"{booking}: {answer}"


async def test_a_tools_interrupt_pauses_the_run_and_its_resume_answers_the_call(
    tmp_path: Path,
) -> None:
    """A tool calling ``interrupt()`` pauses the run as without the middleware (the
    interrupt is the graph's, never a failure errord retries); resumed, the tool answers,
    in the run's turn, which ends with the resumed run."""
    model = ScriptedModel(
        responses=[calling(("k1", "confirm", {"booking": "Lutetia"})), AIMessage("Done.")]
    )
    with errord_process(tmp_path, "tools: []\n") as daemon:
        errord = ErrordMiddleware(
            target=daemon.address,
            decision_timeout=DECISIONS,
            sync_timeout=DECISIONS,
            turn_id=lambda config: "turn-paused",
        )
        agent = create_agent(model, [confirm], middleware=[errord], checkpointer=InMemorySaver())
        thread: RunnableConfig = {"configurable": {"thread_id": "trip-1"}}
        try:
            paused = await agent.ainvoke({"messages": [HumanMessage("Book it")]}, thread)
            resumed = await agent.ainvoke(Command(resume="yes"), thread)
        finally:
            await errord.aclose()

        async def ended() -> list[pb.TraceEvent] | None:
            events = await recorded_trace(daemon, "turn-paused")
            return events if any(e.WhichOneof("event") == "turn_ended" for e in events) else None

        events = await wait_for(ended, "the end of the resumed run's turn")
    [summary] = [e.turn_ended.summary for e in events if e.WhichOneof("event") == "turn_ended"]
    assert [call.call_id for call in summary.calls] == ["k1"]
    [asked] = paused["__interrupt__"]
    assert asked.value == "Book Lutetia?"
    assert tool_messages(resumed["messages"])["k1"].content == "Lutetia: yes"
    assert resumed["messages"][-1].content == "Done."
    assert errord.errors.summary() == {}


class BrokenModel(ScriptedModel):
    """Answers its first request from its script, and raises at the next."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.seen:
            raise RuntimeError("the model's API went away")
        return super()._generate(messages, stop, run_manager, **kwargs)


async def test_the_turn_of_a_run_that_raised_ends_when_the_middleware_closes(
    tmp_path: Path,
) -> None:
    """The model raises after a tool call: the run never reaches its after_agent step,
    and closing the middleware ends its turn, whose summary has the call."""
    model = BrokenModel(responses=[calling(("r1", "rooms", {"city": "Paris"}))])
    with errord_process(tmp_path, "tools: []\n") as daemon:
        errord = ErrordMiddleware(
            target=daemon.address,
            decision_timeout=DECISIONS,
            sync_timeout=DECISIONS,
            turn_id=lambda config: "turn-raised",
        )
        agent = create_agent(model, [rooms], middleware=[errord])
        try:
            with pytest.raises(RuntimeError, match="went away"):
                await agent.ainvoke({"messages": [HumanMessage("Rooms?")]})
        finally:
            await errord.aclose()

        async def ended() -> list[pb.TraceEvent] | None:
            events = await recorded_trace(daemon, "turn-raised")
            return events if any(e.WhichOneof("event") == "turn_ended" for e in events) else None

        events = await wait_for(ended, "the end of the raised run's turn")
    [summary] = [e.turn_ended.summary for e in events if e.WhichOneof("event") == "turn_ended"]
    assert [call.call_id for call in summary.calls] == ["r1"]
