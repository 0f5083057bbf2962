"""Manifest reloads against the real daemon process: SIGHUP and ReloadManifests, under
load; a broken set keeps the one in force and is reported (RPC, log, STATUS=, metrics,
trace); a valid change is live after the next reload. And the sd_notify sequence around
it, read from a real datagram socket."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import threading
from pathlib import Path

import grpc
import pytest
from errord_client import ErrordClient, pb
from errord_client.v1 import errord_pb2_grpc

from tests.helpers import (
    DaemonProcess,
    receive,
    run_errord,
    scrape,
    start_process,
    subprocess_env,
    sync_operator_channel,
)

GOOD = """\
tools:
  - name: search
    alternatives: [mirror]
    classification:
      - http_status: 503
        class: permanent
  - name: mirror
"""
CHANGED = GOOD.replace("alternatives: [mirror]", "alternatives: [backup]") + "  - name: backup\n"
BROKEN = """\
tools:
  - name: search
    retry_policy:
      max_attempts: five
"""


def receive_until(listener: socket.socket, name: str) -> tuple[dict[str, str], int]:
    """The first message with ``name``, and how many WATCHDOG=1 pings came before it."""
    pings = 0
    while True:
        message = receive(listener)
        if name in message:
            return message, pings
        pings += "WATCHDOG" in message


def start(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> DaemonProcess:
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "travel.yaml").write_text(GOOD)
    return start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--manifests", str(tools), "--metrics-listen", "127.0.0.1:0", *extra, env=env,
    )  # fmt: skip


def decide(errord: ErrordClient, turn: str, status: int = 503) -> pb.RecoveryDecision:
    return errord.report_failure(
        turn_id=turn,
        call_id="c",
        tool="search",
        attempt=1,
        http_status=status,
        message="Service Unavailable",
    ).decision


class Load:
    """Reports from a thread until stopped; counts answers and failed requests."""

    def __init__(self, address: str) -> None:
        self.answered = 0
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(address,))
        self._thread.start()

    def _run(self, address: str) -> None:
        with ErrordClient(address) as errord:
            while not self._stop.is_set():
                try:
                    decide(errord, f"load-{self.answered}")
                    self.answered += 1
                except grpc.RpcError as error:
                    self.failed.append(str(error))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def reload_events(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT body FROM events WHERE kind = 'manifests_reloaded' ORDER BY sequence"
        )
        return [bytes(body).decode() for (body,) in rows]


def test_sighup_with_a_broken_manifest_under_load_keeps_the_set_in_force(
    tmp_path: Path, notify_socket: socket.socket
) -> None:
    env = subprocess_env(NOTIFY_SOCKET=notify_socket.getsockname())
    daemon = start(tmp_path, env=env)
    try:
        assert receive(notify_socket)["READY"] == "1"
        load = Load(daemon.address)
        try:
            (tmp_path / "tools" / "travel.yaml").write_text(BROKEN)
            daemon.process.send_signal(signal.SIGHUP)
            reloading, _ = receive_until(notify_socket, "RELOADING")
            assert int(reloading["MONOTONIC_USEC"]) > 0
            ready, _ = receive_until(notify_socket, "READY")
            assert "last reload refused: " in ready["STATUS"]
            assert "travel.yaml:4" in ready["STATUS"]
            with ErrordClient(daemon.address, token=daemon.token) as errord:
                kept = decide(errord, "after-broken")
            assert kept.action == pb.RECOVERY_ACTION_USE_ALTERNATIVE  # the old manifest
            assert kept.alternative_tool == "mirror"

            (tmp_path / "tools" / "travel.yaml").write_text(CHANGED)
            daemon.process.send_signal(signal.SIGHUP)
            receive_until(notify_socket, "RELOADING")
            ready, _ = receive_until(notify_socket, "READY")
            assert "last reload refused" not in ready["STATUS"]
            assert "3 tool manifests" in ready["STATUS"]
            with ErrordClient(daemon.address, token=daemon.token) as errord:
                changed = decide(errord, "after-changed")
            assert changed.alternative_tool == "backup"
        finally:
            load.stop()
        assert load.failed == []
        assert load.answered > 0
        assert any("manifest reload refused" in line for line in daemon.lines)
        assert any("travel.yaml:4" in line for line in daemon.lines)
        scraped = scrape(daemon)
        assert 'errord_manifest_reloads_total{result="refused"} 1.0' in scraped
        assert 'errord_manifest_reloads_total{result="applied"} 1.0' in scraped
        assert "errord_manifest_reload_refused 0.0" in scraped
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    applied, refused = (
        reload_events(tmp_path / "errord.db")[1],
        reload_events(tmp_path / "errord.db")[0],
    )
    for part in ('"applied":false', "travel.yaml:4", '"by":"SIGHUP"'):
        assert part in refused
    for part in ('"applied":true', '"tools":3'):
        assert part in applied


def test_reload_manifests_rpc_returns_the_problems_and_the_tools(tmp_path: Path) -> None:
    daemon = start(tmp_path)
    try:
        with sync_operator_channel(daemon.address, daemon.token) as channel:
            operator = errord_pb2_grpc.OperatorServiceStub(channel)
            (tmp_path / "tools" / "travel.yaml").write_text(BROKEN)
            refused = operator.ReloadManifests(pb.ReloadManifestsRequest(by="alice: new tools"))
            assert not refused.applied
            assert list(refused.tools) == ["mirror", "search"]
            assert any(
                problem.startswith(f"{tmp_path / 'tools' / 'travel.yaml'}:4")
                and "max_attempts" in problem
                for problem in refused.problems
            )
            (tmp_path / "tools" / "travel.yaml").write_text(CHANGED)
            applied = operator.ReloadManifests(pb.ReloadManifestsRequest())
            assert applied.applied
            assert list(applied.tools) == ["backup", "mirror", "search"]
            assert not applied.problems
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    assert "ReloadManifests alice: new tools" in reload_events(tmp_path / "errord.db")[0]


def test_reload_without_a_manifest_directory_is_a_failed_precondition(
    daemon_process: DaemonProcess,
) -> None:
    with sync_operator_channel(daemon_process.address, daemon_process.token) as channel:
        operator = errord_pb2_grpc.OperatorServiceStub(channel)
        with pytest.raises(grpc.RpcError) as raised:
            operator.ReloadManifests(pb.ReloadManifestsRequest())
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "without a manifests directory" in str(raised.value.details())


def test_the_notify_sequence_ready_watchdog_reload_stopping(
    tmp_path: Path, notify_socket: socket.socket
) -> None:
    env = subprocess_env(
        NOTIFY_SOCKET=notify_socket.getsockname(), WATCHDOG_USEC="200000"
    )  # a ping every 0.1 s
    daemon = start(tmp_path, env=env)
    try:
        ready = receive(notify_socket)
        assert ready["READY"] == "1"
        assert ready["STATUS"].startswith(f"serving on {daemon.address}")
        assert ready["STATUS"].endswith(f"2 tool manifests, db {tmp_path / 'errord.db'}")
        pings = 0
        while pings < 3:
            pings += receive(notify_socket).get("WATCHDOG") == "1"
        daemon.process.send_signal(signal.SIGHUP)
        receive_until(notify_socket, "RELOADING")
        ready, _ = receive_until(notify_socket, "READY")
        assert ready["STATUS"].startswith("serving on")
        _, pings = receive_until(notify_socket, "WATCHDOG")  # pings go on after a reload
    finally:
        daemon.process.send_signal(signal.SIGTERM)
    stopping, _ = receive_until(notify_socket, "STOPPING")
    assert stopping["STOPPING"] == "1"
    assert daemon.terminate(signal.SIGTERM) == 0


def test_a_watchdog_for_another_process_is_not_fed(
    tmp_path: Path, notify_socket: socket.socket
) -> None:
    env = subprocess_env(
        NOTIFY_SOCKET=notify_socket.getsockname(), WATCHDOG_USEC="200000", WATCHDOG_PID="1"
    )
    daemon = start(tmp_path, env=env)
    try:
        assert receive(notify_socket)["READY"] == "1"
    finally:
        daemon.process.send_signal(signal.SIGTERM)
    _, pings = receive_until(notify_socket, "STOPPING")
    assert pings == 0
    assert daemon.terminate(signal.SIGTERM) == 0


def test_errord_reload_applies_or_lists_the_problems(tmp_path: Path) -> None:
    daemon = start(tmp_path)
    try:
        (tmp_path / "tools" / "travel.yaml").write_text(BROKEN)
        refused = run_errord(
            "reload", "--target", daemon.address, *daemon.token_args, "--by", "alice"
        )
        assert refused.returncode == 1
        assert refused.stdout.startswith("reload refused; the 2 tools in force stay (mirror, ")
        assert "travel.yaml:4" in refused.stdout
        (tmp_path / "tools" / "travel.yaml").write_text(CHANGED)
        applied = run_errord("reload", "--target", daemon.address, *daemon.token_args, "--json")
        assert applied.returncode == 0, applied.stderr
        assert json.loads(applied.stdout) == {
            "applied": True,
            "tools": ["backup", "mirror", "search"],
        }
        human = run_errord("reload", "--target", daemon.address, *daemon.token_args)
        assert human.stdout.strip() == "manifests reloaded: 3 tools (backup, mirror, search)"
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
