"""Which files of a manifests directory are read, within bounds; and what in it looks
meant as a manifest but is not read.

A manifest is a file directly in the directory whose name ends in ``.yaml`` or
``.yml`` and does not start with a dot. Whatever it is (a symbolic link loop, a
named pipe, a device) it is read, and reading it reports what is wrong
(file_text.py), rather than skipping it in silence. Subdirectories are not read.
A directory of more than MAX_FILES manifests, or MAX_TOTAL_BYTES in all, is
refused whole before any file is read: loading it would take minutes; so is one
that is not under the manifests' root once resolved, or that another user may
write (root.py).
"""

from __future__ import annotations

import itertools
import os
import stat
from pathlib import Path
from typing import Final

from errord.errors import ManifestError, Problem
from errord.manifests.file_text import MAX_FILE_BYTES
from errord.manifests.root import ManifestRoot, loosely_held

MANIFEST_SUFFIXES: Final = (".yaml", ".yml")
MAX_FILES: Final = 1000
"""Manifest files a directory may hold: one tool a file is a thousand tools."""
MAX_TOTAL_BYTES: Final = 4 * MAX_FILE_BYTES
"""Bytes the manifest files of a directory may have in all: 4 MiB, some ten thousand
tools, loaded in about half a minute (a MiB of tools with schemas takes some seconds);
a file over its own limit (MAX_FILE_BYTES) is not counted, it is reported on its own."""
MAX_SCANNED: Final = 10_000
"""Entries of a subdirectory looked at for a warning that it holds manifests."""


def manifest_paths(directory: Path, root: ManifestRoot) -> list[Path]:
    """The manifest files in ``directory`` by name; ManifestError when it is not under
    ``root`` or another user may write it, when it cannot be listed, or holds too many
    of them, or too many bytes of them."""
    _check_directory(directory, root)
    paths = sorted(
        (entry for entry in _entries(directory) if _is_manifest(entry)),
        key=lambda entry: entry.name,
    )
    if len(paths) > MAX_FILES:
        raise _directory_error(
            directory,
            f"{len(paths):,} manifest files, more than the {MAX_FILES:,} a directory may hold;"
            " nothing was read (put more tools in each file)",
        )
    total = sum(size for path in paths if (size := _size(path, root)) <= MAX_FILE_BYTES)
    if total > MAX_TOTAL_BYTES:
        raise _directory_error(
            directory,
            f"its manifest files have {total:,} bytes, more than the {MAX_TOTAL_BYTES:,}"
            " a directory may have in all; nothing was read",
        )
    return paths


def overlooked(directory: Path) -> list[str]:
    """What in ``directory`` looks meant as a manifest but is not read (``not_read``), each
    as a warning; and that the directory has no manifest file at all."""
    entries = _sorted_entries(directory)
    if entries is None:
        return []  # manifest_paths reports it
    warnings = not_read(directory)
    if not any(map(_is_manifest, entries)):
        warnings.append(f"{directory}: no manifest files (*.yaml, *.yml) in it")
    return warnings


def not_read(directory: Path) -> list[str]:
    """What in ``directory`` looks meant as a manifest but is not read, each as a warning:
    files whose suffix is .yaml or .yml in another case, subdirectories holding such
    files."""
    warnings = []
    for entry in _sorted_entries(directory) or []:
        if entry.name.startswith("."):
            continue
        if entry.is_file() and entry.suffix.lower() in MANIFEST_SUFFIXES:
            if entry.suffix not in MANIFEST_SUFFIXES:
                warnings.append(
                    f"{entry}: not read: a manifest's name must end in .yaml or .yml, in lower case"
                )
        elif entry.is_dir() and _holds_manifests(entry):
            warnings.append(f"{entry}: not read: manifests in subdirectories are not loaded")
    return warnings


def _sorted_entries(directory: Path) -> list[Path] | None:
    """The directory's entries by name; None when it cannot be listed."""
    try:
        return sorted(directory.iterdir(), key=lambda entry: entry.name)
    except OSError:
        return None


def _entries(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except FileNotFoundError:
        raise _directory_error(directory, "manifest directory does not exist") from None
    except NotADirectoryError:
        raise _directory_error(directory, "not a directory") from None
    except OSError as exc:
        raise _directory_error(directory, f"cannot list directory: {exc.strerror}") from None


def _is_manifest(path: Path) -> bool:
    """Named as a manifest, and not a directory (anything else is read, or reported)."""
    return path.suffix in MANIFEST_SUFFIXES and not path.name.startswith(".") and not path.is_dir()


def _holds_manifests(directory: Path) -> bool:
    """Whether the first MAX_SCANNED entries below ``directory`` include a manifest."""
    try:
        nested = itertools.islice(directory.rglob("*"), MAX_SCANNED)
        return any(entry.suffix.lower() in MANIFEST_SUFFIXES for entry in nested)
    except OSError:
        return False


def _size(path: Path, root: ManifestRoot) -> int:
    """The file's size; 0 when it has none, or is not under ``root`` (reading it reports
    why)."""
    real = os.path.realpath(path)
    if not root.holds(real):
        return 0
    try:
        return os.stat(real).st_size
    except OSError:
        return 0


def _check_directory(directory: Path, root: ManifestRoot) -> None:
    """ManifestError when ``directory`` is not under ``root`` once resolved, or another
    user may write it; listing it reports what else is wrong with it."""
    real = os.path.realpath(directory)
    if not root.holds(real):
        raise _directory_error(directory, f"{root.outside(directory)}; nothing was read")
    try:
        info = os.stat(real)
    except OSError:
        return
    if not stat.S_ISDIR(info.st_mode):
        return
    loose = loosely_held(info, directory)
    if loose is not None:
        why, fix = loose
        raise _directory_error(directory, f"{why}; nothing was read (run: {fix})")


def _directory_error(directory: Path, message: str) -> ManifestError:
    return ManifestError([Problem(str(directory), 0, "", message)])
