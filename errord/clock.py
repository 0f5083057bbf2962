"""Time as a dependency: the engine asks a Clock, tests hand it a fake one."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Where errord reads time from and waits on it."""

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps, for intervals."""
        ...

    def now(self) -> datetime:
        """The wall-clock time, timezone-aware UTC, for records."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait for ``seconds``."""
        ...


class SystemClock:
    """The real clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
