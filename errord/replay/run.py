"""A replay from start to end: the database's snapshot folded with an engine and the
manifests tried (a daemon's assembly: errord.assembly), and the summary."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from errord.decide.engine import Engine
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model.events import BreakerChanged
from errord.replay.compare import Comparison, ReplayScope, ReplaySummary
from errord.replay.fold import Replayer
from errord.replay.snapshot import trace_snapshot

Progress = Callable[[int, int], None]
"""Told how far a replay has gone: events replayed, and in all."""

PROGRESS_EVERY = 5_000
"""Events replayed between two reports of progress."""


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
