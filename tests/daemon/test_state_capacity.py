"""A daemon holding fewer calls and turns than it recorded (state_capacity) reads the
ones it dropped back from the database: its answers are those of a daemon holding all."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.config import Settings
from tests.helpers import START_TIMEOUT, start_in_process

CAPACITY = 1_000
TURNS = 1_200
"""More turns (and calls) than the daemon holds: the first ones are dropped from memory."""


@pytest.fixture
async def stub(tmp_path: Path) -> AsyncIterator[Any]:
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db", state_capacity=CAPACITY)
    running = await start_in_process(settings)
    try:
        async with grpc.aio.insecure_channel(running.address) as channel:
            yield errord_pb2_grpc.ErrorHandlerServiceStub(channel)
    finally:
        running.stop.set()
        await asyncio.wait_for(running.task, START_TIMEOUT)


def failure(turn: int) -> pb.ReportFailureRequest:
    return pb.ReportFailureRequest(
        turn_id=f"turn-{turn}",
        call_id="call_1",
        tool=f"tool_{turn % 100}",
        attempt=1,
        error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="timed out after 30s"),
    )


async def test_a_turn_dropped_for_room_is_read_back_for_its_repeat_and_its_end(
    stub: Any,
) -> None:
    first = await stub.ReportFailure(failure(0))
    for start in range(1, TURNS, 100):
        batch = [failure(turn) for turn in range(start, min(TURNS, start + 100))]
        await stub.ReportFailures(pb.ReportFailuresRequest(failures=batch))

    repeat = await stub.ReportFailure(failure(0))
    ended = await stub.EndTurn(pb.EndTurnRequest(turn_id="turn-0"))

    assert repeat.replayed
    assert repeat.decision == first.decision
    [call] = ended.summary.calls
    assert [taken.decision_id for taken in call.decisions] == [first.decision.decision_id]
    assert not ended.replayed
