"""Lame duck: at shutdown the server keeps deciding until requests stop arriving.

``server.stop()`` answers CANCELLED, which clients do not retry, for every call
grpc core has received but not yet handed to a handler (grpc/grpc#41785); grpc.aio
takes calls from core one at a time, so in a burst most of them wait there. So
errord drains first, as Envoy and Kubernetes sidecars do: health already says
NOT_SERVING, but calls are still taken and decided until none has arrived for a
quiet period (or half the grace is spent, or a second signal asks to hurry). Only
then does the server stop; what comes later is refused, UNAVAILABLE.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from dataclasses import dataclass

import grpc

from errord.clock import Clock

log = logging.getLogger(__name__)

QUIET_CHECKS = 5
"""Checks, a fifth of the quiet period apart, that must each find no new arrival. The
event loop takes calls between two checks, so a process descheduled for longer than the
whole period counts one calm check, not a quiet period."""


class ArrivalCounter(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpc is untyped
    """errord's method handlers, counting each call grpc hands to them.

    Every request pays for the count: one attribute write, no coroutine.
    """

    def __init__(self, *handlers: grpc.GenericRpcHandler) -> None:
        self._handlers = handlers
        self.arrivals = 0
        """Calls grpc has asked these handlers for, since the server started."""

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        self.arrivals += 1
        for handler in self._handlers:
            found = handler.service(details)
            if found is not None:
                return found
        return None


class DrainEnd(enum.Enum):
    """Why a drain ended."""

    QUIET = "quiet"
    """No call arrived for the quiet period."""
    LIMIT = "limit"
    """Calls were still arriving when the time allowed ran out."""
    HURRIED = "hurried"
    """A second stop signal."""


@dataclass(frozen=True)
class Drain:
    """How long a shutting-down server keeps taking calls."""

    quiet: float
    """Seconds without an arrival that end the drain; 0 for no drain."""
    limit: float
    """Seconds after which it ends even if calls keep arriving."""

    async def run(
        self, counter: ArrivalCounter, clock: Clock, hurry: asyncio.Event
    ) -> DrainEnd | None:
        """Wait until the drain ends, and log how; None when there is no drain."""
        if self.quiet <= 0:
            return None
        started, first = clock.monotonic(), counter.arrivals
        end = await self._until_quiet(counter, clock, hurry)
        arrived = counter.arrivals - first
        if end is DrainEnd.QUIET:
            log.info(
                "drained: %d calls arrived since shutdown began, then none for %g s",
                arrived,
                self.quiet,
            )
        elif end is DrainEnd.HURRIED:
            log.info("drain cut short by a second signal (%d calls arrived in it)", arrived)
        else:
            log.warning(
                "drain ended after %.1f s with calls still arriving (%d): calls grpc has "
                "received but not yet handed to errord are cancelled",
                clock.monotonic() - started,
                arrived,
            )
        return end

    async def _until_quiet(
        self, counter: ArrivalCounter, clock: Clock, hurry: asyncio.Event
    ) -> DrainEnd:
        deadline = clock.monotonic() + self.limit
        seen, calm = counter.arrivals, 0
        while calm < QUIET_CHECKS:
            left = deadline - clock.monotonic()
            if left <= 0:
                return DrainEnd.LIMIT
            if await pause(clock, min(self.quiet / QUIET_CHECKS, left), hurry):
                return DrainEnd.HURRIED
            calm = calm + 1 if counter.arrivals == seen else 0
            seen = counter.arrivals
        return DrainEnd.QUIET


async def pause(clock: Clock, seconds: float, hurry: asyncio.Event) -> bool:
    """Sleep ``seconds`` on ``clock`` unless ``hurry`` is set first; whether it was."""
    if hurry.is_set():
        return True
    sleeping = asyncio.ensure_future(clock.sleep(seconds))
    hurried = asyncio.ensure_future(hurry.wait())
    await asyncio.wait((sleeping, hurried), return_when=asyncio.FIRST_COMPLETED)
    for waiting in (sleeping, hurried):
        waiting.cancel()
    return hurry.is_set()
