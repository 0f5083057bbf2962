"""What the hosts of a fleet tell each other through Redis, and how it is read back.

Every value errord writes to Redis (a field of a host's hash, a message on the fleet's
channel, a probe claim, a host's card) is one of these records, encoded with msgpack by
msgspec from their annotations. A ``Word`` is one piece of a host's evidence: a breaker
(``BreakerWord``), a rate-limit window (``WindowWord``), memory of one error
(``MemoryWord``), the fleet's probe taken or given back (``ClaimWord``), or a host that
(re)joined and wrote its whole state (``HelloWord``). Each names its fleet and its host,
and is stamped by the host's instance and a sequence, so that a value read twice, or
read late, is applied once and never over a newer one.

Redis is shared with whoever may write to it: a value that is not errord's (wrong type,
does not decode), larger than MAX_VALUE, of another fleet, or whose times or counts lie
beyond anything errord writes, is ignored and counted by reason (``Ignored``), never
applied and never a decision.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Annotated, TypeVar

import msgspec
from msgspec import Struct

from errord.decide.memory import Tally
from errord.decide.model import BreakerPhase, ClosedEnum
from errord.errors import ErrordError

T = TypeVar("T")

MAX_VALUE = 65_536
"""Bytes a value read from Redis may have (a word, a card, a claim); a larger one is
ignored unread."""
MAX_MESSAGE = 1 << 20
"""Bytes a message of the fleet's channel may have (a batch of words: a sender splits
larger ones); a larger one is ignored unread."""
MAX_KEY = 2_048
"""Characters of a tool's key (a name and a scope) or a signature in a word."""
MAX_RECOVERIES = 64
"""Recoveries one error's memory may name in a word."""
MAX_AHEAD = timedelta(days=8)
"""How far ahead of now a time in a word may lie: beyond the longest break (a week)."""
MAX_COUNT = 1e9
"""The largest tally count a word may hold."""


Instant = Annotated[datetime, msgspec.Meta(tz=True)]
"""A time in a word: with its zone, as errord writes every time (a naive one is refused)."""


class Ignored(ClosedEnum):
    """Why a value read from Redis was ignored; the value names the metric's label."""

    MALFORMED = "malformed"
    """It does not decode as errord's record."""
    OVERSIZED = "oversized"
    """Larger than MAX_VALUE (MAX_MESSAGE for a message)."""
    FOREIGN = "foreign"
    """Of another fleet, or claiming to be another host than the key it was under."""
    WRONG_TYPE = "wrong_type"
    """A Redis key of errord's holds another type (a string for a hash)."""
    OUT_OF_BOUNDS = "out_of_bounds"
    """Decodes, but a time, a count or a length lies beyond what errord writes."""


class _Body(Struct, frozen=True, tag_field="kind", array_like=False, gc=False):
    pass


class BreakerWord(_Body, frozen=True, tag="breaker"):
    """A host's own breaker of a tool in a scope, as its trace last recorded it."""

    key: str
    """The tool's key (errord.decide.model.scope)."""
    phase: BreakerPhase
    opened_at: Instant | None = None
    half_opens_at: Instant | None = None
    successes: int = 0
    """Successes counted while half-open: a host with one is no longer evidence."""
    forced: bool = False
    """An operator forced it open: no evidence of an outage."""
    probe_until: Instant | None = None
    """While half-open with a probe in flight: when the probe's time ends."""


class WindowWord(_Body, frozen=True, tag="window"):
    """A rate-limit window a host's tool asked for."""

    key: str
    opened_at: Instant
    until: Instant
    asked: float | None = None


class MemoryWord(_Body, frozen=True, tag="memory"):
    """A host's episodic memory of one error of a tool in a scope."""

    key: str
    signature: str
    tallies: dict[str, Tally] | None = None
    """By recovery; None when the host forgot the error."""


class ClaimWord(_Body, frozen=True, tag="claim"):
    """The fleet's one half-open probe of a tool, taken until ``until`` (or given back,
    ``until`` None)."""

    key: str
    until: Instant | None = None


class HelloWord(_Body, frozen=True, tag="hello"):
    """The host (re)joined the fleet and wrote its whole state: read its hash again."""


Body = BreakerWord | WindowWord | MemoryWord | ClaimWord | HelloWord


class Word(Struct, frozen=True, gc=False):
    """One piece of a host's evidence, signed and stamped."""

    fleet: str
    host: str
    instance: int
    """When the host's daemon started, in nanoseconds: a restarted host's words are newer."""
    seq: int
    """Numbers the instance's words, from 1."""
    at: Instant
    """When the host said it."""
    body: Body

    @property
    def stamp(self) -> tuple[int, int]:
        return (self.instance, self.seq)


class Batch(Struct, frozen=True, gc=False):
    """The words one flush publishes on the fleet's channel, framed by ``message``."""

    words: list[Word]


def message(host: str, batch: Batch) -> bytes:
    """``batch`` as ``host`` publishes it: its name first (a byte of length, then the
    name), so that a host skips its own messages, which the channel brings back to it,
    without decoding them."""
    name = host.encode()
    return bytes([len(name)]) + name + encode(batch)


def sender_of(value: object) -> tuple[str, bytes]:
    """The host that published a message from the fleet's channel, and its batch's bytes;
    raises Refused."""
    if not isinstance(value, bytes):
        raise Refused(Ignored.MALFORMED, f"a {type(value).__name__}, not bytes")
    if len(value) > MAX_MESSAGE:
        raise Refused(Ignored.OVERSIZED, f"{len(value)} bytes")
    length = value[0] if value else 0
    if not length or len(value) <= length:
        raise Refused(Ignored.MALFORMED, "no sender")
    try:
        return value[1 : 1 + length].decode(), value[1 + length :]
    except UnicodeDecodeError:
        raise Refused(Ignored.MALFORMED, "a sender that is not UTF-8") from None


class Card(Struct, frozen=True, gc=False):
    """A host's card in the fleet's hosts hash, refreshed by each heartbeat."""

    fleet: str
    host: str
    instance: int
    seen_at: Instant
    last_word: str = ""
    """What it last shared, in words."""
    last_word_at: Instant | None = None


class Claim(Struct, frozen=True, gc=False):
    """Who holds the fleet's probe of a tool (the value of its claim key)."""

    fleet: str
    host: str
    instance: int
    until: Instant


encode = msgspec.msgpack.Encoder().encode
_words = msgspec.msgpack.Decoder(Word)
_batches = msgspec.msgpack.Decoder(Batch)
_cards = msgspec.msgpack.Decoder(Card)
_claims = msgspec.msgpack.Decoder(Claim)


class Refused(ErrordError):
    """A value read from Redis that is ignored, and why."""

    def __init__(self, reason: Ignored, detail: str = "") -> None:
        super().__init__(f"{reason.value}: {detail}" if detail else reason.value)
        self.reason = reason


def _decoded(decode: msgspec.msgpack.Decoder[T], value: object, limit: int = MAX_VALUE) -> T:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise Refused(Ignored.MALFORMED, f"a {type(value).__name__}, not bytes")
    if len(value) > limit:
        raise Refused(Ignored.OVERSIZED, f"{len(value)} bytes")
    try:
        return decode.decode(value)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as error:
        raise Refused(Ignored.MALFORMED, str(error)[:200]) from None


def read_batch(
    value: object, fleet: str, host: str, now: datetime
) -> tuple[list[Word], list[Refused]]:
    """The words of ``host``'s batch (``sender_of``) that may be applied, and those
    refused. Raises Refused when the batch itself is not one."""
    batch = _decoded(_batches, value, MAX_MESSAGE)
    kept, refused = [], []
    for word in batch.words:
        try:
            if word.host != host:
                raise Refused(Ignored.FOREIGN, f"host {word.host!r} in a message of {host!r}")
            kept.append(checked(word, fleet, now))
        except Refused as problem:
            refused.append(problem)
    return kept, refused


def read_word(value: object, fleet: str, host: str, now: datetime) -> Word:
    """The word a field of ``host``'s hash holds; raises Refused."""
    word = checked(_decoded(_words, value), fleet, now)
    if word.host != host:
        raise Refused(Ignored.FOREIGN, f"host {word.host!r} in the hash of {host!r}")
    return word


def read_card(value: object, fleet: str, host: str) -> Card:
    card = _decoded(_cards, value)
    if card.fleet != fleet or card.host != host:
        raise Refused(Ignored.FOREIGN, f"the card of {card.host!r} of fleet {card.fleet!r}")
    if len(card.last_word) > MAX_KEY * 2:
        raise Refused(Ignored.OUT_OF_BOUNDS, "a last word too long")
    return card


def read_claim(value: object, fleet: str) -> Claim:
    claim = _decoded(_claims, value)
    if claim.fleet != fleet:
        raise Refused(Ignored.FOREIGN, f"a claim of fleet {claim.fleet!r}")
    if len(claim.host) > MAX_KEY:
        raise Refused(Ignored.OUT_OF_BOUNDS, "a host name too long")
    return claim


def checked(word: Word, fleet: str, now: datetime) -> Word:
    """``word``, if it is of ``fleet`` and within bounds; raises Refused."""
    if word.fleet != fleet:
        raise Refused(Ignored.FOREIGN, f"fleet {word.fleet!r}")
    problem = _out_of_bounds(word, now)
    if problem:
        raise Refused(Ignored.OUT_OF_BOUNDS, problem)
    return word


def _out_of_bounds(word: Word, now: datetime) -> str:
    body = word.body
    if len(word.host) > MAX_KEY or word.seq < 0 or word.instance < 0:
        return "a host, instance or sequence out of range"
    latest = now + MAX_AHEAD
    if word.at > latest:
        return "said in the future"
    if isinstance(body, HelloWord):
        return ""
    if len(body.key) > MAX_KEY or not body.key:
        return "a tool's key empty or too long"
    if isinstance(body, BreakerWord):
        times = (body.opened_at, body.half_opens_at, body.probe_until)
        if any(time is not None and time > latest for time in times) or body.successes < 0:
            return "a breaker beyond what errord records"
    elif isinstance(body, WindowWord):
        asked = body.asked
        if body.until > latest or body.opened_at > body.until:
            return "a window beyond a week"
        if asked is not None and not 0 <= asked <= MAX_AHEAD.total_seconds():
            return "a window's wait out of range"
    elif isinstance(body, MemoryWord):
        if len(body.signature) > MAX_KEY:
            return "a signature too long"
        if body.tallies is not None and not _sane(body.tallies, latest):
            return "memory's tallies out of range"
    elif isinstance(body, ClaimWord) and body.until is not None and body.until > latest:
        return "a claim beyond a week"
    return ""


def _sane(tallies: dict[str, Tally], latest: datetime) -> bool:
    if len(tallies) > MAX_RECOVERIES:
        return False
    for name, tally in tallies.items():
        counts = (tally.opened, tally.succeeded, tally.failed)
        times = (tally.at, tally.burst_at, tally.failed_at, tally.succeeded_at)
        if any(time is not None and time.tzinfo is None for time in times):
            return False
        if len(name) > MAX_KEY or tally.at > latest:
            return False
        if not all(math.isfinite(count) and 0 <= count <= MAX_COUNT for count in counts):
            return False
    return True


def host_name(name: object) -> str:
    """A host's name as Redis gives it (a field of the hosts hash), or Refused."""
    if not isinstance(name, bytes) or len(name) > MAX_KEY:
        raise Refused(Ignored.MALFORMED, "a host name that is not text")
    try:
        return name.decode()
    except UnicodeDecodeError:
        raise Refused(Ignored.MALFORMED, "a host name that is not UTF-8") from None
