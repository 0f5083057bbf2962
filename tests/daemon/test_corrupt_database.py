"""A corrupt database at start is salvaged: the trace events that can still be read go
into a fresh database that takes its place, its projections are rebuilt from them, the
damaged file is moved aside unchanged, and the log and STATUS= say how many events were
saved and lost. The daemon serves instead of crash-looping."""

from __future__ import annotations

import signal
import socket
import sqlite3
from pathlib import Path

import pytest
from errord_client import ErrordClient, pb

from errord.decide.model import ReportKey
from errord.decide.model.events import EventKind
from errord.errors import CorruptDatabase
from errord.state.projections import Projections
from errord.state.store import Store
from errord.state.store.connection import check_sound, closed_cleanly, connect
from tests.fakes import FakeClock
from tests.helpers import start_process, subprocess_env
from tests.reliability.salvage import run as damage_and_restart


def record_a_decision(address: str, turn: str) -> str:
    with ErrordClient(address) as errord:
        return errord.report_failure(
            turn_id=turn, call_id="c", tool="search", attempt=1,
            code=pb.ERROR_CODE_TIMEOUT, message="timeout",
        ).decision.decision_id  # fmt: skip


def fill_a_database(tmp_path: Path, decisions: int = 200) -> tuple[Path, dict[str, str]]:
    """A database of ``decisions`` reports, one a turn; decision id by turn."""
    db = tmp_path / "errord.db"
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(db))
    try:
        recorded = {
            turn: record_a_decision(daemon.address, turn)
            for turn in (f"turn-{number}" for number in range(decisions))
        }
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    return db, recorded


def overwrite_pages(db: Path, numbers: list[int]) -> None:
    with sqlite3.connect(db) as connection:
        [(page_size,)] = connection.execute("PRAGMA page_size")
    with db.open("r+b") as file:
        for number in numbers:
            file.seek((number - 1) * page_size)
            file.write(b"\xde\xad\xbe\xef" * (page_size // 4))


def events(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        count: int = connection.execute("SELECT count(*) FROM events").fetchone()[0]
        return count


def turns(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        return [turn for (turn,) in connection.execute("SELECT DISTINCT turn_id FROM events")]


def test_a_fifth_of_the_pages_overwritten_keeps_every_decision_on_the_others(
    tmp_path: Path, notify_socket: socket.socket
) -> None:
    """The short form of the reliability report's probe, against the daemon process."""
    env = subprocess_env(NOTIFY_SOCKET=notify_socket.getsockname())
    results = damage_and_restart(150, tmp_path, damage=0.2, seed=17, env=env)
    assert results.problems == []
    assert results.pages_damaged == round(0.2 * (results.pages - 2))
    assert 0 < results.saved == results.on_sound_pages < results.events
    assert results.lost == results.events - results.saved
    assert results.replays_checked > 0
    [aside] = list(tmp_path.glob("errord.db.corrupt-*[0-9]Z"))
    status = notify_socket.recv(4096).decode()
    assert (
        f"(salvaged: {results.saved} trace events saved, {results.lost} lost; "
        f"the damaged database was moved aside to {aside})"
    ) in status


async def test_a_damaged_interior_page_hides_no_event_on_the_pages_below_it(
    tmp_path: Path,
) -> None:
    db, recorded = fill_a_database(tmp_path)
    before = events(db)
    with sqlite3.connect(db) as connection:
        interior = [
            number
            for (number,) in connection.execute(
                "SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'internal'"
            )
        ]
    assert interior  # 200 decisions take more than one leaf
    overwrite_pages(db, interior)
    state = Projections()
    store = await Store.open(db, FakeClock(), state)
    try:
        assert store.salvage is not None
        assert (store.salvage.saved, store.salvage.lost) == (before, 0)
        for turn, decision_id in recorded.items():
            key = ReportKey(turn, "c", "search", 1)
            event = await store.find(EventKind.FAILURE, key)
            assert event is not None
            assert event.detail.decision.decision_id == decision_id  # type: ignore[union-attr]
        folded = await store.fold_trace(state.all)
        assert [projection.snapshot() for projection in state.all] == folded
    finally:
        await store.close()


async def test_events_lost_are_counted_when_no_place_recording_the_highest_can_be_read(
    tmp_path: Path,
) -> None:
    db, _ = fill_a_database(tmp_path)
    before = events(db)
    with sqlite3.connect(db) as connection:
        leaves = connection.execute(
            "SELECT pageno, ncell FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' "
            "ORDER BY path"
        ).fetchall()
        recorders = [  # every page SQLite reads the highest sequence number from
            number
            for (number,) in connection.execute(
                "SELECT pageno FROM dbstat WHERE pagetype = 'internal' AND name = 'events' "
                "OR name IN ('events_by_turn', 'state', 'state_by_recency')"
            )
        ]
    middle_leaf, cells = leaves[len(leaves) // 2]
    overwrite_pages(db, [middle_leaf, *recorders])
    store = await Store.open(db, FakeClock(), Projections())
    await store.close()
    assert store.salvage is not None
    assert (store.salvage.saved, store.salvage.lost) == (before - cells, cells)


def test_a_file_that_is_no_database_is_moved_aside_unchanged_and_a_fresh_one_served(
    tmp_path: Path,
) -> None:
    db = tmp_path / "errord.db"
    garbage = b"this is no SQLite database, just bytes\n" * 100
    db.write_bytes(garbage)
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(db))
    try:
        assert record_a_decision(daemon.address, "after")
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    [aside] = list(tmp_path.glob("errord.db.corrupt-*[0-9]Z"))
    assert aside.read_bytes() == garbage
    assert "the trace database is corrupt" in daemon.stderr
    assert "no trace event saved (the salvage failed: no trace event could be read" in (
        daemon.stderr
    )
    assert f"the damaged database was moved aside to {aside})" in daemon.stderr
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert turns(db) == ["after"]


def test_a_salvage_that_fails_keeps_the_damaged_database_aside(tmp_path: Path) -> None:
    db, _ = fill_a_database(tmp_path, decisions=20)
    overwrite_pages(db, [3])
    original = db.read_bytes()
    (tmp_path / "errord.db.salvage").mkdir()  # where the salvage would build its database
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(db))
    try:
        assert record_a_decision(daemon.address, "after")
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    [aside] = list(tmp_path.glob("errord.db.corrupt-*[0-9]Z"))
    assert aside.read_bytes() == original
    assert "no trace event saved (the salvage failed: " in daemon.stderr
    assert turns(db) == ["after"]


async def test_a_salvage_cut_short_is_done_again_from_the_start(tmp_path: Path) -> None:
    db, _ = fill_a_database(tmp_path, decisions=20)
    before = events(db)
    overwrite_pages(db, [3])
    (tmp_path / "errord.db.salvage").write_bytes(b"half a database")  # a crash left it
    store = await Store.open(db, FakeClock(), Projections())
    await store.close()
    assert store.salvage is not None
    assert store.salvage.saved + store.salvage.lost == before
    assert not (tmp_path / "errord.db.salvage").exists()


async def test_a_sound_database_passes_the_check(tmp_path: Path) -> None:
    state = Projections()
    store = await Store.open(tmp_path / "errord.db", FakeClock(), state)
    await store.close()
    assert store.salvage is None
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
