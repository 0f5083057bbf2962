"""The OpenAI Agents SDK adapter against a real errord: an Agent whose scripted Model calls
guarded function tools, run by the SDK's Runner; errord's decisions are followed inside the
tools, and the model reads errord's text for a call that does not recover.

Each test owns its daemon (in this process, with manifests from tmp_path), its executor and
its tools. The scripted model answers from a list and keeps every input it was sent; no
network, no trace export (tracing is off unless a test turns it on with nothing to export to).
"""

from __future__ import annotations

import asyncio
import copy
import json
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import agents
import grpc
import grpc.aio
import pytest
from agents import Agent, FunctionTool, ModelResponse, RunConfig, Runner, UserError
from agents.items import TResponseInputItem, TResponseOutputItem
from agents.models.interface import Model
from agents.tool_context import ToolContext
from agents.usage import Usage
from errord_client import Executor, ResultStatus
from errord_client.adapters.openai_agents import (
    ToolCallFailed,
    errord_function_tool,
    guarded,
)
from errord_client.executor import failure_from_exception
from errord_client.tools import InvalidArguments, mock_tool
from errord_client.v1 import errord_pb2 as pb
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from pydantic import BaseModel

from errord.config import Settings
from tests.executor_helpers import errord_process, recorded_trace, sent_failures, wait_for
from tests.helpers import START_TIMEOUT, InProcessDaemon, start_in_process

MANIFESTS = """
tools:
  - name: flight_search
    timeout_ms: 200
    retry_policy: {initial_delay_ms: 10, max_attempts: 3}
  - name: hotel_search
    alternatives: [hotel_search_backup]
"""


@pytest.fixture(autouse=True)
def no_tracing() -> None:
    agents.set_tracing_disabled(True)


@pytest.fixture
async def errord(tmp_path: Path) -> AsyncIterator[InProcessDaemon]:
    """errord in this process, knowing MANIFESTS."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "tools.yaml").write_text(textwrap.dedent(MANIFESTS))
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db", manifests=tools)
    running = await start_in_process(settings)
    yield running
    running.stop.set()
    await asyncio.wait_for(running.task, START_TIMEOUT)


class ScriptedModel(Model):
    """A Model answering each request with the next of ``answers``; ``inputs`` holds
    what each request sent it."""

    def __init__(self, *answers: list[TResponseOutputItem]) -> None:
        self.answers = list(answers)
        self.inputs: list[list[Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        sent = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.inputs.append(copy.deepcopy(list(sent)))
        return ModelResponse(output=self.answers.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests run the model without streaming")


def calls(*named: tuple[str, str, dict[str, Any]]) -> list[TResponseOutputItem]:
    """A model answer calling tools: (call id, tool, arguments) each."""
    return [
        ResponseFunctionToolCall(
            id=f"item-{call_id}",
            call_id=call_id,
            name=tool,
            arguments=json.dumps(arguments),
            type="function_call",
        )
        for call_id, tool, arguments in named
    ]


def says(text: str) -> list[TResponseOutputItem]:
    """A model's final answer."""
    content = ResponseOutputText(text=text, type="output_text", annotations=[])
    return [
        ResponseOutputMessage(
            id="item-final", role="assistant", status="completed", type="message", content=[content]
        )
    ]


def tool_outputs(sent: list[Any]) -> dict[str, Any]:
    """The tool outputs a model request carried, by call id."""
    return {
        item["call_id"]: item["output"]
        for item in sent
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


def kinds(events: list[pb.TraceEvent]) -> list[str]:
    return [str(event.WhichOneof("event")) for event in events]


class Script:
    """A tool body's behaviour, attempt by attempt: each step a value to return, an
    exception to raise, or HANG (never answers: only errord's timeout ends it)."""

    HANG = object()

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.attempts = 0

    async def next(self) -> Any:
        self.attempts += 1
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if step is Script.HANG:
            await asyncio.Event().wait()
        if isinstance(step, BaseException):
            raise step
        return step


@pytest.mark.parametrize(
    "first",
    [Script.HANG, ConnectionError("503 Service Unavailable")],
    ids=["times-out", "fails-transiently"],
)
async def test_a_tool_failing_once_is_retried_per_errords_decision_and_the_run_finishes(
    errord: InProcessDaemon, first: Any
) -> None:
    """The first attempt hangs past the manifest's 200 ms (or fails with a 503): errord
    answers RETRY, the guarded tool runs again and succeeds, the model reads the output,
    and the trace holds the RETRY and the successful attempt that followed it."""
    script = Script(first, "AF83, 612 EUR")
    model = ScriptedModel(
        calls(("call_1", "flight_search", {"origin": "SFO", "destination": "CDG"})),
        says("AF83 it is."),
    )
    async with Executor(target=errord.address) as executor:

        @errord_function_tool(executor)
        async def flight_search(origin: str, destination: str) -> str:
            """Search flights between two airports."""
            answer: str = await script.next()
            return answer

        agent = Agent(name="travel", model=model, tools=[flight_search])
        result = await Runner.run(agent, "Fly me to Paris", run_config=RunConfig(trace_id="t1"))

    assert result.final_output == "AF83 it is."
    assert script.attempts == 2
    assert tool_outputs(model.inputs[1]) == {"call_1": "AF83, 612 EUR"}
    events = await recorded_trace(errord, "t1/call_1")
    assert kinds(events) == ["turn_began", "failure", "outcome", "turn_ended"]
    failure, outcome = events[1], events[2]
    assert (failure.call_id, failure.attempt) == ("call_1", 1)
    assert failure.failure.decision.action == pb.RECOVERY_ACTION_RETRY
    assert outcome.attempt == 2
    assert outcome.outcome.outcome == pb.OUTCOME_SUCCESS
    assert outcome.outcome.decision_id == failure.failure.decision.decision_id


async def test_the_model_reads_errords_text_for_a_call_that_does_not_recover(
    errord: InProcessDaemon,
) -> None:
    """A permanent failure with no alternative is not retried; the next model input holds
    errord's llm_message for that call, not the SDK's generic error text, beside the output
    of a call made at the same time (whose body read its own ToolContext), and the run goes
    on to the model's final answer."""
    script = Script(PermissionError("401 Unauthorized: the API key was revoked"))
    model = ScriptedModel(
        calls(("call_7", "payments", {"amount": 30}), ("call_8", "receipt", {})),
        says("Sorry."),
    )
    async with Executor(target=errord.address) as executor:

        @errord_function_tool(executor)
        async def payments(amount: int) -> str:
            """Charge the card on file."""
            answer: str = await script.next()
            return answer

        @errord_function_tool(executor)
        def receipt(ctx: ToolContext[Any]) -> str:
            """The receipt of this call (a sync tool: the SDK runs it in a thread)."""
            return f"receipt for {ctx.tool_call_id}"

        agent = Agent(name="shop", model=model, tools=[payments, receipt])
        result = await Runner.run(agent, "Pay", run_config=RunConfig(trace_id="t2"))

    assert result.final_output == "Sorry."
    assert script.attempts == 1
    events = await recorded_trace(errord, "t2/call_7")
    decision = next(event.failure.decision for event in events if event.HasField("failure"))
    assert decision.action != pb.RECOVERY_ACTION_RETRY
    assert "401 Unauthorized" in decision.llm_message
    assert tool_outputs(model.inputs[1]) == {
        "call_7": decision.llm_message,
        "call_8": "receipt for call_8",
    }


async def test_the_alternative_errord_names_answers_for_the_guarded_tool(
    errord: InProcessDaemon,
) -> None:
    """hotel_search fails permanently (403) and its manifest names hotel_search_backup, a tool
    the executor has but the agent does not show the model: the model reads the backup's
    output under hotel_search's call id."""
    backup = mock_tool("hotel_search_backup", "Hotel du Nord, 140 EUR")
    model = ScriptedModel(calls(("call_3", "hotel_search", {"city": "Paris"})), says("Booked."))
    async with Executor([backup], target=errord.address) as executor:

        @errord_function_tool(executor)
        async def hotel_search(city: str) -> str:
            """Search hotels in a city."""
            raise PermissionError("403 Forbidden: the index is private")

        agent = Agent(name="travel", model=model, tools=[hotel_search])
        await Runner.run(agent, "A hotel in Paris", run_config=RunConfig(trace_id="t3"))

    assert backup.calls == 1
    assert tool_outputs(model.inputs[1]) == {"call_3": "Hotel du Nord, 140 EUR"}
    events = await recorded_trace(errord, "t3/call_3")
    decisions = [event.failure.decision.action for event in events if event.HasField("failure")]
    assert decisions == [pb.RECOVERY_ACTION_USE_ALTERNATIVE]


async def test_arguments_the_schema_refuses_go_back_to_the_model_to_correct(
    errord: InProcessDaemon,
) -> None:
    """The model writes "two" for an integer: the tool does not run, errord hands the call
    back (RETURN_TO_MODEL) with text naming the parameter, and the model's corrected call
    runs."""
    ran: list[int] = []
    model = ScriptedModel(
        calls(("call_a", "seat_map", {"flight": "AF83", "passengers": "two"})),
        calls(("call_b", "seat_map", {"flight": "AF83", "passengers": 2})),
        says("Two seats together."),
    )
    async with Executor(target=errord.address) as executor:

        @errord_function_tool(executor)
        async def seat_map(flight: str, passengers: int) -> str:
            """Free seats for a group on a flight."""
            ran.append(passengers)
            return "12A, 12B"

        agent = Agent(name="travel", model=model, tools=[seat_map])
        result = await Runner.run(agent, "Seats", run_config=RunConfig(trace_id="t5"))

    assert result.final_output == "Two seats together."
    assert ran == [2]
    events = await recorded_trace(errord, "t5/call_a")
    decision = next(event.failure.decision for event in events if event.HasField("failure"))
    assert decision.action == pb.RECOVERY_ACTION_RETURN_TO_MODEL
    correction = tool_outputs(model.inputs[1])["call_a"]
    assert correction == decision.llm_message
    assert "'passengers' must be an integer" in correction
    assert tool_outputs(model.inputs[2])["call_b"] == "12A, 12B"


async def test_without_a_failure_error_function_a_call_that_does_not_recover_fails_the_run(
    errord: InProcessDaemon,
) -> None:
    """failure_error_function=None keeps the SDK's meaning: the error fails the run, and
    the ToolCallFailed behind it carries the executor's result."""
    model = ScriptedModel(calls(("call_9", "payments", {"amount": 30})), says("unreached"))
    async with Executor(target=errord.address) as executor:

        @errord_function_tool(executor, failure_error_function=None)
        async def payments(amount: int) -> str:
            """Charge the card on file."""
            raise PermissionError("401 Unauthorized")

        agent = Agent(name="shop", model=model, tools=[payments])
        with pytest.raises(UserError) as raised:
            await Runner.run(agent, "Pay", run_config=RunConfig(trace_id="t4"))

    failed = raised.value.__cause__
    assert isinstance(failed, ToolCallFailed)
    assert (failed.result.call_id, failed.result.status) == ("call_9", ResultStatus.ESCALATED)
    assert len(model.inputs) == 1


async def test_a_guarded_tool_runs_under_the_executor_alone_too(
    errord: InProcessDaemon,
) -> None:
    """Run by the executor outside any SDK run, the guarded tool's body still runs (in a
    bare ToolContext) and errord's decisions are followed as for any tool."""
    script = Script(ConnectionError("503 Service Unavailable"), "ok")
    async with Executor(target=errord.address) as executor:

        @errord_function_tool(executor)
        async def flight_search() -> str:
            """Search flights."""
            answer: str = await script.next()
            return answer

        call = {"id": "c1", "name": "flight_search", "arguments": {}}
        result = await executor.run_one(call, turn_id="t6")

    assert (result.status, result.output, result.attempts) == (ResultStatus.SUCCEEDED, "ok", 2)


@pytest.fixture
def tracing_on() -> Iterator[None]:
    """The SDK's tracing on, with no processor: traces are made, never exported."""
    agents.set_trace_processors([])
    agents.set_tracing_disabled(False)
    yield
    agents.set_tracing_disabled(True)


@pytest.mark.usefixtures("tracing_on")
async def test_errords_turn_is_named_after_the_runs_trace_and_the_call(
    errord: InProcessDaemon,
) -> None:
    """Without a trace_id in the RunConfig, the turn is "<the SDK's trace id>/<call id>",
    so a run's calls are found in errord from the run's trace."""
    tool = Script(ConnectionError("503 Service Unavailable"), "ok")
    model = ScriptedModel(calls(("call_5", "flight_search", {})), says("done"))
    async with Executor(target=errord.address) as executor:

        @errord_function_tool(executor)
        async def flight_search() -> str:
            """Search flights."""
            answer: str = await tool.next()
            return answer

        agent = Agent(name="travel", model=model, tools=[flight_search])
        with agents.trace("booking", trace_id="trace_0123456789abcdef0123456789abcdef"):
            await Runner.run(agent, "Fly")

    events = await recorded_trace(errord, "trace_0123456789abcdef0123456789abcdef/call_5")
    assert kinds(events) == ["turn_began", "failure", "outcome", "turn_ended"]


async def test_runs_reusing_a_call_id_without_a_trace_get_a_turn_each(
    errord: InProcessDaemon,
) -> None:
    """Tracing off and no trace_id: each call gets a turn of its own, so a second run whose
    model reuses the call id is decided afresh, not refused as part of an ended turn."""
    tool = Script(ConnectionError("503 Service Unavailable"), "ok", ConnectionError("503"), "ok")
    models = [ScriptedModel(calls(("call_1", "flight_search", {})), says("done")) for _ in "ab"]
    async with Executor(target=errord.address) as executor:

        @errord_function_tool(executor)
        async def flight_search() -> str:
            """Search flights."""
            answer: str = await tool.next()
            return answer

        for model in models:
            await Runner.run(Agent(name="travel", model=model, tools=[flight_search]), "Fly")

    assert tool.attempts == 4
    assert [tool_outputs(model.inputs[1]) for model in models] == [{"call_1": "ok"}] * 2


async def test_guarded_keeps_the_tools_name_schema_and_description() -> None:
    """The guarded tool shows the model what the original did, and is registered with the
    executor under that name; guarding a second tool of the same name is refused."""
    executor = Executor(target="127.0.0.1:1")  # never connects: nothing is run

    @agents.function_tool(timeout=5)
    async def flight_search(origin: str, passengers: int = 1) -> str:
        """Search flights from an airport."""
        return origin

    made = guarded(flight_search, executor)
    assert isinstance(made, FunctionTool)
    shown = (made.name, made.description, made.params_json_schema, made.strict_json_schema)
    original = flight_search
    assert shown == (
        original.name,
        original.description,
        original.params_json_schema,
        original.strict_json_schema,
    )
    assert made.timeout_seconds is None
    assert executor.registry.get("flight_search").parameters == original.params_json_schema
    with pytest.raises(ValueError, match="flight_search"):
        guarded(flight_search, executor)
    await executor.close()


class Room(BaseModel):
    beds: int


async def test_what_the_sdks_own_check_refuses_is_the_models_mistake() -> None:
    """The executor checks the top level of a call; what the SDK's pydantic check refuses
    deeper (a room's beds) reaches errord as InvalidArguments (INVALID_INPUT), not as the
    tool's failure; 2.0 for an integer and an extra argument run the tool."""
    executor = Executor(target="127.0.0.1:1")  # never connects: the tool is invoked directly
    booked: list[tuple[str, int]] = []

    @errord_function_tool(executor)
    async def book(city: str, nights: int, rooms: list[Room]) -> str:
        """Book rooms in a city."""
        booked.append((city, nights))
        return "booked"

    registered = executor.registry.get("book")
    accepted = registered.accept(
        {"city": "Oslo", "nights": 2.0, "rooms": [{"beds": 1}], "breakfast": True}
    )
    assert accepted.ignored == ("breakfast",)
    assert await registered.invoke(accepted.arguments) == "booked"
    assert booked == [("Oslo", 2)]
    with pytest.raises(InvalidArguments) as refused:
        await registered.invoke({"city": "Oslo", "nights": 1, "rooms": [{"beds": "two"}]})
    assert str(refused.value) == "Invalid parameters: Invalid JSON input for tool book"
    assert failure_from_exception(refused.value).code == "INVALID_INPUT"
    assert booked == [("Oslo", 2)]
    await executor.close()


async def test_the_sdks_refusal_names_the_parameter_when_it_keeps_pydantics_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With tool data loggable (OPENAI_AGENTS_DONT_LOG_TOOL_DATA=0), the SDK raises from
    pydantic's error, whose loc names the argument and the place in it."""
    monkeypatch.setattr(agents._debug, "DONT_LOG_TOOL_DATA", False)
    executor = Executor(target="127.0.0.1:1")  # never connects: the tool is invoked directly

    @errord_function_tool(executor)
    async def book(city: str, rooms: list[Room]) -> str:
        """Book rooms in a city."""
        return "booked"

    with pytest.raises(InvalidArguments) as refused:
        await executor.registry.get("book").invoke({"city": "Oslo", "rooms": [{"beds": "x"}]})
    assert (refused.value.parameter, refused.value.problems) == (
        "rooms",
        ("'rooms[0].beds' must be an integer",),
    )
    await executor.close()


# One run, one turn; the SDK tool's own timeout


async def test_a_run_inside_executor_turn_is_one_errord_turn_counting_every_call(
    tmp_path: Path,
) -> None:
    """errord as a process; a Runner.run inside ``executor.turn()`` whose model calls
    three tools over two answers (one failing once and retried): one errord turn, ended
    when the block ends, whose summary counts all three calls."""
    manifests = """\
        tools:
          - name: flight_search
            retry_policy: {initial_delay_ms: 10}
        """
    flights = Script(ConnectionError("503 Service Unavailable"), "AF83")
    model = ScriptedModel(
        calls(("call_1", "flight_search", {}), ("call_2", "hotel_search", {})),
        calls(("call_3", "hotel_search", {})),
        says("Booked."),
    )
    with errord_process(tmp_path, manifests) as daemon:
        async with Executor(target=daemon.address, decision_timeout=10) as executor:

            @errord_function_tool(executor)
            async def flight_search() -> str:
                """Search flights."""
                answer: str = await flights.next()
                return answer

            @errord_function_tool(executor)
            def hotel_search() -> str:
                """Search hotels."""
                return "Lutetia"

            agent = Agent(name="travel", model=model, tools=[flight_search, hotel_search])
            async with executor.turn("run-1", user_id="ada"):
                result = await Runner.run(agent, "Paris", run_config=RunConfig(trace_id="t9"))

        async def ended() -> pb.TurnSummary | None:
            for event in await recorded_trace(daemon, "run-1"):
                if event.WhichOneof("event") == "turn_ended":
                    summary: pb.TurnSummary = event.turn_ended.summary
                    return summary
            return None

        summary = await wait_for(ended, "the end of the run's turn")
        with pytest.raises(grpc.aio.AioRpcError) as no_turn_of_its_own:
            await recorded_trace(daemon, "t9/call_1")
    assert result.final_output == "Booked."
    assert flights.attempts == 2
    assert {call.call_id: pb.CallStatus.Name(call.status) for call in summary.calls} == {
        "call_1": "CALL_STATUS_SUCCEEDED",
        "call_2": "CALL_STATUS_SUCCEEDED",
        "call_3": "CALL_STATUS_SUCCEEDED",
    }
    assert no_turn_of_its_own.value.code() is grpc.StatusCode.NOT_FOUND


async def test_the_sdk_tools_own_timeout_bounds_each_attempt_without_a_manifest(
    tmp_path: Path,
) -> None:
    """``function_tool(timeout=0.2)`` and no manifest: the first attempt, which
    hangs, ends at 200 ms (reported to errord as TIMEOUT with that timeout declared), and
    the retry answers; the SDK's own timeout no longer bounds the attempts together."""
    script = Script(Script.HANG, "AF83")
    model = ScriptedModel(calls(("call_1", "flight_search", {})), says("AF83."))
    with errord_process(tmp_path, "tools: []\n") as daemon:
        async with Executor(
            target=daemon.address, decision_timeout=10, default_timeout=60
        ) as executor:

            @errord_function_tool(executor, timeout=0.2)
            async def flight_search() -> str:
                """Search flights."""
                answer: str = await script.next()
                return answer

            sent = sent_failures(executor)
            agent = Agent(name="travel", model=model, tools=[flight_search])
            result = await Runner.run(agent, "Fly", run_config=RunConfig(trace_id="t10"))
    assert result.final_output == "AF83."
    assert script.attempts == 2
    [report] = sent
    assert report.error.code == pb.ERROR_CODE_TIMEOUT
    assert report.tool_declaration.timeout.ToTimedelta().total_seconds() == pytest.approx(0.2)
    assert flight_search.timeout_seconds is None
