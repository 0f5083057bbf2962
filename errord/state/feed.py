"""Committed trace events, fanned out to live watchers (WatchTrace)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from errord.decide.events import TraceEvent
from errord.errors import WatcherFellBehind

_CLOSED = None


class Subscription:
    """One watcher's queue of events, optionally for one turn."""

    def __init__(self, turn_id: str, backlog: int) -> None:
        self.turn_id = turn_id
        self._queue: asyncio.Queue[TraceEvent | None] = asyncio.Queue(backlog + 1)
        self._backlog = backlog
        self.overflowed = False

    def offer(self, event: TraceEvent) -> None:
        if self.overflowed or (self.turn_id and event.turn_id != self.turn_id):
            return
        if self._queue.qsize() >= self._backlog:
            self.overflowed = True
            self._queue.put_nowait(_CLOSED)
        else:
            self._queue.put_nowait(event)

    def close(self) -> None:
        if not self._queue.full():
            self._queue.put_nowait(_CLOSED)

    async def events(self) -> AsyncIterator[TraceEvent]:
        """Events as they are committed, until the feed closes."""
        while (event := await self._queue.get()) is not _CLOSED:
            yield event
        if self.overflowed:
            raise WatcherFellBehind(
                f"the watcher fell more than {self._backlog} events behind; watch again"
            )


class TraceFeed:
    """Publishes committed events to every matching subscription."""

    def __init__(self, backlog: int = 10_000) -> None:
        self._backlog = backlog
        self._subscriptions: set[Subscription] = set()
        self._closed = False

    def publish(self, events: Sequence[TraceEvent]) -> None:
        """Called by the store after each commit, in sequence order."""
        for subscription in self._subscriptions:
            for event in events:
                subscription.offer(event)

    def subscribe(self, turn_id: str = "") -> Subscription:
        subscription = Subscription(turn_id, self._backlog)
        if self._closed:
            subscription.close()
        else:
            self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def close(self) -> None:
        """End every subscription, as the daemon shuts down."""
        self._closed = True
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions.clear()
