"""Opening the database: one daemon per file (``DB.lock``), one configured connection.

The database holds tool inputs, error texts and user ids: its files are the daemon
user's alone (0600). The database file is created 0600 before SQLite opens it, and
SQLite gives its WAL and shared-memory files the mode of the database file; an existing
database that others may read is tightened at start, and the log says so.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import sqlite3
import stat
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import aiosqlite

from errord.errors import CorruptDatabase, StoreError

LOG = logging.getLogger("errord")
BUSY_TIMEOUT_MS: Final = 5000
MINIMUM_SQLITE: Final = (3, 32)
"""Multi-row inserts of up to 32766 bound values need SQLite 3.32."""


class OwnerLock:
    """An exclusive lock on ``DB.lock``: one daemon per database.

    The store's sequence numbers, group commits and in-memory state assume a
    single writer.
    """

    def __init__(self, descriptor: int) -> None:
        self._descriptor: int | None = descriptor

    @classmethod
    def acquire(cls, path: Path) -> OwnerLock:
        lock = path.with_name(path.name + ".lock")
        if not path.parent.is_dir():
            raise StoreError(
                f"{path}: the directory {path.parent} does not exist; create it (under "
                "systemd, StateDirectory= does) or choose another --db"
            )
        try:
            descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreError(f"{path}: cannot create its lock file {lock}: {_cause(exc)}") from exc
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(descriptor)
            raise StoreError(f"{path}: in use by another errord (it holds {lock})") from exc
        return cls(descriptor)

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


async def connect(path: Path) -> aiosqlite.Connection:
    """A connection to ``path`` in WAL mode with synchronous=FULL, in autocommit mode:
    every statement is its own transaction unless BEGIN opened one."""
    if sqlite3.sqlite_version_info < MINIMUM_SQLITE:
        needed = ".".join(map(str, MINIMUM_SQLITE))
        raise StoreError(
            f"{path}: SQLite {sqlite3.sqlite_version} is too old; errord needs {needed}"
        )
    make_private(path)
    connecting = aiosqlite.connect(path, isolation_level=None)
    try:
        db = await connecting
    except (OSError, sqlite3.Error) as exc:
        # aiosqlite stops its thread without waiting; wait, or it calls back into a loop
        # that asyncio.run has closed by then (two "Event loop is closed" tracebacks).
        await asyncio.to_thread(connecting._thread.join)
        raise StoreError(f"{path}: cannot open the trace database: {exc}") from exc
    try:
        await _configure(db, path)
    except BaseException as exc:
        await db.close()
        if getattr(exc, "sqlite_errorname", "").startswith(CORRUPTION):
            raise CorruptDatabase(f"{path}: the trace database is corrupt: {exc}") from exc
        if isinstance(exc, sqlite3.Error):
            raise StoreError(f"{path}: cannot open the trace database: {exc}") from exc
        raise
    return db


OTHERS: Final = 0o077
"""The permission bits of the file's group and of everyone else."""


def make_private(path: Path) -> None:
    """Create the database file with mode 0600 if it does not exist, whatever the umask;
    take every permission of others (group, world) from the files of an existing one,
    logging each file tightened. Raises StoreError when the file cannot be created."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        return  # SQLite takes an empty file for an empty database
    except FileExistsError:
        pass
    except OSError as exc:
        raise StoreError(f"{path}: cannot create the trace database: {_cause(exc)}") from exc
    for suffix in COMPANIONS:
        _tighten(path.with_name(path.name + suffix))


def _tighten(file: Path) -> None:
    """Take the permissions of others from ``file``, if it exists and has any."""
    try:
        mode = stat.S_IMODE(file.stat().st_mode)
    except OSError:
        return  # no such file; one that cannot be read is reported when SQLite opens it
    if not mode & OTHERS:
        return
    try:
        file.chmod(mode & ~OTHERS)
    except OSError as exc:
        LOG.warning(
            "%s is mode %04o, open to others, and cannot be made private: %s",
            file,
            mode,
            _cause(exc),
        )
        return
    LOG.warning(
        "%s was mode %04o, open to others; now %04o: it holds tool inputs, error texts "
        "and user ids",
        file,
        mode,
        mode & ~OTHERS,
    )


FILE_KINDS: Final = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def check_path(path: Path) -> None:
    """Raise StoreError, one line naming ``path`` and the cause, when ``path`` cannot be
    errord's database file: not a regular file, not readable, a name too long, a parent
    that is a file. A path that does not exist yet passes."""
    try:
        mode = path.stat().st_mode
        if stat.S_ISREG(mode):
            os.close(os.open(path, os.O_RDONLY | os.O_CLOEXEC))  # writes are tried later
    except FileNotFoundError:
        return
    except NotADirectoryError as exc:
        file = next((parent for parent in reversed(path.parents) if parent.is_file()), path)
        raise StoreError(f"{path}: cannot open the trace database: {file} is a file") from exc
    except OSError as exc:
        raise StoreError(f"{path}: cannot open the trace database: {_cause(exc)}") from exc
    kind = FILE_KINDS.get(stat.S_IFMT(mode))
    if kind is not None:
        raise StoreError(f"{path}: is {kind}, not a database file; --db names a file")


def _cause(error: OSError) -> str:
    """The OS's words for ``error``, without the path it repeats."""
    return (error.strerror or str(error)).lower()


async def _configure(db: aiosqlite.Connection, path: Path) -> None:
    if await pragma(db, "page_count") == 0:
        # A new database only (an existing one keeps its mode, and may be read-only):
        # pages trace retention frees go back to the file system, so the file shrinks.
        await pragma(db, "auto_vacuum = INCREMENTAL")
    mode = await pragma(db, "journal_mode = WAL")
    if mode != "wal":
        raise StoreError(f"{path}: cannot use WAL journal mode (got {mode!r})")
    await pragma(db, "synchronous = FULL")
    await pragma(db, "foreign_keys = ON")
    await pragma(db, "secure_delete = ON")  # deleted rows are zeroed, not left in free pages
    await pragma(db, f"busy_timeout = {BUSY_TIMEOUT_MS}")
    # After a checkpoint, a WAL that a burst made large is cut back to this.
    await pragma(db, f"journal_size_limit = {JOURNAL_SIZE_LIMIT}")


JOURNAL_SIZE_LIMIT = 16 * 1024 * 1024
"""Bytes the WAL is truncated to after a checkpoint."""
CORRUPTION = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
"""SQLite's names for a file whose pages are not a sound database."""


async def check_sound(db: aiosqlite.Connection, path: Path) -> None:
    """Raise CorruptDatabase unless SQLite's quick_check finds the file sound (it reads
    every page: a time proportional to the database's size)."""
    try:
        rows = list(await db.execute_fetchall("PRAGMA quick_check(5)"))
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorname", "").startswith(CORRUPTION):
            raise CorruptDatabase(f"{path}: the trace database is corrupt: {exc}") from exc
        raise
    problems = [str(row[0]) for row in rows]
    if problems != ["ok"]:
        raise CorruptDatabase(f"{path}: the trace database is corrupt: {'; '.join(problems)}")


def mark_closed_cleanly(path: Path) -> None:
    """Note that the database was closed cleanly, as it is now (its size and time)."""
    try:
        stat = path.stat()
        path.with_name(path.name + ".clean").write_text(f"{stat.st_size} {stat.st_mtime_ns}")
    except OSError:
        pass  # the next start checks the database: slower, never wrong


def closed_cleanly(path: Path) -> bool:
    """True when the database was closed cleanly and has not changed since; the note is
    used up either way. quick_check reads every page (about 11 s a GB): it is worth it
    after a crash or a change behind errord's back, not after every clean restart."""
    note = path.with_name(path.name + ".clean")
    try:
        recorded = note.read_text()
        note.unlink()
        stat = path.stat()
    except OSError:
        return False
    return recorded == f"{stat.st_size} {stat.st_mtime_ns}"


COMPANIONS: Final = ("", "-wal", "-shm")
"""The suffixes of a database's files: itself, its WAL and its shared-memory index."""


def set_aside(path: Path, now: datetime) -> Path:
    """Move a corrupt database (and its WAL and shared-memory files) aside, named with
    ``now``; the new name of the database file."""
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    move_database(path, aside)
    return aside


def move_database(path: Path, to: Path) -> None:
    """Rename the database at ``path``, with its WAL and shared-memory files, to ``to``."""
    for suffix in COMPANIONS:
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            companion.rename(to.with_name(to.name + suffix))


def remove_database(path: Path) -> None:
    """Delete the database at ``path`` with its WAL and shared-memory files, if any."""
    for suffix in COMPANIONS:
        path.with_name(path.name + suffix).unlink(missing_ok=True)


async def check_writable(db: aiosqlite.Connection, path: Path) -> None:
    """Raise StoreError unless a transaction can write the database (a read-only or
    immutable file opens, and only fails at the first write)."""
    try:
        await db.execute("BEGIN IMMEDIATE")
        try:
            version = await pragma(db, "user_version")
            await db.execute(f"PRAGMA user_version = {int(version)}")
            await db.commit()
        finally:
            if db.in_transaction:
                await db.rollback()
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot write the trace database: {exc}") from exc


async def pragma(db: aiosqlite.Connection, statement: str) -> Any:
    """Run ``PRAGMA statement``; its first value, or None when it returns none."""
    rows = list(await db.execute_fetchall(f"PRAGMA {statement}"))
    return rows[0][0] if rows else None
