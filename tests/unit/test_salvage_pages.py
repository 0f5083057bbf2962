"""The page reader of salvage decodes rows as SQLite stores them: every column type,
payloads that spill onto overflow pages, and nothing from a page that is not a table
leaf."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from errord.state.store.pages import table_rows

VALUES = [
    None, 0, 1, -1, 127, -129, 40_000, -8_388_609, 2**31, -(2**40), 2**62, 1.5, "",
    "text é", b"", b"\x00\xff", "x" * 5_000, b"y" * 70_000,
]  # fmt: skip
"""One of each serial type: integers of 0 to 8 bytes, a float, texts and blobs, and
payloads longer than a page."""


def test_every_row_reads_as_sqlite_reads_it(tmp_path: Path) -> None:
    db = tmp_path / "rows.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a, b)")
        connection.execute("CREATE INDEX t_by_a ON t (a)")  # index pages: not rows
        connection.executemany(
            "INSERT INTO t (id, a, b) VALUES (?, ?, ?)",
            [(number, value, number) for number, value in enumerate(VALUES, start=1)],
        )
        stored = connection.execute("SELECT id, a, b FROM t").fetchall()
    connection.close()
    read = {
        rowid: (rowid, *values[1:])
        for rowid, values in table_rows(db, lambda rowid: True)
        if len(values) == 3
    }
    assert [read[rowid] for rowid in sorted(read)] == stored


def test_only_wanted_rowids_are_decoded(tmp_path: Path) -> None:
    db = tmp_path / "rows.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a)")
        connection.executemany("INSERT INTO t (a) VALUES (?)", [("v",)] * 100)
    connection.close()
    rows = [rowid for rowid, values in table_rows(db, lambda rowid: rowid % 10 == 0)]
    assert sorted(rows) == list(range(10, 101, 10))
