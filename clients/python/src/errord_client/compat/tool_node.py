"""The error-handling LangGraph tool node's surface, backed by errord's executor.

    from errord_client.compat.tool_node import ErrorHandlingToolNode

    error_handling_tool_node = ErrorHandlingToolNode(tools=self.tools)
    graph_builder.add_node("tools", error_handling_tool_node)

The document's names and shapes (its ``src/tool_error_handler.py`` and ``sidekick.py``):

- ``ToolExecutionError(tool_name, original_error, tool_input=None, message=None)``, an
  exception with ``error_type`` (the original's class name) and ``timestamp``;
  ``to_dict()``.
- ``wrap_tool_with_error_handling(tool)``: the tool itself (errors are handled by the
  node).
- ``format_tool_error_for_llm(tool_name, error_type, error_message)``: the document's
  ``Tool Execution Failed`` text, exactly.
- ``create_tool_error_message(tool_name, error, tool_call_id)``: a ToolMessage whose
  content is ``[TOOL ERROR] <tool> failed with <ErrorType>: <message>``.
- ``ToolErrorRegistry``: ``record_error``, ``get_error_summary()`` (``{"search:ValueError":
  1}``) and ``get_errors_for_tool``.
- ``ErrorHandlingToolNode(tools)``: ``tools`` (by name), ``tool_error_registry`` (by tool,
  each error's ``error_type``, ``error_message`` and ``timestamp``), ``get_error_summary()``,
  and the document's log lines with their ``extra`` fields (``Processing N tool call(s)``,
  ``Executing tool: NAME``, ``Tool succeeded: NAME`` with ``result_length``, ``Tool
  execution failed: NAME`` with ``error_type`` and ``error_message``, ``Tool execution
  batch completed`` with ``successful`` and ``total``).

The node is errord_client.adapters.langgraph's, under the document's names: its calls
run through the executor, one errord turn per invocation. errord answers differently
from the document on purpose in two ways (docs/coming-from.md): a transient failure is
retried after errord's delays (the document's node runs each call once), and a failed
call's ToolMessage is errord's text for the model, which begins as the document's
(``Tool Execution Failed``, ``Tool:``, ``Error Type:``, ``Message:``) but says what to do
next (correct a parameter, call again later, or not at all) where the document closes
with "cannot be used for this request".
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final, TypeVar

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from errord_client.adapters import langgraph
from errord_client.compat import default_target
from errord_client.executor import ToolResult

__all__ = [
    "ErrorHandlingToolNode",
    "ToolErrorRegistry",
    "ToolExecutionError",
    "create_tool_error_message",
    "format_tool_error_for_llm",
    "wrap_tool_with_error_handling",
]

logger = logging.getLogger("errord_client.compat.tool_node")

MAX_MESSAGE: Final = 200
"""Characters of an error's message in a log line and in create_tool_error_message's
content (the document's ``str(e)[:200]``)."""

ToolT = TypeVar("ToolT")


class ToolExecutionError(Exception):
    """Structured information about a tool's failure."""

    def __init__(
        self,
        tool_name: str,
        original_error: Exception,
        tool_input: Any = None,
        message: str | None = None,
    ) -> None:
        self.tool_name = tool_name
        """The tool that failed."""
        self.original_error = original_error
        """The exception it raised."""
        self.tool_input = tool_input
        """What the tool was given."""
        self.error_type = type(original_error).__name__
        """The original exception's class name ("ValueError", "TimeoutError")."""
        self.timestamp = datetime.now()
        """When the error occurred (local time, as the document's)."""
        self.message = message if message is not None else str(original_error)
        """The human-readable message: ``message``, else the original's text."""
        super().__init__(f"Tool '{tool_name}' failed with {self.error_type}: {self.message}")

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-able values, the timestamp in ISO 8601."""
        return {
            "tool_name": self.tool_name,
            "error_type": self.error_type,
            "message": self.message,
            "tool_input": self.tool_input,
            "timestamp": self.timestamp.isoformat(),
        }


def wrap_tool_with_error_handling(tool: ToolT) -> ToolT:
    """``tool`` itself: errors are handled by ErrorHandlingToolNode."""
    return tool


def format_tool_error_for_llm(tool_name: str, error_type: str, error_message: str) -> str:
    """The document's text telling the model a tool failed."""
    return (
        "Tool Execution Failed\n"
        f"Tool: {tool_name}\n"
        f"Error Type: {error_type}\n"
        f"Message: {error_message}\n"
        "\n"
        "The tool failed and cannot be used for this request."
    )


def create_tool_error_message(tool_name: str, error: Exception, tool_call_id: str) -> ToolMessage:
    """A ToolMessage answering ``tool_call_id`` with ``tool_name``'s failure: ``[TOOL
    ERROR] <tool> failed with <ErrorType>: <message>``, the message cut to MAX_MESSAGE
    characters."""
    return ToolMessage(
        content=f"[TOOL ERROR] {tool_name} failed with {type(error).__name__}: "
        f"{str(error)[:MAX_MESSAGE]}",
        tool_call_id=tool_call_id,
        name=tool_name,
        status="error",
    )


class ToolErrorRegistry:
    """Errors by tool and type, as the document's registry keeps them: ``record_error``,
    ``get_error_summary``, ``get_errors_for_tool``. Safe to share between threads."""

    def __init__(self) -> None:
        self._errors: dict[str, list[dict[str, str]]] = {}
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def record_error(self, tool_name: str, error: Exception) -> None:
        """Record one error of ``tool_name``: its time and message, under
        ``tool:ErrorType``."""
        key = f"{tool_name}:{type(error).__name__}"
        entry = {"timestamp": datetime.now().isoformat(), "error_message": str(error)}
        with self._lock:
            self._counts[key] += 1
            self._errors.setdefault(key, []).append(entry)

    def get_error_summary(self) -> dict[str, int]:
        """``{"tool:error_type": count}``."""
        with self._lock:
            return dict(self._counts)

    def get_errors_for_tool(self, tool_name: str) -> dict[str, Any]:
        """``{"tool:error_type": [entries]}`` of ``tool_name``."""
        with self._lock:
            return {
                key: list(entries)
                for key, entries in self._errors.items()
                if key.rpartition(":")[0] == tool_name
            }


class ErrorHandlingToolNode(langgraph.ErrorHandlingToolNode):
    """The document's tool node: errord's LangGraph node (errord_client.adapters.langgraph)
    with the document's attributes, summary and log lines.

    ``tools``: LangChain tools or plain functions. ``target``: errord's address (default:
    ``ERRORD_TARGET``, else the default address); other keywords are the adapter's.
    """

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        **options: Any,
    ) -> None:
        options["target"] = options.get("target") or default_target()
        super().__init__(tools, **options)
        self.tools: dict[str, BaseTool] = dict(self.tools_by_name)
        """The tools, by name."""
        self.tool_error_registry: dict[str, list[dict[str, str]]] = {}
        """Each tool's errors: ``error_type``, ``error_message``, ``timestamp``."""
        self._registry_lock = threading.Lock()
        self.guard.note = self._note

    def __call__(self, state: Any) -> Any:
        """Run the tool calls of the state's last AI message: ``{"messages": [ToolMessage,
        ...]}``, one per call (the node's ``invoke``)."""
        return self.invoke(state)

    def get_error_summary(self) -> dict[str, list[dict[str, Any]]]:
        """Every error the node answered, by tool."""
        with self._registry_lock:
            return {tool: list(errors) for tool, errors in self.tool_error_registry.items()}

    def _invoke(self, input: Any, config: RunnableConfig) -> Any:
        self._processing(input)
        return self._completed(super()._invoke(input, config))

    async def _ainvoke(self, input: Any, config: RunnableConfig) -> Any:
        self._processing(input)
        return self._completed(await super()._ainvoke(input, config))

    def _processing(self, input: Any) -> None:
        calls, _ = self._parse_input(input)
        logger.info("Processing %d tool call(s)", len(calls))
        for call in calls:
            logger.info("Executing tool: %s", call["name"])

    def _completed(self, answered: Any) -> Any:
        messages = answered if isinstance(answered, list) else answered[self.messages_key]
        successful = sum(1 for message in messages if message.status == "success")
        logger.info(
            "Tool execution batch completed",
            extra={"successful": successful, "total": len(messages)},
        )
        return answered

    def _note(self, result: ToolResult, turn_id: str) -> None:
        if not result.is_error:
            logger.info(
                "Tool succeeded: %s",
                result.tool,
                extra={"tool_name": result.tool, "result_length": _result_length(result)},
            )
            return
        error_type = error_type_of(result)
        message = (result.error.message if result.error else "") or result.content()
        logger.error(
            "Tool execution failed: %s",
            result.tool,
            extra={
                "tool_name": result.tool,
                "error_type": error_type,
                "error_message": message[:MAX_MESSAGE],
            },
        )
        entry = {
            "error_type": error_type,
            "error_message": message,
            "timestamp": datetime.now().isoformat(),
        }
        with self._registry_lock:
            self.tool_error_registry.setdefault(result.tool, []).append(entry)
        self.errors.record(langgraph.ToolErrorEntry.of(result, turn_id))


def error_type_of(result: ToolResult) -> str:
    """The class name of the exception ``result``'s call failed with ("TimeoutError" for
    ``builtins.TimeoutError``, "HTTPError" for ``requests.HTTPError``); errord's code
    when no exception was raised (a call skipped because another failed)."""
    error = result.error
    if error is None:
        return "UNKNOWN"
    return error.exception_type.rpartition(".")[2] or error.code or "UNKNOWN"


def _result_length(result: ToolResult) -> int:
    """The length of the text the model reads of a successful call: the tool's own
    message's content, as the node answers with it."""
    output = result.output
    if isinstance(output, ToolMessage):
        return len(output.text)
    return len(result.content())
