"""The executor's own rate-limit holds: a 429 one call met holds the tool for every other
call of the executor at once, and a call waiting one out waits out any that another call
met meanwhile (the recovery benchmark saw an agent's call leave into its own Retry-After
when it slept only the hold it read first)."""

from __future__ import annotations

from errord_client.executor.board import ToolBoard, board_key


class FakeTime:
    """A clock the board reads, moved on by the waits it asks for."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now


async def test_a_call_waits_out_a_limit_met_while_it_waited() -> None:
    clock = FakeTime()
    board = ToolBoard(clock=clock)
    key = board_key("search")
    board.limit(key, 1.0)

    async def sleep(seconds: float) -> None:
        clock.slept.append(seconds)
        clock.now += seconds
        if len(clock.slept) == 1:  # another call's 429 came back meanwhile: 2 s more
            board.limit(key, 2.0)

    await board.wait_out_limits(key, sleep)

    assert clock.slept == [1.0, 2.0]
    assert board.held_for(key) == 0.0


async def test_a_tool_no_limit_holds_is_not_waited_for() -> None:
    clock = FakeTime()
    board = ToolBoard(clock=clock)
    key = board_key("search", "eu-west-1")
    board.limit(board_key("search"), 5.0)  # the tool alone, not this scope

    async def sleep(seconds: float) -> None:
        clock.slept.append(seconds)

    await board.wait_out_limits(key, sleep)

    assert clock.slept == []
