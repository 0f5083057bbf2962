"""The fleet's evidence as this host holds it, and what decisions read of it.

The link (errord.fleet.link) applies every word the other hosts publish, and this host's
own breaker words, to a ``FleetView`` in memory; decisions read it synchronously, beside
the projections, through three views that cost a dictionary lookup when the fleet has
nothing to add:

- ``window_of``: the host's own rate-limit window of a tool, or a longer one another host
  received (the limit is usually per API key, which every host shares);
- ``memory_of``: the host's own memory of an error, with the other hosts' tallies added
  (``SharedStats``: a decision's ``recalled`` says how much of it they brought);
- ``gate``: the host's own breaker, or a stricter one while the tool's breaker is open on
  ``quorum`` live hosts (``Regime``): open until the half-open moment of the latest of
  those openings, then half-open with the fleet's one probe in flight elsewhere, unless
  this host holds it (``ProbeHold``, raced in Redis before the moment came). A host's
  own breaker still governs it alone: one host's opening refuses nothing elsewhere.

Without a link in sync (``coordinating`` False) the gate lets the host's own breaker act
alone: a probe cannot be shared without Redis. Windows and memory already heard of stay:
a window is the backend's own word and ends by itself; memory is evidence that decays.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from msgspec import structs

from errord.decide.memory import MemoryKey, MemoryStats, SharedStats, Tally
from errord.decide.model import BreakerPhase, BreakerState, Probe, RateWindow
from errord.fleet.records import BreakerWord, ClaimWord, MemoryWord, WindowWord, Word

K = TypeVar("K", bound=Hashable)

ALWAYS = datetime.max.replace(tzinfo=UTC)
"""The last heartbeat of this host: it is always live to itself."""

LIVENESS = 5.0
"""Seconds after its last heartbeat that a host's breakers stop counting."""
PENDING_CLAIM = 0.5
"""Seconds a host without word of the fleet's probe holder treats the probe as taken:
the race for it is being run."""

FLEET_PROBE = "fleet"
"""The turn id of the probe a gate shows in flight on another host."""


@dataclass(frozen=True, slots=True)
class Regime:
    """A tool refused fleet-wide: its breaker is open on a quorum of live hosts."""

    hosts: tuple[str, ...]
    """The hosts whose own breaker is open, by name."""
    opened_at: datetime
    """The latest of their openings."""
    half_opens_at: datetime
    """When that opening's break ends: the fleet's one probe may run from then."""


@dataclass(frozen=True, slots=True)
class ProbeHold:
    """The host that holds the fleet's one probe of a tool, until when."""

    host: str
    until: datetime


@dataclass(frozen=True, slots=True)
class Heard:
    """One host's evidence of one thing, stamped."""

    stamp: tuple[int, int]
    word: BreakerWord | WindowWord | MemoryWord


LocalWindows = Callable[[str], RateWindow | None]
LocalMemory = Callable[[MemoryKey], MemoryStats | None]


class FleetView:
    """The other hosts' evidence (and this host's breakers), and the views decisions read."""

    def __init__(
        self,
        host: str,
        quorum: int,
        breaker_window: float,
        local_window: LocalWindows,
        local_memory: LocalMemory,
    ) -> None:
        self.host = host
        self.quorum = quorum
        self.breaker_window = timedelta(seconds=breaker_window)
        """How long after a host's breaker opened that opening counts towards the quorum."""
        self._local_window = local_window
        self._local_memory = local_memory
        self.coordinating = False
        """True while the link is in sync: the fleet's breakers gate decisions."""
        self.breakers: dict[str, dict[str, Heard]] = {}
        """By tool key, each host's breaker (this host's included)."""
        self.windows: dict[str, dict[str, Heard]] = {}
        """By tool key, the windows other hosts received."""
        self._longest: dict[str, WindowWord] = {}
        """By tool key, the longest of ``windows``."""
        self.memory: dict[MemoryKey, dict[str, Heard]] = {}
        """By error, the other hosts' memory of it."""
        self._shared: dict[MemoryKey, dict[str, Tally]] = {}
        """By error, the other hosts' tallies added up."""
        self.regimes: dict[str, Regime] = {}
        """The tools refused fleet-wide."""
        self.holds: dict[str, ProbeHold] = {}
        """By tool key, who holds the fleet's probe."""
        self.seen: dict[str, datetime] = {host: ALWAYS}
        """Each host's last heartbeat (this host: always live)."""
        self.asked: dict[str, datetime] = {}
        """By tool key refused fleet-wide, when a decision or an admission last read it:
        this host has calls that want the fleet's probe."""

    # What decisions read.

    def gate(self, key: str, state: BreakerState, now: datetime) -> BreakerState:
        """The breaker a decision of ``key`` must obey, given the host's own ``state``."""
        regime = self.regimes.get(key)
        if regime is None or not self.coordinating:
            return state
        self.asked[key] = now
        return self._gated(key, regime, state, now)

    def peek(self, key: str, state: BreakerState, now: datetime) -> BreakerState:
        """``gate`` for what executors and operators are shown: notes no demand."""
        regime = self.regimes.get(key)
        if regime is None or not self.coordinating:
            return state
        return self._gated(key, regime, state, now)

    def _gated(self, key: str, regime: Regime, state: BreakerState, now: datetime) -> BreakerState:
        own_end = state.half_opens_at if state.phase is BreakerPhase.OPEN else None
        if now < regime.half_opens_at:
            if own_end is not None and own_end >= regime.half_opens_at:
                return state  # its own break is as long
            if state.phase is BreakerPhase.OPEN and own_end is None:
                return state  # forced open until reset
            return structs.replace(
                state,
                phase=BreakerPhase.OPEN,
                opened_at=regime.opened_at,
                half_opens_at=regime.half_opens_at,
                probe=None,
            )
        hold = self.holds.get(key)
        if hold is not None and now >= hold.until:
            hold = None
        if hold is not None and hold.host == self.host:
            return state  # this host's own breaker runs the fleet's probe
        if state.effective_phase(now) is BreakerPhase.OPEN:
            return state
        until = hold.until if hold is not None else now + timedelta(seconds=PENDING_CLAIM)
        elsewhere = Probe(
            turn_id=FLEET_PROBE,
            call_id=hold.host if hold is not None else "",
            attempt=0,
            until=until,
        )
        return structs.replace(state, phase=BreakerPhase.HALF_OPEN, probe=elsewhere)

    def window_of(self, key: str) -> RateWindow | None:
        """The host's own window of ``key``, or a longer one another host received."""
        local = self._local_window(key)
        fleet = self._longest.get(key)
        if fleet is None or (local is not None and local.until >= fleet.until):
            return local
        return RateWindow(
            opened_at=fleet.opened_at,
            until=fleet.until,
            asked=fleet.asked,
            generation=local.generation if local is not None else 0,
        )

    def memory_of(self, key: str, signature: str) -> MemoryStats | None:
        """The host's memory of an error, with the other hosts' tallies added."""
        error = MemoryKey(key, signature)
        local = self._local_memory(error)
        shared = self._shared.get(error)
        if shared is None:
            return local
        return shared_stats(local, shared)

    def keys(self) -> Iterator[str]:
        """Tool keys the fleet adds something to: refused, or held by a window."""
        yield from self.regimes
        yield from self._longest

    # What the link applies.

    def apply(self, word: Word, now: datetime) -> set[str]:
        """Take ``word`` in, unless a newer one of the same host and thing was; the tool
        keys whose breaker or window as decisions see it may have changed."""
        body = word.body
        if isinstance(body, BreakerWord):
            if self._take(self.breakers, body.key, word):
                hold = self.holds.get(body.key)
                if hold is not None and hold.host == word.host and not self.counts(body, now):
                    del self.holds[body.key]  # its probe told: the probe is the fleet's again
                return self._regime_changed(body.key, now) | {body.key}
        elif isinstance(body, WindowWord):
            if word.host != self.host and self._take(self.windows, body.key, word):
                self._longest_of(body.key)
                return {body.key}
        elif isinstance(body, MemoryWord):
            error = MemoryKey(body.key, body.signature)
            if word.host != self.host and self._take(self.memory, error, word):
                self._add_up(error)
        elif isinstance(body, ClaimWord):
            return self.hold(body.key, word.host, body.until)
        return set()

    def _take(self, heard: dict[K, dict[str, Heard]], key: K, word: Word) -> bool:
        hosts = heard.setdefault(key, {})
        before = hosts.get(word.host)
        if before is not None and before.stamp >= word.stamp:
            return False
        body = word.body
        assert isinstance(body, BreakerWord | WindowWord | MemoryWord)
        hosts[word.host] = Heard(word.stamp, body)
        return True

    def forget_host(self, host: str, now: datetime) -> set[str]:
        """Drop everything ``host`` said (its whole state is read again)."""
        changed: set[str] = set()
        for key, hosts in list(self.breakers.items()):
            if hosts.pop(host, None) is not None:
                changed |= self._regime_changed(key, now)
        for key, hosts in list(self.windows.items()):
            if hosts.pop(host, None) is not None:
                self._longest_of(key)
                changed.add(key)
        for error, hosts in list(self.memory.items()):
            if hosts.pop(host, None) is not None:
                self._add_up(error)
        return changed

    def hold(self, key: str, host: str, until: datetime | None) -> set[str]:
        """``host`` holds the fleet's probe of ``key`` until ``until`` (None: gave it back)."""
        before = self.holds.get(key)
        if until is None:
            if before is None or before.host != host:
                return set()
            del self.holds[key]
        else:
            self.holds[key] = ProbeHold(host, until)
        return {key} if key in self.regimes else set()

    def heartbeats(self, seen: dict[str, datetime], now: datetime) -> set[str]:
        """The hosts' last heartbeats; the tools whose quorum changed with who is live."""
        live_before = self.live_hosts(now)
        self.seen = {**seen, self.host: ALWAYS}
        if self.live_hosts(now) == live_before:
            return set()
        return self.refresh(now)

    def heard_from(self, host: str, at: datetime, now: datetime) -> set[str]:
        """``host`` said something at ``at``: a sign of life as good as a heartbeat; the
        tools whose quorum changed with who is live."""
        before = self.seen.get(host)
        if before is not None and before >= at:
            return set()
        return self.heartbeats({**self.seen, host: min(at, now)}, now)

    def live_hosts(self, now: datetime) -> frozenset[str]:
        limit = now - timedelta(seconds=LIVENESS)
        return frozenset(host for host, seen in self.seen.items() if seen >= limit)

    def refresh(self, now: datetime) -> set[str]:
        """Every quorum worked out again (openings age, hosts go quiet), ended windows and
        claims dropped; the tool keys that changed."""
        changed: set[str] = set()
        live = self.live_hosts(now)
        for key in list(self.breakers):
            changed |= self._regime_changed(key, now, live)
        for key, window in list(self._longest.items()):
            if window.until <= now:
                for host, heard in list(self.windows[key].items()):
                    if isinstance(heard.word, WindowWord) and heard.word.until <= now:
                        del self.windows[key][host]
                self._longest_of(key)
                changed.add(key)
        for key, hold in list(self.holds.items()):
            if hold.until <= now:
                del self.holds[key]
        return changed

    def _regime_changed(
        self, key: str, now: datetime, live: frozenset[str] | None = None
    ) -> set[str]:
        regime = self._regime(key, now, live)
        if regime == self.regimes.get(key):
            return set()
        if regime is None:
            del self.regimes[key]
            self.holds.pop(key, None)
            self.asked.pop(key, None)
        else:
            self.regimes[key] = regime
        return {key}

    def _regime(self, key: str, now: datetime, live: frozenset[str] | None = None) -> Regime | None:
        if live is None:
            live = self.live_hosts(now)
        members = [
            (host, heard.word)
            for host, heard in self.breakers.get(key, {}).items()
            if host in live and isinstance(heard.word, BreakerWord) and self.counts(heard.word, now)
        ]
        if len(members) < self.quorum:
            return None
        latest = max(members, key=lambda member: member[1].opened_at or now)[1]
        opened, ends = latest.opened_at, latest.half_opens_at
        assert opened is not None, "counts() takes only breakers that opened"
        assert ends is not None, "counts() takes only breakers with a break"
        return Regime(tuple(sorted(host for host, _ in members)), opened, ends)

    def counts(self, breaker: BreakerWord, now: datetime) -> bool:
        """Whether a host's breaker is evidence of an outage now: opened by its own
        failures (not an operator), within the window, with no success since."""
        return (
            breaker.phase is not BreakerPhase.CLOSED
            and not breaker.forced
            and breaker.successes == 0
            and breaker.opened_at is not None
            and breaker.half_opens_at is not None
            and now - breaker.opened_at <= self.breaker_window
        )

    def _longest_of(self, key: str) -> None:
        words = [
            heard.word
            for heard in self.windows.get(key, {}).values()
            if isinstance(heard.word, WindowWord)
        ]
        if words:
            self._longest[key] = max(words, key=lambda window: window.until)
        else:
            self._longest.pop(key, None)
            self.windows.pop(key, None)

    def window_host(self, key: str) -> str:
        """The host whose window of ``key`` is the longest."""
        longest = self._longest.get(key)
        for host, heard in self.windows.get(key, {}).items():
            if heard.word is longest:
                return host
        return ""

    def _add_up(self, error: MemoryKey) -> None:
        tallies = [
            heard.word.tallies
            for heard in self.memory.get(error, {}).values()
            if isinstance(heard.word, MemoryWord) and heard.word.tallies
        ]
        if tallies:
            self._shared[error] = added(tallies)
        else:
            self._shared.pop(error, None)
            self.memory.pop(error, None)

    @property
    def shared_errors(self) -> int:
        return len(self._shared)

    def claimable(self, now: datetime, demand: float) -> Iterator[tuple[str, Regime, bool]]:
        """The tools whose fleet probe this host may race for: it is among the hosts
        whose breaker is open, its own break ends by the fleet's half-open moment, and no
        host holds the probe; with whether a decision wanted the tool within ``demand``
        seconds (a host with calls waiting races first)."""
        for key, regime in self.regimes.items():
            if self.host not in regime.hosts:
                continue
            hold = self.holds.get(key)
            if hold is not None and hold.until > now:
                continue
            own = self.breakers[key].get(self.host)
            if own is None or not isinstance(own.word, BreakerWord):
                continue
            ends = own.word.half_opens_at
            if ends is None or ends > regime.half_opens_at:
                continue
            asked = self.asked.get(key)
            wanted = asked is not None and (now - asked).total_seconds() <= demand
            yield key, regime, wanted


def added(tallies: list[dict[str, Tally]]) -> dict[str, Tally]:
    """Several hosts' tallies of one error, added up by recovery (each decayed to the
    latest)."""
    by_name: dict[str, list[Tally]] = {}
    for each in tallies:
        for name, tally in each.items():
            by_name.setdefault(name, []).append(tally)
    return {name: _sum(found) for name, found in by_name.items()}


def _sum(tallies: list[Tally]) -> Tally:
    if len(tallies) == 1:
        return tallies[0]
    at = max(tally.at for tally in tallies)
    decayed = [tally.decayed(at) for tally in tallies]
    return Tally(
        at,
        sum(tally.opened for tally in decayed),
        sum(tally.succeeded for tally in decayed),
        sum(tally.failed for tally in decayed),
        failed_at=_latest(tally.failed_at for tally in tallies),
        succeeded_at=_latest(tally.succeeded_at for tally in tallies),
    )


def _latest(times: Iterable[datetime | None]) -> datetime | None:
    return max((time for time in times if time is not None), default=None)


def shared_stats(local: MemoryStats | None, shared: dict[str, Tally]) -> SharedStats:
    """``local`` with the other hosts' ``shared`` tallies added, saying which part is theirs."""
    tallies = dict(local.tallies) if local is not None else {}
    for name, theirs in shared.items():
        mine = tallies.get(name)
        tallies[name] = theirs if mine is None else _sum([mine, theirs])
    fingerprint = local.fingerprint if local is not None else ""
    return SharedStats(tallies, fingerprint, shared=shared)
