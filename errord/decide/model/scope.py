"""Scopes: what a tool's state belongs to besides the tool.

A tool's circuit breaker, its statistics, its rate-limit window and its episodic memory
belong to the tool *and* the scope its executor names for an attempt: the backend the
attempt reached (an MCP server and its session, a host, a region, a tenant, the name of
a credential; never a secret). Two MCP servers offering ``read_file``, or one server
restarted after it died, are then two breakers, not one. No scope means the tool alone.

Each kind of state is keyed by one string, the tool's key: the tool's name alone when
there is no scope, so that unscoped state costs nothing and keeps the keys it was stored
under; else the name and the scope joined by SEPARATOR, which no identifier holds (the
wire refuses control characters: errord.wire.bounds).
"""

from __future__ import annotations

from typing import Final

SEPARATOR: Final = "\x1f"
"""Between a tool's name and its scope in a key: ASCII's unit separator."""


def tool_key(tool: str, scope: str = "") -> str:
    """The key of ``tool``'s state in ``scope``: the tool's name without a scope."""
    return f"{tool}{SEPARATOR}{scope}" if scope else tool


def tool_and_scope(key: str) -> tuple[str, str]:
    """The tool and the scope of ``key`` (``tool_key``'s)."""
    tool, _, scope = key.partition(SEPARATOR)
    return tool, scope


def tool_of(key: str) -> str:
    """The tool of ``key``, whatever its scope."""
    return key.partition(SEPARATOR)[0]


def scoped_name(tool: str, scope: str) -> str:
    """``tool`` in ``scope`` as people read it in logs and texts: ``read_file``, or
    ``read_file (scope stdio:fs-server#2)``."""
    return f"{tool} (scope {scope})" if scope else tool
