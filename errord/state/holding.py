"""Projection keys held in memory while a decision reads them.

A projection holds at most its capacity in memory and drops the least recently
changed keys beyond it (errord.state.projection). Before a decision reads a key,
``async with holder.holding(keys)`` makes sure memory holds it: in the steady state
every key is there, and entering returns at once, without awaiting. When a
projection dropped one, every key is pinned (so that no commit drops one meanwhile)
and the missing ones are read back from the database; the pins go when the block
ends. Decide inside the block without awaiting, so that what was read back is what
the decision sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, TypeAlias

from errord.state.projection import Projection

Key: TypeAlias = tuple[Projection[Any, Any], Any]
"""A projection and one of its keys."""
StateReader: TypeAlias = Callable[[Projection[Any, Any], Any], Awaitable[Any]]
"""The committed state of a key, read from the database (errord.state.store.Store.state)."""


class Holder:
    """Holds projection keys in memory, reading back the ones a projection dropped."""

    def __init__(self, read: StateReader) -> None:
        self._read = read
        self._loading: dict[tuple[str, Any], asyncio.Future[None]] = {}
        """Keys being read back, so that two decisions wanting one key read it once."""

    def holding(self, keys: Sequence[Key]) -> Held | NothingHeld:
        """An async context that holds ``keys`` in memory while it is entered."""
        # A batch may name one turn, call or tool many times: read each back once.
        missing = [*dict.fromkeys((p, k) for p, k in keys if p.missing(k))]
        if not missing:
            return NOTHING_HELD
        return Held(self, keys, missing)

    async def read_back(self, projection: Projection[Any, Any], key: Any) -> None:
        loading = self._loading.get((projection.name, key))
        if loading is None:
            loading = asyncio.ensure_future(self._adopt(projection, key))
            self._loading[(projection.name, key)] = loading
            loading.add_done_callback(lambda _: self._loading.pop((projection.name, key), None))
        await asyncio.shield(loading)

    async def _adopt(self, projection: Projection[Any, Any], key: Any) -> None:
        projection.adopt(key, await self._read(projection, key))


class NothingHeld:
    """Every key is in memory already: nothing to pin or read back."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


NOTHING_HELD = NothingHeld()


class Held:
    """Keys pinned, and the missing ones read back, while entered."""

    __slots__ = ("_holder", "_keys", "_missing")

    def __init__(self, holder: Holder, keys: Sequence[Key], missing: Sequence[Key]) -> None:
        self._holder = holder
        self._keys = keys
        self._missing = missing

    async def __aenter__(self) -> None:
        for projection, key in self._keys:
            projection.pin(key)
        try:
            for projection, key in self._missing:
                await self._holder.read_back(projection, key)
        except BaseException:
            self._let_go()
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._let_go()

    def _let_go(self) -> None:
        for projection, key in self._keys:
            projection.unpin(key)
