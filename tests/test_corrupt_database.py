"""A corrupt database at start is moved aside with a timestamp, reported, and the daemon
serves on a fresh one instead of crash-looping."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest
from errord_client import ErrordClient, pb

from errord.errors import CorruptDatabase
from errord.state.projections import Projections
from errord.state.store import Store
from errord.state.store.connection import check_sound, closed_cleanly, connect
from tests.conftest import start_process
from tests.fakes import FakeClock


def record_a_decision(address: str, turn: str) -> str:
    with ErrordClient(address) as errord:
        return errord.report_failure(
            turn_id=turn, call_id="c", tool="search", attempt=1,
            code=pb.ERROR_CODE_TIMEOUT, message="timeout",
        ).decision.decision_id  # fmt: skip


def garble_middle_pages(db: Path) -> None:
    """Overwrite pages past the first with garbage, as a bad disk or a stray write would."""
    with sqlite3.connect(db) as connection:
        [(page_size,)] = connection.execute("PRAGMA page_size")
        [(pages,)] = connection.execute("PRAGMA page_count")
    assert pages > 3
    with db.open("r+b") as file:
        for page in range(1, pages):
            file.seek(page * page_size + 100)
            file.write(b"\xde\xad\xbe\xef" * 64)


def fill_a_database(tmp_path: Path) -> Path:
    db = tmp_path / "errord.db"
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(db))
    try:
        for number in range(200):
            record_a_decision(daemon.address, f"turn-{number}")
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    return db


@pytest.mark.parametrize("damage", ["middle pages", "not a database"])
def test_a_corrupt_database_is_moved_aside_and_a_fresh_one_served(
    tmp_path: Path, damage: str
) -> None:
    db = fill_a_database(tmp_path)
    if damage == "middle pages":
        garble_middle_pages(db)
    else:
        db.write_bytes(b"this is no SQLite database, just bytes\n" * 100)
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(db))
    try:
        assert record_a_decision(daemon.address, "after")
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    [aside] = list(tmp_path.glob("errord.db.corrupt-*[0-9]Z"))
    assert "the trace database is corrupt" in daemon.stderr
    assert f"moved it aside to {aside}" in daemon.stderr
    assert f"(fresh: the corrupt one was moved to {aside})" in daemon.stderr
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert connection.execute("SELECT DISTINCT turn_id FROM events").fetchall() == [("after",)]


async def test_a_sound_database_passes_the_check(tmp_path: Path) -> None:
    state = Projections()
    store = await Store.open(tmp_path / "errord.db", FakeClock(), state)
    await store.close()
    assert store.set_aside is None
    db = await connect(tmp_path / "errord.db")
    try:
        await check_sound(db, tmp_path / "errord.db")
    finally:
        await db.close()


async def test_the_check_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "errord.db"
    path.write_bytes(b"garbage" * 1000)
    with pytest.raises(CorruptDatabase, match=f"{path}: the trace database is corrupt"):
        await connect(path)


async def test_the_check_is_skipped_only_after_a_clean_close_of_the_same_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "errord.db"
    store = await Store.open(path, FakeClock(), Projections())
    await store.close()
    note = tmp_path / "errord.db.clean"
    assert note.exists()
    assert closed_cleanly(path)  # unchanged since the clean close
    assert not note.exists()  # used up: a crash after the next open leaves none
    assert not closed_cleanly(path)
    store = await Store.open(path, FakeClock(), Projections())
    await store.close()
    with path.open("ab") as file:  # changed behind errord's back
        file.write(b"\0")
    assert not closed_cleanly(path)
