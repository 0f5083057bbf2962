"""Committed breaker transitions and rate-limit windows, fanned out to executors watching
their tools (WatchTools).

An executor keeps every tool's breaker and rate-limit window in memory so that admitting
a call costs no RPC while the breaker is closed and no window holds the tool; it asks
AdmitCall only otherwise. What it needs to hear is each transition (every transition is
a BreakerChanged event), each window opened or lengthened (a RateLimited event) and a
manifest reload (timeouts may have changed). A watcher holds the set of tools that
changed since it last read, so one that reads slowly reads them together, and nothing
queues behind it. The
commit path pays one type test per event, and nothing when no one watches.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from errord.decide.model.events import BreakerChanged, ManifestsReloaded, RateLimited, TraceEvent

EVERY_TOOL = None
"""What a watcher reads when it must read every tool again: after a manifest reload."""


class ToolWatcher:
    """One executor's watch: the tools that changed since it last read."""

    def __init__(self) -> None:
        self.changed: set[str] | None = set()
        """The keys (tool and scope: errord.decide.model.scope) whose breaker or window changed;
        EVERY_TOOL after a reload."""
        self.closed = False
        self._arrived = asyncio.Event()

    def tell(self, tools: set[str] | None) -> None:
        if tools is EVERY_TOOL or self.changed is EVERY_TOOL:
            self.changed = EVERY_TOOL
        else:
            self.changed |= tools
        self._arrived.set()

    def close(self) -> None:
        self.closed = True
        self._arrived.set()

    async def changes(self) -> AsyncIterator[set[str] | None]:
        """The tools that changed (EVERY_TOOL: all of them), as they change, until closed."""
        while True:
            await self._arrived.wait()
            if self.closed:
                return
            self._arrived.clear()
            changed, self.changed = self.changed, set()
            yield changed


class BreakerFeed:
    """Tells watchers which tools' breakers or windows changed, as the changes are
    committed."""

    def __init__(self) -> None:
        self._watchers: set[ToolWatcher] = set()
        self._closed = False

    def publish(self, events: Sequence[TraceEvent]) -> None:
        """Called after each commit; never waits."""
        if not self._watchers:
            return
        tools: set[str] | None = set()
        for event in events:
            detail = event.detail
            if (type(detail) is BreakerChanged or type(detail) is RateLimited) and (
                tools is not EVERY_TOOL
            ):
                tools.add(detail.tool_key)
            elif type(detail) is ManifestsReloaded and detail.applied:
                tools = EVERY_TOOL
        if tools is EVERY_TOOL or tools:
            for watcher in self._watchers:
                watcher.tell(tools)

    def changed(self, tools: set[str] | None) -> None:
        """Tell watchers that ``tools`` changed (EVERY_TOOL: all) without an event of
        this host's: the fleet's evidence did (errord.fleet)."""
        if tools is EVERY_TOOL or tools:
            for watcher in self._watchers:
                watcher.tell(tools)

    def subscribe(self) -> ToolWatcher:
        watcher = ToolWatcher()
        if self._closed:
            watcher.close()
        else:
            self._watchers.add(watcher)
        return watcher

    def unsubscribe(self, watcher: ToolWatcher) -> None:
        self._watchers.discard(watcher)

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    def close(self) -> None:
        """End every watch, as the daemon shuts down."""
        self._closed = True
        for watcher in self._watchers:
            watcher.close()
        self._watchers.clear()
