"""Reporting that the trace database cannot be written, and that it can again.

errord never answers a decision it could not record: while writes fail (disk full, I/O
error, a read-only file) every report is refused with UNAVAILABLE. That must not be
silent: the first failure turns health NOT_SERVING (the whole server and each errord
service), says why in systemd's STATUS= and in an error line of the log, and the metrics
count the refused batches. While failing, a write that changes nothing is tried every
PROBE_INTERVAL seconds (reports may have stopped, since health says not to send them);
the first write that succeeds, probe or batch, turns everything back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from grpc_health.v1 import health, health_pb2

from errord.errors import StoreError
from errord.ops.systemd import Notifier
from errord.state.store import Store

log = logging.getLogger("errord")

PROBE_INTERVAL = 5.0
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class WriteHealthReporter:
    """Turns write failures of ``store`` into health, STATUS= and log lines."""

    def __init__(
        self,
        store: Store,
        checker: health.aio.HealthServicer,
        services: Sequence[str],
        notifier: Notifier,
        status: Callable[[], str],
    ) -> None:
        self._store = store
        self._checker = checker
        self._services = ("", *services)
        self._notifier = notifier
        self._status = status
        self._changes: set[asyncio.Task[None]] = set()
        store.watch_writes(self._changed)

    def _changed(self, error: StoreError | None) -> None:
        if error is not None:
            log.error(
                "cannot write the trace database: %s; reports are refused with UNAVAILABLE "
                "and health is NOT_SERVING until a write succeeds",
                error,
            )
            self._notifier.status(f"degraded: cannot write the trace database: {error}")
        else:
            log.info("the trace database can be written again; serving")
            self._notifier.status(self._status())
        status = SERVING if error is None else NOT_SERVING
        task = asyncio.get_running_loop().create_task(self._set(status))
        self._changes.add(task)
        task.add_done_callback(self._changes.discard)

    async def _set(self, status: health_pb2.HealthCheckResponse.ServingStatus.ValueType) -> None:
        for service in self._services:
            await self._checker.set(service, status)

    async def probe_while_failing(self, stop: asyncio.Event) -> None:
        """Every PROBE_INTERVAL seconds while writes fail, try one; until ``stop``."""
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), PROBE_INTERVAL)
            except TimeoutError:
                if self._store.failing is not None:
                    await self._store.probe_write()
