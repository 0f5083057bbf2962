"""Which files errord reads as manifests: those under a root, that only their owner may write.

A manifest is configuration the daemon acts on, and its problems quote what they found
(``expected a mapping, got '...'``) to whoever asked for the load, ReplayManifests'
caller included: so errord reads as a manifest only a file an operator put there for it.

- Under a root (ManifestRoot): the ``manifests_root`` setting, else the real parent of
  the manifests directory. A directory to load must be under it once resolved (``..``
  and symbolic links followed); a manifest that is a symbolic link leading out of it is
  refused before it is opened, and the file opened is checked again on its descriptor
  (file_text.py), so that a link swapped in meanwhile is refused too, never read.
- Written by its owner only, as sshd's StrictModes asks of a key: a manifest, or its
  directory, that its group or every user may write, or that belongs to a user other
  than root and the one errord runs as, is refused, with the command that fixes it;
  so is a manifest that is a symbolic link such a user made.
"""

from __future__ import annotations

import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

SETTING: Final = "manifests_root"
"""The setting that names the root; errors name it, so that an operator knows what to set."""
_WRITERS: Final = ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "every user"))


@dataclass(frozen=True, slots=True)
class ManifestRoot:
    """The directory manifests may be read under, itself included."""

    path: Path
    """Its real path: absolute, no symbolic link, no ``..``."""

    @classmethod
    def at(cls, directory: Path) -> ManifestRoot:
        """The root at ``directory``, resolved."""
        return cls(Path(os.path.realpath(directory)))

    @classmethod
    def around(cls, manifests: Path) -> ManifestRoot:
        """The root of a manifests directory without a setting: its real parent."""
        return cls(Path(os.path.realpath(manifests)).parent)

    @classmethod
    def configured(cls, manifests: Path | None, setting: Path | None) -> ManifestRoot | None:
        """The daemon's root: ``setting`` (manifests_root), else around ``manifests``; None
        with neither: such a daemon has no manifests, and reads none for a replay."""
        if setting is not None:
            return cls.at(setting)
        return None if manifests is None else cls.around(manifests)

    def holds(self, real: str | Path) -> bool:
        """Whether ``real``, a real path, is the root or under it."""
        return Path(real).is_relative_to(self.path)

    def holds_opened(self, descriptor: int, real: str) -> bool:
        """Whether the file open on ``descriptor``, opened at ``real``, is under the root:
        its path as the kernel has it (/proc/self/fd); without /proc, whether ``real`` is
        under it, still a real path, and names the very file opened."""
        try:
            return self.holds(os.readlink(f"/proc/self/fd/{descriptor}"))
        except OSError:
            pass
        try:
            opened, there = os.fstat(descriptor), os.stat(real)
        except OSError:
            return False
        same_file = (opened.st_dev, opened.st_ino) == (there.st_dev, there.st_ino)
        return same_file and os.path.realpath(real) == real and self.holds(real)

    def outside(self, path: Path) -> str:
        """Why ``path``, whose real path is not under the root, is not read."""
        what = "a symbolic link leading outside" if path.is_symlink() else "outside"
        return f"{what} {self.path}, where manifests are read ({SETTING})"


def loosely_held(info: os.stat_result, path: Path) -> tuple[str, str] | None:
    """Why the file or directory at ``path``, of status ``info``, is another user's to
    change, and the command that fixes it; None when only root or the user errord runs
    as may change it."""
    mode = stat.S_IMODE(info.st_mode)
    writers = " and ".join(who for bit, who in _WRITERS if mode & bit)
    quoted = shlex.quote(str(path))
    if writers:
        why = f"writable by {writers} (mode {mode:04o}): another user could change it"
        return why, f"chmod go-w {quoted}"
    owner = _foreign_owner(info)
    return None if owner is None else (f"owned by {owner}", f"chown {os.geteuid()} {quoted}")


def foreign_link(path: Path) -> tuple[str, str] | None:
    """Why ``path``, a symbolic link another user made, is not followed, and the command
    that fixes it; None when it is no link, or root's or errord's user's. (A link's mode
    means nothing: whoever owns it may point it elsewhere.)"""
    try:
        info = os.lstat(path)
    except OSError:
        return None  # opening it reports why
    owner = _foreign_owner(info) if stat.S_ISLNK(info.st_mode) else None
    if owner is None:
        return None
    return f"a symbolic link owned by {owner}", f"chown -h {os.geteuid()} {shlex.quote(str(path))}"


def _foreign_owner(info: os.stat_result) -> str | None:
    """Who owns a file, when it is neither root nor the user errord runs as."""
    user = os.geteuid()
    if info.st_uid in (0, user):
        return None
    return f"uid {info.st_uid}, neither root nor errord's user (uid {user})"
