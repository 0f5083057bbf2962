"""The fleet as one host sees it, for operators: its link's state, the hosts, and what is
shared now (GetFleet, ``errord fleet``, ``errord stats``, /metrics, systemd's STATUS=)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from errord.decide.model import ClosedEnum
from errord.fleet.records import Ignored


class FleetState(ClosedEnum):
    """Whether a host shares what it learns with its fleet."""

    OFF = "off"
    """No fleet_url: the host decides alone, as ever."""
    SYNCING = "syncing"
    """Connected, loading the fleet's state: deciding alone until done."""
    IN_SYNC = "in_sync"
    """The fleet's state is loaded and its updates applied as they come."""
    ALONE = "alone"
    """Redis cannot be reached, or answers wrongly: deciding alone until it returns and
    a resync is done."""


@dataclass
class FleetStatus:
    """A host's link to its fleet, kept by the link (errord.fleet.link)."""

    fleet: str = ""
    host: str = ""
    quorum: int = 0
    state: FleetState = FleetState.OFF
    since: datetime | None = None
    """When ``state`` began."""
    problem: str = ""
    """ALONE: what went wrong with Redis."""
    outages: int = 0
    """Times the link was lost (or could not be made) since start."""
    ignored: Counter[Ignored] = field(default_factory=Counter)
    """Values read from Redis and ignored since start, by reason."""
    hosts: int = 1
    """Hosts heard from lately, this one included."""

    def words(self) -> str:
        """The state in a few words, for a log line or systemd's STATUS=."""
        if self.state is FleetState.OFF:
            return "alone (no fleet)"
        text = f"fleet {self.fleet} as {self.host}: {self.state.value.replace('_', ' ')}"
        if self.state is FleetState.IN_SYNC:
            text += f", {self.hosts} hosts"
        elif self.problem:
            text += f" ({self.problem})"
        return text


@dataclass(frozen=True, slots=True)
class HostSeen:
    """One host of the fleet, as its card says."""

    host: str
    this_host: bool
    seen_at: datetime | None
    live: bool
    last_word: str
    last_word_at: datetime | None


@dataclass(frozen=True, slots=True)
class BreakerSeen:
    """One tool's breaker across the fleet."""

    key: str
    open_on: tuple[str, ...]
    refused: bool
    half_opens_at: datetime | None
    probe_host: str
    probe_until: datetime | None


@dataclass(frozen=True, slots=True)
class WindowSeen:
    """A rate-limit window another host received, while it holds."""

    key: str
    host: str
    until: datetime


@dataclass(frozen=True, slots=True)
class FleetSnapshot:
    """What GetFleet answers."""

    status: FleetStatus
    hosts: tuple[HostSeen, ...]
    breakers: tuple[BreakerSeen, ...]
    windows: tuple[WindowSeen, ...]
    shared_errors: int
