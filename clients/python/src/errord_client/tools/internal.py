"""Internal tools: the application's own service handlers, registered by name.

An ``InternalHandlers`` registry maps names to handlers, plain or ``async`` callables
taking the call's arguments as keywords. ``internal_tool`` builds a tool that looks its
handler up when invoked, so a handler may be registered after the tool is built; one never
registered raises HandlerNotFound (``Internal handler '<name>' not found``), which the
executor returns as the call's error. An ``async`` handler runs on the event loop; a plain
one runs in the registry's ``threads`` (None: the loop's default executor).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from errord_client.tools.registry import (
    ANY_ARGUMENTS,
    HandlerNotFound,
    Tool,
    ToolKind,
    is_async_callable,
)


class InternalHandlers:
    """Service handlers by name, for internal tools."""

    def __init__(
        self,
        handlers: Mapping[str, Callable[..., Any]] | None = None,
        *,
        threads: concurrent.futures.Executor | None = None,
    ) -> None:
        self._handlers: dict[str, Callable[..., Any]] = {}
        self._threads = threads
        for name, handler in (handlers or {}).items():
            self.register(name, handler)

    def register(self, name: str, handler: Callable[..., Any]) -> None:
        """Add ``handler`` under ``name``; raises ValueError when the name is taken."""
        if not callable(handler):
            raise TypeError(f"Internal handler '{name}' must be callable")
        if name in self._handlers:
            raise ValueError(f"an internal handler named '{name}' is registered already")
        self._handlers[name] = handler

    def get(self, name: str) -> Callable[..., Any]:
        """The handler called ``name``; raises HandlerNotFound."""
        try:
            return self._handlers[name]
        except KeyError:
            raise HandlerNotFound(name, ToolKind.INTERNAL) from None

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run the handler called ``name`` with ``arguments`` as keywords; raises
        HandlerNotFound, or whatever the handler raises."""
        handler = self.get(name)
        if is_async_callable(handler):
            result = handler(**arguments)
        else:
            call = functools.partial(handler, **arguments)
            result = await asyncio.get_running_loop().run_in_executor(self._threads, call)
        return await result if inspect.isawaitable(result) else result

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._handlers


def internal_tool(
    name: str,
    handler: str,
    handlers: InternalHandlers,
    *,
    parameters: Mapping[str, Any] | None = None,
    description: str = "",
) -> Tool:
    """A tool running the handler registered as ``handler`` in ``handlers``, looked up at
    each invocation. ``parameters`` defaults to any object."""

    async def run(**arguments: Any) -> Any:
        return await handlers.call(handler, arguments)

    return Tool(
        name,
        ANY_ARGUMENTS if parameters is None else parameters,
        description,
        ToolKind.INTERNAL,
        False,
        function=run,
    )
