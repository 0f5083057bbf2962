"""A scripted HTTP backend on loopback, for executors' tools to call as agents' tools call
theirs: healthy, down (the port refuses connections), failing a seeded share of requests
with 503 (a brownout), answering 503 to everything (dead but listening, so its requests
can be counted), hanging past the caller's timeout, or limiting its rate with 429 and a
Retry-After. It serves from threads of its own (``http.server``), so a test's event loop
never slows it, and records every request it receives on the test's clocks.

A tool calls it with aiohttp, a new connection each time (a refused connection is then
seen at once) and a 2 s timeout, as agent tools do (``tool``).
"""

from __future__ import annotations

import enum
import random
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
from errord_client.tools import Tool, function_tool

TOOL_TIMEOUT = 2.0
"""Seconds an agent's tool waits for the backend (aiohttp's total timeout)."""


class Mode(enum.Enum):
    HEALTHY = "healthy"
    DOWN = "down"
    """Not listening: connections are refused."""
    DEAD = "dead"
    """Listening, and answering 503 to every request."""
    BROWNOUT = "brownout"
    """503 for a seeded share of requests, in the order they arrive."""
    HANGING = "hanging"
    """Answering only after the callers' timeout."""
    LIMITED = "limited"
    """429 with Retry-After past ``limit`` requests a second."""


@dataclass(frozen=True)
class Request:
    """One request the backend received."""

    arrived: float
    """time.monotonic() when it arrived."""
    wall: float
    """time.time() when it arrived, to set beside the daemon's trace."""
    status: int
    query: str


@dataclass(frozen=True)
class Refusal:
    """A 429 the backend answered: the window it announced."""

    at: float
    """time.monotonic() when it answered."""
    retry_after: float


@dataclass
class ScriptedBackend:
    """The backend and what it saw; ``mode`` says how it answers now."""

    port: int = 0
    mode: Mode = Mode.HEALTHY
    failure_share: float = 0.3
    outcomes: random.Random = field(default_factory=lambda: random.Random(0))
    """Draws each brownout request's fate, in arrival order."""
    limit: int = 15
    """Requests a second a LIMITED backend answers (over any second)."""
    retry_after: float = 1.0
    hang: float = 3.0
    hanging: set[str] = field(default_factory=set)
    """Queries answered only after ``hang`` seconds, whatever the mode."""
    requests: list[Request] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    recovered_at: float | None = None
    """time.monotonic() when it last came back up after being DOWN."""
    _admitted: deque[float] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/search"

    def start(self) -> None:
        server = _Server(("127.0.0.1", self.port), _Handler)
        server.backend = self
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(10)
        self._server = self._thread = None

    def go_down(self) -> None:
        """Stop listening: every connection is refused until ``come_back``."""
        self.mode = Mode.DOWN
        self.stop()

    def come_back(self) -> None:
        """Listen again on the same port, healthy; ``recovered_at`` says when."""
        self.mode = Mode.HEALTHY
        self.start()
        self.recovered_at = time.monotonic()

    def answer(self, query: str) -> tuple[int, dict[str, str]]:
        """The status and headers of a request arriving now, recorded."""
        with self._lock:
            now = time.monotonic()
            status, headers = self._status(now)
            self.requests.append(Request(now, time.time(), status, query))
            if status == 429:
                self.refusals.append(Refusal(now, self.retry_after))
            return status, headers

    def _status(self, now: float) -> tuple[int, dict[str, str]]:
        mode = self.mode
        if mode is Mode.DEAD:
            return 503, {}
        if mode is Mode.BROWNOUT:
            return (503, {}) if self.outcomes.random() < self.failure_share else (200, {})
        if mode is Mode.LIMITED:
            admitted = self._admitted
            while admitted and admitted[0] <= now - 1.0:
                admitted.popleft()
            if len(admitted) >= self.limit:
                return 429, {"Retry-After": f"{self.retry_after:g}"}
            admitted.append(now)
        return 200, {}

    def successes_after(self, moment: float) -> list[Request]:
        return [r for r in self.requests if r.status == 200 and r.arrived >= moment]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # fifty agents connect at once: no SYN waits out a full backlog
    backend: ScriptedBackend


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        backend = self.server.backend
        status, headers = backend.answer(self.path)  # recorded as it arrives
        if backend.mode is Mode.HANGING or _query(self.path) in backend.hanging:
            time.sleep(backend.hang)
        body = b'{"results": ["ok"]}' if status == 200 else b'{"error": "try again"}'
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def _query(path: str) -> str:
    return parse_qs(urlsplit(path).query).get("q", [""])[0]


@contextmanager
def scripted_backend(**settings: Any) -> Iterator[ScriptedBackend]:
    """A started ScriptedBackend, stopped when the block ends."""
    backend = ScriptedBackend(**settings)
    backend.start()
    try:
        yield backend
    finally:
        backend.stop()


@dataclass
class Sends:
    """What the agents' tools did: when each request left, when each 429 came back."""

    sent: list[float] = field(default_factory=list)
    """time.monotonic() as each call of the tool began."""
    limited: list[tuple[float, float]] = field(default_factory=list)
    """(received, retry_after) of each 429 a tool call got."""
    succeeded: list[float] = field(default_factory=list)
    """time.monotonic() as each call returned its result."""


async def call_backend(
    session: aiohttp.ClientSession, backend: ScriptedBackend, sends: Sends, query: str
) -> dict[str, Any]:
    """One request, as an agent's tool makes it: a 2 s timeout, an HTTP error raised with
    its status and headers (aiohttp's ClientResponseError), which the executor reads."""
    sends.sent.append(time.monotonic())
    timeout = aiohttp.ClientTimeout(total=TOOL_TIMEOUT)
    try:
        async with session.get(backend.url, params={"q": query}, timeout=timeout) as response:
            response.raise_for_status()
            result: dict[str, Any] = await response.json()
    except aiohttp.ClientResponseError as error:
        if error.status == 429:
            headers = error.headers
            retry_after = float(headers.get("Retry-After", "0")) if headers is not None else 0.0
            sends.limited.append((time.monotonic(), retry_after))
        raise
    sends.succeeded.append(time.monotonic())
    return result


def tool(name: str, session: aiohttp.ClientSession, backend: ScriptedBackend, sends: Sends) -> Tool:
    """An executor tool ``name`` calling ``backend``."""

    async def search(q: str) -> dict[str, Any]:
        """Search the scripted backend."""
        return await call_backend(session, backend, sends, q)

    return function_tool(search, name=name)


def session() -> aiohttp.ClientSession:
    """A client session opening a new connection for each request, as a refused
    connection must be seen at once."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True, limit=0))
