"""The link to the fleet's Redis: join, load, listen, beat, race for probes; alone when
Redis is gone.

Under the prefix ``errord:fleet:<fleet_name>:`` Redis holds a hash per host (a field per
thing: a breaker, a window, an error's memory; each value a ``Word``), the hosts' cards
(a hash, refreshed every BEAT seconds: who is live, and their last word), a claim key per
tool refused fleet-wide (the fleet's one probe: SET NX with an expiry), and a pub/sub
channel on which every host publishes its words as it commits them.

A session: subscribe (so nothing said meanwhile is missed), load every host's hash
(SYNCING), write this host's whole evidence anew and say hello (the others read its hash
again), then IN_SYNC: apply what the channel brings, beat, race for the probes this host
may run, send the words the outbox gathers. Any Redis error, a timeout included (IO_TIMEOUT:
a slow Redis is a gone one), ends the session: the host is ALONE, deciding with its own
breakers, windows and memory (the view keeps what it heard, and stops gating), one log
line says so, and the link tries again, RETRY_FIRST to RETRY_MAX seconds apart. Nothing
here is awaited by a decision.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from errord.clock import Clock
from errord.decide.model.events import TraceEvent
from errord.fleet.outbox import SEND_BATCH, Outbox, chunks, field_of
from errord.fleet.probes import race_for_probes
from errord.fleet.records import (
    MAX_KEY,
    Batch,
    Body,
    BreakerWord,
    Card,
    HelloWord,
    Ignored,
    Refused,
    Word,
    encode,
    host_name,
    message,
    read_batch,
    read_card,
    read_word,
    sender_of,
)
from errord.fleet.seen import fleet_snapshot, said
from errord.fleet.status import (
    FleetSnapshot,
    FleetState,
    FleetStatus,
)
from errord.fleet.view import FleetView

log = logging.getLogger("errord.fleet")

BEAT = 1.0
"""Seconds between a host's heartbeats (its card), and between its reads of the cards."""
TICK = 0.05
"""Seconds between looks at the probes to race for, and at quorums that aged."""
IO_TIMEOUT = 1.0
"""Seconds a Redis command may take before the link counts Redis as gone."""
RETRY_FIRST, RETRY_MAX = 0.25, 5.0
"""Seconds between attempts to reach Redis again: doubling from the first to the most."""
MAX_HOSTS = 1_000
"""Cards read at most: a fleet larger is a hostile hosts hash."""
GATHER = 0.002
"""Seconds the sender waits, once woken, for more words: under load, one message
carries the words of several commits."""
MAX_FIELDS = 2_000_000
"""Fields of a host's hash read at most (its breakers, windows and memory's errors):
beyond, a hostile hash."""
MEMORY_EVERY = 0.25
"""Seconds memory's words wait at most for a breaker's or a window's to go with."""

REDIS_ERRORS = (RedisError, OSError, asyncio.TimeoutError)

Changed = Callable[[set[str] | None], None]
"""Told the tool keys whose breaker or window as decisions see it changed (None: all)."""


class FleetLink:
    """One host's link to its fleet, and the view it keeps current."""

    def __init__(
        self,
        url: str,
        fleet: str,
        host: str,
        view: FleetView,
        outbox: Outbox,
        clock: Clock,
        on_change: Changed,
    ) -> None:
        self._url = url
        self.view = view
        self.outbox = outbox
        self._clock = clock
        self._on_change = on_change
        self.status = FleetStatus(
            fleet=fleet, host=host, quorum=view.quorum, state=FleetState.SYNCING, since=clock.now()
        )
        self.instance = time.time_ns()
        """This daemon's instance: its words outrank those of its earlier runs."""
        self._seq = 0
        prefix = f"errord:fleet:{fleet}:"
        self.prefix = prefix
        """What every key of the fleet's in Redis begins with."""
        self._hosts_key = prefix + "hosts"
        self.channel = prefix + "words"
        self.cards: dict[str, Card] = {}
        """The hosts' cards, as last read."""
        self.last_word = ""
        self.last_word_at: datetime | None = None
        self._wake = asyncio.Event()
        outbox.on_word = self._wake.set
        self._outage = False
        """True from a lost link until the next session is in sync: one log line each."""
        self.on_state: Callable[[], None] = lambda: None
        """Called when the link's state changes (systemd's STATUS= says it)."""

    @property
    def fleet(self) -> str:
        return self.status.fleet

    @property
    def host(self) -> str:
        return self.status.host

    # The commit path: called after each commit, never waits.

    def committed(self, events: Iterable[TraceEvent]) -> None:
        """This host's committed events: its words queued, its own breakers counted in
        the view at once (it is one of the quorum's hosts)."""
        self.outbox.committed(list(events))
        own = self.outbox.own_breakers
        if own:
            now = self._clock.now()
            changed: set[str] = set()
            for body in own:
                changed |= self.view.apply(self.word(body, now), now)
            own.clear()
            if changed:
                self._on_change(changed)

    # The session.

    async def run(self, stop: asyncio.Event) -> None:
        """Keep the link until ``stop`` is set, alone while Redis is gone."""
        wait = RETRY_FIRST
        while not stop.is_set():
            try:
                await self._session(stop)
                wait = RETRY_FIRST
            except REDIS_ERRORS as error:
                self._lost(error)
            except Refused as refused:  # a hosts hash beyond bounds: no fleet to join
                self._lost(refused)
            except Exception as bug:  # never the daemon's end: alone, and said once
                if not self._outage:
                    log.exception("fleet %s: the link failed; deciding alone", self.fleet)
                self._lost(bug)
            if stop.is_set():
                break
            try:
                await asyncio.wait_for(stop.wait(), wait)
            except TimeoutError:
                wait = min(wait * 2, RETRY_MAX)

    async def _session(self, stop: asyncio.Event) -> None:
        client = aioredis.Redis.from_url(
            self._url, socket_timeout=IO_TIMEOUT, socket_connect_timeout=IO_TIMEOUT
        )
        pubsub = client.pubsub()
        try:
            await pubsub.subscribe(self.channel)
            self._set(FleetState.SYNCING, "")
            await self._load(client)
            await self._join(client)
            self._in_sync()
            tasks = [
                asyncio.create_task(self._listen(client, pubsub)),
                asyncio.create_task(self._beat(client)),
                asyncio.create_task(self._send(client)),
                asyncio.create_task(stop.wait()),
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            for task in done:
                task.result()  # a Redis error ends the session
        finally:
            if self.view.coordinating:  # the fleet's quorum gated decisions: no longer
                self.view.coordinating = False
                self._on_change(None)
            try:
                async with asyncio.timeout(IO_TIMEOUT):
                    await pubsub.aclose()
                    await client.aclose()
            except REDIS_ERRORS:
                pass

    def _in_sync(self) -> None:
        if self._outage:
            self._outage = False
            log.warning(
                "fleet %s: Redis is back; resynced with %d hosts, sharing again",
                self.fleet,
                self.status.hosts,
            )
        else:
            hosts = len(self.cards)
            log.info("fleet %s: in sync as %s with %d hosts", self.fleet, self.host, hosts)
        self._set(FleetState.IN_SYNC, "")
        self.view.coordinating = True
        self._on_change(None)

    def _lost(self, error: BaseException) -> None:
        problem = _problem(error)
        if not self._outage:  # one line per outage
            self._outage = True
            self.status.outages += 1
            log.warning(
                "fleet %s: Redis cannot be reached (%s); deciding alone with this host's "
                "own breakers, windows and memory until it returns",
                self.fleet,
                problem,
            )
        self._set(FleetState.ALONE, problem)

    def _set(self, state: FleetState, problem: str) -> None:
        changed = state is not self.status.state
        if changed:
            self.status.since = self._clock.now()
        self.status.state = state
        self.status.problem = problem
        if changed:
            self.on_state()

    # Loading the fleet's state.

    async def _load(self, client: aioredis.Redis) -> None:
        """Every host's card and hash into the view."""
        now = self._clock.now()
        cards = await self._read_cards(client, now)
        changed: set[str] = set()
        for host in cards:
            if host != self.host:
                changed |= self.view.forget_host(host, now)
                changed |= await self._load_host(client, host)
        self.view.heartbeats({host: card.seen_at for host, card in cards.items()}, now)
        self._on_change(changed)

    async def _read_cards(self, client: aioredis.Redis, now: datetime) -> dict[str, Card]:
        try:
            if await client.hlen(self._hosts_key) > MAX_HOSTS:
                self.ignored(Refused(Ignored.OUT_OF_BOUNDS, "more hosts than a fleet has"))
                return self.cards
            raw = await client.hgetall(self._hosts_key)
        except ResponseError as error:
            if "WRONGTYPE" not in str(error):
                raise
            self.ignored(Refused(Ignored.WRONG_TYPE, self._hosts_key))
            return self.cards
        cards: dict[str, Card] = {}
        for name, value in raw.items():
            try:
                host = host_name(name)
                cards[host] = read_card(value, self.fleet, host)
            except Refused as refused:
                self.ignored(refused)
        self.cards = cards
        self.status.hosts = len(self.view.live_hosts(now) & {*cards, self.host})
        return cards

    async def _load_host(self, client: aioredis.Redis, host: str) -> set[str]:
        key = self._host_key(host)
        changed: set[str] = set()
        fields = 0
        try:
            async for _, value in client.hscan_iter(key, count=500):
                fields += 1
                if fields > MAX_FIELDS:
                    self.ignored(Refused(Ignored.OUT_OF_BOUNDS, f"{key}: more than a host has"))
                    break
                now = self._clock.now()
                try:
                    changed |= self.view.apply(read_word(value, self.fleet, host, now), now)
                except Refused as refused:
                    self.ignored(refused)
        except ResponseError as error:
            if "WRONGTYPE" not in str(error):
                raise
            self.ignored(Refused(Ignored.WRONG_TYPE, key))
        return changed

    async def _join(self, client: aioredis.Redis) -> None:
        """This host's whole evidence written anew (its hash replaced), its card, and a
        hello: the others read its hash again."""
        now = self._clock.now()
        own = self._host_key(self.host)
        words = [self.word(body, now) for body in self.outbox.everything()]
        self.view.forget_host(self.host, now)
        for word in words:
            if isinstance(word.body, BreakerWord):
                self.view.apply(word, now)
        async with client.pipeline(transaction=True) as pipe:
            pipe.delete(own)
            for start in range(0, len(words), SEND_BATCH):
                chunk = words[start : start + SEND_BATCH]
                pipe.hset(own, mapping={field_of(word.body): encode(word) for word in chunk})
            pipe.hset(self._hosts_key, self.host, encode(self._card(now)))
            hello = Batch([self.word(HelloWord(), now)])
            pipe.publish(self.channel, message(self.host, hello))
            await pipe.execute()
        self.cards[self.host] = self._card(now)

    # In sync.

    async def _listen(self, client: aioredis.Redis, pubsub: aioredis.client.PubSub) -> None:
        while True:
            said = await pubsub.get_message(ignore_subscribe_messages=True, timeout=BEAT)
            if said is None or said.get("type") != "message":
                continue
            now = self._clock.now()
            try:
                host, batch = sender_of(said.get("data"))
                if host == self.host:
                    continue  # its own words, back from the channel
                words, refused = read_batch(batch, self.fleet, host, now)
            except Refused as whole:
                self.ignored(whole)
                continue
            for problem in refused:
                self.ignored(problem)
            changed: set[str] = set()
            if words:
                changed |= self.view.heard_from(host, max(word.at for word in words), now)
            for word in words:
                if isinstance(word.body, HelloWord):
                    changed |= self.view.forget_host(word.host, now)
                    changed |= await self._load_host(client, word.host)
                else:
                    changed |= self.view.apply(word, now)
            if changed:
                self._on_change(changed)

    async def _beat(self, client: aioredis.Redis) -> None:
        next_beat = 0.0
        while True:
            now = self._clock.now()
            if self._clock.monotonic() >= next_beat:
                await client.hset(self._hosts_key, self.host, encode(self._card(now)))
                cards = await self._read_cards(client, now)
                seen = {host: card.seen_at for host, card in cards.items()}
                changed = self.view.heartbeats(seen, now) | self.view.refresh(now)
                if changed:
                    self._on_change(changed)
                next_beat = self._clock.monotonic() + BEAT
            changed = await race_for_probes(self, client, now, demand=BEAT * 5)
            if changed:
                self._on_change(changed)
            await self._clock.sleep(TICK)

    async def _send(self, client: aioredis.Redis) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), MEMORY_EVERY)
                await asyncio.sleep(GATHER)  # the words of the commits right behind come along
            except TimeoutError:
                pass  # memory's round
            self._wake.clear()
            bodies = self.outbox.take()
            if not bodies:
                continue
            now = self._clock.now()
            words = [self.word(body, now) for body in bodies]
            own = self._host_key(self.host)
            async with client.pipeline(transaction=False) as pipe:
                for chunk in chunks(words):
                    pipe.hset(own, mapping={field_of(word.body): raw for word, raw in chunk})
                    batch = Batch([word for word, _ in chunk])
                    pipe.publish(self.channel, message(self.host, batch))
                await pipe.execute()
            self.last_word, self.last_word_at = said(words[-1].body), now

    # Records.

    def word(self, body: Body, now: datetime) -> Word:
        """This host's next word saying ``body``."""
        self._seq += 1
        return Word(self.fleet, self.host, self.instance, self._seq, now, body)

    def _card(self, now: datetime) -> Card:
        word = self.last_word[: MAX_KEY * 2]
        return Card(self.fleet, self.host, self.instance, now, word, self.last_word_at)

    def _host_key(self, host: str) -> str:
        return f"{self.prefix}host:{host}"

    def ignored(self, refused: Refused) -> None:
        """Count (and log at debug) a value read from Redis that is not applied."""
        self.status.ignored[refused.reason] += 1
        log.debug("fleet %s: ignored a value in Redis: %s", self.fleet, refused)

    # For operators.

    def snapshot(self) -> FleetSnapshot:
        """The fleet as this host sees it now (errord fleet, GetFleet)."""
        return fleet_snapshot(self, self._clock.now())


def _problem(error: BaseException) -> str:
    """What went wrong, in a line, without the URL (it may hold a password)."""
    if isinstance(error, asyncio.TimeoutError):
        return f"no answer within {IO_TIMEOUT:g} s"
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:200]
