"""sd_notify spoken directly over the datagram socket; a no-op without NOTIFY_SOCKET.

READY=1 once serving, STATUS= lines, RELOADING=1 (with MONOTONIC_USEC, as
Type=notify-reload requires) then READY=1 around a reload, STOPPING=1 at
shutdown, and WATCHDOG=1 pings when systemd asks for them (WATCHDOG_USEC, for this
process when WATCHDOG_PID says so): sent from the event loop, so a loop that
blocks stops them and systemd restarts the daemon.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time

log = logging.getLogger(__name__)


class Notifier:
    """Tells systemd about the daemon's state (READY=1, STOPPING=1, STATUS=...)."""

    def __init__(self, address: str | None, watchdog_usec: int | None = None) -> None:
        # An address starting with "@" is in the abstract namespace.
        self._address = "\0" + address[1:] if address and address.startswith("@") else address
        self.watchdog_usec = watchdog_usec
        """The watchdog timeout systemd set for this process, in µs; None for none."""

    @classmethod
    def from_environment(cls) -> Notifier:
        return cls(os.environ.get("NOTIFY_SOCKET"), watchdog_usec())

    @property
    def enabled(self) -> bool:
        return bool(self._address)

    def notify(self, *assignments: str) -> None:
        """Send ``assignments`` such as ``READY=1``; failures are logged, never raised."""
        if not self._address:
            return
        payload = "\n".join(assignments).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(payload, self._address)
        except OSError as error:
            log.warning("cannot notify systemd at %s: %s", self._address, error)

    def ready(self, status: str) -> None:
        self.notify("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def status(self, status: str) -> None:
        self.notify(f"STATUS={status}")

    def reloading(self) -> None:
        monotonic_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.notify("RELOADING=1", f"MONOTONIC_USEC={monotonic_usec}", "STATUS=reloading manifests")

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between WATCHDOG=1 pings: half the timeout; None when not asked for."""
        if not self._address or not self.watchdog_usec:
            return None
        return self.watchdog_usec / 2 / 1e6

    async def keep_watchdog_fed(self, stop: asyncio.Event) -> None:
        """Send WATCHDOG=1 every ``watchdog_interval`` until ``stop`` is set."""
        interval = self.watchdog_interval
        if interval is None:
            return
        while not stop.is_set():
            self.notify("WATCHDOG=1")
            try:
                await asyncio.wait_for(stop.wait(), interval)
            except TimeoutError:
                continue

    def stopping(self) -> None:
        self.notify("STOPPING=1", "STATUS=shutting down")


def watchdog_usec() -> int | None:
    """WATCHDOG_USEC when it is meant for this process (WATCHDOG_PID unset or ours)."""
    pid = os.environ.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None
    try:
        usec = int(os.environ.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    return usec if usec > 0 else None
