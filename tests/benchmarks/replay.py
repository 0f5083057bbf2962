"""Benchmark: what-if replay of a recorded trace, in decisions re-decided per second.

    python -m tests.benchmarks.replay [--failures 1000000] [--db PATH]

Builds a database of ``--failures`` recorded failures quickly, without the daemon: the
engine decides each report against state folded as the daemon folds it (errord.replay's
ReplayState), and the events are written in bulk, as the writer would have written them.
The mix: calls of three tools, ten calls a turn; timeouts and 503s retried until a retry
succeeds (70 % do) or the policy stops, invalid arguments handed back to the model; an
outcome after each successful retry. Then the whole trace is replayed with the same
manifests, as ``errord replay`` does, and the rate printed: the decisions replayed, the
seconds, and decisions per second. Nothing may change: a change is reported as a failure.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from errord.assembly import engine_for
from errord.clock import SystemClock
from errord.config import Settings
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.decide.model.events import EventDetail, TraceEvent
from errord.manifests.files import load_manifest_dir
from errord.replay import ReplayScope, replay_database
from errord.replay.fold import ReplayState
from errord.state.projections import Projections
from errord.state.store import Store
from errord.state.store.rows import event_row

MANIFESTS = """\
tools:
  - name: search
    alternatives: [search_backup]
  - name: search_backup
  - name: weather
    circuit_breaker: {failure_threshold: 50}
  - name: pay
    parameters:
      type: object
      required: [amount]
      properties: {amount: {type: number}}
"""
ERRORS = {
    "search": ToolFailure(code=ErrorCode.TIMEOUT, message="read timed out after 30s"),
    "weather": ToolFailure(http_status=503, message="HTTP 503 Service Unavailable"),
    "pay": ToolFailure(code=ErrorCode.INVALID_INPUT, message="amount: expected a number"),
}
START = datetime(2026, 1, 1, tzinfo=UTC)
BATCH = 20_000
"""Events written per transaction."""


def manifests(directory: Path) -> ManifestSnapshot:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tools.yaml").write_text(MANIFESTS)
    return load_manifest_dir(directory)


def recorded(failures: int, snapshot: ManifestSnapshot) -> Iterator[TraceEvent]:
    """The events of a trace with ``failures`` failures, decided as the daemon decides."""
    engine = engine_for(Settings())
    state = ReplayState()
    chooser = random.Random(1)
    sequence = itertools.count(1)
    made, call = 0, 0
    while made < failures:
        turn, call_id = f"t{call // 10}", f"c{call}"
        tool = chooser.choice(("search", "weather", "pay"))
        now = START + timedelta(milliseconds=call * 20)
        for attempt in itertools.count(1):
            report = FailureReport(
                turn_id=turn,
                call_id=call_id,
                tool=tool,
                attempt=attempt,
                error=ERRORS[tool],
                arguments={"amount": "ten"} if tool == "pay" else {},
            )
            decided = engine.decide(
                report,
                snapshot,
                state.calls.get(report.key.call),
                state.turns.get(turn),
                now,
                state.breakers.get,
                state.remembered,
            )
            made += 1
            yield from _folded(state, next(sequence), now, decided.events)
            if decided.decision.action is not Action.RETRY or made >= failures:
                break
            now += timedelta(seconds=decided.decision.delay + 0.05)
            if chooser.random() < 0.7:  # the retry succeeds
                outcome = OutcomeReport(turn, call_id, tool, attempt + 1, Outcome.SUCCESS)
                events = engine.outcome(
                    outcome,
                    snapshot,
                    state.turns.get(turn),
                    now,
                    state.breakers.get,
                    state.calls.get(outcome.key.call),
                )
                yield from _folded(state, next(sequence), now, events)
                break
        call += 1


def _folded(
    state: ReplayState, unit: int, now: datetime, details: Sequence[EventDetail]
) -> Iterator[TraceEvent]:
    """The events of one unit of work, folded into ``state``; numbered from ``unit``
    times 10 (a unit has fewer than 10 events), so that sequences increase."""
    for number, detail in enumerate(details):
        event = TraceEvent(unit * 10 + number, now, detail)
        state.apply(event)
        yield event


async def create(db: Path) -> None:
    """An empty database at ``db``, its schema migrated, as the daemon makes it."""
    store = await Store.open(db, SystemClock(), Projections())
    await store.close()


def build(db: Path, failures: int, snapshot: ManifestSnapshot) -> None:
    asyncio.run(create(db))
    connection = sqlite3.connect(db)
    rows = []
    for event in recorded(failures, snapshot):
        rows.append(event_row(event)[:6])
        if len(rows) == BATCH:
            _write(connection, rows)
            rows = []
    _write(connection, rows)
    connection.close()


def _write(connection: sqlite3.Connection, rows: Sequence[tuple[object, ...]]) -> None:
    with connection:
        connection.executemany(
            "INSERT INTO events (sequence, kind, turn_id, dedup_key, recorded_at, body) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failures", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, help="build here (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = args.db or Path(scratch) / "errord.db"
        snapshot = manifests(Path(scratch) / "manifests")
        started = time.perf_counter()
        if not db.exists():
            build(db, args.failures, snapshot)
            print(f"built {db} in {time.perf_counter() - started:.1f} s", flush=True)
        summary = replay_database(db, engine_for(Settings()), snapshot, ReplayScope())
    print(
        f"replayed {summary.events:,} events: {summary.failures:,} failures re-decided, "
        f"{summary.outcomes:,} outcomes folded, in {summary.seconds:.1f} s"
    )
    print(f"replay rate: {summary.rate:,.0f} decisions/s")
    if summary.changed:
        print(f"{summary.changed} decisions changed: the replay is not deterministic")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
