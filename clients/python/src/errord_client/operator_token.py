"""The operator token: what errord's operator calls (its breakers, manifests, statistics,
memory and the trace of any turn) need when errord has no ``token_file``.

errord makes it at its first start, random, into ``operator.token`` beside its database,
readable by errord's own user only: whoever can read the file is errord's operator. A
program of that user (an example, a test, an operator's script) reads it here::

    from errord_client import AsyncErrordClient
    from errord_client.operator_token import operator_token

    async with AsyncErrordClient(token=operator_token()) as errord:
        events = await errord.get_turn_trace("turn-1")
"""

from __future__ import annotations

import os
from pathlib import Path

OPERATOR_TOKEN = "operator.token"
"""The file's name, beside the database."""


def default_state_directory() -> Path:
    """Where errord keeps its database and operator token on its embedded defaults:
    systemd's ``$STATE_DIRECTORY``, else ``$XDG_STATE_HOME/errord``, else
    ``~/.local/state/errord``."""
    state_directory = os.environ.get("STATE_DIRECTORY")
    if state_directory:
        return Path(state_directory.split(":")[0])
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "errord"


def operator_token(path: str | os.PathLike[str] | None = None) -> str:
    """The operator token in ``path``; by default the one a daemon on its embedded
    defaults made (``operator.token`` in ``default_state_directory()``). Raises OSError
    when it cannot be read (no daemon made one there, or another user's)."""
    file = Path(path) if path is not None else default_state_directory() / OPERATOR_TOKEN
    return file.read_text(encoding="ascii").strip()


def operator_metadata(path: str | os.PathLike[str] | None = None) -> tuple[tuple[str, str]]:
    """``authorization: Bearer <operator token>``, as a raw stub call's ``metadata``."""
    return (("authorization", f"Bearer {operator_token(path)}"),)
