"""A unix socket path, claimed without taking over a live socket and released only if ours.

grpc binds a unix socket by first unlinking whatever socket is at the path (a
running daemon's included) and unlinks the path again at shutdown, whoever's it
is by then. So grpc binds in a private directory (mode 0700) beside the path;
errord sets the socket's mode and group there and publishes it with link(),
which fails if anything is at the path. No one can connect while the mode is
still wrong, two daemons cannot both claim a path, and grpc's unlinks hit only
the private name. At shutdown the path is removed if it is still the same inode.
"""

from __future__ import annotations

import contextlib
import grp
import logging
import os
import socket
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from errord.errors import ConfigError, ListenError

log = logging.getLogger(__name__)

SOCKET_MODE = 0o660
PROBE_TIMEOUT = 2.0
"""How long a connect() to an existing socket may take before it counts as in use."""
STAGED_NAME = "s"
MAX_PATH_BYTES = 107
"""sun_path holds 108 bytes on Linux, the terminating NUL included."""


def group_id(group: str | int) -> int:
    """The gid of a group name or number; a ConfigError if no such group exists."""
    if isinstance(group, int):
        return group
    if group.isdigit():
        return int(group)
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise ConfigError(f"socket_group: no group named {group!r}") from None


@dataclass(frozen=True)
class ClaimedSocket:
    """A socket errord published at ``path``, known by its inode."""

    path: Path
    device: int
    inode: int

    def release(self) -> None:
        """Remove the path if it still names the socket errord published there."""
        try:
            now = self.path.lstat()
        except FileNotFoundError:
            return
        if (now.st_dev, now.st_ino) == (self.device, self.inode):
            self.path.unlink(missing_ok=True)


def clear_stale(path: Path) -> None:
    """Remove a socket at ``path`` that nothing listens on; refuse anything else there."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise ListenError(f"cannot listen on unix:{path}: {error.strerror}") from error
    if not stat.S_ISSOCK(mode):
        raise ListenError(f"{path} exists and is not a socket; refusing to replace it")
    if accepts(path):
        raise in_use(path)
    try:
        path.unlink(missing_ok=True)
    except OSError as error:
        raise ListenError(f"cannot remove stale unix socket {path}: {error.strerror}") from error
    log.info("removed unix socket %s: nothing listened on it (left by a crashed daemon?)", path)


def accepts(path: Path) -> bool:
    """Whether something accepts connections on the socket at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(PROBE_TIMEOUT)
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:
            return False
        except TimeoutError:  # a full backlog: a listener, only a busy one
            return True
        except OSError as error:
            raise ListenError(
                f"cannot tell whether unix socket {path} is in use: {error.strerror}"
            ) from error
    return True


def in_use(path: Path) -> ListenError:
    return ListenError(
        f"unix socket {path} is in use by another process (another errord?); "
        "stop it or listen elsewhere"
    )


@contextlib.contextmanager
def staging(path: Path) -> Iterator[Path]:
    """A path in a new private directory beside ``path`` to bind to; removed afterwards."""
    try:
        directory = Path(tempfile.mkdtemp(prefix=".", dir=path.parent))
    except OSError as error:
        raise ListenError(f"cannot listen on unix:{path}: {error.strerror}") from error
    staged = directory / STAGED_NAME
    try:
        for too_long in (path, staged):
            if len(os.fsencode(too_long)) > MAX_PATH_BYTES:
                raise ListenError(
                    f"cannot listen on unix:{path}: {too_long} is longer than a unix socket "
                    f"path may be ({MAX_PATH_BYTES} bytes; errord binds at {staged} first)"
                )
        yield staged
    finally:
        staged.unlink(missing_ok=True)
        directory.rmdir()


def publish(staged: Path, path: Path, group: int | None) -> ClaimedSocket:
    """Give the socket bound at ``staged`` its mode and group, then link it to ``path``."""
    try:
        if group is not None:
            os.chown(staged, -1, group)
    except OSError as error:
        raise ListenError(
            f"cannot give unix socket {path} to group {group}: {error.strerror}"
        ) from error
    os.chmod(staged, SOCKET_MODE)  # our own file in our own directory
    try:
        os.link(staged, path)
    except FileExistsError:
        raise in_use(path) from None
    except OSError as error:
        raise ListenError(f"cannot listen on unix:{path}: {error.strerror}") from error
    bound = staged.lstat()
    return ClaimedSocket(path, bound.st_dev, bound.st_ino)


def listening(path: Path, group: int | None) -> tuple[socket.socket, ClaimedSocket]:
    """A stream socket listening at ``path`` (mode 0660, ``group``): bound privately, then
    published, as the gRPC listener's is; for a server that takes a listening socket (the
    console)."""
    clear_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with staging(path) as staged:
            try:
                sock.bind(str(staged))
            except OSError as error:
                raise ListenError(f"cannot listen on unix:{path}: {error.strerror}") from error
            sock.listen(128)
            claimed = publish(staged, path, group)
    except BaseException:
        sock.close()
        raise
    return sock, claimed
