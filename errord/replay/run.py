"""A replay from start to end: the database's snapshot, the engine of the settings, the
manifests tried, and the summary."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from errord.config import Settings
from errord.decide.engine import Engine
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model.events import BreakerChanged
from errord.decide.policy import default_policy
from errord.manifests.files import load_manifest_dir
from errord.manifests.root import ManifestRoot
from errord.replay.compare import Comparison, ReplayScope, ReplaySummary
from errord.replay.fold import Replayer
from errord.replay.snapshot import trace_snapshot

Progress = Callable[[int, int], None]
"""Told how far a replay has gone: events replayed, and in all."""

PROGRESS_EVERY = 5_000
"""Events replayed between two reports of progress."""


def engine_for(settings: Settings) -> Engine:
    """The engine the daemon decides with under ``settings`` (errord.app.serve)."""
    return Engine(
        default_policy(
            None,  # jitter seeded by each decision's id
            settings.retry_budget(),
            settings.model_corrections,
            settings.memory_min_episodes,
        ),
        turn_deadline=settings.turn_deadline_seconds,
        message_format=settings.message_format,
    )


def load_manifests(directory: Path | None, settings: Settings) -> ManifestSnapshot:
    """The manifests of ``directory`` (None: none, every tool on the default policy) with
    the breaker defaults of ``settings``, read under the root the daemon of ``settings``
    reads under, else under the directory's real parent (errord.manifests.root); raises
    ManifestError listing every problem (file:line)."""
    defaults = settings.tool_defaults()
    if directory is None:
        return ManifestSnapshot(defaults=defaults)
    root = ManifestRoot.configured(settings.manifests, settings.manifests_root)
    return load_manifest_dir(directory, defaults, root)


def replay_database(
    db: Path,
    engine: Engine,
    manifests: ManifestSnapshot,
    scope: ReplayScope | None = None,
    progress: Progress | None = None,
) -> ReplaySummary:
    """Replay the trace of the database at ``db`` with ``manifests``, comparing the
    failures of ``scope``; ``progress`` is told how far it has gone now and then.

    Reads a read-only snapshot and records nothing; raises StoreError naming ``db`` when
    it cannot be read.
    """
    comparison = Comparison(scope or ReplayScope())
    replayer = Replayer(engine, manifests, comparison.replayed_events, comparison.shows)
    started = time.perf_counter()
    with trace_snapshot(db) as snapshot:
        total = snapshot.total
        replayed = 0
        for event in snapshot.events():
            redecided = replayer.step(event)
            if redecided is not None:
                comparison.decision(event, redecided.recorded.decision, redecided.decision)
            elif type(event.detail) is BreakerChanged:
                comparison.recorded_events(event)
            replayed += 1
            if progress is not None and replayed % PROGRESS_EVERY == 0:
                progress(replayed, max(total, replayed))
        summary = comparison.finished(time.perf_counter() - started)
        summary.events = replayed
        summary.outcomes = replayer.outcomes
    if progress is not None:
        progress(replayed, replayed)
    return summary
