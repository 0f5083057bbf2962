"""The fleet's settings: off by default, checked on construction with the setting named,
and the errord[fleet] extra named when redis-py is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from errord.clock import SystemClock
from errord.config import Settings
from errord.errors import ConfigError
from errord.fleet.joining import fleet_host, join_fleet
from errord.state.projections import Projections


def test_without_fleet_url_there_is_no_fleet() -> None:
    settings = Settings()
    assert settings.fleet_url is None
    assert join_fleet(settings, Projections(), SystemClock(), lambda keys: None) is None


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"fleet_url": "http://10.0.0.5:6379"}, "fleet_url: expected a redis://, rediss://"),
        ({"fleet_name": "two words"}, "fleet_name: expected 1 to 64 letters"),
        ({"fleet_host": ""}, "fleet_host: expected 1 to 64 letters"),
        ({"fleet_quorum": 0}, "fleet_quorum: must be from 1 to 100"),
        ({"fleet_breaker_window_seconds": 0.5}, "fleet_breaker_window_seconds: must be from 1"),
    ],
)
def test_a_bad_fleet_setting_is_named(values: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        Settings(**values)  # type: ignore[arg-type]


def test_a_toml_file_sets_the_fleet(tmp_path: Path) -> None:
    path = tmp_path / "errord.toml"
    path.write_text(
        'fleet_url = "rediss://errord:secret@10.0.0.5:6379/0"\nfleet_name = "agents"\n'
        'fleet_host = "agent-1"\nfleet_quorum = 3\n'
    )
    settings = Settings.from_toml(path)
    assert (settings.fleet_name, fleet_host(settings), settings.fleet_quorum) == (
        "agents",
        "agent-1",
        3,
    )


def test_fleet_url_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    monkeypatch.delitem(sys.modules, "errord.fleet.link", raising=False)
    settings = Settings(fleet_url="redis://127.0.0.1:6379/0")
    with pytest.raises(ConfigError, match=r"install errord\[fleet\]"):
        join_fleet(settings, Projections(), SystemClock(), lambda keys: None)
