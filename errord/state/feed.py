"""Committed trace events, fanned out to live watchers (WatchTrace).

The commit path pays for watchers once per event, not once per watcher: an event goes
into one shared log per audience that has watchers (every turn; its own turn), and each
watcher reads its audience's log from its own place; a commit only wakes the watchers
idle in wait for it. An event is encoded for the wire at most once, by the first watcher
that sends it; every other watcher sends the same bytes. A watcher takes every event
that arrived since it last took, so one that sends slowly sends them together. Publishing
never awaits a watcher. A watcher more than ``backlog`` events behind (one that reads too slowly, or
not at all) is dropped at once, and the log lets go of what it kept for it alone; its
next read raises WatcherFellBehind naming the sequence to watch again after, from which
the store replays what it missed.
"""

from __future__ import annotations

import asyncio
import itertools
import operator
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence

from errord.decide.model.events import TraceEvent
from errord.errors import WatcherFellBehind

Encode = Callable[[TraceEvent], bytes]
"""How a watcher sends an event: the wire encoding of one response."""

EVERY_TURN = ""
"""The audience of the watchers of every turn."""


class Published:
    """A committed event as watchers receive it, shared by all of them: encoded at most once."""

    __slots__ = ("encoded", "event")

    def __init__(self, event: TraceEvent) -> None:
        self.event = event
        self.encoded = b""
        """The event's wire encoding, made by the first watcher that sends it; empty until then."""


ENCODED = operator.attrgetter("encoded")


def encodings(batch: list[Published], encode: Encode) -> list[bytes]:
    """The wire encoding of each event of ``batch``, made once per event for every watcher."""
    found = list(map(ENCODED, batch))
    if all(found):  # as for every watcher but the first: no Python code runs per event
        return found
    for published in batch:
        if not published.encoded:
            published.encoded = encode(published.event)
    return list(map(ENCODED, batch))


class Audience:
    """The recent events of one audience and where each of its watchers is.

    The entry at position ``start`` is ``entries[0]``; a watcher waits at the position of
    the next entry it will read. An entry is kept only while a watcher waits at or before
    it, and a watcher waiting more than ``backlog`` entries back is dropped.
    """

    def __init__(self, backlog: int) -> None:
        self.backlog = backlog
        self.closed = False
        self._entries: deque[Published] = deque()
        self._start = 0
        self._waiting: dict[int, set[Subscription]] = {}
        self._sleepers: list[asyncio.Future[None]] = []

    @property
    def end(self) -> int:
        """The position of the next entry."""
        return self._start + len(self._entries)

    @property
    def watched(self) -> bool:
        return bool(self._waiting)

    @property
    def kept(self) -> int:
        """How many entries some watcher has yet to read."""
        return len(self._entries)

    def join(self, subscription: Subscription) -> None:
        """``subscription`` waits for the next entry."""
        subscription.position = self.end
        self._waiting.setdefault(self.end, set()).add(subscription)

    def leave(self, subscription: Subscription) -> None:
        self._unplace(subscription)
        self._let_go()

    def append(self, published: Published) -> None:
        self._entries.append(published)
        self._let_go()

    def take(self, subscription: Subscription) -> list[Published]:
        """The entries ``subscription`` has not read yet; it then waits at the end."""
        count = self.end - subscription.position
        if not count:
            return []
        # From the newest end: a fast watcher never walks past what slow ones still need.
        taken = list(itertools.islice(reversed(self._entries), count))
        taken.reverse()
        self._unplace(subscription)
        self.join(subscription)
        self._let_go()
        return taken

    def notify(self) -> None:
        """Wake every watcher waiting for an entry."""
        sleepers, self._sleepers = self._sleepers, []
        for sleeper in sleepers:
            if not sleeper.done():
                sleeper.set_result(None)

    async def arrival(self) -> None:
        """Return when entries arrive or the audience closes."""
        # One future each: a watcher that goes away cancels its own wait, no one else's.
        sleeper = asyncio.get_running_loop().create_future()
        self._sleepers.append(sleeper)
        await sleeper

    def close(self) -> None:
        self.closed = True
        self.notify()

    def _unplace(self, subscription: Subscription) -> None:
        waiting = self._waiting.get(subscription.position)
        if waiting is not None:
            waiting.discard(subscription)
            if not waiting:
                del self._waiting[subscription.position]

    def _let_go(self) -> None:
        """Drop the entries no watcher needs, and the watchers too far behind to keep up."""
        entries = self._entries
        while entries and (len(entries) > self.backlog or self._start not in self._waiting):
            missed = entries.popleft()
            for subscription in self._waiting.pop(self._start, ()):
                subscription.fall_behind(missed.event.sequence - 1)
            self._start += 1


class Subscription:
    """One watcher's place in its audience's log, optionally of one turn."""

    def __init__(self, audience: Audience, turn_id: str, after: int) -> None:
        self.turn_id = turn_id
        self.after = after
        """The sequence of the last event the watcher has: live events up to it are not
        sent again (a replay from the store may have sent them), and a watcher that falls
        behind resumes after it."""
        self.position = 0
        """Where the watcher waits in its audience's log; the audience moves it."""
        self._audience = audience
        self._resume_after: int | None = None
        audience.join(self)

    @property
    def overflowed(self) -> bool:
        return self._resume_after is not None

    def fall_behind(self, missed_after: int) -> None:
        """The audience dropped this watcher, which had every event up to ``missed_after``."""
        self._resume_after = max(self.after, missed_after)

    def leave(self) -> None:
        if not self.overflowed:
            self._audience.leave(self)

    async def events(self) -> AsyncIterator[TraceEvent]:
        """Events as they are committed, until the feed closes."""
        async for batch in self._batches():
            for published in batch:
                yield published.event

    async def batched(self, encode: Encode) -> AsyncIterator[list[bytes]]:
        """Each event's ``encode``, computed once per event and shared by every watcher, as
        lists: every event committed since the watcher last asked. One that asks again only
        once it has sent what it had costs one send per ask, however many events came."""
        async for batch in self._batches():
            yield encodings(batch, encode)

    async def coalesced(self, encode: Encode, interval: float) -> AsyncIterator[list[bytes]]:
        """Each event's shared ``encode``, as lists: the events committed over ``interval``
        seconds from the first of them, so that a watcher costs one send per interval."""
        async for batch in self._batches():
            await asyncio.sleep(interval)
            batch += self._fresh(self._audience.take(self))
            yield encodings(batch, encode)

    async def _batches(self) -> AsyncIterator[list[Published]]:
        """What the audience holds for this watcher, as it arrives, never sent before."""
        while True:
            if self._resume_after is not None:
                raise WatcherFellBehind(
                    f"the watcher fell more than {self._audience.backlog} events behind; "
                    f"watch again with after_sequence={self._resume_after}"
                )
            batch = self._fresh(self._audience.take(self))
            if batch:
                yield batch
            elif self._audience.closed:
                return
            else:
                await self._audience.arrival()

    def _fresh(self, taken: list[Published]) -> list[Published]:
        """The events of ``taken`` after the last one the watcher has; it has them now."""
        if taken and taken[0].event.sequence > self.after:  # as always once live: every one
            fresh = taken
        else:
            fresh = [published for published in taken if published.event.sequence > self.after]
        if fresh:
            self.after = fresh[-1].event.sequence
        return fresh


class TraceFeed:
    """Publishes committed events to the audiences that have watchers."""

    def __init__(self, backlog: int = 10_000) -> None:
        self._backlog = backlog
        self._audiences: dict[str, Audience] = {}
        self._closed = False

    def publish(self, events: Sequence[TraceEvent]) -> None:
        """Called by the store after each commit, in sequence order; never waits."""
        if not self._audiences:
            return
        every_turn = self._audiences.get(EVERY_TURN)
        reached: dict[str, Audience] = {}
        for event in events:
            turn = self._audiences.get(event.turn_id) if event.turn_id else None
            if every_turn is None and turn is None:
                continue
            published = Published(event)
            if every_turn is not None:
                every_turn.append(published)
                reached[EVERY_TURN] = every_turn
            if turn is not None:
                turn.append(published)
                reached[event.turn_id] = turn
        for key, audience in reached.items():
            audience.notify()
            self._forget_if_unwatched(key)

    def subscribe(self, turn_id: str = "", after: int = 0) -> Subscription:
        """A watcher of ``turn_id`` (every turn if empty) that has the events up to ``after``."""
        audience = self._audiences.get(turn_id)
        if audience is None:
            audience = Audience(self._backlog)
            if self._closed:
                audience.close()
            else:
                self._audiences[turn_id] = audience
        return Subscription(audience, turn_id, after)

    def unsubscribe(self, subscription: Subscription) -> None:
        subscription.leave()
        self._forget_if_unwatched(subscription.turn_id)

    @property
    def audiences(self) -> int:
        """How many audiences have watchers (each event goes to at most two of them)."""
        return len(self._audiences)

    @property
    def kept(self) -> int:
        """How many events the feed holds for watchers that have yet to read them."""
        return sum(audience.kept for audience in self._audiences.values())

    def close(self) -> None:
        """End every subscription once it has read what it has, as the daemon shuts down."""
        self._closed = True
        for audience in self._audiences.values():
            audience.close()
        self._audiences.clear()

    def _forget_if_unwatched(self, key: str) -> None:
        audience = self._audiences.get(key)
        if audience is not None and not audience.watched:
            del self._audiences[key]
