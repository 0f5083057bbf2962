"""errord inside LangGraph: a tool node that runs the model's calls through the executor.

    from errord_client.adapters.langgraph import ErrorHandlingToolNode

    tools = ErrorHandlingToolNode([flight_search, hotel_search], target="127.0.0.1:50051")
    builder.add_node("tools", tools)                 # wherever a ToolNode goes

``ErrorHandlingToolNode`` takes and returns what LangGraph's ``ToolNode`` does: a state
whose messages end with an AIMessage's tool calls (or a list of messages, or the tool
calls themselves), and one ``ToolMessage`` per call, with the call's ``tool_call_id``.
Between the two, each node invocation is one errord turn: the calls run under their
manifests' timeouts, and on a failure errord decides (retry after a delay, the
alternative tool, the default, skip, hand the call back to the model to correct,
escalate, fail) and the executor follows, so the graph sees one message per call. A
call that ends without an output of its own is a ``ToolMessage`` with ``status="error"``
whose content is errord's text for the model (its ``Tool Execution Failed`` block).

Each failed call is logged as ``[TOOL ERROR] <tool> failed with <code>: <message>`` and
kept in the node's ``errors`` (``error_summary()``: errors by tool and type). The tools
are LangChain tools (``@tool``, any ``BaseTool``) or plain functions, which become
LangChain tools as ``ToolNode`` makes them; ``errord_tool`` is the conversion to the
executor's ``Tool``.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import uuid
import weakref
from collections import Counter, deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Final, Self, TypeVar

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.messages.tool import ToolCall as LangChainToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import msg_content_output
from pydantic import ValidationError

from errord_client.executor import Executor, ResultStatus, ToolCall, ToolResult
from errord_client.tools import InvalidArguments, Tool, ToolKind, ToolRegistry

__all__ = [
    "ErrorHandlingToolNode",
    "ToolErrorEntry",
    "ToolErrorRegistry",
    "errord_tool",
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
            "ErrorHandlingToolNode runs tools without graph state, store or runtime"
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


# The node


@dataclass
class _Started:
    """The node's executor on one event loop, and its start (waiting for errord's
    tool policies), which every invocation awaits."""

    executor: Executor
    ready: asyncio.Task[None]


class ErrorHandlingToolNode(ToolNode):
    """A ToolNode whose calls run through errord's executor, one errord turn per
    invocation.

    ``tools``: LangChain tools or plain functions, as ToolNode takes them (without
    injected arguments). ``name``, ``tags`` and ``messages_key`` are ToolNode's. Other
    keywords go to the ``Executor`` (``target``, ``token``, ``credentials``,
    ``decision_timeout``, ``default_timeout``, ``local_policy``, ...). ``sync_timeout``:
    seconds the first invocation on an event loop waits for errord's tool timeouts
    and breakers before it runs.

    Each invocation is one errord turn, named ``langgraph-<random hex>``, or by
    ``turn_id``, a function of the invocation's config, which must give each invocation
    a turn no earlier one used (errord refuses failures on a turn that ended). The turn
    is in each ToolMessage's ``response_metadata["errord"]["turn_id"]``.

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
        name: str = "tools",
        tags: list[str] | None = None,
        messages_key: str = "messages",
        sync_timeout: float = 1.0,
        turn_id: Callable[[RunnableConfig], str] | None = None,
        **executor_options: Any,
    ) -> None:
        super().__init__(tools, name=name, tags=tags, messages_key=messages_key)
        # The runnable calls this node's functions, not ToolNode's own loop over its tools.
        super(ToolNode, self).__init__(
            self._invoke, self._ainvoke, name=name, tags=tags, trace=False
        )
        self.errord_tools = ToolRegistry(errord_tool(each) for each in self.tools_by_name.values())
        """The tools as the executor runs them (``errord_tool``)."""
        self.errors = ToolErrorRegistry()
        """Every call the node answered with an error, by tool and type."""
        self.messages_key = messages_key
        self.sync_timeout = sync_timeout
        self.turn_id = turn_id or _new_turn
        self._options = executor_options
        self._started: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Started] = (
            weakref.WeakKeyDictionary()
        )
        self._thread: _LoopThread | None = None
        self._lock = threading.Lock()

    def error_summary(self) -> dict[str, int]:
        """``{"tool:error_type": count}`` of the calls answered with an error."""
        return self.errors.summary()

    def errors_for_tool(self, tool: str) -> dict[str, list[ToolErrorEntry]]:
        """``{"tool:error_type": [entries]}`` of one tool's calls answered with an error."""
        return self.errors.for_tool(tool)

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
        started = self._started.pop(asyncio.get_running_loop(), None)
        if started is not None:
            await started.executor.close()

    def close(self) -> None:
        """Close the executor of synchronous invocations, and stop their thread."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.run(self.aclose())
            thread.stop()

    def _invoke(self, input: Any, config: RunnableConfig) -> Any:
        with self._lock:
            if self._thread is None:
                self._thread = _LoopThread()
            thread = self._thread
        return thread.run(self._ainvoke(input, config))

    async def _ainvoke(self, input: Any, config: RunnableConfig) -> Any:
        calls, as_list = self._tool_calls(input)
        executor = await self._executor()
        turn_id = self.turn_id(config)
        token = _RUN_CONFIG.set(config)
        try:
            results = await executor.run(
                [ToolCall(call["id"] or "", call["name"], call["args"]) for call in calls],
                turn_id=turn_id,
            )
        finally:
            _RUN_CONFIG.reset(token)
        for result in results:
            self._note(result, turn_id)
        messages = [tool_message(result, turn_id=turn_id) for result in results]
        return messages if as_list else {self.messages_key: messages}

    def _tool_calls(self, input: Any) -> tuple[list[LangChainToolCall], bool]:
        """The calls to run, and whether to answer with a list (a list of messages came
        in) rather than a state update: ToolNode's input formats."""
        if isinstance(input, list) and input and _is_tool_call(input[-1]):
            return list(input), False
        if isinstance(input, dict) and input.get("__type") == "tool_call_with_context":
            return [input["tool_call"]], False  # one call of the Send API
        if isinstance(input, list):
            messages = input
        elif isinstance(input, dict):
            messages = input.get(self.messages_key) or []
        else:
            messages = getattr(input, self.messages_key, None) or []
        if not messages:
            raise ValueError("No message found in input")
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if last is None:
            raise ValueError("No AIMessage found in input")
        return list(last.tool_calls), isinstance(input, list)

    async def _executor(self) -> Executor:
        """This loop's executor, started (waiting ``sync_timeout`` for errord's policies)."""
        loop = asyncio.get_running_loop()
        started = self._started.get(loop)
        if started is None:
            executor = Executor(self.errord_tools, **self._options)
            ready = loop.create_task(executor.start(sync_timeout=self.sync_timeout))
            started = self._started[loop] = _Started(executor, ready)
        await asyncio.shield(started.ready)
        return started.executor

    def _note(self, result: ToolResult, turn_id: str) -> None:
        _note(self.errors, result, turn_id, log)


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


def _new_turn(config: RunnableConfig) -> str:
    return f"langgraph-{uuid.uuid4().hex}"


def _is_tool_call(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") == "tool_call"


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
