"""What operators do to errord's state: reset or force open a breaker, ask memory.

Each change is recorded as a trace event before it is answered, through the same
store and projections as the reports (errord.handler); a key a projection dropped
for room is read back first (errord.state.holding).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from errord.clock import Clock
from errord.decide.classify import classify
from errord.decide.health import breaker as breakers
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory import MemoryKey, MemoryStats, recall
from errord.decide.memory.signatures import signature
from errord.decide.model import BreakerState, ErrorCode, ToolFailure
from errord.decide.model.events import BreakerChanged, TraceEvent
from errord.decide.model.scope import scoped_name, tool_key
from errord.decide.redact import redact_text
from errord.errors import StoreError, ToolNotFound
from errord.state.holding import Holder
from errord.state.projections import Projections
from errord.state.store import DuplicateEvent, Store


class OperatorActions:
    """Breaker resets and forced openings, recorded; what memory holds of a tool's errors."""

    def __init__(
        self,
        store: Store,
        state: Projections,
        holder: Holder,
        manifests: Callable[[], ManifestSnapshot],
        clock: Clock,
    ) -> None:
        """``manifests``: the manifests in force (a reload replaces them)."""
        self._store = store
        self._state = state
        self._holder = holder
        self._manifests = manifests
        self._clock = clock

    async def reset_breaker(self, tool: str, *, by: str = "", scope: str = "") -> TraceEvent:
        """Close the breaker of ``tool`` in ``scope`` and zero its counters; the recorded
        event.

        Raises ToolNotFound for a tool with no manifest and no recorded report (in that
        scope).
        """
        now = self._clock.now()
        return await self._change_breaker(tool, scope, lambda state: breakers.reset(state, now), by)

    async def force_open_breaker(
        self, tool: str, *, duration: float | None, by: str = "", scope: str = ""
    ) -> TraceEvent:
        """Open the breaker of ``tool`` in ``scope`` for ``duration`` seconds, or until
        reset when None."""
        now = self._clock.now()
        until = None if duration is None else now + timedelta(seconds=duration)
        return await self._change_breaker(
            tool, scope, lambda state: breakers.force_open(state, now, until), by
        )

    def check_known(self, tool: str, scope: str = "") -> str:
        """The key of ``tool`` in ``scope`` (errord.decide.model.scope). Raises ToolNotFound
        unless the tool has a manifest (in any scope: an operator may open a backend's
        breaker before its first call) or the key a recorded report."""
        key = tool_key(tool, scope)
        if tool not in self._manifests() and not self._state.has_tool(key):
            raise ToolNotFound(tool, scope=scope)
        return key

    async def _change_breaker(
        self,
        tool: str,
        scope: str,
        change: Callable[[BreakerState | None], breakers.Stepped],
        by: str,
    ) -> TraceEvent:
        state, key = self._state, tool_key(tool, scope)
        async with self._holder.holding(((state.breakers, key), (state.tool_stats, key))):
            self.check_known(tool, scope)
            [(kind, after)] = change(state.breakers.view(key)).changes
            event = BreakerChanged(tool=tool, change=kind, breaker=after, by=by, scope=scope)
            unit = self._store.submit([event])
        try:
            await unit.wait()
        except DuplicateEvent as error:  # the generation is taken: not while one daemon owns the db
            raise StoreError(
                f"the breaker of {scoped_name(tool, scope)!r} changed meanwhile; try again"
            ) from error
        return unit.events[-1]

    async def recall_episodes(
        self, tool: str, message: str | None, code: ErrorCode | None, scope: str = ""
    ) -> list[tuple[MemoryKey, MemoryStats]]:
        """What episodic memory holds of the errors of ``tool`` in ``scope``, most
        episodes first: of the one ``message`` is (its code inferred unless given), or of
        all memory holds in RAM.

        Raises ToolNotFound for a tool with no manifest and no recorded report (in that
        scope).
        """
        manifests = self._manifests()
        key_of_tool = self.check_known(tool, scope)
        memory, now = self._state.memory, self._clock.now()
        if message is None:
            found = [(k, s) for k, s in memory.snapshot().items() if k.tool == key_of_tool]
        else:
            message = redact_text(message)  # as the reports it stands for were
            if code is None:
                rules = manifests.manifest_for(tool)[0].classification
                code = classify(ToolFailure(message=message), rules, tool).code
            key = MemoryKey(key_of_tool, signature(code, message).key)
            async with self._holder.holding(((memory, key),)):
                stats = memory.view(key)
            found = [] if stats is None else [(key, stats)]
        return sorted(found, key=lambda item: -_episodes(item[1], now))


def _episodes(stats: MemoryStats, now: datetime) -> float:
    return sum(evidence.episodes for evidence in recall(stats, now).values())
