"""Responses that fit a client: events grouped by bytes as well as by count.

grpc clients refuse a message over 4 MiB by default, and then see RESOURCE_EXHAUSTED
instead of the answer. A GetTurnTrace page and a coalesced WatchTrace response carry
many events, so each holds events only while they stay within ``RESPONSE_BUDGET``
bytes together, and always at least one. One event alone is far below 4 MiB: the
request that made it was bounded (its arguments at most MAX_JSON_BYTES, its message
MAX_TEXT_LENGTH characters: errord.wire.bounds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

RESPONSE_BUDGET = 1024 * 1024
"""Bytes of events one response holds at most, unless its one event is larger."""
FIELD_OVERHEAD = 6
"""Bytes a message takes in a repeated field beyond its own: its tag and length, at most."""

Item = TypeVar("Item")


def grouped(
    items: Iterable[Item], size: Callable[[Item], int], budget: int = RESPONSE_BUDGET
) -> Iterator[list[Item]]:
    """``items`` in order, in groups whose sizes add up to ``budget`` at most (an item
    larger than it makes a group alone). Lazy: the first group costs the sizes of its
    items and of the one after."""
    group: list[Item] = []
    total = 0
    for item in items:
        cost = size(item)
        if group and total + cost > budget:
            yield group
            group, total = [], 0
        group.append(item)
        total += cost
    if group:
        yield group
