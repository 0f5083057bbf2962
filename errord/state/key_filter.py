"""Which keys a projection dropped from memory: a Bloom filter that grows.

A projection holds at most its capacity in memory; the keys beyond it are only in the
database. Deciding on a key memory does not hold used to cost a database read, in case
it was one of those; with the filter, only a key that may have been dropped is read
back, and a key never seen (every new call and turn) costs a few hashes. A key that was
dropped is always found (no false negatives); at most two keys in a hundred that were
not are found too, and cost the read they cost before. (A scalable Bloom filter, after
Almeida et al.: each layer is twice the size of the last, with half its false-positive
rate, so the rates add up to at most twice the first.)

A projection adds its keys as the database stores them (the text ``codec.encode`` gives),
so that the keys of the rows read at start go in without being decoded. Each key is
hashed once: Python's own 64-bit hash, randomized per process (the filter lives in one
process and is rebuilt from the database at start), its two halves the two hashes of
double hashing.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

FALSE_POSITIVES = 0.01
"""The first layer's false-positive rate; each next layer has half the last one's."""


class _Layer:
    """A fixed Bloom filter sized for ``capacity`` keys at ``false_positives``."""

    __slots__ = ("bits", "capacity", "count", "false_positives", "hashes", "size")

    def __init__(self, capacity: int, false_positives: float) -> None:
        self.capacity = capacity
        self.false_positives = false_positives
        self.count = 0
        self.hashes = math.ceil(-math.log2(false_positives))
        bits_per_key = -math.log(false_positives) / math.log(2) ** 2
        self.size = max(64, math.ceil(capacity * bits_per_key))
        self.bits = bytearray((self.size + 7) // 8)

    def add(self, key: Hashable) -> None:
        bits = self.bits
        for position in self.positions(key):
            bits[position >> 3] |= 1 << (position & 7)
        self.count += 1

    def __contains__(self, key: Hashable) -> bool:
        bits = self.bits
        return all(bits[p >> 3] & (1 << (p & 7)) for p in self.positions(key))

    def positions(self, key: Hashable) -> list[int]:
        # Double hashing (Kirsch and Mitzenmacher): h1 + i * h2, one per hash function,
        # h1 and h2 the low and high halves of one 64-bit hash.
        whole = hash(key)
        first, second = whole & 0xFFFFFFFF, (whole >> 32) | 1
        size = self.size
        return [(first + i * second) % size for i in range(self.hashes)]


class KeyFilter:
    """A set of keys that may answer "maybe" for a key never added (at most 2 % of the
    time) but never "no" for one that was; it grows by layers."""

    def __init__(self, initial: int = 65_536) -> None:
        self._layers = [_Layer(initial, FALSE_POSITIVES)]

    def add(self, key: Hashable) -> None:
        layer = self._layers[-1]
        if layer.count >= layer.capacity:
            layer = _Layer(layer.capacity * 2, layer.false_positives / 2)
            self._layers.append(layer)
        layer.add(key)

    def __contains__(self, key: Hashable) -> bool:
        return any(key in layer for layer in self._layers)

    def __len__(self) -> int:
        """Keys added (a key added twice counts twice)."""
        return sum(layer.count for layer in self._layers)
