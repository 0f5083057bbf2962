"""Projections loaded after open, in the background: until loaded, a key they do not hold
is read back before a decision reads it, so that every decision sees what it would with
everything loaded; once loaded, they hold what loading at open holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from errord.decide.engine import Engine
from errord.decide.model import CallKey, ErrorCode, FailureReport, ToolFailure
from errord.decide.policy import default_policy
from errord.handler import ErrorHandler
from errord.state.projection import Projection
from errord.state.projections import Projections
from errord.state.store import Store
from errord.state.turns import TurnFold
from tests.harness import Harness, failure_report


def failure(turn: str, attempt: int = 1) -> FailureReport:
    error = ToolFailure(code=ErrorCode.TIMEOUT, message="timed out")
    return failure_report(turn=turn, attempt=attempt, error=error)


async def recorded(harness: Harness, turns: int) -> None:
    """``turns`` turns of one failure each, recorded and closed: the history to load."""
    await harness.start()
    for number in range(turns):
        await harness.handler.report_failure(failure(f"turn-{number}"))
    await harness.close()


async def reopened_loading_later(harness: Harness) -> ErrorHandler:
    """The harness's database opened as the daemon opens it: calls and turns loaded after
    open. Nothing has awaited since, so the loader has not read a row yet."""
    state = Projections(harness.capacity)
    harness.state = state
    harness.store = await Store.open(
        harness.db, harness.clock, state, load_later=(state.calls, state.turns)
    )
    engine = Engine(default_policy(harness.jitter, harness.budget))
    harness.handler = ErrorHandler(engine, harness.store, state, harness.manifests, harness.clock)
    return harness.handler


def held(projection: Projection[Any, Any]) -> dict[Any, Any]:
    return projection.snapshot()


async def test_a_key_not_loaded_yet_is_read_back_and_decided_on_as_recorded(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    await recorded(harness, 5)
    handler = await reopened_loading_later(harness)
    try:
        state = harness.state
        assert state.turns.loading
        assert state.calls.loading
        assert state.turns.view("turn-3") is None  # not loaded yet
        assert state.turns.missing("turn-3")
        assert state.calls.missing(CallKey("turn-3", "c"))
        _, replayed = await handler.report_failure(failure("turn-3"))
        assert replayed  # read back: the decision saw the recorded report
        assert state.turns.view("turn-3") is not None
    finally:
        await harness.close()


async def test_once_loaded_it_holds_what_loading_at_open_holds(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    harness.capacity = 4
    await recorded(harness, 10)
    await harness.start()  # loaded at open
    at_open = {p.name: held(p) for p in harness.state.all}
    never = [f"new-{n}" for n in range(200)]
    await harness.close()
    await reopened_loading_later(harness)
    try:
        await harness.store.loaded()
        state = harness.state
        assert not state.turns.loading
        assert not state.calls.loading
        assert {p.name: held(p) for p in state.all} == at_open
        assert not state.turns.complete  # six turns only in the database
        assert state.turns.missing("turn-0")  # in the filter: read back when needed
        assert sum(state.turns.missing(turn) for turn in never) < 20  # new: no read
    finally:
        await harness.close()


async def test_a_key_changed_while_loading_keeps_its_new_state(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    await recorded(harness, 3)
    handler = await reopened_loading_later(harness)
    try:
        await handler.report_failure(failure("turn-1", attempt=2))  # before the loader reads
        await harness.store.loaded()
        rebuilt = await harness.store.fold_trace(harness.state.all)
        for projection, folded in zip(harness.state.all, rebuilt, strict=True):
            assert held(projection) == folded, projection.name
        call = harness.state.calls.view(CallKey("turn-1", "c"))
        assert call is not None
        assert call.failure_recorded("search", 2)
    finally:
        await harness.close()


async def test_closing_while_loading_stops_the_loader(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    await recorded(harness, 3)
    await reopened_loading_later(harness)
    await harness.close()  # the loader never ran: cancelled, the database closed cleanly
    await harness.start()
    assert len(harness.state.turns) == 3
    await harness.close()


def test_states_held_already_win_over_older_ones_and_beyond_capacity_are_dropped() -> None:
    turns: Projection[str, Any] = Projection(TurnFold(), capacity=2)
    turns.begin_loading()
    turns.adopt("read-back", "its state")
    turns.hold_older([("read-back", "older state"), ("a", "A"), ("b", "B"), ("c", "C")])
    assert turns.snapshot() == {"a": "A", "read-back": "its state"}
    assert list(turns.snapshot()) == ["a", "read-back"]  # loaded: older than every key held
    assert turns.missing("never-seen")  # while loading, anything may be in the database
    turns.end_loading()
    assert not turns.complete
    assert turns.missing("b")
    assert turns.missing("c")
    assert not turns.missing("a")


def test_a_projection_loaded_whole_in_the_background_is_complete() -> None:
    turns: Projection[str, Any] = Projection(TurnFold(), capacity=10)
    turns.begin_loading()
    turns.hold_older([("a", "A"), ("b", "B")])
    turns.end_loading()
    assert turns.complete
    assert not turns.missing("c")


async def test_every_key_only_in_the_database_is_missing_however_it_was_dropped(
    tmp_path: Path,
) -> None:
    """The filter holds keys as stored (loaded without decoding) and as dropped while
    running (encoded then): either way a decision's key is found in it."""
    harness = Harness(tmp_path)
    harness.capacity = 3
    await recorded(harness, 12)
    keys = [CallKey(f"turn-{n}", "c") for n in range(12)]
    for loaded_later in (False, True):
        if loaded_later:
            await reopened_loading_later(harness)
            await harness.store.loaded()
        else:
            await harness.start()
        calls = harness.state.calls
        assert all(calls.missing(key) for key in keys if calls.view(key) is None)
        for number in range(12 + 3 * loaded_later, 15 + 3 * loaded_later):  # drops 3 more
            await harness.handler.report_failure(failure(f"turn-{number}"))
        assert all(calls.missing(key) for key in keys if calls.view(key) is None)
        await harness.close()
