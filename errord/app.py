"""The daemon's lifecycle: load, open, serve, notify, and shut down in a fixed order.

Shutdown: STOPPING=1 to systemd, health NOT_SERVING, the drain (calls are still
taken and decided until they stop arriving: errord.wire.drain), watchers released,
``server.stop(grace)`` lets in-flight requests finish, the spans still queued are
exported (when OpenTelemetry export is on), then the store flushes its writer and
closes the database. Signal handlers only set an event: the first
signal starts the shutdown, a second one cuts the drain short.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from errord.assembly import Assembly, assemble
from errord.clock import Clock, SystemClock
from errord.config import Settings, default_db_path
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.errors import ConfigError
from errord.fleet.joining import join_fleet
from errord.handler import ErrorHandler
from errord.manifests.files import overlooked
from errord.operator_actions import OperatorActions
from errord.ops.metrics import start_metrics_server
from errord.ops.systemd import Notifier
from errord.ops.write_health import WriteHealthReporter
from errord.reload import ManifestReloader
from errord.state.after_commit import AfterCommit
from errord.state.health import ToolHealthBoard
from errord.state.memory_retention import MemoryBounds
from errord.state.projections import Projections
from errord.state.store import Salvage, Store
from errord.state.trace_retention import TraceBounds, TraceRetention
from errord.wire import unix_socket
from errord.wire.drain import Drain
from errord.wire.operator import OperatorService
from errord.wire.replay import Replays
from errord.wire.server import SERVED_SERVICES, Access, is_local, start_server
from errord.wire.service import ErrorHandlerService
from errord.wire.telemetry import Telemetry, telemetry_from

if TYPE_CHECKING:
    from errord.ops.console.server import RunningConsole

log = logging.getLogger("errord")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def assembled(settings: Settings) -> Assembly:
    """The daemon's engine and manifests (errord.assembly, as a replay assembles them);
    each file of the manifests directory that was not read is logged. Raises
    ManifestError listing every problem."""
    assembly = assemble(settings)
    if settings.manifests is not None:
        for warning in overlooked(settings.manifests):
            log.warning("%s", warning)
    return assembly


def reassembled_manifests(settings: Settings) -> ManifestSnapshot:
    """The manifests a reload puts in force: the daemon's assembly's, read again."""
    return assembled(settings).manifests


async def serve(
    settings: Settings,
    *,
    clock: Clock | None = None,
    notifier: Notifier | None = None,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Run the daemon until ``stop`` is set or SIGTERM/SIGINT arrives."""
    clock = clock or SystemClock()
    notifier = notifier or Notifier.from_environment()
    stop = stop or asyncio.Event()
    assembly = assembled(settings)
    telemetry = telemetry_from(settings, os.environ)
    if settings.db == default_db_path():  # errord's own place: made on first use
        # The trace holds tool inputs (redacted, still private): the directory is owner-only.
        settings.db.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    hurry = asyncio.Event()
    with stop_on_signals(stop, hurry):
        bounds = MemoryBounds(settings.memory_max_errors, settings.memory_max_age_seconds)
        state = Projections(
            settings.state_capacity, memory_errors=bounds.max_errors, max_tools=settings.max_tools
        )
        # Calls and turns are read only through the handler's Holder: loaded after start.
        later = (state.calls, state.turns)
        after_commit = AfterCommit()
        fleet = join_fleet(settings, state, clock, after_commit.tools.changed)
        if fleet is not None:
            after_commit.shared = fleet.committed
        opening = Store.open(settings.db, clock, state, after_commit=after_commit, load_later=later)
        async with await opening as store:
            handler = ErrorHandler(
                assembly.engine,
                store,
                state,
                assembly.manifests,
                clock,
                bounds,
                max_tools=settings.max_tools,
            )
            if fleet is not None:
                handler.views.share(fleet.view)
            trace_bounds = TraceBounds(
                settings.trace_retention_seconds,
                settings.trace_retention_bytes,
                settings.turn_deadline_seconds,
            )
            trace = TraceRetention(store, state.turns, state.calls, trace_bounds, clock)
            actions = OperatorActions(
                store, state, handler.holder, lambda: handler.manifests, clock
            )
            # What start-up built (modules, manifests, the loaded state) lives as long as
            # the daemon: keep it out of every garbage collection from now on.
            gc.freeze()
            board = ToolHealthBoard(
                state,
                lambda: handler.manifests,
                settings.alert_thresholds(),
                settings.memory_min_episodes,
            )
            serving = Serving(settings.db, lambda: len(handler.manifests), store.salvage)
            if fleet is not None:
                serving.fleet = fleet.status.words
            reload_from = None
            if settings.manifests is not None:  # a reload reads them as start-up did
                reload_from = functools.partial(reassembled_manifests, settings)
            reloader = ManifestReloader(handler, reload_from, notifier, serving.status)
            if fleet is not None:  # systemd's STATUS= says when the fleet's link changes
                fleet.on_state = lambda: notifier.status(reloader.status())
            errors = ErrorHandlerService(handler, telemetry)
            access = Access.from_settings(settings)
            running = await start_server(
                settings.listen,
                errors,
                OperatorService(
                    board,
                    actions,
                    clock,
                    reloader,
                    Replays(settings),
                    fleet.snapshot if fleet is not None else None,
                ),
                reflection_on=settings.reflection,
                access=access,
            )
            if access.operator_token is not None:
                log.info("operator calls need the token in %s", settings.operator_token_path)
            serving.address = running.address
            writes = WriteHealthReporter(
                store, running.health, SERVED_SERVICES, notifier, reloader.status
            )
            console = await start_console(settings, access, board, state, clock, telemetry)
            if console is not None:
                serving.console = console.address
            metrics = None
            background = [
                asyncio.create_task(handler.retention.run(stop), name="memory retention"),
                asyncio.create_task(trace.run(stop), name="trace retention"),
                asyncio.create_task(notifier.keep_watchdog_fed(stop), name="watchdog"),
                asyncio.create_task(writes.probe_while_failing(stop), name="write probe"),
            ]
            if fleet is not None:
                background.append(asyncio.create_task(fleet.run(stop), name="fleet"))
            try:
                if settings.metrics_listen is not None:
                    metrics = start_metrics_server(
                        settings.metrics_listen,
                        board,
                        clock.now,
                        reloader,
                        store,
                        running.streams.by_kind(),
                        handler,
                        trace.removed,
                        fleet.status if fleet is not None else None,
                    )
                    serving.metrics = f"http://{metrics.address}/metrics"
                with reload_on_sighup(reloader):
                    log.info("errord %s", serving.status())
                    notifier.ready(serving.status())
                    if on_ready is not None:
                        on_ready(running.address)
                    await stop.wait()
            finally:
                log.info("errord shutting down")
                stop.set()
                grace = settings.shutdown_grace_seconds
                deadline = clock.monotonic() + grace
                notifier.stopping()
                await running.health.enter_graceful_shutdown()
                drain = Drain(settings.shutdown_quiet_seconds, limit=grace / 2)
                await drain.run(running.arrivals, clock, hurry)
                if console is not None:
                    await console.stop()
                store.after_commit.close()
                await running.stop(max(0.0, deadline - clock.monotonic()))
                await asyncio.gather(*background)
                if telemetry is not None:  # the spans of the last decisions, exported
                    await asyncio.to_thread(telemetry.close)
                if metrics is not None:
                    await asyncio.to_thread(metrics.stop)
    log.info("errord stopped")


async def start_console(
    settings: Settings,
    access: Access,
    board: ToolHealthBoard,
    state: Projections,
    clock: Clock,
    telemetry: Telemetry | None,
) -> RunningConsole | None:
    """The web console, when ``console_listen`` asks for it (errord.ops.console): on the
    operator's token, with the gRPC listener's TLS files on TCP."""
    if settings.console_listen is None:
        return None
    try:
        # Only now: without console_listen, neither aiohttp nor Jinja2 is imported.
        from errord.ops.console import server
        from errord.ops.console.story import TraceLink
    except ImportError as error:
        raise ConfigError(
            f"console_listen: the console needs packages that are missing ({error.name}): "
            "install errord[console]"
        ) from error
    link = None
    if settings.console_trace_url and telemetry is not None and telemetry.spans is not None:
        from errord.wire.otel import turn_trace_id  # export is on: its extra is installed

        link = TraceLink(settings.console_trace_url, turn_trace_id)
    sources = server.ConsoleSources(
        board,
        state.memory,
        settings.db,
        clock,
        telemetry.hashing if telemetry is not None else None,
        link,
    )
    tls = None
    if settings.tls_cert_file is not None and settings.tls_key_file is not None:
        tls = server.tls_context(
            settings.tls_cert_file, settings.tls_key_file, settings.tls_client_ca_file
        )
    token = access.token or access.operator_token
    assert token is not None, "Access.from_settings reads or makes one of them"
    listen = settings.console_listen
    if listen.startswith("unix:"):
        sock, claimed = unix_socket.listening(Path(listen[len("unix:") :]), access.socket_group)
        running = await server.start_console(
            listen, sources, token, unix=sock, release=claimed.release
        )
    else:
        running = await server.start_console(listen, sources, token, tls=tls)
    if not is_local(settings.console_listen) and tls is None:
        log.warning(
            "the console listens on %s, beyond loopback, without TLS: the operator token "
            "and every trace it shows cross the network in plaintext; set tls_cert_file "
            "and tls_key_file",
            settings.console_listen,
        )
    return running


@dataclass
class Serving:
    """What the daemon serves, for its log line and systemd's STATUS=."""

    db: Path
    tools: Callable[[], int]
    """How many tools have a manifest in force (a reload changes it)."""
    salvage: Salvage | None = None
    """What became of a corrupt database found at start."""
    address: str = ""
    metrics: str = ""
    console: str = ""
    fleet: Callable[[], str] | None = None
    """The link to the fleet in words (errord.fleet), when fleet_url is set."""

    def status(self) -> str:
        text = f"serving on {self.address}"
        if self.metrics:
            text += f", metrics on {self.metrics}"
        if self.console:
            text += f", console on {self.console}"
        text += f", {self.tools()} tool manifests, db {self.db}"
        if self.salvage is not None:
            text += f" (salvaged: {self.salvage})"
        if self.fleet is not None:
            text += f"; {self.fleet()}"
        return text


class reload_on_sighup:  # noqa: N801 - used as a context manager, reads as a statement
    """Reload the manifests on SIGHUP while inside the block (systemctl reload)."""

    def __init__(self, reloader: ManifestReloader) -> None:
        self._reloader = reloader
        self._loop = asyncio.get_running_loop()
        self._reloads: set[asyncio.Task[object]] = set()

    def __enter__(self) -> None:
        self._loop.add_signal_handler(signal.SIGHUP, self._reload)

    def __exit__(self, *exc: object) -> None:
        self._loop.remove_signal_handler(signal.SIGHUP)

    def _reload(self) -> None:
        if self._reloader.reloadable:
            task = self._loop.create_task(self._reloader.reload("SIGHUP"))
            self._reloads.add(task)
            task.add_done_callback(self._reloads.discard)
        else:
            log.warning("SIGHUP ignored: errord was started without a manifests directory")


class stop_on_signals:  # noqa: N801 - used as a context manager, reads as a statement
    """Set ``stop`` on SIGTERM or SIGINT while inside the block, and ``hurry`` on the next."""

    def __init__(self, stop: asyncio.Event, hurry: asyncio.Event) -> None:
        self._stop = stop
        self._hurry = hurry
        self._loop = asyncio.get_running_loop()

    def __enter__(self) -> None:
        for signum in STOP_SIGNALS:
            self._loop.add_signal_handler(signum, self._signalled)

    def _signalled(self) -> None:
        (self._hurry if self._stop.is_set() else self._stop).set()

    def __exit__(self, *exc: object) -> None:
        for signum in STOP_SIGNALS:
            self._loop.remove_signal_handler(signum)
