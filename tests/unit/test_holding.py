"""Keys a projection dropped for room are read back before a decision reads them, once,
and stay in memory until the decision is made; keys memory holds cost no read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from errord.decide.model import ErrorCode, FailureReport, ToolFailure
from errord.state.holding import Holder
from errord.state.projection import Projection
from tests.harness import Harness, failure_report


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    """A handler whose projections hold one key each: every other key is dropped."""
    harness = Harness(tmp_path)
    harness.capacity = 1
    await harness.start()
    yield harness
    await harness.close()


def failure(turn: str) -> FailureReport:
    return failure_report(turn=turn, error=ToolFailure(code=ErrorCode.TIMEOUT, message="timed out"))


class CountingReads:
    """The store's reads of single states, counted."""

    def __init__(self, harness: Harness) -> None:
        self.store = harness.store
        self.keys: list[Any] = []

    async def __call__(self, projection: Projection[Any, Any], key: Any) -> Any:
        self.keys.append(key)
        return await self.store.state(projection, key)


async def dropped_turn(harness: Harness) -> str:
    """A turn recorded, then dropped from memory by the turns recorded after it."""
    for turn in ("dropped", "later", "latest"):
        await harness.handler.report_failure(failure(turn))
    assert harness.state.turns.missing("dropped")
    return "dropped"


async def test_a_key_memory_holds_is_held_without_a_read(harness: Harness) -> None:
    await harness.handler.report_failure(failure("held"))
    reads = CountingReads(harness)
    async with Holder(reads).holding(((harness.state.turns, "held"),)):
        assert harness.state.turns.view("held") is not None
    assert reads.keys == []


async def test_a_dropped_key_is_read_back_and_stays_while_held(harness: Harness) -> None:
    turn = await dropped_turn(harness)
    reads = CountingReads(harness)
    turns = harness.state.turns
    async with Holder(reads).holding(((turns, turn),)):
        assert turns.view(turn) is not None
        await harness.handler.report_failure(failure("meanwhile"))  # would drop it again
        assert turns.view(turn) is not None
    assert reads.keys == [turn]
    await harness.handler.report_failure(failure("after"))
    assert turns.view(turn) is None  # let go: dropped for room again


async def test_two_holders_of_one_dropped_key_read_it_once(harness: Harness) -> None:
    turn = await dropped_turn(harness)
    reads = CountingReads(harness)
    holder = Holder(reads)
    turns = harness.state.turns

    async def view() -> object:
        async with holder.holding(((turns, turn), (turns, turn))):
            return turns.view(turn)

    seen = await asyncio.gather(view(), view())
    assert None not in seen
    assert reads.keys == [turn]
