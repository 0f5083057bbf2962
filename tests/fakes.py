"""Test doubles at errord's seams."""

from __future__ import annotations

import asyncio
import io
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
import requests.adapters
import urllib3


class FakeClock:
    """A Clock whose time moves only when a test moves it (or something sleeps)."""

    def __init__(self) -> None:
        self.monotonic_time = 0.0
        """What monotonic() returns; set it or advance()."""
        self.wall_time = datetime(2026, 1, 1, tzinfo=UTC)
        """What now() returns; set it or advance()."""

    def monotonic(self) -> float:
        return self.monotonic_time

    def now(self) -> datetime:
        return self.wall_time

    async def sleep(self, seconds: float) -> None:
        """Advance both clocks by ``seconds`` at once, then yield to the loop."""
        self.advance(seconds)
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self.monotonic_time += seconds
        self.wall_time += timedelta(seconds=seconds)


class ShiftedClock:
    """The real clock, moved ahead as a test says: a daemon in the test's process whose
    trace must span hours while the test takes seconds (sleeps are real)."""

    def __init__(self) -> None:
        self.shift = 0.0
        """Seconds the clock is ahead of the real one."""

    def monotonic(self) -> float:
        return time.monotonic() + self.shift

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.shift)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def advance(self, seconds: float) -> None:
        self.shift += seconds


class FixedJitter:
    """Jitter that always lands at ``fraction`` of its range: 0 is -jitter, 1 is +jitter."""

    def __init__(self, fraction: float = 0.5) -> None:
        self.fraction = fraction

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.fraction


class CannedAdapter(requests.adapters.HTTPAdapter):
    """A requests transport answering every request with one status and body, built by
    requests' own response code, so a session reads the body, or streams it unread, as
    it would from a socket (httpx's own MockTransport is its seam; requests has none).
    ``raw`` is the last body sent, to see how much of it was read."""

    def __init__(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        super().__init__()
        self.status, self.body, self.content_type = status, body, content_type
        self.raw: io.BytesIO | None = None

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        self.raw = io.BytesIO(self.body)
        response = urllib3.HTTPResponse(
            body=self.raw,
            status=self.status,
            headers={"content-type": self.content_type},
            preload_content=False,
        )
        return self.build_response(request, response)
