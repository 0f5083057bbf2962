"""Streams' own limits, and each peer's share of them.

A stream stays open as long as its client likes, so each kind has slots of its own:

    stream                                 limit                    open
    grpc.health.v1.Health/Watch            max_health_watches       LimitedHealth
    errord.v1.ErrorHandlerService/
      WatchTrace                           max_watchers             the service
      WatchTools                           max_tool_watchers        the service
    grpc.reflection.v1alpha.ServerReflection/
      ServerReflectionInfo                 max_reflection_streams   LimitedReflection

grpc's own limit counts calls and streams alike; it is set to the calls' room
(``max_concurrent_rpcs``) plus every stream limit (``Limits.grpc_concurrent_rpcs``), so
that streams held open never take the room of a decision. A stream past its kind's
limit is refused at once, RESOURCE_EXHAUSTED, naming the setting.

Within a kind, one peer may hold ``peer_stream_share`` of the slots, so that the others
always find some: a peer is the caller's address without its port (``context.peer()``
``ipv4:10.0.0.7:51234`` is 10.0.0.7), so every connection from one host counts as one.
On a unix socket grpc names no caller (every peer is ``unix:``), so the share does not
apply there: the socket's mode and group decide who connects, and each kind's limit
still holds. The slots are counted on the event loop; nothing here runs for a unary
call.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias

import grpc
from grpc_health.v1 import health
from grpc_reflection.v1alpha import reflection

from errord.errors import LimitExceeded
from errord.limits import Limits
from errord.wire.status import abort

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
TCP_SCHEMES = ("ipv4", "ipv6")
"""How grpc names a TCP peer: ``ipv4:ADDRESS:PORT``, ``ipv6:%5BADDRESS%5D:PORT``."""


def peer_address(peer: str) -> str | None:
    """The address whose share a caller takes, from grpc's name of it (``context.peer()``):
    a TCP peer's address without the port; None for a unix socket's (or any other)."""
    scheme, _, rest = peer.partition(":")
    if scheme not in TCP_SCHEMES:
        return None
    return urllib.parse.unquote(rest.rpartition(":")[0]).strip("[]")


class StreamSlots:
    """At most ``limit`` streams of one kind open at once, and at most ``per_peer`` of
    them from one peer; each holds a slot while it runs."""

    def __init__(self, kind: str, setting: str, limit: int, share: float = 1.0) -> None:
        self.kind = kind
        """What the streams are, as refusals name them: ``WatchTrace``, ``health Watch``."""
        self.setting = setting
        """The setting of ``limit``, as refusals name it."""
        self.limit = limit
        self.per_peer = max(1, int(limit * share))
        """The slots one peer may hold: its share of ``limit``, at least one."""
        self.taken = 0
        self.refused = 0
        """Streams refused since the start, past the limit or a peer's share."""
        self._by_peer: dict[str, int] = {}

    @contextmanager
    def slot(self, peer: str | None) -> Iterator[None]:
        """Hold a slot for the block, taken by ``peer`` (None: a caller the share does
        not apply to); raises LimitExceeded when every slot is taken, or the peer's share."""
        held = 0 if peer is None else self._by_peer.get(peer, 0)
        if self.taken >= self.limit or held >= self.per_peer:
            self.refused += 1
            raise LimitExceeded(self._refusal(peer, held))
        self.taken += 1
        if peer is not None:
            self._by_peer[peer] = held + 1
        try:
            yield
        finally:
            self.taken -= 1
            if peer is not None:
                self._release(peer)

    def held_by(self, peer: str) -> int:
        """The slots ``peer`` holds."""
        return self._by_peer.get(peer, 0)

    def _release(self, peer: str) -> None:
        left = self._by_peer[peer] - 1
        if left:
            self._by_peer[peer] = left
        else:
            del self._by_peer[peer]

    def _refusal(self, peer: str | None, held: int) -> str:
        if self.taken >= self.limit:
            return (
                f"{self.taken} {self.kind} streams are open, the most errord serves at once "
                f"({self.setting}); close one, or watch again later"
            )
        return (
            f"{peer} holds {held} of the {self.limit} {self.kind} streams errord serves at "
            f"once, as many as one peer may (peer_stream_share x {self.setting}); close one, "
            "or watch again later"
        )


@dataclass(frozen=True)
class Streams:
    """The slots of each kind of stream."""

    health: StreamSlots
    trace: StreamSlots
    tools: StreamSlots
    reflection: StreamSlots

    @classmethod
    def within(cls, limits: Limits) -> Streams:
        share = limits.peer_stream_share
        return cls(
            StreamSlots("health Watch", "max_health_watches", limits.max_health_watches, share),
            StreamSlots("WatchTrace", "max_watchers", limits.max_watchers, share),
            StreamSlots("WatchTools", "max_tool_watchers", limits.max_tool_watchers, share),
            StreamSlots(
                "reflection", "max_reflection_streams", limits.max_reflection_streams, share
            ),
        )

    def by_kind(self) -> Mapping[str, StreamSlots]:
        """Each kind's slots by the name metrics label them with."""
        return {
            "health_watch": self.health,
            "watch_trace": self.trace,
            "watch_tools": self.tools,
            "reflection": self.reflection,
        }


class LimitedHealth(health.aio.HealthServicer):  # type: ignore[misc]  # grpc is untyped
    """The standard health service, each Watch holding a slot of ``slots``."""

    def __init__(self, slots: StreamSlots) -> None:
        super().__init__()
        self._slots = slots

    async def Watch(self, request: Any, context: Context) -> None:  # noqa: N802
        try:
            with self._slots.slot(peer_address(context.peer())):
                await super().Watch(request, context)
        except LimitExceeded as error:  # only the slot raises it
            await abort(context, error)


class LimitedReflection(reflection.aio.ReflectionServicer):  # type: ignore[misc]  # untyped
    """Server reflection, each stream holding a slot of ``slots``."""

    def __init__(self, names: tuple[str, ...], slots: StreamSlots) -> None:
        super().__init__(names)
        self._slots = slots

    async def ServerReflectionInfo(  # noqa: N802
        self, requests: AsyncIterator[Any], context: Context
    ) -> AsyncIterator[Any]:
        try:
            with self._slots.slot(peer_address(context.peer())):
                async for response in super().ServerReflectionInfo(requests, context):
                    yield response
        except LimitExceeded as error:
            await abort(context, error)
