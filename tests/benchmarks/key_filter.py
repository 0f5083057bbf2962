"""Micro-benchmark: the dropped-key filter, in µs per operation.

    python -m tests.benchmarks.key_filter [--keys 1000000] [--rounds 3]

Adds ``--keys`` keys to an empty KeyFilter (stored call keys, as the calls projection
adds them), then looks for 1,000,000 keys never added and 100,000 of those added. Every
key looked for is a string of its own, hashed for the first time, as ``stored_key``
gives it. Prints, per round, µs per add, per absent and per present lookup, the absent
keys found (the false-positive rate), the bytes the words take per key added, and the
layers. Single process, single thread.
"""

from __future__ import annotations

import argparse
import gc
import time
from dataclasses import dataclass

from errord.state.key_filter import KeyFilter


@dataclass(frozen=True, slots=True)
class Round:
    """One round's figures."""

    add_us: float
    absent_us: float
    present_us: float
    false_positives: float
    bytes_per_key: float
    layers: int


def stored(number: int, turn: str = "bench") -> str:
    return f'["{turn}-{number}","call_1"]'


def measure(keys: int, absent: int = 1_000_000, present: int = 100_000) -> Round:
    """Add ``keys`` keys, then look for ``absent`` keys never added and ``present`` added."""
    added = [stored(number) for number in range(keys)]
    never = [stored(number, "other") for number in range(absent)]
    step = max(1, keys // present)
    again = [stored(number) for number in range(0, keys, step)][:present]
    found = KeyFilter()
    gc.disable()  # the key lists above are all the garbage there is
    try:
        start = time.perf_counter()
        for key in added:
            found.add(key)
        add_us = (time.perf_counter() - start) / keys * 1e6
        start = time.perf_counter()
        false_positives = sum(1 for key in never if key in found)
        absent_us = (time.perf_counter() - start) / absent * 1e6
        start = time.perf_counter()
        hits = sum(1 for key in again if key in found)
        present_us = (time.perf_counter() - start) / len(again) * 1e6
    finally:
        gc.enable()
    assert hits == len(again), "a key added was not found"
    return Round(
        add_us=add_us,
        absent_us=absent_us,
        present_us=present_us,
        false_positives=false_positives / absent,
        bytes_per_key=found.nbytes / keys,
        layers=len(found._layers),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    for _ in range(options.rounds):
        figures = measure(options.keys)
        print(
            f"{options.keys:,} keys: add {figures.add_us:.3f} µs, absent {figures.absent_us:.3f}"
            f" µs, present {figures.present_us:.3f} µs; false positives"
            f" {figures.false_positives:.3%}, {figures.bytes_per_key:.2f} bytes per key,"
            f" {figures.layers} layers"
        )


if __name__ == "__main__":
    main()
