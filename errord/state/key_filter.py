"""Which keys a projection dropped from memory: a Bloom filter that grows.

A projection holds at most its capacity in memory; the keys beyond it are only in the
database. Only a key the filter finds, one that may have been dropped, is read back from
the database before a decision on it; a key never seen (every new call and turn) costs a
hash and a read of memory per layer. A key that was dropped is always found (no false
negatives); less than one key in a hundred that were not is found too, and costs a
database read for nothing.

A projection adds its keys as the database stores them (the text ``codec.encode`` gives),
so that the keys of the rows read at start go in without being decoded. Each key is
hashed once: Python's own 64-bit hash of the text, randomized per process (the filter
lives in one process and is rebuilt from the database at start).

How a key is kept (a blocked Bloom filter, after Putze, Sanders and Singler): a layer is
an array of 64-bit words. The hash modulo the number of words but one picks the key's
first word; the hash's top 14 bits pick one of 16,384 patterns of four bits, set in that
word, and its next 14 bits another, set in the word after. A key is found when both its
patterns are set: per layer one read and compare, and a second only when the first
matched (for a key never added, one time in sixteen at most). Two words rather than
one, because how many keys share a single word varies too much, and overlapping pairs
rather than fixed ones, which evens that out further: for the first layer's rate, one
word per key would take about 14.8 bits per key, fixed pairs 13.3, overlapping ones 12.6.

How it grows (a scalable Bloom filter, after Almeida et al.): the first layer holds
``FIRST_LAYER`` keys, each next one twice as many as the last, and each is sized so
that, once full, it finds a key never added half as often as the last: ``FALSE_POSITIVES``
(0.5 %) the first, so less than twice that (1 %) all the layers together. The bits per key
that takes (``_bits_per_key``) follow from how many keys start at each word (Poisson) and
how often the patterns set in a word cover another (``_false_positive_rate``): 12.6 for
the first layer, then 14.6, 16.8, 19.4, 22.3. A key is looked for in every layer, the
newest first, with the one hash.
"""

from __future__ import annotations

import math
import random
from array import array
from functools import cache

FIRST_LAYER = 1 << 19
"""Keys the first layer holds (allocated at the first key added: 0.8 MB)."""

FALSE_POSITIVES = 0.005
"""The first layer's false-positive rate once full; each next layer's is half the last one's."""

_PATTERN_BITS = 4
"""Bits a key sets in each of its two words."""

_PATTERN_INDEX_BITS = 14
"""Hash bits that pick a pattern: 16,384 patterns, so that two keys share one seldom."""


def _draw_patterns() -> array[int]:
    """Distinct words of ``_PATTERN_BITS`` bits each, the same in every process."""
    draw = random.Random(0)
    patterns: dict[int, None] = {}
    while len(patterns) < 1 << _PATTERN_INDEX_BITS:
        pattern = 0
        while pattern.bit_count() < _PATTERN_BITS:
            pattern |= 1 << draw.getrandbits(6)
        patterns[pattern] = None
    return array("Q", patterns)


_PATTERNS = _draw_patterns()
_PATTERN_MASK = (1 << _PATTERN_INDEX_BITS) - 1

_Layer = tuple["array[int]", int]
"""A layer's words, and how many of them a key's first word may be: all but the last."""


class KeyFilter:
    """A set of keys that may answer "maybe" for a key never added (less than 1 % of the
    time) but never "no" for one that was; it grows by layers."""

    def __init__(self, first_layer: int = FIRST_LAYER) -> None:
        if first_layer < 1:
            raise ValueError(f"first_layer must hold a key at least, not {first_layer}")
        self._first_layer = first_layer
        self._layers: tuple[_Layer, ...] = ()
        """Newest first."""
        self._room = 0
        """How many more keys the newest layer holds."""

    def add(self, key: str) -> None:
        if not self._room:
            self._grow()
        self._room -= 1
        whole = hash(key)
        words, starts = self._layers[0]
        first = whole % starts
        words[first] |= _PATTERNS[whole >> 50 & _PATTERN_MASK]
        words[first + 1] |= _PATTERNS[whole >> 36 & _PATTERN_MASK]

    def __contains__(self, key: str) -> bool:
        whole = hash(key)
        pattern = _PATTERNS[whole >> 50 & _PATTERN_MASK]
        for words, starts in self._layers:
            first = whole % starts
            if words[first] & pattern == pattern:
                second = _PATTERNS[whole >> 36 & _PATTERN_MASK]
                if words[first + 1] & second == second:
                    return True
        return False

    def __len__(self) -> int:
        """Keys added (a key added twice counts twice)."""
        capacity = self._first_layer * ((1 << len(self._layers)) - 1)
        return capacity - self._room

    @property
    def nbytes(self) -> int:
        """The memory the layers' words take."""
        return sum(words.itemsize * len(words) for words, _ in self._layers)

    def _grow(self) -> None:
        """Open a layer for twice as many keys as the last, at half its false-positive rate."""
        depth = len(self._layers)
        capacity = self._first_layer << depth
        starts = math.ceil(capacity * _bits_per_key(FALSE_POSITIVES / 2**depth) / 64)
        words = array("Q", [0]) * (starts + 1)
        self._layers = ((words, starts), *self._layers)
        self._room = capacity


@cache
def _bits_per_key(false_positives: float) -> float:
    """The fewest bits per key, in eighths, at which a full layer finds a key never added
    at most ``false_positives`` of the time."""
    low, high = 8 * 8, 64 * 8  # eighths of a bit; the rate falls as the bits grow
    while low < high:
        middle = (low + high) // 2
        if _false_positive_rate(64 / (middle / 8)) <= false_positives:
            high = middle
        else:
            low = middle + 1
    return low / 8


_MOST_KEYS = 64
"""Keys starting at one word beyond which the Poisson terms no longer count."""


def _false_positive_rate(keys_per_word: float) -> float:
    """How often a full layer finds a key never added, when ``keys_per_word`` keys start at
    each word on average.

    The key's first word holds the first patterns of the keys starting there (``a`` of
    them) and the second patterns of those starting one word before (``b``); its second
    word holds the second patterns of the same ``a`` keys and the first patterns of those
    starting at it (``c``). With ``a``, ``b`` and ``c`` Poisson, the key is found when
    both words cover its patterns."""
    poisson = [math.exp(-keys_per_word)]
    for count in range(1, _MOST_KEYS):
        poisson.append(poisson[-1] * keys_per_word / count)
    covered = [_covered(patterns) for patterns in range(2 * _MOST_KEYS)]
    rate = 0.0
    for shared, chance in enumerate(poisson):
        word = sum(other * covered[shared + count] for count, other in enumerate(poisson))
        rate += chance * word * word
    return rate


def _covered(patterns: int) -> float:
    """How often ``patterns`` patterns drawn from the table, set in one word, cover
    another: when one of them is that one, or else when they cover its bits between
    them (inclusion-exclusion over the bits they leave unset)."""
    drawn = math.comb(64, _PATTERN_BITS)
    between = sum(
        (-1.0) ** unset
        * math.comb(_PATTERN_BITS, unset)
        * (math.comb(64 - unset, _PATTERN_BITS) / drawn) ** patterns
        for unset in range(_PATTERN_BITS + 1)
    )
    none_equal = (1 - 1 / len(_PATTERNS)) ** patterns
    return 1 - none_equal * (1 - between)
