"""systemd/: the unit verifies cleanly, is hardened, and agrees with its example settings."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from errord.cli.main import EXIT_CONFIG
from errord.config import Settings

SYSTEMD = Path(__file__).resolve().parents[2] / "systemd"
UNIT = SYSTEMD / "errord.service"
EXAMPLE = SYSTEMD / "errord.toml"
SYSUSERS = SYSTEMD / "errord.sysusers"
INSTALLED = "/usr/local/bin/errord"
MAX_EXPOSURE = 1.5
EXPOSURE = re.compile(r"Overall exposure level for errord\.service: (\d+\.\d+)")


@pytest.fixture
def analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.skip("systemd-analyze is not installed")
    return found


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


def unit_values() -> dict[str, list[str]]:
    """Each key of the unit and its values in order (keys repeat, as SystemCallFilter=)."""
    values: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        key, equals, value = line.partition("=")
        if equals and not line.startswith(("#", ";", "[")):
            values.setdefault(key.strip(), []).append(value.strip())
    return values


def test_the_unit_verifies_without_a_warning(analyze: str, tmp_path: Path) -> None:
    """verify requires ExecStart's binary: the copy names this python instead of errord's."""
    text = UNIT.read_text()
    assert text.count(f"ExecStart={INSTALLED} ") == 1
    copy = tmp_path / UNIT.name
    copy.write_text(text.replace(f"ExecStart={INSTALLED} ", f"ExecStart={sys.executable} "))
    verified = run(analyze, "verify", "--man=no", str(copy))
    assert (verified.returncode, verified.stderr, verified.stdout) == (0, "", "")


def test_the_units_exposure_is_at_most_one_and_a_half(analyze: str) -> None:
    analyzed = run(analyze, "security", "--offline=true", "--no-pager", str(UNIT))
    assert analyzed.returncode == 0, analyzed.stderr
    found = EXPOSURE.search(analyzed.stdout)
    assert found is not None, analyzed.stdout
    assert float(found[1]) <= MAX_EXPOSURE, analyzed.stdout


def test_the_example_settings_load_with_errords_own_loader() -> None:
    settings = Settings.from_toml(EXAMPLE)
    assert settings.listen == "unix:/run/errord/errord.sock"
    assert settings.db == Path("/var/lib/errord/errord.db")
    assert settings.manifests == Path("/etc/errord/tools.d")


def test_the_unit_serves_the_example_settings_from_its_own_directories() -> None:
    """Config in ConfigurationDirectory, socket in RuntimeDirectory, database in StateDirectory."""
    unit = unit_values()
    settings = Settings.from_toml(EXAMPLE)
    command = shlex.split(unit["ExecStart"][0])
    assert command == [INSTALLED, "serve", "--config", "/etc/errord/errord.toml"]
    assert unit["ConfigurationDirectory"] == ["errord"]
    assert settings.listen.startswith(f"unix:/run/{unit['RuntimeDirectory'][0]}/")
    assert settings.db.parent == Path("/var/lib", unit["StateDirectory"][0])


def test_the_unit_outwaits_shutdown_and_does_not_restart_on_bad_config() -> None:
    unit = unit_values()
    grace = Settings.from_toml(EXAMPLE).shutdown_grace_seconds
    assert float(unit["TimeoutStopSec"][0]) > grace
    assert unit["Restart"] == ["on-failure"]
    assert unit["RestartPreventExitStatus"] == [str(EXIT_CONFIG)]
    assert (unit["Type"], unit["NotifyAccess"]) == (["notify"], ["main"])


def test_sysusers_declares_the_units_user_with_its_own_group() -> None:
    """A "u NAME -" line makes user NAME and a group of the same name."""
    entries = [
        shlex.split(line)
        for line in SYSUSERS.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert [entry[:3] for entry in entries] == [["u", "errord", "-"]]
    assert unit_values()["User"] == unit_values()["Group"] == ["errord"]


def test_systemd_sysusers_accepts_the_file(tmp_path: Path) -> None:
    sysusers = shutil.which("systemd-sysusers")
    if sysusers is None:
        pytest.skip("systemd-sysusers is not installed")
    (tmp_path / "etc").mkdir()
    created = run(sysusers, "--dry-run", f"--root={tmp_path}", str(SYSUSERS))
    assert created.returncode == 0, created.stderr
    assert "Creating group 'errord'" in created.stderr
    assert "Creating user 'errord'" in created.stderr
    assert not list((tmp_path / "etc").iterdir())  # a dry run writes nothing
