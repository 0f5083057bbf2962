"""errord inside LangChain's agents: a middleware for ``create_agent`` that runs each tool
call through errord's executor.

    from langchain.agents import create_agent
    from errord_client.adapters.langchain import ErrordMiddleware

    errord = ErrordMiddleware(target="127.0.0.1:50051")
    agent = create_agent(model, [flight_search, hotel_search], middleware=[errord])

The middleware wraps the agent's tool node (LangChain's documented ``wrap_tool_call``
hook): each attempt of a call is the framework's own execution of it, so a tool's
injected arguments (``InjectedState``, ``InjectedStore``, ``ToolRuntime``), its
``content_and_artifact`` artifact and a ``Command`` it returns come out exactly as they do
without the middleware. Around the attempts, errord decides on each failure (retry after
a delay, the alternative tool, the default, skip, hand the call back to the model to
correct, escalate, fail) and the executor follows, so the model sees one ToolMessage per
call; a call that ends without an output of its own is a ``ToolMessage`` with
``status="error"`` and errord's text for the model. Arguments the tool's own schema
refuses are the model's mistake errord corrects, naming the parameter (the tool node
would answer them with pydantic's text).

One run of the agent (``agent.invoke``, ``ainvoke``, ``stream``, ``astream``) is one
errord turn, begun before the agent's first step and ended after its last: errord's
budgets, cascades, "do not call X again in this turn" and its summary span every call the
run makes. The turn is named ``agent-<random hex>``, or by ``turn_id`` (a function of the
run's config, which must give each run a turn no earlier one used).

Streamed with ``stream_mode="custom"``, the run yields each step of each call
(``{"errord": Progress.to_dict()}``: an attempt, a retry with its delay and what to tell
the user, a switch to an alternative, the call's end), for a UI to show while it waits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Annotated, Any, Final, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    PrivateStateAttr,
    ToolCallRequest,
)
from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolCall as LangChainToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command

from errord_client.adapters.langgraph import (
    ToolErrorRegistry,
    _cause,
    _LoopThread,
    _note,
    _Started,
    _validated,
    tool_message,
)
from errord_client.executor import Executor, Progress, ToolCall, ToolResult, Turn
from errord_client.tools import Tool, ToolKind, ToolNotFound, ToolRegistry

__all__ = ["PROGRESS_KEY", "ErrordMiddleware", "ErrordState"]

log = logging.getLogger("errord_client.adapters.langchain")

PROGRESS_KEY: Final = "errord"
"""The key of each progress event in the custom stream: ``{"errord": {...}}``."""

Handler = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
"""The tool node's execution of one call (``awrap_tool_call``'s ``handler``)."""


class ErrordState(AgentState[Any]):
    """The agent's state with the errord turn of the run in progress (never checkpointed,
    never in the graph's input or output)."""

    errord_turn_id: NotRequired[Annotated[str, UntrackedValue, PrivateStateAttr]]


@dataclasses.dataclass(frozen=True, slots=True)
class _Call:
    """The call an attempt belongs to: the tool node's request and its execution."""

    request: ToolCallRequest
    handler: Handler


_CALL: ContextVar[_Call | None] = ContextVar("errord_langchain_call", default=None)
"""The call whose attempts run (the executor's tasks inherit it from the middleware's)."""


class ErrordMiddleware(AgentMiddleware[ErrordState, Any, Any]):
    """Runs the agent's tool calls through errord: one errord turn per run of the agent.

    ``alternatives``: LangChain tools errord may name as a failed tool's alternative
    (its manifest's ``alternatives``) that the model is not given; the agent's own tools
    are run as they are called. ``sync_timeout``: seconds the first run on an event loop
    waits for errord's tool timeouts and breakers. ``turn_id``: the turn of a run, from
    its config. Other keywords go to the ``Executor`` (``target``, ``token``,
    ``decision_timeout``, ``default_timeout``, ``user_id``, ``session_id``, ``deadline``
    (seconds from the run's start), ``on_progress``, ...).

    Awaited runs use an executor of the middleware's for each event loop; synchronous
    ones, an event loop of its own in a thread. Close the middleware when done:
    ``await errord.aclose()`` on the loop it ran on, ``errord.close()`` after synchronous
    runs. ``errors`` holds every call answered with an error, by tool and type.
    """

    state_schema = ErrordState

    def __init__(
        self,
        *,
        alternatives: Sequence[BaseTool] = (),
        sync_timeout: float = 1.0,
        turn_id: Callable[[RunnableConfig], str] | None = None,
        **executor_options: Any,
    ) -> None:
        self.errord_tools = ToolRegistry(guarded_tool(each) for each in alternatives)
        """The tools as the executor runs them, registered as the agent calls them."""
        self.errors = ToolErrorRegistry()
        """Every call the middleware answered with an error, by tool and type."""
        self.sync_timeout = sync_timeout
        self.turn_id = turn_id or _new_turn
        self._on_progress: Callable[[Progress], None] | None = executor_options.pop(
            "on_progress", None
        )
        self._options = executor_options
        self._started: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Started] = (
            weakref.WeakKeyDictionary()
        )
        self._turns: dict[str, Turn] = {}
        self._thread: _LoopThread | None = None
        self._lock = threading.Lock()

    # the run: one turn

    async def abefore_agent(
        self, state: ErrordState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        turn_id = self.turn_id(get_config())
        executor = await self._executor()
        self._turns[turn_id] = executor.turn(turn_id)
        return {"errord_turn_id": turn_id}

    def before_agent(self, state: ErrordState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        config = get_config()
        return self._loop_thread().run(self._begin(self.turn_id(config)))

    async def aafter_agent(
        self, state: ErrordState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        turn = self._turns.pop(state.get("errord_turn_id", ""), None)
        if turn is not None:
            turn.end()
        return None

    def after_agent(self, state: ErrordState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._loop_thread().run(self.aafter_agent(state, runtime))

    async def _begin(self, turn_id: str) -> dict[str, Any]:
        executor = await self._executor()
        self._turns[turn_id] = executor.turn(turn_id)
        return {"errord_turn_id": turn_id}

    # each call

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Handler
    ) -> ToolMessage | Command[Any]:
        executor = await self._executor()
        name = request.tool_call["name"]
        if request.tool is not None:
            self._register(request.tool)
        turn = self._turns.get(_turn_of(request.state))
        call = ToolCall(request.tool_call["id"] or "", name, request.tool_call["args"])
        token = _CALL.set(_Call(request, handler))
        try:
            result = await (executor.run_one(call) if turn is None else turn.run_one(call))
        finally:
            _CALL.reset(token)
        turn_id = "" if turn is None else turn.turn_id
        _note(self.errors, result, turn_id, log)
        return answer(result, turn_id)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        async def in_a_thread(each: ToolCallRequest) -> ToolMessage | Command[Any]:
            return await asyncio.to_thread(handler, each)

        return self._loop_thread().run(self.awrap_tool_call(request, in_a_thread))

    def _register(self, tool: BaseTool) -> None:
        try:
            self.errord_tools.get(tool.name)
        except ToolNotFound:
            self.errord_tools.register(guarded_tool(tool))

    # life

    async def aclose(self) -> None:
        """Close the executor of the running event loop, sending what it still holds."""
        started = self._started.pop(asyncio.get_running_loop(), None)
        if started is not None:
            await started.executor.close()

    def close(self) -> None:
        """Close the executor of synchronous runs, and stop their thread."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.run(self.aclose())
            thread.stop()

    def _loop_thread(self) -> _LoopThread:
        with self._lock:
            if self._thread is None:
                self._thread = _LoopThread()
            return self._thread

    async def _executor(self) -> Executor:
        """This loop's executor, started (waiting ``sync_timeout`` for errord's policies)."""
        loop = asyncio.get_running_loop()
        started = self._started.get(loop)
        if started is None:
            options = {"on_progress": self._progress, **self._options}
            executor = Executor(self.errord_tools, **options)
            ready = loop.create_task(executor.start(sync_timeout=self.sync_timeout))
            started = self._started[loop] = _Started(executor, ready)
        await asyncio.shield(started.ready)
        return started.executor

    def _progress(self, progress: Progress) -> None:
        """Write ``progress`` to the run's custom stream, and tell ``on_progress``."""
        call = _CALL.get()
        if call is not None and call.request.runtime is not None:
            call.request.runtime.stream_writer({PROGRESS_KEY: progress.to_dict()})
        if self._on_progress is not None:
            self._on_progress(progress)


def guarded_tool(tool: BaseTool) -> Tool:
    """``tool`` as the executor runs it under the middleware: each attempt is the tool
    node's own execution of the call (its injected arguments, artifact and Command as
    the node makes them), with ``tool``'s own error handling off so that the exception it
    raised reaches errord. Its parameters are the JSON Schema the model is given; a tool
    with a pydantic schema checks the model's arguments against it first, so that a call
    it refuses is reported as InvalidArguments naming the parameter."""
    parameters: dict[str, Any] = convert_to_openai_tool(tool)["function"]["parameters"]
    raising = tool.model_copy(update={"handle_tool_error": False, "handle_validation_error": False})
    schema = tool.tool_call_schema
    validate = None if isinstance(schema, dict) else getattr(schema, "model_validate", None)

    async def attempt(**arguments: Any) -> Any:
        call = _CALL.get()
        if call is None:
            raise RuntimeError(f"{tool.name} runs only inside the agent's tool node")
        if validate is not None:
            _validated(validate, arguments)
        tool_call = LangChainToolCall(
            name=tool.name, args=arguments, id=call.request.tool_call["id"], type="tool_call"
        )
        request = dataclasses.replace(call.request, tool_call=tool_call, tool=raising)
        try:
            return await call.handler(request)
        except ToolException as error:
            reported: BaseException = _cause(error)
        raise reported

    return Tool(
        tool.name,
        parameters,
        tool.description,
        ToolKind.FUNCTION,
        blocking=False,
        function=attempt,
        validates_arguments=validate is not None,
    )


def answer(result: ToolResult, turn_id: str) -> ToolMessage | Command[Any]:
    """What the tool node gets for the call: the tool node's own answer of the attempt
    that succeeded (a ToolMessage, a Command, or a list of them); else the ToolMessage
    of errord's result (``tool_message``: a default, a partial result, errord's text)."""
    output = result.output
    if result.ok and isinstance(output, ToolMessage | Command | list):
        return output  # type: ignore[return-value]  # a list of them, as the node allows
    return tool_message(result, turn_id=turn_id)


def _turn_of(state: Any) -> str:
    if isinstance(state, dict):
        return str(state.get("errord_turn_id", ""))
    return str(getattr(state, "errord_turn_id", ""))


def _new_turn(config: RunnableConfig) -> str:
    return f"agent-{uuid.uuid4().hex}"
