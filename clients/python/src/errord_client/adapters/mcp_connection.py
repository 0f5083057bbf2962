"""An MCP server's session that is opened again when the server dies.

    def files_server() -> AbstractAsyncContextManager[ClientSession]:
        return stdio_session(StdioServerParameters(command="npx", args=[...]))

    async with MCPConnection(files_server, server="files") as files:
        async with Executor(await files.tools(), target=...) as executor:
            results = await executor.run(tool_calls)

A stdio MCP server that crashes leaves its session closed for good: every later call of
its tools fails on the dead pipe, however often errord retries it. ``MCPConnection``
takes what opens a session (``connect``: a function giving an async context manager
that enters as an initialized session; ``stdio_session`` makes one for a stdio server,
``lambda: mcp.Client(...)`` is another) and holds the session open in a task of its own.
When the session ends under it (the server's pipe closed) or a call fails on a closed
connection, the next attempt of any of its tools first opens a new session (a new server
process, for stdio) and runs there: the executor's ``Tool.ready`` hook gives the tool of
the new session in place of the old. The new session's tools are in a scope of their own
(``session_scope``), so the dead server's open breaker does not refuse the restarted one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Self, TypeAlias

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from errord_client.adapters.mcp import MCPSession, list_mcp_tools, session_scope, tools_from_mcp
from errord_client.tools import Tool

__all__ = ["Connect", "MCPConnection", "stdio_session"]

log = logging.getLogger("errord_client.adapters.mcp")

Connect: TypeAlias = Callable[[], AbstractAsyncContextManager[MCPSession]]
"""Opens a session on an MCP server: entering gives it initialized, leaving closes it."""

CLOSED = (ConnectionError, anyio.ClosedResourceError, anyio.BrokenResourceError, EOFError)
"""What a call on a session whose server went away raises (the adapter's ConnectionClosed
is a ConnectionError)."""


@contextlib.asynccontextmanager
async def stdio_session(parameters: StdioServerParameters) -> AsyncIterator[ClientSession]:
    """An initialized ClientSession on the stdio server ``parameters`` starts."""
    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


class MCPConnection:
    """An MCP server's session, made by ``connect`` and made again when the server died;
    ``tools`` gives its tools for an Executor. ``server`` names the server in the
    tools' scope (``session_scope``); ``prefix`` is put before their names."""

    def __init__(self, connect: Connect, *, server: str | None = None, prefix: str = "") -> None:
        self.connect = connect
        self.server = server
        self.prefix = prefix
        self.session: MCPSession | None = None
        """The session open now; None before ``open`` and after ``aclose``."""
        self.sessions = 0
        """How many sessions were opened: 1, and one more for each reconnection."""
        self._tools: dict[str, Tool] = {}
        self._holder: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._dead = False
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Open the session (once: ``__aenter__`` does) and list its server's tools."""
        async with self._lock:
            if self.session is None:
                await self._open()

    async def tools(self) -> list[Tool]:
        """The errord Tools of the server's tools, each reconnecting before an attempt
        when the session died (``Tool.ready``)."""
        await self.open()
        return list(self._tools.values())

    @property
    def dead(self) -> bool:
        """True once the session ended under it, until a new one is open."""
        return self._dead or (self._holder is not None and self._holder.done())

    async def aclose(self) -> None:
        """Close the session (and so stop a stdio server)."""
        async with self._lock:
            await self._close()
            self.session = None

    async def _open(self) -> None:
        opened: asyncio.Future[MCPSession] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._holder = asyncio.create_task(self._hold(opened, self._closing))
        session = await opened
        self.session, self._dead = session, False
        self.sessions += 1
        scope = session_scope(session, server=self.server)
        listed = tools_from_mcp(
            session, await list_mcp_tools(session), prefix=self.prefix, scope=scope
        )
        self._tools = {tool.name: self._reconnecting(tool) for tool in listed}

    async def _hold(self, opened: asyncio.Future[MCPSession], closing: asyncio.Event) -> None:
        """Hold the session open in this task (its context must be left in the task that
        entered it) until ``closing`` is set or the session ends under it."""
        try:
            async with self.connect() as session:
                opened.set_result(session)
                await closing.wait()
        except BaseException as error:
            if not opened.done():
                opened.set_exception(error)
            elif not closing.is_set():
                log.warning("the MCP session of %s ended: %r", self.server or "a server", error)
            if isinstance(error, asyncio.CancelledError) and closing.is_set():
                return
            if not isinstance(error, Exception):
                raise

    async def _close(self) -> None:
        holder, self._holder = self._holder, None
        if holder is None:
            return
        self._closing.set()
        if not holder.done():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(holder), 5.0)
        if not holder.done():
            holder.cancel()

    def _reconnecting(self, tool: Tool) -> Tool:
        """``tool`` marking the session dead when a call fails on a closed connection,
        and made ready (before each attempt) by reconnecting a dead session."""
        call = tool.function
        assert call is not None

        async def watched(**arguments: Any) -> Any:
            try:
                return await call(**arguments)
            except CLOSED:
                self._dead = True
                raise

        async def ready() -> Tool:
            return await self._ready(tool.name)

        return dataclasses.replace(tool, function=watched, ready=ready)

    async def _ready(self, name: str) -> Tool:
        """The tool ``name`` on a live session: this one, or a new one when it died."""
        async with self._lock:
            if self.dead:
                log.warning("reconnecting to %s: its MCP session died", self.server or "a server")
                await self._close()
                await self._open()
        try:
            return self._tools[name]
        except KeyError:
            raise LookupError(f"the MCP server no longer lists {name}") from None
