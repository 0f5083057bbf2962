"""Fixtures that run the real daemon: in this process (fast) or as a process (real signals).
What they are built on, and what tests share besides, is in tests/helpers.py."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from errord.config import Settings
from errord.decide.manifest.snapshot import ManifestSnapshot
from tests.harness import Harness
from tests.helpers import (
    START_TIMEOUT,
    DaemonProcess,
    InProcessDaemon,
    start_in_process,
    start_process,
)
from tests.redis_server import RedisServer

# Property tests run beside daemons on two shared cores: an example's wall time says
# nothing of its correctness, so no deadline and no too-slow health check.
settings.register_profile("loaded", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("loaded")

DAEMON_TESTS = Path(__file__).parent / "daemon"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of tests/daemon/ runs errord or a benchmark: slow, so that
    ``pytest -m "not slow"`` runs the unit tests alone (a few of them are marked one by one)."""
    for item in items:
        if DAEMON_TESTS in item.path.parents:
            item.add_marker(pytest.mark.slow)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``-m "not slow"``, tests/daemon/ is not even imported: every test of it is slow,
    and importing its modules (the agent frameworks, OpenTelemetry) costs the unit run
    seconds."""
    unit_run = " ".join(str(config.getoption("markexpr")).split()) == "not slow"
    if unit_run and (collection_path == DAEMON_TESTS or DAEMON_TESTS in collection_path.parents):
        return True
    return None


@pytest.fixture(autouse=True)
def own_state_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test's embedded defaults (the database, the operator token errord's commands
    read) are in a state directory of its own, never the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[InProcessDaemon]:
    """errord serving on a free loopback port inside the test's event loop."""
    running = await start_in_process(Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db"))
    yield running
    running.stop.set()
    await asyncio.wait_for(running.task, START_TIMEOUT)


@pytest.fixture
def daemon_process(tmp_path: Path) -> Iterator[DaemonProcess]:
    """errord as a process on a free loopback port, with its database in tmp_path."""
    running = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    yield running
    running.terminate(signal.SIGKILL)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real Redis server of the test's own, on a free loopback port and a unix socket in
    tmp_path (tests/redis_server.py)."""
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.kill()


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[socket.socket]:
    """A datagram socket for a daemon's sd_notify messages (its NOTIFY_SOCKET)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(tmp_path / "notify"))
    listener.settimeout(30)
    yield listener
    listener.close()


@pytest.fixture
def manifests() -> ManifestSnapshot:
    """The tools the ``harness`` fixture's handler knows: none, unless a module overrides
    this fixture with its own."""
    return ManifestSnapshot()


@pytest.fixture
async def harness(tmp_path: Path, manifests: ManifestSnapshot) -> AsyncIterator[Harness]:
    """errord's handler over a real store in tmp_path, started, knowing ``manifests``."""
    started = Harness(tmp_path, manifests)
    await started.start()
    yield started
    await started.close()
