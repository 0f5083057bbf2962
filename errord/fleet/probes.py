"""The fleet's one probe of a tool it refuses: the hosts whose breaker opened race for it
as the fleet's half-open moment comes (a SET NX with an expiry in Redis), those with calls
waiting first; the winner runs the probe, the others hold their calls until it is over."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import redis.asyncio as aioredis

from errord.fleet.records import (
    Batch,
    Claim,
    ClaimWord,
    Ignored,
    Refused,
    encode,
    message,
    read_claim,
)

if TYPE_CHECKING:
    from errord.fleet.link import FleetLink

CLAIM_LEAD = 0.5
"""Seconds before the fleet's half-open moment that a host with calls waiting races."""
IDLE_CLAIM = 1.0
"""Seconds after it that a host with no call waiting races (so the probe is run even
when only hosts whose breaker stayed closed have calls)."""
PROBE_HOLD = 10.0
"""Seconds the fleet's probe is held by the host that won it, past the half-open moment."""


async def race_for_probes(
    link: FleetLink, client: aioredis.Redis, now: datetime, demand: float
) -> set[str]:
    """Race for the fleet's probe of each tool ``link``'s host may run it for (its calls
    of the last ``demand`` seconds count as waiting); the tools whose holder is now known."""
    changed: set[str] = set()
    for key, regime, wanted in list(link.view.claimable(now, demand=demand)):
        lead = timedelta(seconds=CLAIM_LEAD if wanted else -IDLE_CLAIM)
        if now < regime.half_opens_at - lead:
            continue
        until = max(regime.half_opens_at, now) + timedelta(seconds=PROBE_HOLD)
        redis_key = claim_key(link.prefix, key)
        claim = Claim(link.fleet, link.host, link.instance, until)
        won = await client.set(redis_key, encode(claim), nx=True, px=_millis(until - now) or 1)
        if won:
            changed |= link.view.hold(key, link.host, until)
            word = link.word(ClaimWord(key=key, until=until), now)
            await client.publish(link.channel, message(link.host, Batch([word])))
            link.last_word, link.last_word_at = f"took the fleet's probe of {key}", now
            continue
        value = await client.get(redis_key)
        if value is None:
            continue  # it ended meanwhile: race again at the next tick
        try:
            held = read_claim(value, link.fleet)
        except Refused as refused:
            link.ignored(refused)
            await client.delete(redis_key)  # not errord's: it must not stop the probe
            continue
        if held.until > now + timedelta(seconds=PROBE_HOLD * 2):
            link.ignored(Refused(Ignored.OUT_OF_BOUNDS, "a claim held too long"))
            await client.delete(redis_key)
            continue
        changed |= link.view.hold(key, held.host, held.until)
    return changed


def claim_key(prefix: str, key: str) -> str:
    """The Redis key, under the fleet's ``prefix``, of its probe of the tool ``key``."""
    return f"{prefix}probe:{hashlib.sha256(key.encode()).hexdigest()}"


def _millis(delta: timedelta) -> int:
    return max(0, int(delta.total_seconds() * 1000))
