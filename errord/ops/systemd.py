"""sd_notify spoken directly over the datagram socket; a no-op without NOTIFY_SOCKET."""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)


class Notifier:
    """Tells systemd about the daemon's state (READY=1, STOPPING=1, STATUS=...)."""

    def __init__(self, address: str | None) -> None:
        # An address starting with "@" is in the abstract namespace.
        self._address = "\0" + address[1:] if address and address.startswith("@") else address

    @classmethod
    def from_environment(cls) -> Notifier:
        return cls(os.environ.get("NOTIFY_SOCKET"))

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

    def stopping(self) -> None:
        self.notify("STOPPING=1", "STATUS=shutting down")
