"""errord inside LangGraph: a tool node that runs the model's calls through the executor.

    from errord_client.adapters.langgraph import ErrorHandlingToolNode

    tools = ErrorHandlingToolNode([flight_search, hotel_search], target="127.0.0.1:50051")
    builder.add_node("tools", tools)                 # wherever a ToolNode goes

``ErrorHandlingToolNode`` is a LangGraph ``ToolNode`` whose calls go through errord
(``ToolCallGuard``, the wrapper ToolNode takes, which LangChain's create_agent
middleware, errord_client.adapters.langchain, shares): each attempt is ToolNode's own
execution of the call, so the node takes and returns what ToolNode does (a state, a
list of messages or the tool calls in; a ``ToolMessage`` per call, or the ``Command`` a
tool returns, out) and keeps injected arguments and artifacts as ToolNode does. Around
the attempts, the calls run under their manifests' timeouts (else a tool's own), and on
a failure errord decides (retry after a delay, the alternative tool, the default, skip,
hand the call back to the model to correct, escalate, fail) and the executor follows,
so the graph sees one message per call. A call that ends without an output of its own
is a ``ToolMessage`` with ``status="error"`` whose content is errord's text for the
model (its ``Tool Execution Failed`` block).

A run inside ``async with node.turn():`` is one errord turn, however many times the
graph invokes the node; else each node invocation is one. Each step of each call (an
attempt, a retry, an alternative, the call's end) goes to the graph's custom stream as
``{"errord": Progress.to_dict()}``.

Each failed call is logged as ``[TOOL ERROR] <tool> failed with <code>: <message>`` and
kept in the node's ``errors`` (``error_summary()``: errors by tool and type). The tools
are LangChain tools (``@tool``, any ``BaseTool``) or plain functions, which become
LangChain tools as ``ToolNode`` makes them; ``errord_tool`` is the conversion to the
executor's ``Tool`` outside a tool node (it runs the tool itself, so it refuses tools
with injected arguments).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
import uuid
import weakref
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Final, Self, TypeVar

from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolCall as LangChainToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph._internal._constants import CONFIG_KEY_RUNTIME
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest, msg_content_output
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import ValidationError

from errord_client.executor import Executor, Progress, ResultStatus, ToolResult, Turn
from errord_client.executor.turn import current as current_turn
from errord_client.tools import InvalidArguments, Tool, ToolKind, ToolNotFound, ToolRegistry

__all__ = [
    "PROGRESS_KEY",
    "ErrorHandlingToolNode",
    "ToolCallGuard",
    "ToolErrorEntry",
    "ToolErrorRegistry",
    "errord_tool",
    "guarded_tool",
    "node_answer",
    "tool_message",
]

log = logging.getLogger("errord_client.adapters.langgraph")

MAX_LOGGED_MESSAGE: Final = 200
"""Characters of an error's message in its log line (the whole one is in ``errors``)."""

T = TypeVar("T")

_RUN_CONFIG: contextvars.ContextVar[RunnableConfig | None] = contextvars.ContextVar(
    "errord_langgraph_run_config", default=None
)
"""The node invocation's config, which each tool call's ``ainvoke`` is given (callbacks,
tags, tracing), as ToolNode gives it; the executor's tasks inherit it."""


# LangChain tools as the executor's tools


def errord_tool(tool: BaseTool) -> Tool:
    """``tool`` as a Tool the executor runs: its name, its description, and as parameters
    the JSON Schema the model is given for it (``convert_to_openai_tool``, which is what
    ``bind_tools`` sends: ``tool_call_schema``, references resolved).

    Invoking it awaits ``tool.ainvoke(arguments, config)`` with the tool's own
    ``handle_tool_error`` and ``handle_validation_error`` switched off, so that the
    exception the tool raised reaches errord instead of becoming a string the tool
    returns. A tool with a pydantic ``args_schema`` checks its arguments itself, as
    LangChain does (``2.0`` is an integer, extra arguments are ignored): the executor does
    not check them first (``validates_arguments``), and a call the model refuses is
    reported as InvalidArguments naming the parameter, before the tool runs; a pydantic
    error from the tool's own code is the tool's. A ``ToolException`` raised from another
    exception (``raise ToolException(...) from error``) is reported as that exception,
    whose type and HTTP status say more. Raises TypeError for a tool with injected
    arguments (InjectedState, InjectedStore, ToolRuntime), which only ToolNode's own loop
    can fill in.
    """
    parameters: dict[str, Any] = convert_to_openai_tool(tool)["function"]["parameters"]
    injected = _injected_arguments(tool, parameters)
    if injected:
        raise TypeError(
            f"Tool '{tool.name}' has injected arguments ({', '.join(sorted(injected))}): "
            "errord_tool runs tools without graph state, store or runtime (in a tool node, "
            "ErrorHandlingToolNode and ErrordMiddleware run them as ToolNode does)"
        )
    raising = tool.model_copy(update={"handle_tool_error": False, "handle_validation_error": False})
    validate = _validator(tool)

    async def invoke(**arguments: Any) -> Any:
        if validate is not None:
            _validated(validate, arguments)
        try:
            return await raising.ainvoke(arguments, _RUN_CONFIG.get())
        except ToolException as error:
            reported: BaseException = _cause(error)
        raise reported

    return Tool(
        tool.name,
        parameters,
        tool.description,
        ToolKind.FUNCTION,
        blocking=False,
        function=invoke,
        validates_arguments=validate is not None,
    )


def _validator(tool: BaseTool) -> Callable[[Mapping[str, Any]], Any] | None:
    """What checks the tool's arguments as LangChain does: its pydantic model's
    ``model_validate``; None for a JSON Schema given as a dict, which LangChain passes
    through unchecked."""
    schema = tool.args_schema
    if schema is None or isinstance(schema, dict):
        return None
    validate = getattr(schema, "model_validate", None)
    return validate if callable(validate) else None


def _validated(validate: Callable[[Mapping[str, Any]], Any], arguments: Mapping[str, Any]) -> None:
    """Raise InvalidArguments, naming the parameter, when the tool's own model refuses
    ``arguments``: the model's mistake, told apart from a pydantic error the tool raises."""
    try:
        validate(arguments)
    except ValidationError as error:
        raise InvalidArguments.from_validation_error(error) from error


def _injected_arguments(tool: BaseTool, parameters: Mapping[str, Any]) -> set[str]:
    """The tool's arguments the model is not shown: those LangGraph injects."""
    if isinstance(tool.args_schema, dict):
        return set()
    schema = tool.get_input_schema()
    fields = getattr(schema, "model_fields", None) or getattr(schema, "__fields__", {})
    return set(fields) - set(parameters.get("properties", {}))


def _cause(error: ToolException) -> BaseException:
    """The exception a ToolException was raised from, if any; else the ToolException."""
    cause = error.__cause__
    return cause if isinstance(cause, Exception) else error


# Results as LangGraph's messages


def tool_message(result: ToolResult, *, turn_id: str = "") -> ToolMessage:
    """The ToolMessage ToolNode would give for ``result``'s call: its ``tool_call_id`` and
    the name the model called. An output (the tool's, an alternative's, a default, a
    partial result) is its content as ToolNode makes it (a string or content blocks as
    they are, anything else as JSON) with ``status="success"``; a call without one has
    ``status="error"`` and errord's text for the model (``ToolResult.content()``).
    ``response_metadata["errord"]`` holds the result's record (``ToolResult.to_dict()``
    without the output) and the errord ``turn_id``; model integrations do not send it."""
    record = {key: value for key, value in result.to_dict().items() if key != "output"}
    return ToolMessage(
        content=_content(result),
        tool_call_id=result.call_id,
        name=result.tool,
        status="success" if result.ok else "error",
        response_metadata={"errord": {"turn_id": turn_id, **record}},
    )


def _content(result: ToolResult) -> str | list[str | dict[Any, Any]]:
    if not result.ok:
        return result.content()
    content = msg_content_output(result.output)
    return content if isinstance(content, str) else [*content]


# The errors the node saw


@dataclass(frozen=True, slots=True)
class ToolErrorEntry:
    """One call the node answered with an error."""

    tool: str
    """The tool the model called."""
    error_type: str
    """errord's code for the error ("TIMEOUT", "INVALID_INPUT", "AUTH", ...), "UNKNOWN"
    when it has none (a call skipped because a call it needed failed)."""
    message: str
    """The technical message, for logs."""
    status: ResultStatus
    call_id: str
    turn_id: str
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def of(cls, result: ToolResult, turn_id: str) -> ToolErrorEntry:
        """The entry for ``result``, a call that ended without an output."""
        error = result.error
        return cls(
            tool=result.tool,
            error_type=(error.code if error else "") or "UNKNOWN",
            message=(error.message if error else "") or result.content(),
            status=result.status,
            call_id=result.call_id,
            turn_id=turn_id,
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON values, the timestamp in ISO 8601."""
        return {
            "tool_name": self.tool,
            "error_type": self.error_type,
            "error_message": self.message,
            "status": self.status.value,
            "call_id": self.call_id,
            "turn_id": self.turn_id,
            "timestamp": self.timestamp.isoformat(),
        }


class ToolErrorRegistry:
    """The node's error registry, by tool and error type: every one counted, the last
    ``keep`` of each kind kept. Safe to share between threads."""

    def __init__(self, keep: int = 100) -> None:
        self.keep = keep
        self._counts: Counter[str] = Counter()
        self._entries: dict[str, deque[ToolErrorEntry]] = {}
        self._lock = threading.Lock()

    def record(self, entry: ToolErrorEntry) -> None:
        """Count ``entry`` under ``tool:error_type`` and keep it."""
        key = f"{entry.tool}:{entry.error_type}"
        with self._lock:
            self._counts[key] += 1
            self._entries.setdefault(key, deque(maxlen=self.keep)).append(entry)

    def summary(self) -> dict[str, int]:
        """``{"tool:error_type": count}`` since the registry was made (or cleared)."""
        with self._lock:
            return dict(self._counts)

    def for_tool(self, tool: str) -> dict[str, list[ToolErrorEntry]]:
        """``{"tool:error_type": [entries, oldest first]}`` of one tool."""
        with self._lock:
            return {
                key: list(entries)
                for key, entries in self._entries.items()
                if key.rpartition(":")[0] == tool
            }

    def clear(self) -> None:
        """Forget every error."""
        with self._lock:
            self._counts.clear()
            self._entries.clear()


# Tool calls through errord: what the node and create_agent's middleware share


PROGRESS_KEY: Final = "errord"
"""The key of each progress event in LangGraph's custom stream: ``{"errord": {...}}``
(``Progress.to_dict()``)."""

Handler = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
"""The tool node's own execution of one call (a ``awrap_tool_call``'s ``handler``)."""


@dataclass(frozen=True, slots=True)
class _Call:
    """The call whose attempts run: the tool node's request and its execution."""

    request: ToolCallRequest
    handler: Handler
    interrupted: list[GraphBubbleUp] = field(default_factory=list)
    """The interrupt an attempt raised (``interrupt()``), which is the graph's, not a
    failure: the attempt ends, and the wrapper raises it to the graph."""


_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
    "errord_langgraph_call", default=None
)
"""The call an attempt belongs to (the executor's tasks inherit it from the wrapper's)."""

_SYNC_TURN: contextvars.ContextVar[Turn | None] = contextvars.ContextVar(
    "errord_langgraph_sync_turn", default=None
)
"""The turn of a synchronous node invocation, for its calls (run on the guard's loop)."""


def guarded_tool(tool: BaseTool) -> Tool:
    """``tool`` as the executor runs it inside a tool node: each attempt is the node's own
    execution of the call (its injected arguments, artifact and ``Command`` as ToolNode
    makes them), with ``tool``'s own error handling off so that the exception it raised
    reaches errord. Its parameters are the JSON Schema the model is given; a tool with a
    pydantic schema checks the model's arguments against it first, so that a call it
    refuses is reported as InvalidArguments naming the parameter (ToolNode would answer
    with pydantic's text)."""
    parameters: dict[str, Any] = convert_to_openai_tool(tool)["function"]["parameters"]
    raising = tool.model_copy(update={"handle_tool_error": False, "handle_validation_error": False})
    schema = tool.tool_call_schema
    validate = None if isinstance(schema, dict) else getattr(schema, "model_validate", None)

    async def attempt(**arguments: Any) -> Any:
        call = _CALL.get()
        if call is None:
            raise RuntimeError(f"{tool.name} runs only inside a tool node's call")
        if validate is not None:
            _validated(validate, arguments)
        tool_call = LangChainToolCall(
            name=tool.name, args=arguments, id=call.request.tool_call["id"], type="tool_call"
        )
        request = replace(call.request, tool_call=tool_call, tool=raising)
        try:
            return await call.handler(request)
        except GraphBubbleUp as interrupt:  # the graph's own: given back to it, not to errord
            call.interrupted.append(interrupt)
            return None
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


def node_answer(result: ToolResult, turn_id: str) -> ToolMessage | Command[Any]:
    """What the tool node gets for a call: the node's own answer of the attempt that
    succeeded (a ToolMessage named as the model called it, with errord's record in its
    ``response_metadata["errord"]``; a ``Command``, or a list, as it is); else the
    ToolMessage of errord's result (``tool_message``: a default, a partial result,
    errord's text for the model)."""
    output = result.output
    if result.ok and isinstance(output, ToolMessage):
        record = tool_message(result, turn_id=turn_id).response_metadata
        metadata = {**output.response_metadata, **record}
        return output.model_copy(update={"name": result.tool, "response_metadata": metadata})
    if result.ok and isinstance(output, Command | list):
        return output  # type: ignore[return-value]  # a list of them, as ToolNode allows
    return tool_message(result, turn_id=turn_id)


@dataclass
class _Started:
    """An executor on one event loop, and its start (waiting for errord's tool
    policies), which every call awaits."""

    executor: Executor
    ready: asyncio.Task[None]


class ToolCallGuard:
    """Runs a tool node's calls through errord's executor, as the wrapper ToolNode
    takes (``awrap_tool_call`` and ``wrap_tool_call``): the node and create_agent's
    middleware each hold one.

    A call runs in the turn given, else in the turn of the ``async with`` it runs in
    (``turn``, ``Executor.turn``), else as a turn of its own. Tools are registered as
    they are called (``guarded_tool``); ``alternatives`` are tools errord may name that
    the node does not have. Each step of each call goes to the run's custom stream
    (``PROGRESS_KEY``) and to ``on_progress``, if given among ``executor_options``.
    """

    def __init__(
        self,
        executor_options: Mapping[str, Any],
        *,
        alternatives: Sequence[BaseTool] = (),
        sync_timeout: float = 1.0,
        log: logging.Logger = log,
    ) -> None:
        options = dict(executor_options)
        self._on_progress: Callable[[Progress], None] | None = options.pop("on_progress", None)
        self._options = options
        self.registry = ToolRegistry(guarded_tool(each) for each in alternatives)
        """The tools as the executor runs them (``guarded_tool``)."""
        self.errors = ToolErrorRegistry()
        """Every call answered with an error, by tool and type."""
        self.sync_timeout = sync_timeout
        self.log = log
        self.note: Callable[[ToolResult, str], None] = lambda result, turn_id: _note(
            self.errors, result, turn_id, self.log
        )
        """Called with each call's result and its turn once answered: logs and records it
        (a node of another vocabulary replaces it with its own)."""
        self.started: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Started] = (
            weakref.WeakKeyDictionary()
        )
        self._thread: _LoopThread | None = None
        self._lock = threading.Lock()

    def register(self, tool: BaseTool) -> None:
        """Run ``tool`` as ``guarded_tool`` makes it, unless a tool of its name is."""
        try:
            self.registry.get(tool.name)
        except ToolNotFound:
            self.registry.register(guarded_tool(tool))

    async def awrap(
        self, request: ToolCallRequest, handler: Handler, turn: Turn | None = None
    ) -> ToolMessage | Command[Any]:
        """Run the call of ``request`` through errord, each attempt by ``handler``."""
        executor = await self.executor()
        if request.tool is not None:
            self.register(request.tool)
        arguments = request.tool_call["args"]
        # As a mapping, so that a call without an id or a name gets its result (a failure
        # saying so) instead of an exception.
        call = {
            "id": request.tool_call.get("id") or "",
            "name": request.tool_call.get("name"),
            "arguments": arguments,
        }
        if turn is None:  # the turn of the async with it runs in, if it is this executor's
            outer = current_turn.get()
            turn = outer if outer is not None and outer.runs_for(executor) else None
        running = _Call(request, handler)
        token = _CALL.set(running)
        try:
            result = await (executor.run_one(call) if turn is None else turn.run_one(call))
        finally:
            _CALL.reset(token)
        if running.interrupted:
            raise running.interrupted[0]
        turn_id = turn.turn_id if turn is not None else ""
        self.note(result, turn_id)
        return node_answer(result, turn_id)

    def wrap(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
        turn: Turn | None = None,
    ) -> ToolMessage | Command[Any]:
        """``awrap`` for a synchronous run: on the guard's own loop, the tool node's
        execution in a worker thread; in the turn given, or the synchronous node's."""

        async def in_a_thread(each: ToolCallRequest) -> ToolMessage | Command[Any]:
            return await asyncio.to_thread(handler, each)

        joined = turn or _SYNC_TURN.get()
        return self.loop_thread().run(self.awrap(request, in_a_thread, joined))

    async def executor(self) -> Executor:
        """This loop's executor, started (waiting ``sync_timeout`` for errord's policies)."""
        loop = asyncio.get_running_loop()
        started = self.started.get(loop)
        if started is None:
            options = {"on_progress": self._progress, **self._options}
            executor = Executor(self.registry, **options)
            ready = loop.create_task(executor.start(sync_timeout=self.sync_timeout))
            started = self.started[loop] = _Started(executor, ready)
        await asyncio.shield(started.ready)
        return started.executor

    def loop_thread(self) -> _LoopThread:
        """The event loop of synchronous runs, started at the first."""
        with self._lock:
            if self._thread is None:
                self._thread = _LoopThread()
            return self._thread

    async def aclose(self) -> None:
        """Close the executor of the running event loop, sending what it still holds."""
        started = self.started.pop(asyncio.get_running_loop(), None)
        if started is not None:
            await started.executor.close()

    def close(self) -> None:
        """Close the executor of synchronous runs, and stop their thread."""
        self.close_with(lambda: None)

    def close_with(self, first: Callable[[], None]) -> None:
        """``close``, calling ``first`` on the synchronous runs' loop before (if it ran)."""

        async def closing() -> None:
            first()
            await self.aclose()

        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.run(closing())
            thread.stop()

    def _progress(self, progress: Progress) -> None:
        """Write ``progress`` to the run's custom stream, and tell ``on_progress``."""
        call = _CALL.get()
        if call is not None and call.request.runtime is not None:
            call.request.runtime.stream_writer({PROGRESS_KEY: progress.to_dict()})
        if self._on_progress is not None:
            self._on_progress(progress)


def _note(errors: ToolErrorRegistry, result: ToolResult, turn_id: str, log: logging.Logger) -> None:
    """Log and record (in ``errors``) a call answered with an error; log a recovered one."""
    if result.is_error:
        entry = ToolErrorEntry.of(result, turn_id)
        errors.record(entry)
        log.error(
            "[TOOL ERROR] %s failed with %s: %s",
            entry.tool,
            entry.error_type,
            entry.message[:MAX_LOGGED_MESSAGE],
            extra=entry.to_dict(),
        )
    elif result.attempts > 1 or result.fallback_used:
        used = f" by {result.tool_used}" if result.tool_used != result.tool else ""
        log.info(
            "[TOOL RECOVERED] %s answered%s after %d attempts, decided by %s",
            result.tool,
            used,
            result.attempts,
            result.decided_by.value,
        )


# The node


class ErrorHandlingToolNode(ToolNode):
    """A ToolNode whose calls run through errord's executor (``ToolCallGuard``): each
    attempt is ToolNode's own execution of the call, so injected arguments
    (``InjectedState``, ``InjectedStore``, ``ToolRuntime``), ``content_and_artifact``
    artifacts and ``Command`` returns are as ToolNode makes them.

    ``tools``: LangChain tools or plain functions, as ToolNode takes them;
    ``alternatives``: tools errord may name as an alternative that the model is not
    given. ``name``, ``tags`` and ``messages_key`` are ToolNode's. Other keywords go to
    the ``Executor`` (``target``, ``token``, ``credentials``, ``decision_timeout``,
    ``default_timeout``, ``local_policy``, ``user_id``, ``session_id``, ``deadline``,
    ``on_progress``, ...). ``sync_timeout``: seconds the first invocation on an event
    loop waits for errord's tool timeouts and breakers before it runs.

    A run of the graph inside ``async with node.turn():`` is one errord turn, however
    many times the node is invoked (create_react_agent invokes it once per call);
    otherwise each invocation is one, named ``langgraph-<random hex>``, or by
    ``turn_id``, a function of the invocation's config, which must give each invocation
    a turn no earlier one used (errord refuses failures on a turn that ended). The turn
    is in each ToolMessage's ``response_metadata["errord"]["turn_id"]``. Each step of
    each call is written to the graph's custom stream (``{"errord": {...}}``).

    Awaited (``graph.ainvoke``, ``astream``), the calls run on the caller's event loop,
    with an executor of the node's for each loop; invoked synchronously
    (``graph.invoke``), on an event loop of the node's own, in a thread. Close the node
    when done: ``await node.aclose()`` (or ``async with node``) on the loop it ran on,
    ``node.close()`` after synchronous use.
    """

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        *,
        alternatives: Sequence[BaseTool] = (),
        name: str = "tools",
        tags: list[str] | None = None,
        messages_key: str = "messages",
        sync_timeout: float = 1.0,
        turn_id: Callable[[RunnableConfig], str] | None = None,
        **executor_options: Any,
    ) -> None:
        self.guard = ToolCallGuard(
            executor_options, alternatives=alternatives, sync_timeout=sync_timeout
        )
        """What runs the node's calls through errord."""
        super().__init__(
            tools,
            name=name,
            tags=tags,
            messages_key=messages_key,
            wrap_tool_call=self.guard.wrap,
            awrap_tool_call=self.guard.awrap,
        )
        # The runnable calls these, which open the invocation's turn around ToolNode's own
        # functions, and give them a runtime outside a graph too.
        super(ToolNode, self).__init__(
            self._invoke, self._ainvoke, name=name, tags=tags, trace=False
        )
        for each in self.tools_by_name.values():
            self.guard.register(each)
        self.errord_tools = self.guard.registry
        """The tools as the executor runs them (``guarded_tool``)."""
        self.errors = self.guard.errors
        """Every call the node answered with an error, by tool and type."""
        self.messages_key = messages_key
        self.turn_id = turn_id or _new_turn

    @property
    def _started(self) -> weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Started]:
        return self.guard.started

    def error_summary(self) -> dict[str, int]:
        """``{"tool:error_type": count}`` of the calls answered with an error."""
        return self.errors.summary()

    def errors_for_tool(self, tool: str) -> dict[str, list[ToolErrorEntry]]:
        """``{"tool:error_type": [entries]}`` of one tool's calls answered with an error."""
        return self.errors.for_tool(tool)

    @contextlib.asynccontextmanager
    async def turn(self, turn_id: str | None = None, **options: Any) -> AsyncIterator[Turn]:
        """One errord turn for everything the node runs inside the block, on this loop:
        ``async with node.turn(): await graph.ainvoke(...)`` makes the graph's run one
        turn. ``turn_id`` and ``options`` (``user_id``, ``session_id``, ``deadline``) as
        ``Executor.turn`` takes them."""
        executor = await self.guard.executor()
        async with executor.turn(turn_id, **options) as turn:
            yield turn

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the executor of the running event loop, sending what it still holds."""
        await self.guard.aclose()

    def close(self) -> None:
        """Close the executor of synchronous invocations, and stop their thread."""
        self.guard.close()

    async def _ainvoke(self, input: Any, config: RunnableConfig) -> Any:
        runtime = _runtime(config)
        self._parse_input(input)  # ToolNode's errors, before anything connects
        executor = await self.guard.executor()
        outer = current_turn.get()
        if outer is not None and outer.runs_for(executor):  # node.turn(): the calls join it
            return await self._afunc(input, config, runtime)
        async with executor.turn(self.turn_id(config)):
            return await self._afunc(input, config, runtime)

    def _invoke(self, input: Any, config: RunnableConfig) -> Any:
        self._parse_input(input)
        thread = self.guard.loop_thread()
        turn = thread.run(self._begin(self.turn_id(config)))
        token = _SYNC_TURN.set(turn)
        try:
            return self._func(input, config, _runtime(config))
        finally:
            _SYNC_TURN.reset(token)
            thread.run(self._end(turn))

    async def _begin(self, turn_id: str) -> Turn:
        return (await self.guard.executor()).turn(turn_id)

    @staticmethod
    async def _end(turn: Turn) -> None:
        turn.end()


def _new_turn(config: RunnableConfig) -> str:
    return f"langgraph-{uuid.uuid4().hex}"


def _runtime(config: RunnableConfig) -> Runtime[Any]:
    """The graph's runtime the config carries; a bare one for a node invoked alone."""
    runtime = config.get("configurable", {}).get(CONFIG_KEY_RUNTIME)
    return runtime if isinstance(runtime, Runtime) else Runtime()


class _LoopThread:
    """An event loop running in a thread of its own, for synchronous invocations."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="errord-langgraph", daemon=True
        )
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()
