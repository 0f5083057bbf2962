"""Faults of the disk under the real daemon: a full disk (a small tmpfs) and injected I/O
errors (strace's fault injection). While writes fail, health and metrics say so and
reports are refused, never acknowledged unrecorded; when the fault goes away, service
resumes by itself. Skipped where tmpfs cannot be mounted or strace is missing."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from errord_client import ErrordClient, pb

from tests.helpers import (
    NOT_SERVING,
    SERVING,
    DaemonProcess,
    health,
    scrape,
    spawn,
    start_process,
    subprocess_env,
    wait_for_health,
)

TMPFS_BYTES = 4 * 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def report(errord: ErrordClient, turn: str) -> pb.RecoveryDecision:
    return errord.report_failure(
        turn_id=turn, call_id="c", tool="search", attempt=1,
        code=pb.ERROR_CODE_TIMEOUT, message="timeout after 30s",
    ).decision  # fmt: skip


def recorded(db: Path) -> set[str]:
    with sqlite3.connect(db) as connection:
        return {turn for (turn,) in connection.execute("SELECT turn_id FROM events")}


def report_until_refused(errord: ErrordClient, prefix: str, acknowledged: list[str]) -> str:
    """Report until one is refused; its status code's name."""
    for number in range(100_000):
        turn = f"{prefix}-{number}"
        try:
            report(errord, turn)
        except grpc.RpcError as error:
            return str(error.code().name)
        acknowledged.append(turn)
    raise AssertionError("no report was ever refused")


def test_a_full_disk_is_reported_and_service_resumes_when_space_is_freed(
    small_disk: Path,
) -> None:
    db = small_disk / "errord.db"
    daemon = start_process(
        "--listen", "127.0.0.1:0", "--db", str(db), "--metrics-listen", "127.0.0.1:0"
    )
    ballast = small_disk / "ballast"
    acknowledged: list[str] = []
    try:
        with ErrordClient(daemon.address) as errord:
            report(errord, "before")
            acknowledged.append("before")
            free = shutil.disk_usage(small_disk).free
            ballast.write_bytes(b"\0" * max(0, free - 64 * 1024))  # leave 64 KiB
            code = report_until_refused(errord, "filling", acknowledged)
            assert code == "UNAVAILABLE"
            assert wait_for_health(daemon.address, NOT_SERVING) == NOT_SERVING
            assert "errord_store_writable 0.0" in scrape(daemon)
            ballast.unlink()
            assert wait_for_health(daemon.address, SERVING) == SERVING
            report(errord, "after")
            acknowledged.append("after")
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    assert set(acknowledged) <= recorded(db)
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert "cannot write the trace database" in daemon.stderr
    assert "database or disk is full" in daemon.stderr


def stop_traced(daemon: DaemonProcess) -> None:
    """SIGTERM to the daemon strace runs (strace itself would only detach), then wait."""
    children = subprocess.run(
        ["pgrep", "-P", str(daemon.process.pid)], capture_output=True, text=True, check=False
    ).stdout.split()
    for child in children:
        subprocess.run(["kill", "-TERM", child], check=False)
    assert daemon.terminate(signal.SIGTERM) == 0


def test_injected_io_errors_are_reported_and_service_resumes(tmp_path: Path) -> None:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    db = tmp_path / "errord.db"
    # Every fdatasync from the 40th to the 70th fails with EIO: SQLite's commits of the WAL.
    command = [
        strace, "-f", "-qq", "--seccomp-bpf", "-o", "/dev/null",
        "-e", "trace=fdatasync", "-e", "inject=fdatasync:error=EIO:when=40..70",
        sys.executable, "-m", "errord", "serve", "--listen", "127.0.0.1:0", "--db", str(db),
    ]  # fmt: skip
    daemon: DaemonProcess = spawn(command, subprocess_env())
    acknowledged: list[str] = []
    try:
        with ErrordClient(daemon.address) as errord:
            code = report_until_refused(errord, "before", acknowledged)
            assert code == "UNAVAILABLE"
            assert (
                health(daemon.address) == NOT_SERVING
                or wait_for_health(daemon.address, NOT_SERVING) == NOT_SERVING
            )
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # the injection window ends: writes work
                try:
                    report(errord, f"after-{len(acknowledged)}")
                    acknowledged.append(f"after-{len(acknowledged)}")
                    break
                except grpc.RpcError:
                    time.sleep(0.05)
            assert wait_for_health(daemon.address, SERVING) == SERVING
    finally:
        stop_traced(daemon)
    assert any(turn.startswith("after-") for turn in acknowledged)
    assert set(acknowledged) <= recorded(db)
    assert "disk I/O error" in daemon.stderr
