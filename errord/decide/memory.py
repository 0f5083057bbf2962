"""Episodic memory's evidence: how each recovery of one tool's error turned out.

Counts of episodes opened, succeeded and failed, per recovery (``RETRY``, or
``USE_ALTERNATIVE:<tool>``), each decayed by half every HALF_LIFE so that old evidence
fades (errord.state.memory folds them from the trace). ``recall`` reads them at a
moment: an episode opened and never told is unknown, never a success.
"""

from __future__ import annotations

from datetime import datetime

from msgspec import Struct, field

from errord.decide.model import Action, Episode

HALF_LIFE = 3_600.0
"""Seconds after which an episode counts half as much as a new one."""


class MemoryKey(Struct, frozen=True, array_like=True, gc=False):
    """A tool and one of its errors, by signature."""

    tool: str
    signature: str


class Tally(Struct, frozen=True, array_like=True, gc=False):
    """Decayed counts of one recovery's episodes, as of ``at``."""

    at: datetime
    opened: float = 0.0
    succeeded: float = 0.0
    failed: float = 0.0

    def decayed(self, to: datetime) -> Tally:
        """The counts as of ``to`` (never earlier than ``at``)."""
        elapsed = (to - self.at).total_seconds()
        if elapsed <= 0:
            return self
        factor = 0.5 ** (elapsed / HALF_LIFE)
        return Tally(to, self.opened * factor, self.succeeded * factor, self.failed * factor)


class MemoryStats(Struct, frozen=True, gc=False):
    """How each recovery of one tool's error turned out."""

    tallies: dict[str, Tally] = field(default_factory=dict)
    """By recovery: ``RETRY``, or ``USE_ALTERNATIVE:<tool>``."""
    fingerprint: str = ""
    """The error's message with its varying details replaced, for people to read."""

    @property
    def seen_at(self) -> datetime | None:
        """When an episode of this error was last opened or told."""
        return max((tally.at for tally in self.tallies.values()), default=None)


def recovery(episode: Episode) -> str:
    """The recovery an episode tried, as MemoryStats names it."""
    action: Action = episode.action
    if action is Action.USE_ALTERNATIVE:
        return f"{action.value}:{episode.via}"
    return str(action.value)


class Evidence(Struct, frozen=True, gc=False):
    """What memory knows of one recovery of one error, at one moment."""

    succeeded: float
    failed: float
    unknown: float
    """Opened and neither succeeded nor failed: overdue, or still in flight."""

    @property
    def episodes(self) -> float:
        return self.succeeded + self.failed + self.unknown

    @property
    def told(self) -> float:
        """Episodes whose outcome is known."""
        return self.succeeded + self.failed

    @property
    def success_rate(self) -> float:
        """Successes among episodes that ended either way; 0 when none did."""
        told = self.succeeded + self.failed
        return self.succeeded / told if told else 0.0


def recall(stats: MemoryStats | None, now: datetime) -> dict[str, Evidence]:
    """The evidence of each recovery in ``stats``, decayed to ``now``."""
    if stats is None:
        return {}
    evidence = {}
    for name, tally in stats.tallies.items():
        current = tally.decayed(now)
        unknown = max(0.0, current.opened - current.succeeded - current.failed)
        evidence[name] = Evidence(current.succeeded, current.failed, unknown)
    return evidence
