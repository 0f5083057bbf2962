"""The client package's README runs as shown against a real daemon, and the executor demo
it walks through shows each of its scenarios with the decisions errord gives."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from errord_client.demo import manifests_directory

from tests.helpers import ROOT, DaemonProcess, start_process, subprocess_env
from tests.page_examples import (
    COMMAND_TIMEOUT,
    PageDaemon,
    broken_links,
    errord_serve,
    walk_through,
)

CLIENT_README = ROOT / "clients" / "python" / "README.md"
SCENARIO = re.compile(r"^(\d+)\. ", flags=re.MULTILINE)


@pytest.fixture
def readme_daemon(tmp_path: Path) -> Iterator[PageDaemon]:
    """The port of the daemon the README's examples talk to (``errord serve`` on embedded
    defaults), in a directory of the test's own."""
    with errord_serve(tmp_path / "daemon") as daemon:
        yield daemon


@pytest.fixture
def demo_daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    """errord as a process with the demo's manifests."""
    running = start_demo_daemon(tmp_path)
    yield running
    running.terminate(signal.SIGKILL)


def start_demo_daemon(directory: Path, *options: str) -> DaemonProcess:
    """errord serving the demo's manifests, with ``options``, its database in ``directory``."""
    listen = ("--listen", "127.0.0.1:0", "--db", str(directory / "demo.db"))
    return start_process(*options, *listen, "--manifests", str(manifests_directory()))


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m errord_client.demo ARGS`` to its end, the checkout's client first."""
    return subprocess.run(
        [sys.executable, "-m", "errord_client.demo", *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        env=subprocess_env(),
        check=False,
    )


def scenarios(output: str) -> dict[int, str]:
    """The demo's output, scenario by scenario (by number)."""
    pieces = SCENARIO.split(output)
    return {int(number): text for number, text in zip(pieces[1::2], pieces[2::2], strict=True)}


def actions(text: str) -> list[str]:
    return re.findall(r"errord decides (\w+)", text)


def statuses(text: str) -> list[str]:
    return re.findall(r"result of \w+ \(\w+\): (\w+)", text)


def test_the_client_readme_runs_as_shown(tmp_path: Path, readme_daemon: PageDaemon) -> None:
    """Every file the README says to save and every ``$`` command it shows, the executor's
    examples and the demo's walkthrough (a second daemon, with the demo's manifests)
    included, runs in order and prints what the page shows."""
    walk_through(CLIENT_README, tmp_path, daemon=readme_daemon)


def test_the_demo_shows_each_scenario_with_the_decisions_errord_gives(
    demo_daemon: DaemonProcess,
) -> None:
    ran = demo("--target", demo_daemon.address, "--token-file", str(demo_daemon.token_file))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = scenarios(ran.stdout)
    assert sorted(shown) == [1, 2, 3, 4]

    timeout = shown[1]
    assert actions(timeout) == ["RETRY", "RETRY"]
    assert timeout.count("failed (TIMEOUT)") == 2
    assert "flight_search attempt 3 succeeded" in timeout
    assert statuses(timeout) == ["SUCCEEDED"]
    assert "3 attempts, decided by errord" in timeout

    rate_limit = shown[2]
    assert actions(rate_limit) == ["RETRY"]
    assert "failed (RATE_LIMITED)" in rate_limit
    assert "RETRY after 1000 ms" in rate_limit  # the Retry-After, not the policy's 100 ms
    assert statuses(rate_limit) == ["SUCCEEDED"]

    auth = shown[3]
    assert actions(auth) == ["USE_ALTERNATIVE"]
    assert "weather attempt 1 failed (AUTH)" in auth
    assert "weather_backup attempt 1 succeeded" in auth
    assert "answered by weather_backup" in auth
    assert statuses(auth) == ["SUCCEEDED"]

    wrong_argument = shown[4]
    assert actions(wrong_argument) == ["RETURN_TO_MODEL"]
    assert "failed (INVALID_INPUT)" in wrong_argument
    assert 'Example Usage: {"city": "Paris", "days": 3}' in wrong_argument
    assert statuses(wrong_argument) == ["RETURNED_TO_MODEL", "SUCCEEDED"]


def test_the_demo_against_a_daemon_without_its_manifests_says_how_to_start_one(
    daemon_process: DaemonProcess,
) -> None:
    ran = demo("--target", daemon_process.address, "--token", daemon_process.token)
    assert ran.returncode == 1
    assert ran.stdout.startswith(
        f"errord at {daemon_process.address} has no manifest for the demo's tools"
    )
    assert '--manifests "$(python -m errord_client.demo --manifests)"' in ran.stdout


def test_every_link_of_the_client_readme_leads_to_a_file_and_heading_that_exist() -> None:
    assert not broken_links(CLIENT_README)


@pytest.mark.parametrize(
    "page",
    [
        *sorted((ROOT / "clients" / "python" / "docs").glob("*.md")),
        ROOT / "clients" / "typescript" / "README.md",
        *sorted((ROOT / "clients" / "typescript" / "docs").glob("*.md")),
    ],
    ids=lambda page: str(page.relative_to(ROOT)),
)
def test_every_link_of_the_adapter_and_typescript_pages_leads_somewhere(page: Path) -> None:
    assert not broken_links(page)


def test_the_demo_sends_its_token_to_a_daemon_that_wants_one(tmp_path: Path) -> None:
    """Without ``--token`` the daemon refuses the demo's first call and the demo says so;
    with it every scenario runs."""
    (tmp_path / "token").write_text("d3mo-t0ken\n")
    (tmp_path / "errord.toml").write_text(f'token_file = "{tmp_path / "token"}"\n')
    running = start_demo_daemon(tmp_path, "--config", str(tmp_path / "errord.toml"))
    try:
        refused = demo("--target", running.address)
        allowed = demo("--target", running.address, "--token", "d3mo-t0ken")
    finally:
        running.terminate(signal.SIGKILL)
    assert refused.returncode == 1
    assert "refused the demo's first call (UNAUTHENTICATED" in refused.stdout
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert sorted(scenarios(allowed.stdout)) == [1, 2, 3, 4]
