"""Episodic memory's statistics: per tool (and scope) and error signature, how each recovery
turned out.

Every episode a decision opens (errord.decide.engine: a RETRY, an alternative tool) and
every one a later report closes is folded into a tally of its recovery, kept per tool
and signature: bursts with episodes opened, succeeded and failed (the episodes of one
burst, each within BURST_GAP of the one before, count once), each decayed by half every
HALF_LIFE (errord.decide.memory), so that old evidence fades. An episode opened but not
closed is unknown, never counted as a success. The tallies are decayed to each event's
time, so a rebuild from the trace ends exactly where the live fold did.

Memory is bounded (errord.state.memory_retention): forgetting an error is itself an event of
the trace, MemoryForgotten, which drops its state; so a rebuild forgets exactly what the
live daemon forgot, at the same point of the trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from errord.decide.memory import FAILED, OPENED, SUCCEEDED, MemoryKey, MemoryStats, Tally, recovery
from errord.decide.model import ClosedEpisode, Episode, EpisodeOutcome
from errord.decide.model.events import (
    EventDetail,
    FailureEvent,
    MemoryForgotten,
    OutcomeEvent,
    TraceEvent,
)
from errord.state.projection import EachEvent


class MemoryFold(EachEvent[MemoryKey, MemoryStats]):
    """Folds the episodes events open and close, keyed by tool and signature."""

    name = "memory"
    version = 2  # 2: bursts of episodes count once
    key_type = MemoryKey
    state_type = MemoryStats

    def keys(self, event: TraceEvent) -> Sequence[MemoryKey]:
        detail = event.detail
        if type(detail) is MemoryForgotten:
            return detail.errors
        return episode_keys(detail)

    def apply(
        self, key: MemoryKey, state: MemoryStats | None, event: TraceEvent
    ) -> MemoryStats | None:
        detail = event.detail
        if type(detail) is MemoryForgotten:
            return None
        tallies = dict(state.tallies) if state is not None else {}
        opens = detail.opens if isinstance(detail, FailureEvent) else None
        closes = detail.closes if isinstance(detail, FailureEvent | OutcomeEvent) else None
        fingerprint = state.fingerprint if state is not None else ""
        if opens is not None and _key(opens) == key:
            _count(tallies, recovery(opens), event.time, OPENED)
            fingerprint = fingerprint or opens.fingerprint
        if closes is not None and _key(closes.episode) == key:
            _count(tallies, recovery(closes.episode), event.time, _told(closes))
        return MemoryStats(tallies, fingerprint)


def episode_keys(detail: EventDetail) -> tuple[MemoryKey, ...]:
    """The errors whose episodes ``detail`` opens or closes."""
    if type(detail) is FailureEvent:
        if detail.closes is None:
            return () if detail.opens is None else (_key(detail.opens),)
        closed = _key(detail.closes.episode)
        if detail.opens is None or _key(detail.opens) == closed:
            return (closed,)
        return (_key(detail.opens), closed)
    if type(detail) is OutcomeEvent and detail.closes is not None:
        return (_key(detail.closes.episode),)
    return ()


def _key(episode: Episode) -> MemoryKey:
    return MemoryKey(episode.tool_key, episode.signature)


def _told(closed: ClosedEpisode) -> int:
    return SUCCEEDED if closed.outcome is EpisodeOutcome.SUCCEEDED else FAILED


def _count(tallies: dict[str, Tally], name: str, at: datetime, what: int) -> None:
    before = tallies.get(name)
    tallies[name] = (before or Tally(at)).counted(at, what)
