"""The state_capacity setting: how many calls, and turns, the daemon holds in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from errord.config import Settings
from errord.errors import ConfigError
from errord.limits import STATE_CAPACITY
from errord.state.projections import Projections


def test_by_default_each_projection_holds_state_capacity_keys() -> None:
    state = Projections()
    assert Settings().state_capacity == STATE_CAPACITY
    assert {projection.capacity for projection in state.all[:-1]} == {STATE_CAPACITY}


def test_the_settings_file_sets_the_state_capacity(tmp_path: Path) -> None:
    path = tmp_path / "errord.toml"
    path.write_text("state_capacity = 5000\n")
    assert Settings.from_toml(path).state_capacity == 5000


@pytest.mark.parametrize("capacity", [999, 10_000_001])
def test_a_state_capacity_out_of_range_is_refused_naming_the_setting(capacity: int) -> None:
    with pytest.raises(ConfigError, match="state_capacity: must be from 1000 to 10000000"):
        Settings(state_capacity=capacity)


def test_episodic_memory_holds_its_bound_whatever_the_state_capacity() -> None:
    state = Projections(1_000, memory_errors=50_000)
    assert state.calls.capacity == state.turns.capacity == 1_000
    assert state.memory.capacity > 50_000
