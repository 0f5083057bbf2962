"""The console's HTTP server: aiohttp on the daemon's event loop, pages rendered in one
worker thread.

The loop only takes requests and reads the projections (a page of tools' health, a
copy of episodic memory); the trace is read, and every page rendered, in the console's
one thread (errord.state.store.reader has its own read-only connection), so that the
decisions on the loop wait for neither SQLite nor templates, and the console can take
one core at most.

Every response carries a strict Content-Security-Policy: scripts and styles from the
console itself only (no inline script, no inline style), nothing from anywhere else,
no frames, forms posting to itself only; and no-store, nosniff, no referrer.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import urlencode

from aiohttp import web

from errord.clock import Clock
from errord.decide.memory import MemoryKey, MemoryStats
from errord.decide.model.events import TraceEvent
from errord.errors import ConfigError, ListenError, StoreError
from errord.ops.console import tools as tool_pages
from errord.ops.console import turns as turn_pages
from errord.ops.console.access import SESSION_SECONDS, ConsoleAccess, safe_next
from errord.ops.console.rendering import render
from errord.ops.console.story import TraceLink, read_story
from errord.state import codec
from errord.state.health import ToolHealthBoard
from errord.state.projection import Projection
from errord.state.store.reader import TraceReader

log = logging.getLogger("errord")
T = TypeVar("T")

CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
STATIC: Final = {
    "console.css": "text/css",
    "console.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
}
OPEN_PATHS: Final = frozenset({"/login", *(f"/static/{name}" for name in STATIC)})
"""What answers without the token: the login form and what it is drawn with."""


@dataclass(frozen=True)
class ConsoleSources:
    """What the console reads: the daemon's own objects, never copies of their data."""

    board: ToolHealthBoard
    memory: Projection[MemoryKey, MemoryStats]
    db: Path
    clock: Clock
    hashing: Callable[[str], str] | None = None
    """How the daemon records user ids (hashed), for the user filter; None: as given."""
    trace_link: TraceLink | None = None


class Console:
    """The console's pages over ``sources``, for ``access``'s token."""

    def __init__(self, sources: ConsoleSources, access: ConsoleAccess) -> None:
        self.sources = sources
        self.access = access
        self.reader = TraceReader(sources.db)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="errord-console")

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._require_token])
        app.on_response_prepare.append(_secure_headers)
        app.add_routes(
            [
                web.get("/", self.tools),
                web.get("/tools", self.tools),
                web.get("/turns", self.turns),
                web.get("/turns/live", self.live_turns),
                web.get("/turn", self.turn),
                web.get("/event", self.event),
                web.get("/login", self.login_form),
                web.post("/login", self.login),
                web.post("/logout", self.logout),
                web.get("/static/{name}", self.static),
            ]
        )
        return app

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)
        self.reader.close()

    async def _off_loop(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``work(*args, **kwargs)`` in the console's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, functools.partial(work, *args, **kwargs))

    # Pages

    async def tools(self, request: web.Request) -> web.Response:
        sources = self.sources
        now = sources.clock.now()
        healths, next_after, total = tool_pages.read_healths(
            sources.board, now, request.query.get("after", "")
        )
        memory = sources.memory.snapshot()
        html = await self._off_loop(
            _tools_html, healths, memory, now, sources.board, next_after, total
        )
        return _html(html)

    async def turns(self, request: web.Request) -> web.Response:
        query = _query(request)
        html = await self._off_loop(self._turns_html, query)
        return _html(html)

    async def live_turns(self, request: web.Request) -> web.Response:
        query = _query(request)
        after = request.query.get("after", "0")
        if not after.isdigit():
            raise _bad(f"after: expected a sequence number, got {after!r}")
        page = await self._off_loop(
            turn_pages.turns_since, self.reader, query, int(after), self.sources.hashing
        )
        html = await self._off_loop(render, "turn_rows.html", page=page)
        return _html(html, headers={"X-Console-Top": str(page.top)})

    async def turn(self, request: web.Request) -> web.Response:
        turn_id = request.query.get("id", "")
        after = request.query.get("after", "0")
        if not turn_id:
            raise _bad("id: name the turn: /turn?id=TURN")
        if not after.isdigit():
            raise _bad(f"after: expected a sequence number, got {after!r}")
        found = await self._off_loop(
            read_story, self.reader, turn_id, int(after), self.sources.trace_link
        )
        if found is None:
            html = render("error.html", status=404, problem=f"no turn {turn_id!r} in the trace")
            return _html(html, status=404)
        return _html(await self._off_loop(render, "story.html", story=found))

    async def event(self, request: web.Request) -> web.Response:
        """One event whole, as JSON: what a page cut short."""
        sequence = request.query.get("seq", "")
        if not sequence.isdigit():
            raise _bad(f"seq: expected a sequence number, got {sequence!r}")
        found = await self._off_loop(self.reader.event, int(sequence))
        if found is None:
            return _html(render("error.html", status=404, problem="no such event"), status=404)
        body = await self._off_loop(_event_json, found)
        response = web.Response(body=body, content_type="application/json")
        response.headers["Content-Security-Policy"] = f"{CSP}; sandbox"
        return response

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound()
        text = resources.files("errord.ops.console").joinpath("static", name).read_text()
        return web.Response(text=text, content_type=STATIC[name], charset="utf-8")

    def _turns_html(self, query: turn_pages.TurnQuery) -> str:
        page = turn_pages.find_turns(self.reader, query, self.sources.hashing)
        return render("turns.html", page=page, actions=turn_pages.ACTIONS)

    # Access

    async def login_form(self, request: web.Request) -> web.Response:
        return self._login_page(request.query.get("next", "/"), "", status=200)

    async def login(self, request: web.Request) -> web.Response:
        form = await request.post()
        target = safe_next(str(form.get("next", "/")))
        if not self.access.is_token(str(form.get("token", ""))):
            return self._login_page(target, "That is not the operator token.")
        return self._signed_in(target)

    async def logout(self, request: web.Request) -> web.Response:
        response = _redirect("/login")
        response.del_cookie(self.access.cookie_name, path="/")
        return response

    @web.middleware
    async def _require_token(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path in OPEN_PATHS:
            return await _answered(handler, request)
        access = self.access
        bearer = access.bearer(request.headers)
        if bearer:
            return await _answered(handler, request)
        if "token" in request.query:
            if not access.is_token(request.query["token"]):
                return self._login_page(_without_token(request), "That is not the operator token.")
            return self._signed_in(_without_token(request))
        if bearer is None and access.in_session(request.cookies):
            return await _answered(handler, request)
        problem = "" if bearer is None else "That bearer token is not the operator token."
        return self._login_page(request.path_qs, problem)

    def _signed_in(self, target: str) -> web.Response:
        """A redirect to ``target`` that sets a new session cookie."""
        response = _redirect(target)
        response.set_cookie(
            self.access.cookie_name,
            self.access.session(),
            path="/",
            max_age=SESSION_SECONDS,
            httponly=True,
            secure=self.access.secure,
            samesite="Strict",
        )
        return response

    def _login_page(self, target: str, problem: str, status: int = 401) -> web.Response:
        html = render("login.html", next=safe_next(target), problem=problem)
        headers = {"WWW-Authenticate": 'Bearer realm="errord console"'} if status == 401 else {}
        return _html(html, status=status, headers=headers)


async def _answered(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]], request: web.Request
) -> web.StreamResponse:
    """The handler's response; a bad query (400) or a trace that cannot be read (503) as a
    page that says so."""
    try:
        return await handler(request)
    except turn_pages.BadQuery as error:
        return _html(render("error.html", status=400, problem=str(error)), status=400)
    except StoreError as error:
        log.warning("console: %s", error)
        return _html(render("error.html", status=503, problem=str(error)), status=503)


def _bad(problem: str) -> turn_pages.BadQuery:
    return turn_pages.BadQuery(problem)


def _query(request: web.Request) -> turn_pages.TurnQuery:
    return turn_pages.TurnQuery.from_params(request.query)


def _without_token(request: web.Request) -> str:
    kept = [(key, value) for key, value in request.query.items() if key != "token"]
    return request.path + (f"?{urlencode(kept)}" if kept else "")


def _tools_html(
    healths: list[Any],
    memory: dict[MemoryKey, MemoryStats],
    now: Any,
    board: ToolHealthBoard,
    next_after: str | None,
    total: int,
) -> str:
    page = tool_pages.tools_page(healths, memory, now, board.min_episodes, next_after, total)
    return render("tools.html", page=page, thresholds=board.thresholds)


def _event_json(event: TraceEvent) -> bytes:
    return codec.encode(event)


def _redirect(target: str) -> web.Response:
    return web.Response(status=303, headers={"Location": target})


def _html(text: str, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        text=text, status=status, content_type="text/html", charset="utf-8", headers=headers
    )


async def _secure_headers(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)


@dataclass
class RunningConsole:
    """The console, serving."""

    runner: web.AppRunner
    console: Console
    address: str
    """Where it serves: ``http(s)://host:port``, or ``unix:PATH``."""
    release: Callable[[], None] | None = None
    """Removes a unix socket's path, if it is still the console's."""

    async def stop(self) -> None:
        await self.runner.cleanup()
        await asyncio.to_thread(self.console.close)
        if self.release is not None:
            self.release()


def tls_context(cert: Path, key: Path, client_ca: Path | None) -> ssl.SSLContext:
    """The TLS of the gRPC listener's files (checked there first), for HTTPS."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
        if client_ca is not None:
            context.load_verify_locations(cafile=client_ca)
            context.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(f"console_listen: cannot serve TLS with {cert}: {error}") from error
    return context


async def start_console(
    listen: str,
    sources: ConsoleSources,
    token: str,
    *,
    tls: ssl.SSLContext | None = None,
    unix: socket.socket | None = None,
    release: Callable[[], None] | None = None,
) -> RunningConsole:
    """Serve the console on ``listen``: host:port (port 0 picks one), HTTPS with ``tls``;
    or unix:PATH, on ``unix``, the socket listening there already
    (errord.wire.unix_socket.listening: its mode and group set), which ``release``
    removes at the end."""
    console = Console(sources, ConsoleAccess(token, secure=tls is not None and unix is None))
    runner = web.AppRunner(console.app(), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        if unix is not None:
            sock, tls, address = unix, None, listen
        else:
            sock = _tcp_socket(listen)
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            address = f"{'https' if tls else 'http'}://{shown}:{port}"
        site = web.SockSite(runner, sock, ssl_context=tls)
        await site.start()
    except BaseException:
        await runner.cleanup()
        console.close()
        if release is not None:
            release()
        raise
    return RunningConsole(runner, console, address, release)


def _tcp_socket(listen: str) -> socket.socket:
    host, port = listen.rsplit(":", 1)
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, int(port)), family=family)
    except OSError as error:
        raise ListenError(f"cannot serve the console on {listen}: {error.strerror}") from error
