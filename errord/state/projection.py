"""Projections: state that decisions read, kept current from committed events.

A projection holds, per key, the state that folding every committed event of
that key gives (``Fold.apply``), plus the events reserved but not yet
committed. Decisions read ``view``: the committed state with the reserved events
folded on top, so that two reports decided one after the other see each other
even before either commits. The writer ``stage``s a batch's states from the
committed ones, writes them with the batch's events in one transaction, and
only when that commits does the projection take them (``commit``); a batch that
fails is ``release``d and leaves the committed state as it was.

A fold may also end a key's state (``apply`` returns None): the key is then dropped,
from memory and, in the same transaction as the event, from the database.

Memory is bounded: beyond ``capacity`` keys the least recently changed ones are
dropped, and from then on the projection is no longer ``complete``: a key it
does not hold may be in the database. The dropped keys go into a KeyFilter (as the
database stores them: encoded, so that the keys read at start need no decoding), so
that ``missing`` says a key must be read only when it may be one of them: a key
never seen (a new call, a new turn) costs no read.

A projection may also be loaded after start, in the background (errord.state.store):
while it is ``loading``, every key it does not hold is ``missing``, read back before a
decision reads it, as a dropped key is. What the loader reads goes in as older than
every key held (``hold_older``), beyond capacity into the filter (``drop_older``), and
never over a key held: that one was read back, or changed since.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from errord.decide.model.events import TraceEvent
from errord.state import codec
from errord.state.key_filter import KeyFilter

K = TypeVar("K", bound=Hashable)
S = TypeVar("S")


class Fold(Protocol[K, S]):
    """How one kind of state follows the trace."""

    name: str
    """The projection's name in the state table."""
    version: int
    """Bumped when ``apply`` changes: the stored rows are then rebuilt from the trace."""
    key_type: type[K]
    state_type: type[S]

    def keys(self, event: TraceEvent) -> Sequence[K]:
        """The keys whose state ``event`` changes; empty when none."""
        ...

    def apply(self, key: K, state: S | None, event: TraceEvent) -> S | None:
        """The state of ``key`` after ``event``; ``state`` itself when the event changes
        nothing, None when it ends the key's state. (An event may change several keys,
        each in its own way.)"""
        ...

    def apply_all(self, key: K, state: S | None, events: Sequence[TraceEvent]) -> S | None:
        """The state of ``key`` after ``events`` (a batch's events of that key, in order);
        equal to applying them one by one, which ``EachEvent`` does."""
        ...


class EachEvent(Generic[K, S]):
    """Mixin for a fold whose batches are its events applied one by one."""

    def apply(self, key: K, state: S | None, event: TraceEvent) -> S | None:
        raise NotImplementedError

    def apply_all(self, key: K, state: S | None, events: Sequence[TraceEvent]) -> S | None:
        for event in events:
            state = self.apply(key, state, event)
        return state


@dataclass(frozen=True, slots=True)
class Staged(Generic[K, S]):
    """A batch's new states of one projection, not yet committed."""

    projection: Projection[K, S]
    states: Mapping[K, S | None]
    """None for a key whose state the batch ends."""


class Projection(Generic[K, S]):
    """Committed state per key, reservations on top, bounded in memory."""

    def __init__(self, fold: Fold[K, S], capacity: int = 100_000) -> None:
        self.fold = fold
        self.capacity = capacity
        self.complete = True
        """True while every key in the database is held in memory."""
        self.loading = False
        """True while the projection is loaded in the background: every key it does not
        hold may be in the database."""
        self._committed: OrderedDict[K, S] = OrderedDict()
        self._pending: dict[K, list[TraceEvent]] = {}
        self._viewed: dict[K, tuple[S | None, int]] = {}
        """Per key with reserved events, the last ``view`` and how many of them it folded:
        the next view folds only the ones reserved since, so that viewing a key with many
        reservations (every report of a tool reserves an event of that tool's breaker)
        does not fold them all again."""
        self._pinned: dict[K, int] = {}
        self._new: set[K] = set()
        """Keys with reserved events and no committed state: new keys, until their first
        events commit (or are released)."""
        self._dropped = KeyFilter()
        """Keys whose state is in the database and not in memory (and 1 % of others), as
        the database stores them (``stored_key``)."""

    @property
    def name(self) -> str:
        return self.fold.name

    def view(self, key: K) -> S | None:
        """The key's state as decisions see it: committed, with reserved events on top."""
        reserved = self._pending.get(key)
        if reserved is None:
            return self._committed.get(key)
        state, folded = self._viewed.get(key) or (self._committed.get(key), 0)
        for event in reserved[folded:]:
            state = self.fold.apply(key, state, event)
        self._viewed[key] = (state, len(reserved))
        return state

    def committed(self, key: K) -> S | None:
        return self._committed.get(key)

    def missing(self, key: K) -> bool:
        """True when the key's state may be in the database but is not in memory."""
        if self.complete or key in self._committed or key in self._pending:
            return False
        return self.loading or stored_key(key) in self._dropped

    def snapshot(self) -> dict[K, S]:
        """Every committed state held in memory."""
        return dict(self._committed)

    def least_recent(self) -> Iterator[tuple[K, S]]:
        """The committed states held in memory, the least recently changed first, skipping
        keys with reserved events. Lazy: stop reading once you have what you need, and
        before the projection next changes."""
        for key, state in self._committed.items():
            if key not in self._pending:
                yield key, state

    def reserved_keys(self) -> Iterator[K]:
        """The keys with reserved events and a state as decisions see it, in the order of
        their first reservation."""
        for key in list(self._pending):
            if self.view(key) is not None:
                yield key

    def __len__(self) -> int:
        """How many keys have a committed state in memory."""
        return len(self._committed)

    def held_with_reserved(self) -> int:
        """Keys with a state as decisions see it: what memory will hold once the reserved
        events commit. Costs a step per key with reserved events."""
        count = len(self._committed)
        for key in self._pending:
            count += (self.view(key) is not None) - (key in self._committed)
        return count

    def is_reserved(self, key: K) -> bool:
        """Whether ``key`` has events reserved and not yet committed."""
        return key in self._pending

    @property
    def reserved(self) -> int:
        """How many keys have events reserved and not yet committed."""
        return len(self._pending)

    @property
    def reserved_new(self) -> int:
        """How many keys have events reserved and no committed state; with ``len``, the keys
        decisions see (for a fold that never ends a state), counted in one step."""
        return len(self._new)

    # Reservations.

    def reserve(self, events: Iterable[TraceEvent]) -> None:
        for event in events:
            for key in self.fold.keys(event):
                reserved = self._pending.get(key)
                if reserved is None:
                    reserved = self._pending[key] = []
                    if key not in self._committed:
                        self._new.add(key)
                reserved.append(event)

    def release(self, events: Iterable[TraceEvent]) -> None:
        """Drop the reservation of ``events``; the views of their keys start over."""
        gone: dict[K, set[int]] = {}
        for event in events:
            for key in self.fold.keys(event):
                gone.setdefault(key, set()).add(id(event))
        for key, ids in gone.items():
            self._viewed.pop(key, None)
            reserved = self._pending.get(key)
            if reserved is None:
                continue
            kept = [other for other in reserved if id(other) not in ids]
            if kept:
                self._pending[key] = kept
            else:
                del self._pending[key]
                self._new.discard(key)

    # Commits.

    def stage(self, events: Iterable[TraceEvent]) -> Staged[K, S]:
        """The states ``events`` lead to from the committed ones, for the keys they change."""
        by_key: dict[K, list[TraceEvent]] = {}
        for event in events:
            for key in self.fold.keys(event):
                by_key.setdefault(key, []).append(event)
        states: dict[K, S | None] = {}
        for key, keyed in by_key.items():
            before = self._committed.get(key)
            after = self.fold.apply_all(key, before, keyed)
            if after is not before:
                states[key] = after
        return Staged(self, states)

    def commit(self, states: Mapping[K, S | None], events: Iterable[TraceEvent]) -> None:
        """Take the states of a committed batch and drop its reservations."""
        for key, state in states.items():
            if state is None:
                self._committed.pop(key, None)
                if key in self._pending:  # reserved again meanwhile: new once more
                    self._new.add(key)
                continue
            self._committed[key] = state
            self._committed.move_to_end(key)
            self._new.discard(key)
        self.release(events)
        self._evict()

    # Loading.

    def load(
        self, states: Iterable[tuple[K, S]], *, complete: bool, dropped: Iterable[str] = ()
    ) -> None:
        """Hold the states read at start, oldest first; ``complete`` if they are all there
        are, else ``dropped`` are the keys of the others, as stored."""
        for key, state in states:
            self._committed[key] = state
        for text in dropped:
            self._dropped.add(text)
        self.complete = complete
        self._evict()

    def begin_loading(self) -> None:
        """Read every key not held as ``missing`` until ``end_loading``."""
        self.loading = True
        self.complete = False

    @property
    def room(self) -> int:
        """How many more keys memory may hold."""
        return max(0, self.capacity - len(self._committed))

    def hold_older(self, states: Iterable[tuple[K, S]]) -> None:
        """Hold states read while ``loading``, newest first, each older than every key held;
        beyond capacity, note them dropped. A key held already keeps its state (it was read
        back, or changed since: the newer one)."""
        committed = self._committed
        for key, state in states:
            if key in committed or key in self._pending:
                continue
            if len(committed) < self.capacity:
                committed[key] = state
                committed.move_to_end(key, last=False)
            else:
                self._dropped.add(stored_key(key))

    def drop_older(self, stored: Iterable[str]) -> None:
        """Note keys read while ``loading`` that memory has no room for, as stored."""
        for text in stored:
            self._dropped.add(text)

    def end_loading(self) -> None:
        """Loaded: ``missing`` asks the filter again; ``complete`` if nothing was dropped."""
        self.loading = False
        self.complete = not len(self._dropped)

    def pin(self, key: K) -> None:
        """Keep the key's state in memory until ``unpin``: between reading it back and
        deciding with it, other commits must not drop it again."""
        self._pinned[key] = self._pinned.get(key, 0) + 1

    def unpin(self, key: K) -> None:
        count = self._pinned.pop(key) - 1
        if count:
            self._pinned[key] = count

    def adopt(self, key: K, state: S | None) -> None:
        """Hold a state read from the database because it was ``missing``."""
        if state is not None and not self._held(key):
            self._committed[key] = state
            self._evict()

    def forget(self, keys: Iterable[K]) -> None:
        """Drop the states of ``keys``, whose rows the database no longer holds (trace
        retention removed them); a key with reserved events, or read back for a decision
        (pinned), keeps its state, which its events' commit writes back."""
        for key in keys:
            if key not in self._pending and key not in self._pinned:
                self._committed.pop(key, None)

    def _held(self, key: K) -> bool:
        return key in self._committed or key in self._pending

    def _evict(self) -> None:
        """Drop the least recently changed keys beyond capacity; never one that is reserved
        or pinned."""
        for _ in range(len(self._committed) - self.capacity):
            key, state = self._committed.popitem(last=False)
            if key in self._pending or key in self._pinned:
                self._committed[key] = state  # back, as the most recent
            else:
                self._dropped.add(stored_key(key))
                self.complete = False


def stored_key(key: Hashable) -> str:
    """``key`` as the database stores it, and the filter of dropped keys holds it."""
    return codec.encode(key).decode()
