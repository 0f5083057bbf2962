"""sd_notify over a real datagram socket: READY after the port is bound, STOPPING at shutdown."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from errord.ops.systemd import Notifier
from tests.helpers import receive, start_process, subprocess_env


def test_the_daemon_notifies_ready_once_serving_and_stopping_on_sigterm(
    tmp_path: Path, notify_socket: socket.socket
) -> None:
    env = subprocess_env(NOTIFY_SOCKET=notify_socket.getsockname())
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "e.db"), env=env)
    ready = receive(notify_socket)
    assert ready["READY"] == "1"
    assert ready["MAINPID"] == str(daemon.process.pid)
    assert ready["STATUS"].startswith(f"serving on {daemon.address}")
    with grpc.insecure_channel(daemon.address) as channel:  # the port was bound before READY
        check = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert check.status == health_pb2.HealthCheckResponse.SERVING
    assert daemon.terminate(signal.SIGTERM) == 0
    assert receive(notify_socket)["STOPPING"] == "1"


def test_the_abstract_namespace_is_supported() -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind("\0errord-test-notify")
        listener.settimeout(5)
        Notifier("@errord-test-notify").notify("READY=1")
        assert listener.recv(100) == b"READY=1"


def test_without_notify_socket_notifying_does_nothing() -> None:
    notifier = Notifier(None)
    notifier.ready("ignored")
    assert not notifier.enabled


def test_an_unreachable_socket_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    Notifier(str(tmp_path / "missing")).notify("READY=1")
    assert "cannot notify systemd" in caplog.text


def test_the_watchdog_is_fed_at_half_its_timeout_when_meant_for_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", "/run/systemd/notify")
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    assert Notifier.from_environment().watchdog_interval == 15.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert Notifier.from_environment().watchdog_interval == 15.0
    monkeypatch.setenv("WATCHDOG_PID", "1")  # another process's watchdog
    assert Notifier.from_environment().watchdog_interval is None
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    monkeypatch.setenv("WATCHDOG_USEC", "soon")
    assert Notifier.from_environment().watchdog_interval is None
    monkeypatch.delenv("NOTIFY_SOCKET")
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    assert Notifier.from_environment().watchdog_interval is None
