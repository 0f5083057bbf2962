"""errord in the OpenAI Agents SDK: function tools whose failures errord recovers from.

    executor = Executor(target="127.0.0.1:50051")

    @errord_function_tool(executor)
    async def flight_search(origin: str, destination: str) -> str:
        '''Search flights between two airports.'''
        ...

    agent = Agent(name="travel", tools=[flight_search, guarded(hotel_search, executor)])
    result = await Runner.run(agent, "Find me a flight to Paris")

The SDK's seam for tool errors is the function tool: ``on_invoke_tool(ctx, input_json)``
runs the call, and ``failure_error_function`` turns what it raises into the text the
model reads (by default "An error occurred while running the tool. Please try again.").
``guarded`` gives back a FunctionTool of the same name, schema, description, guardrails
and approval policy whose ``on_invoke_tool`` runs the call through the executor: each
attempt under errord's timeout, and on a failure errord's decision followed (retry after
its delay, the alternative, the default, back to the model, ...) until the call has its
result. A call that recovers returns its output as the tool would have. A call that does
not raises ``ToolCallFailed``, which the guarded tool's ``failure_error_function``
(``errord_failure_error_function``) turns into errord's text for the model. The tool's
own SDK timeout (``function_tool(timeout=...)``, its ``timeout_seconds``) bounds each
attempt when no manifest sets the tool's ``timeout_ms`` (left to the SDK, it would bound
all the attempts together).

The executor checks a call's arguments against the tool's ``params_json_schema`` before
it runs, as the model API's strict mode would (``2.0`` for an integer is 2, an argument
the schema does not take is ignored); what the SDK's own pydantic check still refuses is
reported as the model's mistake (InvalidArguments), not the tool's.

The guarded tool is registered with the executor under its name, so that another tool's
manifest may name it as an alternative; an alternative the agent does not show the
model is registered by guarding it too, or by giving it to the Executor.

Ids: errord's call is the SDK's (``ctx.tool_call_id``). One run of the agent is one
errord turn when it runs inside ``executor.turn()``:

    async with executor.turn(user_id="ada"):
        result = await Runner.run(agent, "Two nights in Paris")

so that errord's budgets, cascades, "do not call X again in this turn" and its summary
count every call of the run (the SDK runs each call on its own, in tasks that inherit the
turn). Outside one, each call is a turn of its own (``turn_per_call``), ended once the
call has its result, since the SDK says nothing of the run's end.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeAlias

from agents import (
    FunctionTool,
    RunContextWrapper,
    default_tool_error_function,
    function_tool,
    get_current_trace,
)
from agents.exceptions import ModelBehaviorError
from agents.tool import (
    ToolErrorFunction,
    set_function_tool_failure_error_function,
    with_function_tool_failure_error_handler,
)
from agents.tool_context import ToolContext
from agents.tracing.traces import NoOpTrace
from pydantic import ValidationError

from errord_client.executor import Executor, ResultStatus, ToolResult, tool_call
from errord_client.executor.turn import current as current_turn
from errord_client.tools import InvalidArguments, Tool

__all__ = [
    "ToolCallFailed",
    "TurnIds",
    "errord_failure_error_function",
    "errord_function_tool",
    "guarded",
    "turn_per_call",
]

log = logging.getLogger("errord_client.adapters.openai_agents")

TurnIds: TypeAlias = Callable[[ToolContext[Any]], str]
"""Names errord's turn for a tool call, from the call's ToolContext."""

_CALL: ContextVar[ToolContext[Any] | None] = ContextVar("errord_agents_call", default=None)
"""The SDK's context of the call the executor is running, for the tool it runs."""


class ToolCallFailed(Exception):
    """errord's recovery left the call without an output; ``result`` says what became of
    it, and the message is errord's text for the model."""

    def __init__(self, result: ToolResult) -> None:
        self.result = result
        Exception.__init__(self, result.content())


def errord_failure_error_function(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """The guarded tools' ``failure_error_function``: errord's text for the model for a
    call its recovery left without an output (ToolCallFailed), the SDK's default text for
    any other error (one of the SDK's own, such as a cancelled call)."""
    if isinstance(error, ToolCallFailed):
        return error.result.content()
    return default_tool_error_function(ctx, error)


def turn_per_call(ctx: ToolContext[Any]) -> str:
    """One errord turn per tool call run outside ``executor.turn()``, ``<run>/<call id>``:
    the run is its RunConfig's
    ``trace_id`` when given, else the trace the SDK records the run in, else (tracing off)
    a random id of the call's own."""
    return f"{_run_id(ctx)}/{ctx.tool_call_id}"


def _run_id(ctx: ToolContext[Any]) -> str:
    if ctx.run_config is not None and ctx.run_config.trace_id:
        return ctx.run_config.trace_id
    trace = get_current_trace()
    if trace is not None and not isinstance(trace, NoOpTrace):
        return trace.trace_id
    return f"untraced-{uuid.uuid4().hex}"


def guarded(
    tool: FunctionTool,
    executor: Executor,
    *,
    turn_id: TurnIds = turn_per_call,
    failure_error_function: ToolErrorFunction | None = errord_failure_error_function,
) -> FunctionTool:
    """``tool`` with its calls run through ``executor``, which it is registered with.

    ``turn_id`` names errord's turn for a call run outside ``executor.turn()``; inside
    one, the call is in that turn. ``failure_error_function`` turns a call
    errord's recovery left without an output (ToolCallFailed) into the model's text; with
    None, ToolCallFailed fails the run, as the SDK does for a tool without one. Raises
    ValueError when the executor has a tool of that name already.
    """
    attempt = copy.copy(tool)
    set_function_tool_failure_error_function(attempt, None)  # its errors go to the executor
    executor.registry.register(
        Tool(
            tool.name,
            tool.params_json_schema,
            tool.description,
            function=_Attempt(attempt),
            timeout=tool.timeout_seconds,
        )
    )

    async def invoke(ctx: ToolContext[Any], input_json: str) -> Any:
        call = tool_call({"id": ctx.tool_call_id, "name": tool.name, "arguments": input_json})
        joined = current_turn.get()
        in_turn = joined is not None and joined.runs_for(executor)
        running = _CALL.set(ctx)
        try:  # inside executor.turn(), the call joins the run's turn
            result = await executor.run_one(call, turn_id=None if in_turn else turn_id(ctx))
        finally:
            _CALL.reset(running)
        if result.status is ResultStatus.SUCCEEDED:
            return result.output
        if result.ok:  # a default or a partial result: what errord says stands in for it
            return result.content()
        raise ToolCallFailed(result)

    guarded_tool = dataclasses.replace(
        tool,
        on_invoke_tool=with_function_tool_failure_error_handler(invoke, _handled),
        timeout_seconds=None,
    )
    return set_function_tool_failure_error_function(guarded_tool, failure_error_function)


def errord_function_tool(
    executor: Executor,
    *,
    turn_id: TurnIds = turn_per_call,
    failure_error_function: ToolErrorFunction | None = errord_failure_error_function,
    **options: Any,
) -> Callable[[Callable[..., Any]], FunctionTool]:
    """A decorator: ``agents.function_tool(function, **options)``, ``guarded`` by
    ``executor`` with ``turn_id`` and ``failure_error_function``."""

    def decorate(function: Callable[..., Any]) -> FunctionTool:
        made: FunctionTool = function_tool(function, **options)
        return guarded(
            made, executor, turn_id=turn_id, failure_error_function=failure_error_function
        )

    return decorate


class _Attempt:
    """One attempt of a guarded tool, as the executor runs it: the SDK tool's own
    invocation, in the SDK's context of the call, raising what the tool raises."""

    def __init__(self, tool: FunctionTool) -> None:
        self.tool = tool

    async def __call__(self, **arguments: Any) -> Any:
        text = json.dumps(arguments, ensure_ascii=False)
        ctx = _CALL.get()
        if ctx is None:  # run by the executor alone, outside any SDK run
            ctx = ToolContext(None, tool_name=self.tool.name, tool_call_id="", tool_arguments=text)
        try:
            return await self.tool.on_invoke_tool(ctx, text)
        except ModelBehaviorError as error:  # the SDK's own check refused the arguments
            raise _refused(error) from error


def _refused(error: ModelBehaviorError) -> InvalidArguments:
    """The SDK's refusal of a call's arguments as InvalidArguments, naming the parameter
    when the SDK kept pydantic's error as its cause (it does when tool data may be logged,
    OPENAI_AGENTS_DONT_LOG_TOOL_DATA=0)."""
    cause = error.__cause__
    if isinstance(cause, ValidationError):
        return InvalidArguments.from_validation_error(cause)
    return InvalidArguments([error.message or str(error)])


def _handled(tool: FunctionTool, error: Exception, input_json: str) -> None:
    """Called by the SDK for each error the guarded tool's failure_error_function answered."""
    if isinstance(error, ToolCallFailed):
        result = error.result
        log.info("%s call %s: %s", tool.name, result.call_id, result.status.value)
