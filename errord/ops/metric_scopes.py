"""Which scopes of a tool get metric series of their own: a bounded number per tool.

A scope is whatever an executor names (errord.decide.model.scope): an MCP server and session,
a host, a tenant. Prometheus keeps every label value as a series of its own for good, so
each tool's scopes are bounded: the tool's own state (no scope) and its
MAX_SCOPES_PER_TOOL busiest scopes (the most executions) have series of their own; the
counters of the others are added up in one series, ``scope="(other)"``, which has no
breaker, ratio or alert series (each of those belongs to one breaker).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby

from errord.state.health import ToolHealth
from errord.state.tool_stats import ToolStats, summed

MAX_SCOPES_PER_TOOL = 20
"""Scopes of one tool with series of their own, beside the tool's own."""
OTHER_SCOPES = "(other)"


@dataclass(frozen=True, slots=True)
class ScopeRow:
    """One tool and scope's series: its counters, and its health (None for the folded
    scopes' sum)."""

    tool: str
    scope: str
    stats: ToolStats
    health: ToolHealth | None


def scope_rows(healths: Iterable[ToolHealth]) -> Iterator[ScopeRow]:
    """The series of ``healths`` (each tool's scopes next to each other, as the board
    reads them), each tool's scopes beyond the bound added up in one."""
    for tool, of_tool in groupby(healths, key=lambda health: health.tool):
        scoped = []
        for health in of_tool:
            if health.scope:
                scoped.append(health)
            else:
                yield ScopeRow(tool, "", health.stats, health)
        if len(scoped) > MAX_SCOPES_PER_TOOL:
            scoped.sort(key=lambda health: (-health.stats.executions, health.scope))
            folded = [health.stats for health in scoped[MAX_SCOPES_PER_TOOL:]]
            del scoped[MAX_SCOPES_PER_TOOL:]
            scoped.sort(key=lambda health: health.scope)
            yield from (ScopeRow(tool, h.scope, h.stats, h) for h in scoped)
            yield ScopeRow(tool, OTHER_SCOPES, summed(folded), None)
        else:
            yield from (ScopeRow(tool, h.scope, h.stats, h) for h in scoped)
