"""Episodic memory's evidence: how each recovery of one tool's error turned out.

Counts of the bursts of episodes opened, succeeded and failed, per recovery (``RETRY``,
or ``USE_ALTERNATIVE:<tool>``), each decayed by half every HALF_LIFE so that old
evidence fades (errord.state.memory folds them from the trace). The episodes of one
burst (an outage, a spell of the error: each within BURST_GAP of the one before) are
one piece of evidence: a burst counts once as failed if any of its episodes failed, and
once as succeeded if any succeeded, so that twenty calls caught in one outage do not
weigh as twenty outages. ``recall`` reads them at a moment: an episode opened and never
told is unknown, never a success. In a fleet (errord.fleet) a decision reads its host's
tallies with the other hosts' added in (``SharedStats``), and says how much of the
evidence they brought.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from msgspec import Struct, field

from errord.decide.model import Action, Episode

HALF_LIFE = 3_600.0
"""Seconds after which a piece of evidence counts half as much as a new one."""
BURST_GAP = 60.0
"""Seconds: an episode opened or told within this of the last one of the same error and
recovery belongs to the same burst."""

OPENED, SUCCEEDED, FAILED = 1, 2, 4
"""What a burst has counted already, as bits of ``Tally.burst``."""


class Tally(Struct, frozen=True, array_like=True, gc=False):
    """Decayed counts of one recovery's bursts, as of ``at``."""

    at: datetime
    opened: float = 0.0
    succeeded: float = 0.0
    failed: float = 0.0
    burst_at: datetime | None = None
    """When the current burst last had an episode opened or told."""
    burst: int = 0
    """What the current burst counted already: OPENED, SUCCEEDED and FAILED bits."""
    failed_at: datetime | None = None
    """When an episode last failed."""
    succeeded_at: datetime | None = None
    """When an episode last succeeded."""

    def decayed(self, to: datetime) -> Tally:
        """The counts as of ``to`` (never earlier than ``at``)."""
        elapsed = (to - self.at).total_seconds()
        if elapsed <= 0:
            return self
        factor = 0.5 ** (elapsed / HALF_LIFE)
        return Tally(
            to,
            self.opened * factor,
            self.succeeded * factor,
            self.failed * factor,
            self.burst_at,
            self.burst,
            self.failed_at,
            self.succeeded_at,
        )

    def counted(self, at: datetime, what: int) -> Tally:
        """One more episode opened (OPENED), succeeded or failed at ``at``: a piece of
        evidence when it is the first of its kind in its burst."""
        now = self.decayed(at)
        same_burst = now.burst_at is not None and (at - now.burst_at).total_seconds() < BURST_GAP
        burst = now.burst if same_burst else 0
        new = what & ~burst
        return Tally(
            now.at,
            now.opened + (new == OPENED),
            now.succeeded + (new == SUCCEEDED),
            now.failed + (new == FAILED),
            at,
            burst | what,
            at if what == FAILED else now.failed_at,
            at if what == SUCCEEDED else now.succeeded_at,
        )


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


class SharedStats(MemoryStats, frozen=True, gc=False):
    """A host's MemoryStats with the other hosts' of its fleet added into ``tallies``
    (errord.fleet); what decisions read, never stored."""

    shared: dict[str, Tally] = field(default_factory=dict)
    """The other hosts' part of ``tallies``, by recovery."""


def recovery(episode: Episode) -> str:
    """The recovery an episode tried, as MemoryStats names it."""
    action: Action = episode.action
    if action is Action.USE_ALTERNATIVE:
        return f"{action.value}:{episode.via}"
    return str(action.value)


class Evidence(Struct, frozen=True, gc=False):
    """What memory knows of one recovery of one error, at one moment: bursts, decayed."""

    succeeded: float
    failed: float
    unknown: float
    """Opened and neither succeeded nor failed: overdue, or still in flight."""
    failed_at: datetime | None = None
    """When an episode last failed."""
    succeeded_at: datetime | None = None
    """When an episode last succeeded."""
    from_fleet: float = 0.0
    """Of the bursts (succeeded, failed and unknown), how many other hosts of the fleet
    counted (SharedStats); 0 alone."""

    @property
    def episodes(self) -> float:
        return self.succeeded + self.failed + self.unknown

    @property
    def told(self) -> float:
        """Bursts whose outcome is known."""
        return self.succeeded + self.failed

    @property
    def success_rate(self) -> float:
        """Successes among bursts that ended either way; 0 when none did."""
        told = self.succeeded + self.failed
        return self.succeeded / told if told else 0.0

    def enough(self, min_episodes: float) -> bool:
        """True when at least ``min_episodes`` bursts were told, counted as texts show them:
        rounded (five bursts over a few minutes have decayed to 4.8)."""
        return round(self.told) >= min_episodes

    def never_fixed(self, min_episodes: float) -> bool:
        """True when retries (this recovery) fixed none of ``min_episodes`` bursts or more."""
        return self.enough(min_episodes) and self.succeeded < 0.5

    def fades_below(self, min_episodes: float, now: datetime) -> datetime | None:
        """When the told bursts, decaying, count fewer than ``min_episodes`` (as shown,
        rounded); None when they already do."""
        told = self.told
        floor = min_episodes - 0.5
        if told < floor or floor <= 0:
            return None
        return now + _seconds(HALF_LIFE * math.log2(told / floor))


def _seconds(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)


def recall(stats: MemoryStats | None, now: datetime) -> dict[str, Evidence]:
    """The evidence of each recovery in ``stats``, decayed to ``now``."""
    if stats is None:
        return {}
    shared = stats.shared if type(stats) is SharedStats else None
    evidence = {}
    for name, tally in stats.tallies.items():
        current = tally.decayed(now)
        unknown = max(0.0, current.opened - current.succeeded - current.failed)
        fleet = shared.get(name) if shared else None
        evidence[name] = Evidence(
            current.succeeded,
            current.failed,
            unknown,
            tally.failed_at,
            tally.succeeded_at,
            _bursts(fleet.decayed(now)) if fleet is not None else 0.0,
        )
    return evidence


def _bursts(tally: Tally) -> float:
    """The bursts a tally counts: succeeded, failed, and opened without either."""
    return max(tally.opened, tally.succeeded + tally.failed)
