"""Benchmark: the console's pages over a trace of a million decisions.

    python -m tests.benchmarks.console_pages [--decisions 1000000] [--db PATH] [--rounds 5]

Records ``--decisions`` decisions into a real database file (kept at ``--db`` when it
exists already, so that a second run times the pages at once), through errord's own
Store: turns of four calls over the past week, each call a failure and its decision
(about 1.3 KB, as the engine writes them), then an outcome; every turn begun and
ended; twenty tools, a thousand users, one tool called by one turn in 50,000.

Then times what each page reads and renders in the console's thread (the worker's own
read-only connection, errord.state.store.reader, and the templates), the median of
``--rounds`` rounds: the first page of turns, a page deep in the list, each filter
(a common tool, a rare one, an action, a user, a time window), the live list's refresh,
and a turn's story. Prints the database's size, the recording's rate and each page's
time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from errord.clock import SystemClock
from errord.decide.model import Action, CallStatus, CallSummary, TurnSummary
from errord.decide.model.events import EventDetail, TurnBegan, TurnEnded
from errord.ops.console.rendering import render
from errord.ops.console.story import read_story
from errord.ops.console.turns import TurnQuery, find_turns, turns_since
from errord.state.projections import Projections
from errord.state.store import Store
from errord.state.store.reader import TraceReader
from tests.console_helpers import decided_failure, succeeded

CALLS = 4
TOOLS = [f"tool_{n:02d}" for n in range(20)]
RARE_TOOL = "rare_lookup"
RARE_EVERY = 50_000
USERS = 1_000
ACTIONS = (Action.RETRY, Action.RETRY, Action.USE_ALTERNATIVE, Action.FAIL, Action.SKIP)
WEEK = timedelta(days=7)
BATCH_TURNS = 250


def turn_events(number: int, at: datetime) -> Iterator[EventDetail]:
    """One turn: began, four calls (a failure and its decision, then an outcome), ended."""
    turn_id = f"turn-{number:07d}"
    user = f"user-{number % USERS}"
    yield TurnBegan(turn_id=turn_id, implicit=False, deadline=at + timedelta(minutes=5))
    summaries = []
    for call in range(CALLS):
        tool = RARE_TOOL if call == 0 and number % RARE_EVERY == 0 else TOOLS[(number + call) % 20]
        action = ACTIONS[(number + call) % len(ACTIONS)]
        call_id = f"call_{call}"
        yield decided_failure(turn_id, call_id, tool, at, action=action, user_id=user)
        yield succeeded(turn_id, call_id, tool, user)
        summaries.append(CallSummary(call_id=call_id, tool=tool, status=CallStatus.SUCCEEDED))
    summary = TurnSummary(
        turn_id=turn_id, began_at=at, ended_at=at + timedelta(seconds=2), calls=tuple(summaries)
    )
    yield TurnEnded(turn_id=turn_id, summary=summary)


async def record(db: Path, decisions: int, start: datetime) -> float:
    """Record the turns through errord's Store; decisions a second. The turns of one batch
    (one group commit) are recorded at one time, as a daemon's would be: a turn's state
    row is marked with the sequence of its batch."""
    turns = decisions // CALLS
    state = Projections()
    began = time.perf_counter()
    async with await Store.open(db, SystemClock(), state) as store:
        for first in range(0, turns, BATCH_TURNS):
            units = []
            for number in range(first, min(turns, first + BATCH_TURNS)):
                at = start + WEEK * first / turns + timedelta(milliseconds=number - first)
                units.append(store.submit(list(turn_events(number, at)), at=at))
            for unit in units:
                await unit.wait()
            if first % 50_000 == 0:
                print(f"  {first * CALLS:,} decisions recorded", flush=True)
    return decisions / (time.perf_counter() - began)


def timed(work: Callable[[], object], rounds: int) -> float:
    """The median of ``rounds`` runs of ``work``, in milliseconds."""
    spent = []
    for _ in range(rounds):
        began = time.perf_counter()
        work()
        spent.append((time.perf_counter() - began) * 1000)
    return statistics.median(spent)


def pages(reader: TraceReader, start: datetime) -> dict[str, Callable[[], object]]:
    def turns_page(query: TurnQuery) -> Callable[[], object]:
        return lambda: render("turns.html", page=find_turns(reader, query), actions=())

    first = find_turns(reader, TurnQuery())
    top = reader.last_sequence()
    deep = first
    for _ in range(20):
        assert deep.next_before is not None
        deep = find_turns(reader, TurnQuery(before=deep.next_before))
    assert deep.next_before is not None
    middle = start + WEEK / 2
    some_turn = first.rows[10].turn_id
    return {
        "turns, first page": turns_page(TurnQuery()),
        "turns, 21st page (by cursor)": turns_page(TurnQuery(before=deep.next_before)),
        "turns, a page half-way back": turns_page(TurnQuery(before=(top // 2, ""))),
        "turns of a common tool": turns_page(TurnQuery(tool=TOOLS[3])),
        "turns of a rare tool (the budget)": turns_page(TurnQuery(tool=RARE_TOOL)),
        "turns with a FAIL": turns_page(TurnQuery(action=Action.FAIL)),
        "turns of one user": turns_page(TurnQuery(user="user-7")),
        "turns in an hour mid-week": turns_page(
            TurnQuery(since=middle, until=middle + timedelta(hours=1))
        ),
        "live refresh, nothing new": lambda: turns_since(reader, TurnQuery(), top),
        "a turn's story": lambda: render("story.html", story=read_story(reader, some_turn)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, help="the database (recorded unless it exists)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = args.db or Path(scratch) / "errord.db"
        start = datetime.now(UTC) - WEEK
        if not db.exists():
            print(f"recording {args.decisions:,} decisions into {db} ...", flush=True)
            rate = asyncio.run(record(db, args.decisions, start))
            print(f"recorded at {rate:,.0f} decisions/s", flush=True)
        wal = db.with_name(db.name + "-wal")
        size = db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        reader = TraceReader(db)
        try:
            recorded = reader.last_sequence()
            earliest = reader.time_of(1) or start
            print(f"database: {size / 1e9:.2f} GB, {recorded:,} events")
            for name, work in pages(reader, earliest).items():
                print(f"  {name:<36} {timed(work, args.rounds):8.1f} ms", flush=True)
        finally:
            reader.close()


if __name__ == "__main__":
    main()
