"""A scripted HTTP backend on loopback, for executors' tools to call as agents' tools call
theirs: healthy, down (the port refuses connections), failing a seeded share of requests
with 503 (a brownout), answering 503 to everything (dead but listening, so its requests
can be counted), hanging past the caller's timeout (every request, or a seeded share of
them: latency spikes), limiting its rate with 429 and a Retry-After, overloaded (failing
more the more it is asked), or refusing the caller's revoked API key with 401. It serves
from threads of its own (``http.server``), so a test's event loop never slows it, and
records every request it receives on the test's clocks.

``GET /search?q=...`` answers by its mode alone. ``POST /search`` with a JSON body of
arguments also checks them as an API does: a ``date`` that is not YYYY-MM-DD is a 400
whose JSON body names the parameter. Every error has a JSON body in the shape OpenAI's API
uses; a success is ``{"results": [{"title": "result for Q"}]}``, with no result at all
for the queries in ``no_results``.

A tool calls it with aiohttp, a new connection each time (a refused connection is then
seen at once) and a 2 s timeout, as agent tools do (``tool``).
"""

from __future__ import annotations

import enum
import json
import random
import re
import sys
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
    SPIKING = "spiking"
    """Answering a seeded share (``hang_share``) of requests only after the callers'
    timeout: latency spikes."""
    OVERLOADED = "overloaded"
    """503 for a share of requests that grows with the load: when more than ``capacity``
    requests arrived over the last second, each fails with probability 1 - capacity/load,
    so that retries make it fail more."""
    UNAUTHORIZED = "unauthorized"
    """401 to every request: the caller's API key was revoked."""


VALID_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
"""What the backend takes as a ``date`` argument."""


def _error(message: str, **fields: str) -> bytes:
    return json.dumps({"error": {"message": message, **fields}}).encode()


ERROR_BODIES = {
    401: _error("Incorrect API key provided.", code="invalid_api_key"),
    429: _error("Rate limit reached for requests.", code="rate_limit_exceeded"),
    503: _error("The server is overloaded or not ready yet.", type="server_error"),
}


@dataclass(frozen=True)
class Reply:
    """What the backend answers a request."""

    status: int
    headers: dict[str, str]
    body: bytes
    hangs: bool = False
    """Answered only after the backend's ``hang``."""


@dataclass(frozen=True)
class Request:
    """One request the backend received."""

    arrived: float
    """time.monotonic() when it arrived."""
    wall: float
    """time.time() when it arrived, to set beside the daemon's trace."""
    status: int
    query: str
    """The path it asked for, with its query string."""


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
    hang_share: float = 0.5
    """The share of requests a SPIKING backend answers only after ``hang``."""
    capacity: int = 10
    """Requests a second an OVERLOADED backend serves (over any second)."""
    no_results: set[str] = field(default_factory=set)
    """Queries answered with an empty list of results."""
    requests: list[Request] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    recovered_at: float | None = None
    """time.monotonic() when it last came back up after being DOWN."""
    _admitted: deque[float] = field(default_factory=deque)
    _arrived: deque[float] = field(default_factory=deque)
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

    def answer(self, path: str) -> tuple[int, dict[str, str]]:
        """The status and headers of a GET of ``path`` arriving now, recorded."""
        reply = self.reply(_query(path), path=path)
        return reply.status, reply.headers

    def reply(
        self, query: str, arguments: dict[str, Any] | None = None, *, path: str = ""
    ) -> Reply:
        """The reply to a request for ``query`` arriving now (with ``arguments`` when it
        was a POST), recorded with ``path`` (default: ``/search?q=QUERY``)."""
        with self._lock:
            now = time.monotonic()
            status, headers = self._status(now)
            hangs = query in self.hanging or self.mode is Mode.HANGING
            if self.mode is Mode.SPIKING and status == 200:
                hangs = self.outcomes.random() < self.hang_share
            body = ERROR_BODIES.get(status, b"")
            if status == 200:
                status, body = self._content(query, arguments or {})
            self.requests.append(Request(now, time.time(), status, path or f"/search?q={query}"))
            if status == 429:
                self.refusals.append(Refusal(now, self.retry_after))
            return Reply(status, headers, body, hangs)

    def _status(self, now: float) -> tuple[int, dict[str, str]]:
        mode = self.mode
        if mode is Mode.DEAD:
            return 503, {}
        if mode is Mode.UNAUTHORIZED:
            return 401, {}
        if mode is Mode.BROWNOUT:
            return (503, {}) if self.outcomes.random() < self.failure_share else (200, {})
        if mode is Mode.OVERLOADED:
            arrived = self._arrived
            arrived.append(now)
            while arrived and arrived[0] <= now - 1.0:
                arrived.popleft()
            overload = 1.0 - self.capacity / len(arrived)
            return (503, {}) if self.outcomes.random() < overload else (200, {})
        if mode is Mode.LIMITED:
            admitted = self._admitted
            while admitted and admitted[0] <= now - 1.0:
                admitted.popleft()
            if len(admitted) >= self.limit:
                return 429, {"Retry-After": f"{self.retry_after:g}"}
            admitted.append(now)
        return 200, {}

    def _content(self, query: str, arguments: dict[str, Any]) -> tuple[int, bytes]:
        """A healthy answer: the arguments checked, then the results."""
        date = arguments.get("date")
        if date is not None and not VALID_DATE.fullmatch(str(date)):
            message = f"Invalid value for 'date': expected YYYY-MM-DD, got {date!r}."
            return 400, _error(message, param="date", code="invalid_value")
        results = [] if query in self.no_results else [{"title": f"result for {query}"}]
        return 200, json.dumps({"results": results}).encode()

    def successes_after(self, moment: float) -> list[Request]:
        return [r for r in self.requests if r.status == 200 and r.arrived >= moment]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # fifty agents connect at once: no SYN waits out a full backlog
    backend: ScriptedBackend

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A caller that gave up (its timeout) before the answer is no fault of the backend."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self._send(self.server.backend.reply(_query(self.path), path=self.path))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        try:
            arguments = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            arguments = {}
        if not isinstance(arguments, dict):
            arguments = {}
        self._send(self.server.backend.reply(str(arguments.get("q", "")), arguments))

    def _send(self, reply: Reply) -> None:
        if reply.hangs:
            time.sleep(self.server.backend.hang)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

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
