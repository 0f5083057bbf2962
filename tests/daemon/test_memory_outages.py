"""Episodic memory through outages, against errord in the test's process (its clock moved
ahead between bursts) and a scripted HTTP backend on loopback, with the real Executor.

- An outage is one piece of evidence: after two calls timed out through all their
  attempts (eight failed retries, in one burst) and the tool works again, a new timeout is
  retried, and the decision's reason says what memory read.
- An error retries really never fix, seen in five bursts minutes apart, each call of them
  retried in full, then stops being retried.

The tool's manifest keeps its breaker out of it (it opens only after a thousand
failures in a row, or when every one of a hundred attempts failed): memory alone decides
here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from errord_client.executor import Executor, ResultStatus
from errord_client.v1 import errord_pb2 as pb

from errord.config import Settings
from tests.executor_helpers import failures, recorded_trace, write_manifests
from tests.fakes import ShiftedClock
from tests.helpers import InProcessDaemon, start_in_process
from tests.scripted_backend import ScriptedBackend, Sends, scripted_backend, session, tool

MANIFEST = """\
    tools:
      - name: slow_search
        timeout_ms: 300
        circuit_breaker:
          {failure_threshold: 1000, failure_rate_percent: 100, min_calls: 100, window: 100}
    """
"""The executor gives each attempt 300 ms; a hanging request takes a second."""
DECISIONS = 10.0
BETWEEN_BURSTS = 120.0
"""Seconds the daemon's clock moves between bursts: two quiet minutes."""


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[tuple[InProcessDaemon, ShiftedClock]]:
    clock = ShiftedClock()
    settings = Settings(
        listen="127.0.0.1:0",
        db=tmp_path / "errord.db",
        manifests=write_manifests(tmp_path, MANIFEST),
    )
    running = await start_in_process(settings, clock)
    try:
        yield running, clock
    finally:
        running.stop.set()
        await running.task


async def call(executor: Executor, turn: str, query: str) -> Any:
    """One call of slow_search in a turn of its own."""
    request = {"id": "c", "name": "slow_search", "arguments": {"q": query}}
    return await executor.run_one(request, turn_id=turn)


def requests_for(backend: ScriptedBackend, query: str) -> int:
    return sum(request.query.endswith(f"q={query}") for request in backend.requests)


async def test_after_an_outage_a_new_timeout_is_retried_and_the_reason_says_why(
    daemon: tuple[InProcessDaemon, ShiftedClock],
) -> None:
    running, _ = daemon
    with scripted_backend(hang=1.0) as backend:
        backend.hanging = {"during"}
        async with (
            session() as http,
            Executor(
                [tool("slow_search", http, backend, Sends())],
                target=running.address,
                decision_timeout=DECISIONS,
            ) as executor,
        ):
            await executor.start()
            outage = await asyncio.gather(
                call(executor, "outage-1", "during"), call(executor, "outage-2", "during")
            )
            backend.hanging = {"later"}  # the outage is over; one more request will hang
            back = await call(executor, "back", "after")
            await call(executor, "later", "later")
        events = await recorded_trace(running, "later")
    assert [result.status for result in outage] == [ResultStatus.TIMED_OUT] * 2
    assert requests_for(backend, "during") == 10  # retried through all five attempts, each
    assert back.status is ResultStatus.SUCCEEDED
    [first, *_] = failures(events)
    decision = first.failure.decision
    assert decision.action == pb.RECOVERY_ACTION_RETRY
    assert "Retries fixed 0 of 1 burst of this error of slow_search recently, but " in (
        decision.reason
    )
    assert decision.reason.endswith(", after the last of them: that evidence stops no retry.")
    [recalled] = decision.recalled
    assert (recalled.recovery, round(recalled.failed)) == ("RETRY", 1)
    assert requests_for(backend, "later") >= 2


async def test_an_error_retries_never_fix_still_stops_being_retried_after_five_bursts(
    daemon: tuple[InProcessDaemon, ShiftedClock],
) -> None:
    running, clock = daemon
    with scripted_backend(hang=1.0) as backend:
        backend.hanging = {"cursed"}
        async with (
            session() as http,
            Executor(
                [tool("slow_search", http, backend, Sends())],
                target=running.address,
                decision_timeout=DECISIONS,
            ) as executor,
        ):
            await executor.start()
            tried = []
            for burst in range(5):
                before = requests_for(backend, "cursed")
                await call(executor, f"burst-{burst}", "cursed")
                tried.append(requests_for(backend, "cursed") - before)
                clock.advance(BETWEEN_BURSTS)
            before = requests_for(backend, "cursed")
            last = await call(executor, "sixth", "cursed")
            sixth = requests_for(backend, "cursed") - before
        events = await recorded_trace(running, "sixth")
    # Each of four bursts' calls was retried in full: no law from one burst, nor four. The
    # fifth's call is retried until its own failed retry is the fifth burst of evidence.
    assert tried[:4] == [5] * 4
    assert 2 <= tried[4] < 5
    assert sixth == 1  # five bursts of evidence: no retry
    assert last.status is ResultStatus.TIMED_OUT
    [refused] = failures(events)
    decision = refused.failure.decision
    assert decision.action == pb.RECOVERY_ACTION_FAIL
    assert decision.reason.startswith(
        "No retry: retries fixed 0 of 5 bursts of this error of slow_search recently (the "
        "failures of one outage or spell count once); the last failed at "
    )
    assert "and slow_search has not succeeded nor had its breaker reset since" in decision.reason
