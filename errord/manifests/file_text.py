"""A manifest file's text, read within bounds: a regular file under the manifests' root
(root.py) that only its owner may write, of at most MAX_FILE_BYTES, UTF-8.

The file's real path must be under the root before it is opened; it is opened there
without following a symbolic link and without blocking (a FIFO named ``tools.yaml``
answers at once instead of waiting for a writer), and checked on the open descriptor,
so that what is read is what was checked: where the kernel has it, its kind, its mode
and owner, its size, all before a byte is read; no more than the limit is ever read,
should it grow meanwhile.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

from errord.manifests.root import SETTING, ManifestRoot, foreign_link, loosely_held

MAX_FILE_BYTES: Final = 1 << 20
"""Bytes one manifest file may have (1 MiB: thousands of tools). PyYAML composes about
a MiB in three seconds, so one file is read in seconds, never for minutes."""

_OPEN_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW
_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class UnreadableFile(Exception):
    """Why a manifest file's text cannot be had; ``line`` is 0 for the whole file."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def read_text(path: Path, root: ManifestRoot, limit: int = MAX_FILE_BYTES) -> str:
    """The file's text; UnreadableFile saying why not (a symbolic link out of ``root``,
    missing, a symbolic link loop, not a regular file, writable by another user, more
    than ``limit`` bytes, not UTF-8). A file refused for where it is or who may write
    it is not read: nothing of it is ever quoted."""
    descriptor = _opened(path, root)
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            kind = _kind(info.st_mode)
            raise UnreadableFile(f"not a regular file ({kind}); a manifest must be one")
        loose = loosely_held(info, path)
        if loose is not None:
            why, fix = loose
            raise UnreadableFile(f"{why}; not read (run: {fix})")
        if info.st_size > limit:
            raise UnreadableFile(_too_large(info.st_size, limit))
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise UnreadableFile(f"cannot read file: {exc.strerror}") from None
    if len(data) > limit:  # it grew since fstat
        raise UnreadableFile(_too_large(len(data), limit))
    return _decoded(data)


def _opened(path: Path, root: ManifestRoot) -> int:
    """A descriptor of the file at ``path``, opened at its real path, which is under
    ``root``; UnreadableFile when it is not, when ``path`` is a link another user made,
    or when what was opened is not under ``root`` (a directory of the path replaced by
    a symbolic link between the check and the open)."""
    real = os.path.realpath(path)
    if not root.holds(real):
        raise UnreadableFile(f"{root.outside(path)}; not read")
    foreign = foreign_link(path)
    if foreign is not None:
        why, fix = foreign
        raise UnreadableFile(f"{why}; not read (run: {fix})")
    try:
        descriptor = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        raise UnreadableFile(_open_problem(exc)) from None
    if not root.holds_opened(descriptor, real):
        os.close(descriptor)
        raise UnreadableFile(
            f"changed while it was opened: the file opened is outside {root.path},"
            f" where manifests are read ({SETTING}); not read"
        )
    return descriptor


def _open_problem(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return f"cannot read file: a loop of symbolic links ({error.strerror})"
    if error.errno == errno.ENXIO:  # opening a socket
        return "not a regular file (a socket); a manifest must be one"
    return f"cannot read file: {error.strerror}"


def _kind(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "not a file")


def _too_large(size: int, limit: int) -> str:
    return (
        f"{size:,} bytes, more than the {limit:,} a manifest file may have; not read"
        " (split the tools across files)"
    )


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
