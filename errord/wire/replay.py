"""ReplayManifests: the daemon's trace replayed with another manifests directory.

The request is checked here, the manifests loaded and the trace folded in a worker
thread (errord.replay), so that the event loop goes on deciding; the thread's progress
comes back to the loop and is streamed, then the summary. One replay at a time: it is
CPU-heavy, and a second one waits for nothing but a RESOURCE_EXHAUSTED.

The directory must be under the daemon's manifests root (errord.manifests.root): a
caller may have it read its manifests and those an operator put beside them, never
another file of the host, which a manifest's problems would quote back.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from errord_client.v1 import errord_pb2 as pb

from errord.assembly import Assembly, assemble
from errord.config import Settings
from errord.errors import FieldViolation, InvalidRequest, ManifestError, NoManifestDirectory
from errord.limits import LimitExceeded
from errord.manifests.root import SETTING, ManifestRoot
from errord.replay import ReplayScope, ReplaySummary, replay_database
from errord.replay.compare import DEFAULT_EXAMPLES
from errord.wire.bounds import CONTROL_CHARACTERS, Violations
from errord.wire.responses import duration

MAX_EXAMPLES = 100
"""Examples a request may ask for per kind of change."""
MAX_PATH_LENGTH = 4096


@dataclass(frozen=True, slots=True)
class ReplayAsked:
    """A ReplayManifestsRequest, checked."""

    manifests: Path | None
    """None: the daemon's own manifests directory, as it is now."""
    scope: ReplayScope


def replay_request_from_proto(request: pb.ReplayManifestsRequest) -> ReplayAsked:
    """The request as errord.replay takes it; InvalidRequest naming each bad field."""
    check = Violations()
    directory = check.text("manifests_dir", request.manifests_dir, MAX_PATH_LENGTH)
    if CONTROL_CHARACTERS.search(directory):
        check.add("manifests_dir", "must not contain control characters (U+0000 to U+001F)")
    elif directory and not os.path.isabs(directory):
        check.add("manifests_dir", "must be an absolute path (a directory on errord's host)")
    since = check.moment("since", request.since) if request.HasField("since") else None
    tool = check.identifier("tool", request.tool) if request.tool else ""
    if request.examples > MAX_EXAMPLES:
        check.add("examples", f"at most {MAX_EXAMPLES}, got {request.examples}")
    check.raise_any()
    scope = ReplayScope(since, tool, request.examples or DEFAULT_EXAMPLES)
    return ReplayAsked(Path(directory) if directory else None, scope)


def summary_to_proto(summary: ReplaySummary) -> pb.ReplaySummary:
    return pb.ReplaySummary(
        failures=summary.failures,
        changed=summary.changed,
        outcomes=summary.outcomes,
        events=summary.events,
        changes=[
            pb.ReplayChange(
                kind=change.kind,
                before=change.before,
                after=change.after,
                count=change.count,
                examples=[
                    pb.ReplayExample(
                        turn_id=e.turn_id,
                        call_id=e.call_id,
                        tool=e.tool,
                        attempt=e.attempt,
                        reason_before=e.reason_before,
                        reason_after=e.reason_after,
                        scope=e.scope,
                    )
                    for e in change.examples
                ],
            )
            for change in summary.changes
        ],
        retry_wait_before=duration(summary.retry_wait_before),
        retry_wait_after=duration(summary.retry_wait_after),
        breaker_openings_before=summary.breaker_openings_before,
        breaker_openings_after=summary.breaker_openings_after,
        escalations_before=summary.escalations_before,
        escalations_after=summary.escalations_after,
        rate=summary.rate,
    )


def replayed_directory(asked: Path | None, settings: Settings) -> Path | None:
    """The directory a replay reads: the daemon's own for None, else ``asked``, which must
    be under the daemon's manifests root once resolved. Raises NoManifestDirectory when
    the daemon has no root, InvalidRequest naming manifests_dir when ``asked`` is not
    under it. Reads the file system: called in a worker thread."""
    if asked is None:
        return settings.manifests
    root = ManifestRoot.configured(settings.manifests, settings.manifests_root)
    if root is None:
        raise NoManifestDirectory(
            f"manifests_dir: this errord has no manifests directory and no {SETTING}, so it"
            " replays its own manifests only (an empty manifests_dir); to replay another"
            f" directory, set {SETTING} in its settings to a directory above it"
        )
    if not root.holds(os.path.realpath(asked)):
        where = f"{asked} is outside {root.path}, where this errord reads manifests ({SETTING})"
        raise InvalidRequest([FieldViolation("manifests_dir", where)])
    return asked


def manifest_violations(error: ManifestError) -> InvalidRequest:
    """Each problem of the manifests tried, as a violation of ``manifests_dir``."""
    return InvalidRequest([FieldViolation("manifests_dir", str(p)) for p in error.problems])


class Replays:
    """Replays the daemon's database, one at a time, with the engine of its settings."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._running = False

    async def replay(self, asked: ReplayAsked) -> AsyncIterator[pb.ReplayManifestsResponse]:
        """Progress now and then, then the summary. Raises InvalidRequest for invalid
        manifests or a directory not under the manifests root, NoManifestDirectory for
        another directory than the daemon's when it has no root, LimitExceeded while
        another replay runs, StoreError when the database cannot be read."""
        if self._running:
            raise LimitExceeded("a replay is running already; ask again when it is done")
        self._running = True
        try:
            async for response in self._replayed(asked):
                yield response
        finally:
            self._running = False

    async def _replayed(self, asked: ReplayAsked) -> AsyncIterator[pb.ReplayManifestsResponse]:
        try:
            assembly = await asyncio.to_thread(self._assembly, asked.manifests)
        except ManifestError as error:
            raise manifest_violations(error) from error
        loop = asyncio.get_running_loop()
        progress: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
        abandoned = threading.Event()

        def told(replayed: int, total: int) -> None:
            if abandoned.is_set():  # the client went away: stop folding for nobody
                raise ReplayAbandoned
            loop.call_soon_threadsafe(progress.put_nowait, (replayed, total))

        folding = asyncio.ensure_future(
            asyncio.to_thread(
                replay_database,
                self._settings.db,
                assembly.engine,
                assembly.manifests,
                asked.scope,
                told,
            )
        )
        folding.add_done_callback(_retrieved)
        try:
            while not folding.done() or not progress.empty():
                waiting = asyncio.ensure_future(progress.get())
                await asyncio.wait((waiting, folding), return_when=asyncio.FIRST_COMPLETED)
                if waiting.done():
                    replayed, total = waiting.result()
                    yield pb.ReplayManifestsResponse(
                        progress=pb.ReplayProgress(replayed=replayed, total=total)
                    )
                else:
                    waiting.cancel()
        finally:
            abandoned.set()
        yield pb.ReplayManifestsResponse(summary=summary_to_proto(folding.result()))

    def _assembly(self, asked: Path | None) -> Assembly:
        """The daemon's assembly (errord.assembly) with the manifests to replay, its own
        for None."""
        return assemble(self._settings, replayed_directory(asked, self._settings))


class ReplayAbandoned(Exception):
    """Raised in the replay's thread when its client went away."""


def _retrieved(folding: asyncio.Future[ReplaySummary]) -> None:
    """Take the error of a replay nobody waits for any more (its client went away)."""
    if not folding.cancelled():
        folding.exception()
