"""What decisions read of a tool's state: the host's own breaker, rate-limit window and
memory, or, in a fleet (errord.fleet), those with what the other hosts add. Reading never
awaits: a fleet's view is kept in memory and updated in the background."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Protocol

from errord.decide.engine import BreakerGate, ungated
from errord.decide.memory import MemoryKey, MemoryStats
from errord.decide.model import CLOSED_BREAKER, BreakerState, RateWindow
from errord.state.projections import Projections


class SharedViews(Protocol):
    """What a fleet adds to a host's views (errord.fleet.view.FleetView)."""

    def gate(self, key: str, state: BreakerState, now: datetime) -> BreakerState: ...
    def peek(self, key: str, state: BreakerState, now: datetime) -> BreakerState: ...
    def window_of(self, key: str) -> RateWindow | None: ...
    def memory_of(self, key: str, signature: str) -> MemoryStats | None: ...
    def keys(self) -> Iterator[str]: ...


class DecisionViews:
    """A tool's state as decisions read it, by its key (errord.decide.model.scope)."""

    def __init__(self, state: Projections) -> None:
        self._state = state
        self.fleet: SharedViews | None = None
        self.gate: BreakerGate = ungated
        """The breaker the policy obeys, from the host's own (a fleet's may be stricter)."""
        self.window_of: Callable[[str], RateWindow | None] = state.windows.view
        self.memory_of: Callable[[str, str], MemoryStats | None] = self._remembered

    def share(self, fleet: SharedViews) -> None:
        """Read what ``fleet`` adds: other hosts' windows and memory, and their breakers'
        quorum."""
        self.fleet = fleet
        self.gate = fleet.gate
        self.window_of = fleet.window_of
        self.memory_of = fleet.memory_of

    def admitting(self, key: str, now: datetime) -> BreakerState | None:
        """The breaker an attempt is admitted by at ``now``."""
        own = self._state.breakers.view(key)
        return own if self.fleet is None else self.gate(key, own or CLOSED_BREAKER, now)

    def shown(self, key: str, now: datetime) -> BreakerState | None:
        """The breaker as decisions see it, None if it never changed: in a fleet, as the
        fleet's quorum lets it act."""
        own = self._state.breakers.view(key)
        return own if self.fleet is None else self.fleet.peek(key, own or CLOSED_BREAKER, now)

    def keys(self) -> Iterator[str]:
        """The keys of the tools with a breaker or a window, the fleet's too."""
        yield from self._state.breakers.snapshot()
        yield from self._state.windows.snapshot()
        if self.fleet is not None:
            yield from self.fleet.keys()

    def _remembered(self, key: str, signature_key: str) -> MemoryStats | None:
        return self._state.memory.view(MemoryKey(key, signature_key))
