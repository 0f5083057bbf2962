"""Reloading the manifests directory, on SIGHUP or ReloadManifests, without dropping a
request.

The directory is read and validated whole in a worker thread (the event loop keeps
answering); a valid set then replaces the one in force in one assignment, between two
decisions, so every decision sees one set or the other. An invalid set changes nothing:
its problems (file, line, field) are logged, returned, shown in systemd's STATUS and
counted. Either way the reload is a trace event. systemd hears RELOADING=1 first and
READY=1 after. One reload runs at a time; a second waits for the first.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model.events import ManifestsReloaded
from errord.errors import ErrordError, ManifestError, NoManifestDirectory
from errord.handler import ErrorHandler

log = logging.getLogger("errord")


class ReloadNotifier(Protocol):
    """What a reload tells the service manager (errord.ops.systemd.Notifier in the daemon)."""

    def reloading(self) -> None:
        """The manifests are being read again."""

    def ready(self, status: str) -> None:
        """The reload is over; ``status`` says what is in force."""


@dataclass(frozen=True, slots=True)
class Reloaded:
    """How a reload ended."""

    applied: bool
    tools: tuple[str, ...]
    """The tools with a manifest in force afterwards, by name."""
    problems: tuple[str, ...] = ()


class ManifestReloader:
    """Reads the manifests again and swaps them into the handler when they are valid."""

    def __init__(
        self,
        handler: ErrorHandler,
        load: Callable[[], ManifestSnapshot] | None,
        notifier: ReloadNotifier,
        status: Callable[[], str],
    ) -> None:
        """``load`` reads the directory (None: the daemon has none); ``status`` is the
        daemon's STATUS line for the manifests in force."""
        self._handler = handler
        self._load = load
        self._notifier = notifier
        self._status = status
        self._lock = asyncio.Lock()
        self.applied = 0
        """Reloads that put a new set in force, since start."""
        self.failed = 0
        """Reloads refused because the new set was invalid, since start."""
        self.last_problem = ""
        """The first problem of the last refused reload; empty after a good one."""

    @property
    def reloadable(self) -> bool:
        """False when the daemon has no manifests directory."""
        return self._load is not None

    async def reload(self, by: str) -> Reloaded:
        """Reload now; raises NoManifestDirectory when there is nothing to reload."""
        if self._load is None:
            raise NoManifestDirectory("errord was started without a manifests directory")
        async with self._lock:
            self._notifier.reloading()
            try:
                reloaded = await self._swap(self._load)
            finally:
                self._notifier.ready(self.status())
            await self._record(reloaded, by)
            return reloaded

    def status(self) -> str:
        """STATUS= for systemd: what is served, and a refused reload's first problem."""
        if self.last_problem:
            return f"{self._status()}; last reload refused: {self.last_problem}"
        return self._status()

    async def _swap(self, load: Callable[[], ManifestSnapshot]) -> Reloaded:
        try:
            snapshot = await asyncio.to_thread(load)
        except ManifestError as error:
            problems = tuple(str(problem) for problem in error.problems)
            self.failed += 1
            self.last_problem = problems[0] if problems else str(error)
            in_force = self._handler.manifests
            log.error(
                "manifest reload refused, %d tools stay in force; %d problem%s:\n%s",
                len(in_force),
                len(problems),
                "" if len(problems) == 1 else "s",
                error,
            )
            return Reloaded(False, _names(in_force), problems)
        self._handler.manifests = snapshot
        self.applied += 1
        self.last_problem = ""
        log.info("manifests reloaded: %d tools (%s)", len(snapshot), ", ".join(_names(snapshot)))
        return Reloaded(True, _names(snapshot))

    async def _record(self, reloaded: Reloaded, by: str) -> None:
        event = ManifestsReloaded(
            event_id=uuid.uuid4().hex,
            applied=reloaded.applied,
            tools=len(reloaded.tools),
            problems=reloaded.problems,
            by=by,
        )
        try:
            await self._handler.record(event)
        except ErrordError as error:  # the reload stands; only its record is missing
            log.warning("the manifest reload could not be recorded in the trace: %s", error)


def _names(snapshot: ManifestSnapshot) -> tuple[str, ...]:
    return tuple(sorted(manifest.name for manifest in snapshot))
