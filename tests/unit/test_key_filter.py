"""The filter of keys a projection dropped from memory: never a false "no", rarely a
false "maybe"; so that a key never seen costs no database read, even past capacity."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from errord.decide.model import CallKey, ErrorCode, FailureReport, ToolFailure
from errord.state.key_filter import KeyFilter
from tests.harness import Harness, failure_report


@given(st.sets(st.text(max_size=20), max_size=500))
def test_every_key_added_is_found(keys: set[str]) -> None:
    found = KeyFilter(initial=64)
    for key in keys:
        found.add(key)
    assert all(key in found for key in keys)


def test_few_keys_never_added_are_found_as_it_grows() -> None:
    found = KeyFilter(initial=1_000)
    for number in range(50_000):  # six layers
        found.add(CallKey(f"turn-{number}", "call_1"))
    false_positives = sum(CallKey(f"other-{n}", "call_1") in found for n in range(20_000))
    assert false_positives / 20_000 < 0.03  # 2 % in all, by design
    assert len(found) == 50_000


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
