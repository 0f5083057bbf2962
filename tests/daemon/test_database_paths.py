"""A ``--db`` that cannot be errord's database stops ``errord serve`` with exit 73
(EX_CANTCREAT) and one line naming the path and the cause: no traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from errord.errors import StoreError
from errord.state.store.connection import connect
from tests.helpers import errord_command, run_errord, subprocess_env

EX_CANTCREAT = 73
NO_DAC_OVERRIDE = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
"""Run as root without the capabilities that let root open any file: permissions count."""


def refused(db: Path, result: subprocess.CompletedProcess[str]) -> str:
    """The one line ``errord serve --db db`` said; fails unless it exited 73 with just it."""
    assert result.returncode == EX_CANTCREAT, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"errord: {db}: ")
    return line


def serve(db: Path) -> subprocess.CompletedProcess[str]:
    return run_errord("serve", "--listen", "127.0.0.1:0", "--db", str(db))


def test_a_directory(tmp_path: Path) -> None:
    line = refused(tmp_path, serve(tmp_path))
    assert line.endswith("is a directory, not a database file; --db names a file")


def test_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "errord.db"
    os.mkfifo(fifo)
    line = refused(fifo, serve(fifo))
    assert line.endswith("is a FIFO, not a database file; --db names a file")


def test_a_file_errord_may_not_read(tmp_path: Path) -> None:
    db = tmp_path / "errord.db"
    db.write_bytes(b"")
    db.chmod(0o200)  # write-only
    command = errord_command("serve", "--listen", "127.0.0.1:0", "--db", str(db))
    if os.geteuid() == 0:  # root reads any file unless it lacks CAP_DAC_OVERRIDE
        if shutil.which("setpriv") is None:
            pytest.skip("root reads any file, and setpriv is not here to drop that right")
        command = [*NO_DAC_OVERRIDE, *command]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=subprocess_env(), check=False
    )
    line = refused(db, result)
    assert line.endswith(": cannot open the trace database: permission denied")


def test_a_name_too_long(tmp_path: Path) -> None:
    db = tmp_path / ("e" * 300 + ".db")
    line = refused(db, serve(db))
    assert line.endswith(": cannot open the trace database: file name too long")


def test_a_parent_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("")
    db = tmp_path / "state" / "errord" / "errord.db"
    line = refused(db, serve(db))
    assert line.endswith(f": cannot open the trace database: {tmp_path / 'state'} is a file")


def test_a_connection_that_fails_leaves_no_thread_to_call_back_after_the_loop_closed(
    tmp_path: Path,
) -> None:
    """SQLite's own refusal, past every check of the path, ends as cleanly."""
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from errord.state.store.connection import connect\n"
        "from errord.errors import StoreError\n"
        "try:\n"
        "    asyncio.run(connect(Path(sys.argv[1])))\n"
        "except StoreError as error:\n"
        "    print(error, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(),
        check=False,
    )
    assert result.stderr.splitlines() == [
        f"{tmp_path}: cannot open the trace database: unable to open database file"
    ]


async def test_connect_names_the_path_it_cannot_open(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=f"^{tmp_path}: cannot open the trace database"):
        await connect(tmp_path)
