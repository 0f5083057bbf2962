"""The tool execution specification's surface, backed by errord's executor.

    from errord_client.compat.tool_execution import ToolExecutor

    executor = ToolExecutor(
        [
            {
                "name": "calculator",
                "description": "Evaluates arithmetic.",
                "parameters": {
                    "type": "object",
                    "properties": {"expression": {"type": "string"}},
                    "required": ["expression"],
                },
                "implementation": {"type": "builtin", "handler": "math_eval"},
            },
        ]
    )
    await executor.execute_tool("calculator", {"expression": "2+2"})
    # {"success": True, "result": {"result": 4}, "tool_name": "calculator",
    #  "execution_time_ms": 0.4}

A tool is defined as the specification defines it: ``name``, ``description``,
``parameters`` (a JSON Schema; absent, any object) and ``implementation``, whose ``type``
is ``mock`` (its ``mock_response`` returned as it is, the parameters logged and unused),
``builtin`` (its ``handler``: ``math_eval`` returns ``{"result": <number>}``, ``echo``
returns ``{"echo": <parameters>}``) or ``internal`` (its ``handler``, a name registered
in ``internal_handlers``, called with the parameters as keywords).

Every call ends in one result, never an exception: ``{"success": True, "result",
"tool_name", "execution_time_ms"}``, or ``{"success": False, "error": "<string>",
"tool_name", "execution_time_ms"}``, whose error is the specification's text (``Tool
'<name>' not found``, ``Invalid parameters: missing '<param>'``, ``Invalid parameters:
'<param>' must be one of ...``, ``Builtin handler '<name>' not found``, ``Internal
handler '<name>' not found``, or the tool's own message). The parameters are checked
against the schema before the tool runs (required ones, types, enums); parameters the
schema does not name are ignored. The time covers the checks and every attempt.

Between the call and its result, errord decides: a tool failing with a transient error
is retried after errord's delays (the specification runs it once), and its breaker
opens for a tool that keeps failing. ``ToolResult`` records (``raw_result``) hold what
errord decided.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, Final, Literal, Self, TypedDict

from errord_client.compat import default_target
from errord_client.executor import Executor, ToolCall, ToolResult
from errord_client.tools import (
    ANY_ARGUMENTS,
    HandlerNotFound,
    InternalHandlers,
    Tool,
    ToolKind,
    mock_tool,
)
from errord_client.tools.builtin import echo, math_eval

__all__ = [
    "BUILTIN_HANDLERS",
    "ErrorResult",
    "SuccessResult",
    "ToolExecutionResult",
    "ToolExecutor",
    "execution_result",
    "tool_from_definition",
]

log = logging.getLogger("errord_client.compat.tool_execution")


class SuccessResult(TypedDict):
    """A tool call that succeeded."""

    success: Literal[True]
    result: Any
    tool_name: str
    execution_time_ms: float


class ErrorResult(TypedDict):
    """A tool call that failed, whatever the failure."""

    success: Literal[False]
    error: str
    tool_name: str
    execution_time_ms: float


ToolExecutionResult = SuccessResult | ErrorResult


def _math_eval(expression: str) -> dict[str, Any]:
    return {"result": math_eval(expression)}


def _echo(**parameters: Any) -> dict[str, Any]:
    return {"echo": echo(**parameters)}


BUILTIN_HANDLERS: Final[Mapping[str, Callable[..., Any]]] = MappingProxyType(
    {"math_eval": _math_eval, "echo": _echo}
)
"""The specification's builtin handlers, by name, answering in its shapes."""

_IMPLEMENTATIONS: Final = ("mock", "builtin", "internal")


def tool_from_definition(definition: Mapping[str, Any], handlers: InternalHandlers) -> Tool:
    """The executor's Tool for one tool definition of the specification's shape; raises
    ValueError naming the tool and the field that is wrong."""
    if not isinstance(definition, Mapping):
        raise ValueError(f"a tool definition must be an object, got {type(definition).__name__}")
    name = definition.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a tool definition has no 'name': {dict(definition)!r}")
    implementation = definition.get("implementation")
    if not isinstance(implementation, Mapping):
        raise ValueError(f"tool '{name}': 'implementation' must be an object")
    kind = implementation.get("type")
    if kind not in _IMPLEMENTATIONS:
        raise ValueError(
            f"tool '{name}': implementation.type must be one of {', '.join(_IMPLEMENTATIONS)}, "
            f"got {kind!r}"
        )
    parameters = definition.get("parameters") or ANY_ARGUMENTS
    description = definition.get("description") or ""
    if kind == "mock":
        return _mock(name, implementation.get("mock_response"), parameters, description)
    handler = implementation.get("handler")
    if not isinstance(handler, str) or not handler:
        raise ValueError(f"tool '{name}': implementation.handler must name a handler")
    if kind == "internal":
        return _internal(name, handler, handlers, parameters, description)
    return _builtin(name, handler, parameters, description)


def _declared(parameters: Mapping[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments the schema declares (all of them when it declares no properties): a
    handler is called with those, the others ignored, as the specification's handlers
    (which take one parameters object) ignore them."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return arguments
    return {name: value for name, value in arguments.items() if name in properties}


def _internal(
    name: str,
    handler: str,
    handlers: InternalHandlers,
    parameters: Mapping[str, Any],
    description: str,
) -> Tool:
    async def run(**arguments: Any) -> Any:
        return await handlers.call(handler, _declared(parameters, arguments))

    return Tool(name, parameters, description, ToolKind.INTERNAL, function=run)


def _mock(name: str, response: Any, parameters: Mapping[str, Any], description: str) -> Tool:
    answering = mock_tool(name, response, parameters=parameters, description=description)

    def run(**arguments: Any) -> Any:
        log.debug("mock tool %s called with %s", name, arguments)
        return answering.function(**arguments)

    return Tool(name, parameters, description, ToolKind.MOCK, function=run)


def _builtin(name: str, handler: str, parameters: Mapping[str, Any], description: str) -> Tool:
    def run(**arguments: Any) -> Any:
        chosen = BUILTIN_HANDLERS.get(handler)
        if chosen is None:
            raise HandlerNotFound(handler, ToolKind.BUILTIN)
        return chosen(**_declared(parameters, arguments))

    return Tool(name, parameters, description, ToolKind.BUILTIN, function=run)


class ToolExecutor:
    """Runs the specification's tools through errord's executor, one result per call.

    ``tools``: tool definitions (the module's docstring). ``internal_handlers``: the
    handlers internal tools name, an InternalHandlers or a mapping of names to callables.
    ``target``: errord's address (default: ``ERRORD_TARGET``, else the default address).
    Other keywords go to the Executor (``token``, ``decision_timeout``, ...). Close it
    when done (``await executor.close()``, or ``async with``).
    """

    def __init__(
        self,
        tools: Iterable[Mapping[str, Any]],
        *,
        internal_handlers: InternalHandlers | Mapping[str, Callable[..., Any]] | None = None,
        target: str | None = None,
        **executor_options: Any,
    ) -> None:
        handlers = (
            internal_handlers
            if isinstance(internal_handlers, InternalHandlers)
            else InternalHandlers(internal_handlers)
        )
        self.internal_handlers = handlers
        """The handlers internal tools are looked up in (at each call)."""
        self.executor = Executor(
            [tool_from_definition(definition, handlers) for definition in tools],
            target=target or default_target(),
            **executor_options,
        )
        """The executor the calls run through."""
        self.raw_result: ToolResult | None = None
        """The executor's record of the last call: status, attempts, errord's decisions."""
        self._calls = 0

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the executor, sending errord what it still holds."""
        await self.executor.close()

    async def execute_tool(
        self, tool_name: str, parameters: Mapping[str, Any] | None = None
    ) -> ToolExecutionResult:
        """Run ``tool_name`` with ``parameters``; the result, never an exception."""
        self._calls += 1
        call = {"id": f"call-{self._calls}", "name": tool_name, "arguments": parameters}
        return await self.execute_tool_call(call)

    async def execute_tool_call(
        self, tool_call: ToolCall | Mapping[str, Any] | Any
    ) -> ToolExecutionResult:
        """Run one tool call as a model API gives it (``{"id", "name", "arguments"}``, an
        OpenAI or Anthropic call); the result, never an exception, even for a call that
        is None or has no id or name."""
        result = await self.executor.run_one(tool_call)
        self.raw_result = result
        return execution_result(result)


def execution_result(result: ToolResult) -> ToolExecutionResult:
    """``result`` in the specification's shape."""
    if result.ok:
        return SuccessResult(
            success=True,
            result=result.output,
            tool_name=result.tool,
            execution_time_ms=result.execution_time_ms,
        )
    error = result.error
    return ErrorResult(
        success=False,
        error=(error.message if error is not None else "") or result.content(),
        tool_name=result.tool,
        execution_time_ms=result.execution_time_ms,
    )
