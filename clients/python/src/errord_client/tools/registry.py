"""Tools and the registry the executor runs them from.

A ``Tool`` is what a model may call: a name, a JSON Schema of its arguments, a description,
and the callable that runs it. ``function_tool`` (or the ``@tool`` decorator) makes one from
a plain or ``async`` function, reading the name, description and schema from the function
itself; ``mock_tool``, ``builtin_tool`` and ``internal_tool`` make the other kinds. A
``ToolRegistry`` holds a set of tools by name and says, for an unknown name, which names
come closest.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import difflib
import enum
import functools
import inspect
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, overload

from errord_client.tools.arguments import Accepted, accept_arguments
from errord_client.tools.schema import arguments_converter, parameters_schema

ANY_ARGUMENTS: Mapping[str, Any] = MappingProxyType(
    {"type": "object", "properties": MappingProxyType({})}
)
"""The schema of a tool that takes any arguments (read-only; a mock's unless given)."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
"""Tool names both OpenAI and Anthropic accept."""


class ToolKind(enum.Enum):
    """How a tool runs."""

    FUNCTION = "function"
    """The agent developer's own function."""
    MOCK = "mock"
    """A static or scripted response, for tests (``mock_tool``)."""
    BUILTIN = "builtin"
    """One of the handlers shipped here, by name (``builtin_tool``)."""
    INTERNAL = "internal"
    """A service handler of the application, by name (``internal_tool``)."""


class ToolNotFound(LookupError):
    """No tool has this name: ``Tool '<name>' not found``. ``available`` lists every
    registered name, ``closest`` the few that look most like ``name``."""

    def __init__(self, name: str, available: Iterable[str]) -> None:
        self.name = name
        self.available: tuple[str, ...] = tuple(available)
        self.closest: tuple[str, ...] = tuple(difflib.get_close_matches(name, self.available))
        LookupError.__init__(self, f"Tool '{name}' not found")


class HandlerNotFound(LookupError):
    """A builtin or internal tool names a handler nobody registered:
    ``Builtin handler '<name>' not found``, ``Internal handler '<name>' not found``."""

    def __init__(self, name: str, kind: ToolKind) -> None:
        self.name = name
        self.kind = kind
        LookupError.__init__(self, f"{kind.value.capitalize()} handler '{name}' not found")


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool a model may call, and how to run it."""

    name: str
    """What the model calls it: 1 to 64 letters, digits, ``_`` or ``-``."""
    parameters: Mapping[str, Any]
    """The JSON Schema of the arguments object (``"type": "object"``)."""
    description: str = ""
    """What the tool does, for the model."""
    kind: ToolKind = ToolKind.FUNCTION
    """How the tool runs."""
    blocking: bool = False
    """True for a plain (sync) function, which runs in a worker thread, off the event loop."""
    function: Callable[..., Any] = field(kw_only=True, repr=False)
    """Called with the arguments as keywords; may return an awaitable, which is awaited."""
    validates_arguments: bool = field(default=False, kw_only=True)
    """True when the tool's framework checks its arguments itself (a LangChain tool's
    pydantic model, an MCP server): the executor then calls it with the arguments as the
    model wrote them, and the tool's own check decides. False: ``accept`` decides."""
    scope: str = field(default="", kw_only=True)
    """The backend the tool's attempts reach, when errord should keep its circuit breaker,
    statistics, rate-limit window and memory apart from the same tool's elsewhere: an
    MCP server and its session (the MCP adapter's own), a host, a region, a tenant, the
    name of a credential (never the secret). Empty: the tool alone."""
    timeout: float | None = field(default=None, kw_only=True)
    """Seconds an attempt may run when errord has no manifest timeout for the tool: the
    timeout its framework declares (an Agents SDK tool's ``timeout``); None: the
    executor's ``default_timeout``. A manifest's ``timeout_ms`` wins."""
    ready: Callable[[], Awaitable[Tool]] | None = field(default=None, kw_only=True, repr=False)
    """Awaited before each attempt of the tool, admission included: gives the tool to run,
    itself or another the registry takes in its place (an MCP tool on a session opened
    again after its server died, in the new session's scope). None: nothing to prepare."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(
                f"Tool name {self.name!r}: use 1 to 64 letters, digits, '_' or '-' "
                "(model APIs accept no other)"
            )
        if not isinstance(self.parameters, Mapping) or self.parameters.get("type") != "object":
            raise ValueError(
                f'Tool \'{self.name}\': parameters must be a JSON Schema with "type": "object"'
            )
        if not callable(self.function):
            raise TypeError(f"Tool '{self.name}': function must be callable")
        if not isinstance(self.scope, str) or len(self.scope) > 512 or not self.scope.isprintable():
            raise ValueError(f"Tool '{self.name}': scope must be at most 512 printable characters")
        if self.timeout is not None and not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(
                f"Tool '{self.name}': timeout must be a positive number of seconds, "
                f"got {self.timeout!r}"
            )

    def accept(self, arguments: Mapping[str, Any]) -> Accepted:
        """``arguments`` as the tool is called with them, checked against ``parameters``
        as frameworks check a call (errord_client.tools.arguments): required properties,
        each top-level property's JSON type and enum; ``2.0`` for an integer is ``2``, an
        argument the schema does not take is left out (``Accepted.ignored``). Raises
        InvalidArguments naming each problem."""
        return accept_arguments(self.parameters, arguments)

    def check(self, arguments: Mapping[str, Any]) -> None:
        """Raise InvalidArguments unless ``accept`` takes ``arguments``."""
        accept_arguments(self.parameters, arguments)

    async def invoke(
        self,
        arguments: Mapping[str, Any],
        *,
        threads: concurrent.futures.Executor | None = None,
    ) -> Any:
        """Run the tool with ``arguments`` as keywords and return what it returns.

        A coroutine function runs on the event loop, so cancelling the awaiting task
        cancels it. A blocking tool runs in ``threads`` (None: the loop's default
        executor); cancelling the awaiting task abandons it: the thread runs on, its
        result is dropped. Raises whatever the tool raises.
        """
        if self.blocking:
            call = functools.partial(self.function, **arguments)
            result = await asyncio.get_running_loop().run_in_executor(threads, call)
        else:
            result = self.function(**arguments)
        if inspect.isawaitable(result):
            return await result
        return result

    def to_openai(self) -> dict[str, Any]:
        """The tool as OpenAI's function tool definition (Chat Completions ``tools``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _plain(self.parameters),
            },
        }

    def to_anthropic(self) -> dict[str, Any]:
        """The tool as an Anthropic Messages tool definition."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": _plain(self.parameters),
        }


def _plain(value: Any) -> Any:
    """A copy of a JSON value made of dicts and lists, which the caller may change."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def function_tool(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    scope: str = "",
    timeout: float | None = None,
) -> Tool:
    """A tool running ``function``, a plain function (run in a worker thread) or a
    coroutine function (run on the event loop), in ``scope`` (``Tool.scope``), each
    attempt under ``timeout`` unless a manifest says (``Tool.timeout``).

    By default the name is the function's ``__name__``, the description the first
    paragraph of its docstring, and the parameters the schema of its type hints
    (errord_client.tools.schema), whose values are read back into the hinted types
    (Enum members, dataclasses, tuples) before the function runs. With ``parameters``
    given, the hints are not read and the function gets the arguments as decoded. Raises
    TypeError for a hint with no JSON Schema when ``parameters`` is not given.
    """
    if isinstance(function, Tool):
        raise TypeError(f"Tool '{function.name}' is a tool already, not a function")
    if name is None:
        name = getattr(function, "__name__", None)
        if name is None:
            raise TypeError(f"{function!r} has no __name__: pass name=")
    if description is None:
        description = _first_paragraph(inspect.getdoc(function) or "")
    blocking = not is_async_callable(function)
    if parameters is None:
        parameters = parameters_schema(function)
        convert = arguments_converter(function)
        if convert is not None:
            function = _converting(function, convert)
    return Tool(
        name,
        parameters,
        description,
        ToolKind.FUNCTION,
        blocking,
        function=function,
        scope=scope,
        timeout=timeout,
    )


def is_async_callable(function: Callable[..., Any]) -> bool:
    """Whether calling ``function`` starts a coroutine: an ``async def`` function, a partial
    of one, or an object whose ``__call__`` is one."""
    call = None if inspect.isroutine(function) else type(function).__call__
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _converting(
    function: Callable[..., Any], convert: Callable[[Mapping[str, Any]], dict[str, Any]]
) -> Callable[..., Any]:
    """``function`` called with its arguments read into their hinted types; for a coroutine
    function the call returns the coroutine, which ``Tool.invoke`` awaits."""

    @functools.wraps(function)
    def call(**arguments: Any) -> Any:
        return function(**convert(arguments))

    return call


def _first_paragraph(docstring: str) -> str:
    return " ".join(docstring.split("\n\n", 1)[0].split())


@overload
def tool(function: Callable[..., Any]) -> Tool: ...


@overload
def tool(
    function: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    scope: str = "",
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    scope: str = "",
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """``function_tool`` as a decorator, bare (``@tool``) or with options
    (``@tool(name="search")``, ``@tool(scope="eu-west-1")``, ``@tool(timeout=5)``). The
    decorated name is bound to the Tool."""
    make = functools.partial(
        function_tool,
        name=name,
        description=description,
        parameters=parameters,
        scope=scope,
        timeout=timeout,
    )
    return make if function is None else make(function)


class ToolRegistry:
    """The tools an executor may run, by name, in registration order."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for each in tools:
            self.register(each)

    def register(self, tool: Tool | Callable[..., Any], *, name: str | None = None) -> Tool:
        """Add a tool, or a function made one with ``function_tool``, under its own name or
        ``name``; return the Tool. Raises ValueError when the name is taken."""
        if not isinstance(tool, Tool):
            tool = function_tool(tool, name=name)
        elif name is not None and name != tool.name:
            tool = dataclasses.replace(tool, name=name)
        if tool.name in self._tools:
            raise ValueError(f"a tool named '{tool.name}' is registered already")
        self._tools[tool.name] = tool
        return tool

    def replace(self, tool: Tool) -> None:
        """Put ``tool`` in place of the registered tool of its name (``Tool.ready``'s
        replacement); raises ToolNotFound when none is registered."""
        self.get(tool.name)
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool:
        """The tool called ``name``; raises ToolNotFound, with the closest names."""
        try:
            return self._tools[name]
        except KeyError:
            raise ToolNotFound(name, self._tools) from None

    @property
    def names(self) -> tuple[str, ...]:
        """Every tool's name, in registration order."""
        return tuple(self._tools)

    def to_openai(self) -> list[dict[str, Any]]:
        """Every tool as an OpenAI function tool definition, for a request's ``tools``."""
        return [each.to_openai() for each in self._tools.values()]

    def to_anthropic(self) -> list[dict[str, Any]]:
        """Every tool as an Anthropic tool definition, for a request's ``tools``."""
        return [each.to_anthropic() for each in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
