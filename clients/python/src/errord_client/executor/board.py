"""The executor's picture of its tools: each one's timeout, circuit breaker and rate-limit
window, pushed by errord (WatchTools) and kept in memory, so that admitting a call costs
no RPC while its breaker is closed and no window holds it.

errord keeps a breaker and a window per tool and scope (the backend an attempt reaches,
as the executor names it: an MCP server and its session, a host, a tenant), and so does
the board: each is found by its key, ``board_key(tool, scope)``, the tool's name alone
for a tool without a scope, as errord keys them.

The watch runs in the background for the executor's life and starts again (after a
short wait) whenever its stream ends: errord restarted, or was never there. Meanwhile the
picture is the last one received; a tool errord never mentioned has a closed breaker and
the executor's default timeout. A rate limit one of the executor's own attempts met
holds the tool at once (``limit``), before errord has heard of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace

import grpc
import grpc.aio

from errord_client.v1 import errord_pb2 as pb

log = logging.getLogger("errord_client.executor")

WatchTools = Callable[[], AsyncIterator[pb.WatchToolsResponse]]
"""A watch of errord's tool policies: AsyncErrordClient.watch_tools."""
SCOPE_SEPARATOR = "\x1f"
"""Between a tool's name and its scope in a key, as errord joins them (identifiers hold no
control characters)."""


def board_key(tool: str, scope: str = "") -> str:
    """The key of ``tool``'s breaker and window in ``scope``: its name alone without one."""
    return f"{tool}{SCOPE_SEPARATOR}{scope}" if scope else tool


@dataclass(frozen=True, slots=True)
class ToolView:
    """What the executor knows of one tool."""

    timeout: float
    closed: bool
    """True while the breaker's recorded phase is CLOSED: attempts run without asking."""
    has_manifest: bool = True
    """True when ``timeout`` is the tool's manifest's; False for a tool errord knows only by
    its breaker (the default timeout, which a tool's own ``timeout`` replaces)."""
    limited_until: float = 0.0
    """Wall-clock time (time.time()) until which a rate-limit window holds the tool."""
    probe_free: bool = False
    """True while the breaker is half-open and no probe is in flight: an attempt that
    asks may be the probe."""


class ToolBoard:
    """Tool policies as errord last sent them, and the rate limits met since."""

    def __init__(
        self, default_timeout: float = 30.0, clock: Callable[[], float] = time.time
    ) -> None:
        self.default_timeout = default_timeout
        """Seconds an attempt of a tool errord did not mention may run."""
        self._tools: dict[str, ToolView] = {}
        self._clock = clock
        self._changed: dict[str, asyncio.Event] = {}
        """Per tool someone waits on, set when errord sends its policy again."""
        self.synced = asyncio.Event()
        """Set once a snapshot arrived (and while the stream lasts)."""

    def timeout(self, key: str, declared: float | None = None) -> float:
        """Seconds an attempt of the tool may run: its manifest's timeout, as errord sends
        it for each of its scopes; else ``declared``, the tool's own (``Tool.timeout``);
        else errord's default."""
        view = self._tools.get(key)
        if view is None and SCOPE_SEPARATOR in key:
            view = self._tools.get(key.partition(SCOPE_SEPARATOR)[0])
        if view is not None and view.has_manifest:
            return view.timeout
        if declared is not None:
            return declared
        return self.default_timeout if view is None else view.timeout

    def closed(self, key: str) -> bool:
        """True when attempts of the tool in the scope of ``key`` may run without asking
        errord first: its breaker is closed and no rate-limit window holds it."""
        view = self._tools.get(key)
        return view is None or (view.closed and self.held_for(key) == 0.0)

    def held_for(self, key: str) -> float:
        """Seconds a rate-limit window still holds the tool in the scope of ``key``; 0 when
        none does."""
        view = self._tools.get(key)
        return 0.0 if view is None else max(0.0, view.limited_until - self._clock())

    def limit(self, key: str, seconds: float) -> None:
        """Hold the tool in the scope of ``key`` for ``seconds``: one of the executor's
        attempts was rate-limited, and every other call must wait as long, whether errord
        has heard of it yet or not."""
        until = self._clock() + seconds
        view = self._tools.get(key) or ToolView(
            timeout=self.timeout(key), closed=True, has_manifest=False
        )
        if until > view.limited_until:
            self._tools[key] = replace(view, limited_until=until)

    async def wait_out_limits(
        self, key: str, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ) -> None:
        """Return once no rate-limit window holds the tool in the scope of ``key``: a 429
        another call met while this one waited holds it longer, and nothing may leave
        before the wait the backend asked for is over."""
        while (held := self.held_for(key)) > 0:
            await sleep(held)

    def apply(self, response: pb.WatchToolsResponse) -> None:
        """Take in one WatchTools response."""
        if response.HasField("default_timeout"):
            self.default_timeout = response.default_timeout.ToTimedelta().total_seconds()
        before = self._tools
        if response.snapshot:
            self._tools = {}
        keys = []
        for policy in response.tools:
            key = board_key(policy.tool, policy.scope)
            keys.append(key)
            held = before.get(key)
            limited = held.limited_until if held is not None else 0.0
            if policy.HasField("rate_limit"):
                limited = max(limited, policy.rate_limit.until.ToNanoseconds() / 1e9)
            breaker = policy.breaker
            self._tools[key] = ToolView(
                timeout=policy.timeout.ToTimedelta().total_seconds(),
                has_manifest=policy.has_manifest,
                closed=breaker.phase in (pb.BREAKER_PHASE_CLOSED, pb.BREAKER_PHASE_UNSPECIFIED),
                limited_until=limited,
                probe_free=breaker.phase == pb.BREAKER_PHASE_HALF_OPEN
                and not breaker.probe_in_flight,
            )
        self._tell(set(keys), every=response.snapshot)
        if response.snapshot:
            self.synced.set()

    def _tell(self, keys: set[str], *, every: bool) -> None:
        for key in list(self._changed) if every else keys & self._changed.keys():
            self._changed.pop(key).set()

    async def wait(self, key: str, seconds: float) -> None:
        """Sleep ``seconds``, or less: until errord says an attempt of the tool in the scope
        of ``key`` may run (its breaker closed) or may be its probe (half-open, the probe
        before it over), when it did not say so as the wait began. A call waiting out a
        break is back as soon as the backend is."""
        if self._may_try(key):
            await asyncio.sleep(seconds)
            return
        deadline = asyncio.get_running_loop().time() + seconds
        while (left := deadline - asyncio.get_running_loop().time()) > 0:
            changed = self._changed.setdefault(key, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), left)
            if self._may_try(key):
                return

    def _may_try(self, key: str) -> bool:
        view = self._tools.get(key)
        if view is None or self.held_for(key):
            return view is None
        return view.closed or view.probe_free

    async def follow(
        self,
        watch: WatchTools,
        pause: Callable[[float], Awaitable[None]] = asyncio.sleep,
        retry_every: float = 0.5,
    ) -> None:
        """Apply WatchTools responses for as long as the task runs, watching again
        ``retry_every`` seconds after each stream ends."""
        while True:
            try:
                async for response in watch():
                    self.apply(response)
            except grpc.aio.AioRpcError as error:
                if error.code() is grpc.StatusCode.UNIMPLEMENTED:
                    log.warning("errord does not serve WatchTools: every call runs unasked")
                    return
                log.debug("WatchTools ended: %s", error.code().name)
            self.synced.clear()
            await pause(retry_every)
