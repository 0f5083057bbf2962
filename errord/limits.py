"""How much one caller may ask of errord.

    limit                              default  passed
    max_message_bytes                  4 MiB    grpc refuses the request: RESOURCE_EXHAUSTED
    max_concurrent_rpcs                1000     grpc refuses the call: RESOURCE_EXHAUSTED
    max_health_watches                 256      health Watch refused: RESOURCE_EXHAUSTED
    max_watchers                       512      WatchTrace refused: RESOURCE_EXHAUSTED
    max_tool_watchers                  512      WatchTools refused: RESOURCE_EXHAUSTED
    max_reflection_streams             64       reflection refused: RESOURCE_EXHAUSTED
    peer_stream_share                  0.5      a peer past its share of a stream limit:
                                                RESOURCE_EXHAUSTED
    max_turn_events                    10000    a report to a full turn: RESOURCE_EXHAUSTED
    keepalive_min_ping_seconds         10       pings more often: GOAWAY too_many_pings
    keepalive_permit_without_calls     true     pings on a connection with no call allowed

Fields out of range are another matter: INVALID_ARGUMENT naming the field
(errord.wire.bounds). errord.wire.server turns these limits into grpc server
options; errord.wire.streams counts each kind of stream and each peer's share;
the ErrorHandler counts each turn's events in its projection.

Streams stay open as long as their clients like, so each kind has room of its own
beside the calls': grpc's own limit is their sum (``grpc_concurrent_rpcs``), and
streams held open never take the room of a decision.

``STATE_CAPACITY`` bounds what the daemon itself holds: the calls and turns whose
state stays in memory (the ``state_capacity`` setting). ``MAX_TOOLS`` bounds what all
callers together may make it hold: the tools with state (the ``max_tools`` setting),
each read by every scrape of the metrics; a report of a new tool past it is refused,
RESOURCE_EXHAUSTED (the ErrorHandler checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

from errord.errors import InvalidValue, LimitExceeded

__all__ = ["MAX_TOOLS", "STATE_CAPACITY", "LimitExceeded", "Limits"]

MIB = 1024 * 1024

MAX_STREAMS = 100_000
"""The highest limit of one kind of stream."""
STREAM_LIMITS = (
    "max_health_watches",
    "max_watchers",
    "max_tool_watchers",
    "max_reflection_streams",
)
"""The limits of the kinds of streams, each with room of its own."""

STATE_CAPACITY = 25_000
"""Calls, and turns, whose state each projection holds in memory by default; the least
recently changed beyond it are read back from the database when a report needs them.
A call and a turn of one failure take about 1.7 KB together: with 25,000 of each, the
daemon stays near 125 MB over a million decisions (tests/benchmarks/rss.py); with
100,000, near 260 MB."""

MAX_TOOLS = 10_000
"""Tools with state (statistics, a breaker) past which a report naming a new tool without a
manifest is refused, by default: reports naming arbitrary tools cannot grow the daemon's
memory, its database, or what a scrape of /metrics reads (about 2 KB of text per tool),
without bound. Tools with a manifest are always taken (and counted)."""


@dataclass(frozen=True)
class Limits:
    """What one caller may ask of the server; checked on construction."""

    max_message_bytes: int = 4 * MIB
    """The largest request grpc accepts, in bytes; a larger one is RESOURCE_EXHAUSTED."""
    max_concurrent_rpcs: int = 1000
    """Calls in progress at once (decisions, health checks, operator calls), beside the
    streams, which have limits of their own."""
    max_health_watches: int = 256
    """Health Watch streams open at once."""
    max_watchers: int = 512
    """WatchTrace streams open at once."""
    max_tool_watchers: int = 512
    """WatchTools streams open at once (one per executor)."""
    max_reflection_streams: int = 64
    """Server reflection streams open at once (grpcurl opens one per command)."""
    peer_stream_share: float = 0.5
    """The part of each stream limit one peer (a TCP address) may hold; the rest stays
    for the others. Not applied on a unix socket, where all callers look alike."""
    max_turn_events: int = 10_000
    """Trace events one turn may hold; EndTurn may still close a full turn."""
    keepalive_min_ping_seconds: float = 10.0
    """The shortest interval between a client's HTTP/2 pings; after two pings sooner
    than that, grpc closes the connection (GOAWAY too_many_pings)."""
    keepalive_permit_without_calls: bool = True
    """Whether a client may ping a connection with no call in progress (an idle channel
    kept alive); when False, such pings count against it."""

    def __post_init__(self) -> None:
        if not 64 * 1024 <= self.max_message_bytes <= 64 * MIB:
            raise InvalidValue(
                "max_message_bytes", "must be from 65536 (64 KiB) to 67108864 (64 MiB)"
            )
        if not 1 <= self.max_concurrent_rpcs <= 1_000_000:
            raise InvalidValue("max_concurrent_rpcs", "must be from 1 to 1000000")
        for name in STREAM_LIMITS:
            if not 1 <= getattr(self, name) <= MAX_STREAMS:
                raise InvalidValue(name, f"must be from 1 to {MAX_STREAMS}")
        if not 0 < self.peer_stream_share <= 1:  # nan fails every comparison
            raise InvalidValue("peer_stream_share", "must be above 0 and at most 1")
        if not 10 <= self.max_turn_events <= 10_000_000:
            raise InvalidValue("max_turn_events", "must be from 10 to 10000000")
        if not 1 <= self.keepalive_min_ping_seconds <= 3600:
            raise InvalidValue("keepalive_min_ping_seconds", "must be from 1 to 3600")

    @property
    def grpc_concurrent_rpcs(self) -> int:
        """grpc's own limit, which counts calls and streams alike: the calls' room and
        each stream limit's, side by side."""
        streams = (
            self.max_health_watches
            + self.max_watchers
            + self.max_tool_watchers
            + self.max_reflection_streams
        )
        return self.max_concurrent_rpcs + streams
