"""The executor's picture of its tools: each one's timeout and circuit breaker, pushed by
errord (WatchTools) and kept in memory, so that admitting a call costs no RPC while its
breaker is closed.

The watch runs in the background for the executor's life and starts again (after a
short wait) whenever its stream ends: errord restarted, or was never there. Meanwhile the
picture is the last one received; a tool errord never mentioned has a closed breaker and
the executor's default timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from errord_client.v1 import errord_pb2 as pb

log = logging.getLogger("errord_client.executor")

WatchTools = Callable[..., Any]
"""The generated stub's WatchTools over a grpc.aio channel."""


@dataclass(frozen=True, slots=True)
class ToolView:
    """What the executor knows of one tool."""

    timeout: float
    closed: bool
    """True while the breaker's recorded phase is CLOSED: attempts run without asking."""


class ToolBoard:
    """Tool policies as errord last sent them."""

    def __init__(self, default_timeout: float = 30.0) -> None:
        self.default_timeout = default_timeout
        """Seconds an attempt of a tool errord did not mention may run."""
        self._tools: dict[str, ToolView] = {}
        self.synced = asyncio.Event()
        """Set once a snapshot arrived (and while the stream lasts)."""

    def timeout(self, tool: str) -> float:
        view = self._tools.get(tool)
        return self.default_timeout if view is None else view.timeout

    def closed(self, tool: str) -> bool:
        """True when attempts of ``tool`` may run without asking errord first."""
        view = self._tools.get(tool)
        return view is None or view.closed

    def apply(self, response: pb.WatchToolsResponse) -> None:
        """Take in one WatchTools response."""
        if response.HasField("default_timeout"):
            self.default_timeout = response.default_timeout.ToTimedelta().total_seconds()
        if response.snapshot:
            self._tools = {}
        for policy in response.tools:
            self._tools[policy.tool] = ToolView(
                timeout=policy.timeout.ToTimedelta().total_seconds(),
                closed=policy.breaker.phase
                in (pb.BREAKER_PHASE_CLOSED, pb.BREAKER_PHASE_UNSPECIFIED),
            )
        if response.snapshot:
            self.synced.set()

    async def follow(
        self,
        watch: WatchTools,
        metadata: tuple[tuple[str, str], ...] | None,
        pause: Callable[[float], Awaitable[None]] = asyncio.sleep,
        retry_every: float = 0.5,
    ) -> None:
        """Apply WatchTools responses for as long as the task runs, watching again
        ``retry_every`` seconds after each stream ends."""
        while True:
            try:
                call = watch(pb.WatchToolsRequest(), metadata=metadata)
                async for response in call:
                    self.apply(response)
            except grpc.aio.AioRpcError as error:
                if error.code() is grpc.StatusCode.UNIMPLEMENTED:
                    log.warning("errord does not serve WatchTools: every call runs unasked")
                    return
                log.debug("WatchTools ended: %s", error.code().name)
            self.synced.clear()
            await pause(retry_every)
