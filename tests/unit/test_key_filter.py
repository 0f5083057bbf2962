"""The filter of keys a projection dropped from memory: never a false "no", rarely a
false "maybe"; so that a key never seen costs no database read, even past capacity."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.model import CallKey, ErrorCode, FailureReport, ToolFailure
from errord.state.key_filter import FALSE_POSITIVES, KeyFilter
from tests.harness import Harness, failure_report

ABSENT = 200_000
"""Keys never added that each false-positive test looks for."""


def stored(number: int, turn: str = "turn") -> str:
    """A call key as the calls projection stores it."""
    return f'["{turn}-{number}","call_1"]'


FILTERS = 8
"""Filters each false-positive rate is averaged over."""


def found_never_added(keys: int, first_layer: int) -> float:
    """The share of keys never added that filters of ``keys`` keys find, over FILTERS
    filters of different keys, ``ABSENT`` keys looked for in all. One filter's rate varies
    with where its keys happen to fall (Python's hash is salted per process): the rate the
    filter is sized for is the expected one, which the average measures."""
    looked_for = ABSENT // FILTERS
    found = 0
    for filter_number in range(FILTERS):
        keys_filter = KeyFilter(first_layer=first_layer)
        for number in range(keys):
            keys_filter.add(stored(number, f"turn{filter_number}"))
        assert len(keys_filter) == keys
        found += sum(stored(n, f"other{filter_number}") in keys_filter for n in range(looked_for))
    return found / (looked_for * FILTERS)


def sampling_error(rate: float) -> float:
    """Four standard deviations of a rate measured on ``ABSENT`` keys."""
    return 4 * math.sqrt(rate * (1 - rate) / ABSENT)


@given(st.lists(st.text(max_size=20), max_size=500), st.integers(1, 64))
def test_every_key_added_is_found(keys: list[str], first_layer: int) -> None:
    """No false "no", however many layers the keys take (up to 500 keys from 1 per layer)."""
    found = KeyFilter(first_layer=first_layer)
    for key in keys:
        found.add(key)
        assert key in found
    assert all(key in found for key in keys)
    assert len(found) == len(keys)


def test_a_full_first_layer_finds_keys_never_added_at_its_rate() -> None:
    rate = found_never_added(16_384, first_layer=16_384)
    assert rate <= FALSE_POSITIVES + sampling_error(FALSE_POSITIVES)


@pytest.mark.parametrize("keys", [4_096, 12_288, 20_000, 28_672, 61_440])
def test_all_layers_together_find_less_than_twice_the_first_rate(keys: int) -> None:
    """1, 2, 2.5, 3 and 4 full layers of 4,096, 8,192... keys: under 1 % in all."""
    assert found_never_added(keys, first_layer=4_096) < 2 * FALSE_POSITIVES


def test_a_layer_takes_the_bits_per_key_its_rate_needs() -> None:
    """12.6 bits per key for a full first layer; 14.6 for the second (the docstring's)."""
    found = KeyFilter(first_layer=65_536)
    for number in range(65_536):
        found.add(stored(number))
    assert found.nbytes * 8 / 65_536 == pytest.approx(12.625, abs=0.01)
    found.add(stored(65_536))
    second = found.nbytes * 8 - 65_536 * 12.625
    assert second / 131_072 == pytest.approx(14.625, abs=0.01)


def test_a_first_layer_holds_a_key_at_least() -> None:
    with pytest.raises(ValueError, match="first_layer"):
        KeyFilter(first_layer=0)


def failure(number: int) -> FailureReport:
    error = ToolFailure(code=ErrorCode.TIMEOUT, message="timeout")
    return failure_report(turn=f"turn-{number}", error=error)


async def test_past_capacity_only_dropped_keys_are_read_back(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    harness.capacity = 10
    await harness.start()
    try:
        for number in range(30):
            await harness.handler.report_failure(failure(number))
        calls = harness.state.calls
        assert not calls.complete
        assert calls.missing(CallKey("turn-0", "c"))  # dropped for room: read it back
        assert not calls.missing(CallKey("turn-29", "c"))  # held
        never = [CallKey(f"new-{n}", "c") for n in range(1_000)]
        assert sum(calls.missing(key) for key in never) < 50  # no read for a new call
        await harness.restart()  # the keys beyond capacity are loaded into the filter
        calls = harness.state.calls
        assert calls.missing(CallKey("turn-0", "c"))
        assert sum(calls.missing(key) for key in never) < 50
        _, replayed = await harness.handler.report_failure(failure(0))
        assert replayed  # found by reading it back
    finally:
        await harness.close()
