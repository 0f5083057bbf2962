"""Salvage of a damaged database: decisions recorded, a fifth of the database's middle
pages overwritten with random bytes, the daemon restarted on it.

    python -m tests.reliability.salvage [--decisions 1000] [--damage 0.2] [--seed 0]

Before the damage, SQLite's dbstat table tells which page holds each trace event
(the leaves of the events b-tree, in key order, with their cell counts). After the
restart it checks:

- the daemon's figures (events saved, lost) against the events on sound and
  damaged pages;
- every decision whose event lies on a sound page, reported again, answers
  ``replayed`` with the decision first given;
- ``PRAGMA integrity_check`` of the database it serves is ok, and, once it is
  stopped, every projection equals the fold of the salvaged trace.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import signal
import sqlite3
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from errord_client import ErrordClient, pb

from tests.helpers import start_process
from tests.reliability.crash import check_projections, integrity

FIGURES = re.compile(r"(\d+) trace events saved, (\d+) lost")


@dataclass
class Results:
    events: int = 0
    """Trace events before the damage."""
    pages: int = 0
    pages_damaged: int = 0
    on_sound_pages: int = 0
    """Events whose leaf page was left alone."""
    saved: int = 0
    """The daemon's figures, from its log."""
    lost: int = 0
    replays_checked: int = 0
    """Decisions on sound pages, reported again."""
    problems: list[str] = field(default_factory=list)


def report(errord: ErrordClient, turn: str) -> pb.ReportFailureResponse:
    return errord.report_failure(
        turn_id=turn, call_id="c", tool=f"tool{len(turn) % 5}", attempt=1,
        code=pb.ERROR_CODE_TIMEOUT, message="upstream timeout after 30s",
    )  # fmt: skip


def record(db: Path, decisions: int) -> dict[str, str]:
    """Decision id by turn, of ``decisions`` reports to a daemon on ``db``, stopped after."""
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(db))
    try:
        with ErrordClient(daemon.address) as errord:
            return {
                turn: report(errord, turn).decision.decision_id
                for turn in (f"salvage-{number}" for number in range(decisions))
            }
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0, daemon.stderr


def event_pages(db: Path) -> tuple[dict[int, int], dict[str, int], int]:
    """The leaf page of each event's sequence, the sequence of each turn's decision,
    and the database's page count."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        sequences = [row[0] for row in connection.execute("SELECT sequence FROM events ORDER BY 1")]
        leaves = connection.execute(
            "SELECT pageno, ncell FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' "
            "ORDER BY path"
        ).fetchall()
        overflow = connection.execute(
            "SELECT count(*) FROM dbstat WHERE name = 'events' AND pagetype = 'overflow'"
        ).fetchone()[0]
        decisions = dict(
            connection.execute("SELECT turn_id, sequence FROM events WHERE kind = 'failure'")
        )
        [(pages,)] = connection.execute("PRAGMA page_count")
    assert overflow == 0, "an event on overflow pages would lie on several pages"
    owners = [page for page, cells in leaves for _ in range(cells)]
    assert len(owners) == len(sequences)
    return dict(zip(sequences, owners, strict=True)), decisions, pages


def overwrite(db: Path, fraction: float, seed: int, pages: int) -> set[int]:
    """Overwrite ``fraction`` of the middle pages (all but the first, which holds the
    file header and schema, and the last) with random bytes; their numbers."""
    chooser = random.Random(seed)
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        [(page_size,)] = connection.execute("PRAGMA page_size")
    middle = range(2, pages)
    damaged = set(chooser.sample(middle, round(fraction * len(middle))))
    with db.open("r+b") as file:
        for page in sorted(damaged):
            file.seek((page - 1) * page_size)
            file.write(chooser.randbytes(page_size))
    return damaged


def check_restart(
    db: Path,
    acknowledged: dict[str, str],
    sound: set[int],
    decisions: dict[str, int],
    results: Results,
    env: dict[str, str] | None,
) -> None:
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(db), env=env)
    try:
        figures = FIGURES.search(daemon.stderr)
        if figures is None:
            results.problems.append(f"no salvage figures in the log:\n{daemon.stderr}")
        else:
            results.saved, results.lost = int(figures[1]), int(figures[2])
        with ErrordClient(daemon.address) as errord:
            for turn, decision_id in acknowledged.items():
                if decisions[turn] not in sound:
                    continue
                again = report(errord, turn)
                if not again.replayed or again.decision.decision_id != decision_id:
                    results.problems.append(f"{turn} sent again got another decision")
                results.replays_checked += 1
    finally:
        if daemon.terminate(signal.SIGTERM) != 0:
            results.problems.append(f"the daemon failed:\n{daemon.stderr}")


def check_database(db: Path, results: Results) -> None:
    verdict = integrity(db)
    if verdict != "ok":
        results.problems.append(f"integrity_check: {verdict}")
    asyncio.run(check_projections(db, results.problems))


def run(
    decisions: int,
    directory: Path,
    *,
    damage: float = 0.2,
    seed: int = 0,
    env: dict[str, str] | None = None,
) -> Results:
    """Record, damage, restart (with ``env``), check."""
    db = directory / "errord.db"
    acknowledged = record(db, decisions)
    page_of, decision_sequences, pages = event_pages(db)
    damaged = overwrite(db, damage, seed, pages)
    sound = {sequence for sequence, page in page_of.items() if page not in damaged}
    results = Results(len(page_of), pages, len(damaged), len(sound))
    check_restart(db, acknowledged, sound, decision_sequences, results, env)
    check_database(db, results)
    if results.saved != results.on_sound_pages:
        results.problems.append(
            f"{results.saved} events saved, {results.on_sound_pages} on sound pages"
        )
    if results.saved + results.lost != results.events:
        results.problems.append(f"saved and lost do not add up to {results.events} events")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1000)
    parser.add_argument("--damage", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="errord-salvage-") as directory:
        results = run(args.decisions, Path(directory), damage=args.damage, seed=args.seed)
    print(
        f"{results.pages_damaged} of {results.pages} pages overwritten; {results.events} events,"
        f" {results.on_sound_pages} on sound pages; saved {results.saved}, lost"
        f" {results.lost}; {results.replays_checked} decisions replayed; problems:"
        f" {len(results.problems)}"
    )
    for problem in results.problems[:20]:
        print(f"  {problem}")
    sys.exit(1 if results.problems else 0)


if __name__ == "__main__":
    main()
