"""The trace database, its WAL and its shared-memory index are the daemon user's alone
(0600) under the usual umask 022: they hold tool inputs, error texts and user ids. An
existing database whose files others may read is tightened at start, and the log says so.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.state.store.connection import make_private
from tests.helpers import DaemonProcess, start_process

FILES = ("", "-wal", "-shm")


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The umask most systems give a service: files are created 0644 unless asked
    otherwise. The daemon process inherits it."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def serving(db: Path) -> DaemonProcess:
    """The daemon on ``db``, once a decision is committed (the WAL and its index exist)."""
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(db))
    with grpc.insecure_channel(daemon.address) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        error = pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="timed out")
        report = pb.ReportFailureRequest(
            turn_id="t", call_id="c1", tool="search", attempt=1, error=error, user_id="ann"
        )
        stub.ReportFailure(report, timeout=30)
    return daemon


def modes(db: Path) -> dict[str, str]:
    return {
        db.name + suffix: oct(stat.S_IMODE(db.with_name(db.name + suffix).stat().st_mode))
        for suffix in FILES
    }


@pytest.mark.usefixtures("umask_022")
def test_a_new_database_and_its_wal_and_index_are_created_0600(tmp_path: Path) -> None:
    db = tmp_path / "errord.db"
    daemon = serving(db)
    try:
        created = modes(db)
    finally:
        assert daemon.terminate() == 0
    assert created == {"errord.db": "0o600", "errord.db-wal": "0o600", "errord.db-shm": "0o600"}
    assert "open to others" not in daemon.stderr


@pytest.mark.usefixtures("umask_022")
def test_an_existing_database_open_to_others_is_made_private_at_start(tmp_path: Path) -> None:
    """A database created 0644 by an earlier errord: each of its files is made 0600 at
    start, with a warning naming it and its old mode."""
    db = tmp_path / "errord.db"
    assert serving(db).terminate() == 0
    db.chmod(0o644)
    daemon = serving(db)
    try:
        tightened = modes(db)
    finally:
        assert daemon.terminate() == 0
    assert tightened == {"errord.db": "0o600", "errord.db-wal": "0o600", "errord.db-shm": "0o600"}
    [warning] = [line for line in daemon.lines if "open to others" in line]
    assert warning.startswith("level=warning")
    assert f"{db} was mode 0644, open to others; now 0600" in warning


def test_only_the_rights_of_others_are_taken_never_any_given(tmp_path: Path) -> None:
    """A read-only database stays read-only for its owner: errord takes rights, never
    gives any (a database it may not write is refused later, naming the cause)."""
    db = tmp_path / "errord.db"
    db.write_bytes(b"")
    wal = db.with_name("errord.db-wal")
    wal.write_bytes(b"")
    db.chmod(0o444)
    wal.chmod(0o620)
    make_private(db)
    assert stat.S_IMODE(db.stat().st_mode) == 0o400
    assert stat.S_IMODE(wal.stat().st_mode) == 0o600
