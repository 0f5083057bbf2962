"""Fixtures that run the real daemon: in this process (fast) or as a process (real signals)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from errord.app import serve
from errord.config import Settings

ROOT = Path(__file__).resolve().parents[1]
CLIENT_SOURCE = ROOT / "clients" / "python" / "src"
SERVING = re.compile(r"serving on (\S+),")
START_TIMEOUT = 30.0

# Property tests run beside daemons on two shared cores: an example's wall time says
# nothing of its correctness, so no deadline and no too-slow health check.
settings.register_profile("loaded", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("loaded")


@dataclass
class InProcessDaemon:
    address: str
    settings: Settings
    stop: asyncio.Event
    task: asyncio.Task[None]


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[InProcessDaemon]:
    """errord serving on a free loopback port inside the test's event loop."""
    running = await start_in_process(Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db"))
    yield running
    running.stop.set()
    await asyncio.wait_for(running.task, START_TIMEOUT)


async def start_in_process(settings: Settings) -> InProcessDaemon:
    if settings.shutdown_quiet_seconds == Settings.shutdown_quiet_seconds:
        # Each test stops its daemon after its last call: a drain would only wait out the
        # quiet period (tests/test_drain.py tests it against the daemon as a process).
        settings = replace(settings, shutdown_quiet_seconds=0.0)
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, stop=stop, on_ready=ready.set_result))
    watched: list[asyncio.Future[Any]] = [task, ready]
    await asyncio.wait(watched, timeout=START_TIMEOUT, return_when="FIRST_COMPLETED")
    if task.done():
        task.result()  # raises the start-up error
    return InProcessDaemon(await ready, settings, stop, task)


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment of a daemon process: the checkout's client package first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CLIENT_SOURCE), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def errord_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "errord", *args]


def run_errord(*args: str) -> subprocess.CompletedProcess[str]:
    """``errord ARGS`` to its end, its output captured."""
    return subprocess.run(
        errord_command(*args),
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(),
        check=False,
    )


@dataclass
class DaemonProcess:
    """errord running as its own process; stderr is collected as it runs."""

    process: subprocess.Popen[str]
    reader: threading.Thread
    address: str = ""
    lines: list[str] = field(default_factory=list)

    def terminate(self, signum: int = signal.SIGTERM) -> int:
        """Send ``signum`` unless it has exited; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        status = self.process.wait(timeout=START_TIMEOUT)
        self.reader.join(START_TIMEOUT)
        assert self.process.stderr is not None
        self.process.stderr.close()
        return status

    @property
    def stderr(self) -> str:
        return "".join(self.lines)


def start_process(*args: str, env: dict[str, str] | None = None) -> DaemonProcess:
    """Start ``errord serve ARGS`` and wait until it says where it serves."""
    return spawn(errord_command("serve", *args), env)


def spawn(command: list[str], env: dict[str, str] | None = None) -> DaemonProcess:
    """Start a server process and wait until its stderr says ``serving on ADDRESS,``."""
    process = subprocess.Popen(
        command,
        stderr=subprocess.PIPE,
        text=True,
        env=env or subprocess_env(),
        stdin=subprocess.DEVNULL,
    )
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            running.lines.append(line)
            match = SERVING.search(line)
            if match and not ready.is_set():
                running.address = match[1]
                ready.set()
        ready.set()

    running = DaemonProcess(process, threading.Thread(target=read, daemon=True))
    running.reader.start()
    ready.wait(START_TIMEOUT)
    if not running.address:
        running.terminate(signal.SIGKILL)
        raise AssertionError(f"errord did not start:\n{running.stderr}")
    return running


@pytest.fixture
def daemon_process(tmp_path: Path) -> Iterator[DaemonProcess]:
    """errord as a process on a free loopback port, with its database in tmp_path."""
    running = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    yield running
    running.terminate(signal.SIGKILL)


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[socket.socket]:
    """A datagram socket for a daemon's sd_notify messages (its NOTIFY_SOCKET)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(tmp_path / "notify"))
    listener.settimeout(30)
    yield listener
    listener.close()
