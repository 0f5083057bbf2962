"""The executor while errord dies and comes back on the same port and database: no call
raises, every call gets its result, those decided while errord was away say so, and
errord decides again once it is back, without the executor being told.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

from errord_client.executor import DecidedBy, Executor, ResultStatus, ToolCall, ToolResult
from errord_client.tools import ANY_ARGUMENTS, Tool

from tests.executor_helpers import (
    PATIENCE,
    failures,
    free_port,
    recorded_trace,
    start_errord,
    wait_for,
    write_manifests,
)
from tests.helpers import DaemonProcess

DOWN_FOR = 2.0
"""Seconds errord stays dead before it is started again."""

BATCH = 100

MANIFESTS = """\
    tools:
      - name: flaky
        timeout_ms: 60000
        circuit_breaker:
          failure_threshold: 1000
    """
"""A breaker that never opens here: every failure is the tool's, not the breaker's."""


class Flaky:
    """A tool failing with ConnectionError on the first ``failing`` attempts of each key
    (its ``key`` argument), then returning the key. While ``hold`` is clear, first
    attempts wait for it before failing; ``held`` counts those waiting."""

    def __init__(self) -> None:
        self.attempts: Counter[str] = Counter()
        self.hold = asyncio.Event()
        self.hold.set()
        self.held = 0

    @property
    def tool(self) -> Tool:
        return Tool("flaky", ANY_ARGUMENTS, function=self._run)

    async def _run(self, key: str, failing: int) -> Any:
        self.attempts[key] += 1
        if self.attempts[key] == 1 and not self.hold.is_set():
            self.held += 1
            await self.hold.wait()
        if self.attempts[key] <= failing:
            raise ConnectionError(f"connection reset by {key}'s backend")
        return {"key": key}


def flaky_calls(prefix: str, count: int, failing: int) -> list[ToolCall]:
    return [
        ToolCall(f"{prefix}-{n}", "flaky", {"key": f"{prefix}-{n}", "failing": failing})
        for n in range(count)
    ]


async def restart(daemon: DaemonProcess, signum: int, tmp_path: Path, port: int) -> DaemonProcess:
    """Stop ``daemon`` with ``signum`` (waiting for its exit), then start it again on ``port``;
    both off the event loop, which keeps running the executors."""
    await asyncio.to_thread(daemon.terminate, signum)
    return await asyncio.to_thread(start_errord, tmp_path, tmp_path / "tools", port)


async def recorded_decisions(daemon: DaemonProcess, turn_id: str) -> dict[str, list[str]]:
    """The decision ids errord recorded for each call of ``turn_id``."""
    events = await recorded_trace(daemon, turn_id)
    recorded: dict[str, list[str]] = {}
    for event in failures(events):
        recorded.setdefault(event.call_id, []).append(event.failure.decision.decision_id)
    return recorded


async def test_sigkill_mid_batch_then_restart_every_call_has_a_result_and_says_who_decided(
    tmp_path: Path,
) -> None:
    """errord is killed while 100 calls hold their first attempt; they then fail twice,
    transiently, while it is away, and the local policy retries them. errord comes back
    2 s later on the same port and database. Every call has its result, in order; those
    errord never decided say LOCAL; calls made after the restart are decided by errord."""
    port = free_port()
    write_manifests(tmp_path, MANIFESTS)
    daemon = start_errord(tmp_path, tmp_path / "tools", port)
    flaky = Flaky()
    calls = flaky_calls("outage", BATCH, failing=2)
    try:
        async with Executor([flaky.tool], target=daemon.address, decision_timeout=2.0) as ex:
            await ex.start()
            flaky.hold.clear()
            batch = asyncio.create_task(ex.run(calls, turn_id="turn-outage"))

            async def all_held() -> bool:
                return flaky.held == BATCH

            await wait_for(all_held, "every call's first attempt to be running")
            await asyncio.to_thread(daemon.terminate, signal.SIGKILL)
            killed = time.monotonic()
            flaky.hold.set()
            await asyncio.sleep(max(0.0, killed + DOWN_FOR - time.monotonic()))
            daemon = await asyncio.to_thread(start_errord, tmp_path, tmp_path / "tools", port)
            results = await asyncio.wait_for(batch, PATIENCE)

            async def watching() -> bool:
                return ex.board.synced.is_set()

            await wait_for(watching, "the executor to watch errord again")
            after = flaky_calls("after", 10, failing=1)
            again = await ex.run(after, turn_id="turn-after")
        outage = await recorded_decisions(daemon, "turn-outage")
        restarted = await recorded_decisions(daemon, "turn-after")
    finally:
        daemon.terminate(signal.SIGKILL)

    assert [result.call_id for result in results] == [call.call_id for call in calls]
    for result in results:
        assert result.status is ResultStatus.SUCCEEDED, result
        assert result.output == {"key": result.call_id}
        assert result.attempts == 3
        decided = outage.get(result.call_id, [])
        assert list(result.decision_ids) == decided
        assert result.decided_by is (DecidedBy.ERRORD if decided else DecidedBy.LOCAL), result
    assert any(result.decided_by is DecidedBy.LOCAL for result in results)

    assert [result.call_id for result in again] == [call.call_id for call in after]
    for result in again:
        assert (result.status, result.attempts) == (ResultStatus.SUCCEEDED, 2)
        assert result.decided_by is DecidedBy.ERRORD
        assert list(result.decision_ids) == restarted[result.call_id]


async def test_sigterm_and_start_again_under_load_no_call_raises_and_each_has_a_result(
    tmp_path: Path,
) -> None:
    """errord is stopped (SIGTERM, as systemctl restart) and started again on the same
    port while three executors keep running batches of calls that fail once before they
    succeed: no call raises, every call has its result, in order, whoever decided it."""
    port = free_port()
    write_manifests(tmp_path, MANIFESTS)
    daemon = start_errord(tmp_path, tmp_path / "tools", port)
    flaky = Flaky()
    restarted = asyncio.Event()
    counts: list[Counter[ResultStatus]] = []

    async def keep_calling(executor: Executor, name: str) -> int:
        """Run batches until two have run after the restart; the number of batches."""
        tally: Counter[ResultStatus] = Counter()
        counts.append(tally)
        batches = after_restart = 0
        while after_restart < 2:
            after_restart += restarted.is_set()
            calls = flaky_calls(f"{name}-{batches}", 5, failing=1)
            results: list[ToolResult] = await executor.run(calls, turn_id=f"{name}-{batches}")
            assert [result.call_id for result in results] == [call.call_id for call in calls]
            tally.update(result.status for result in results)
            batches += 1
        return batches

    executors = [Executor([flaky.tool], target=daemon.address) for _ in range(3)]
    try:
        await asyncio.gather(*(executor.start() for executor in executors))
        loops = [
            asyncio.create_task(keep_calling(executor, f"loop{n}"))
            for n, executor in enumerate(executors)
        ]

        async def calls_decided() -> bool:
            return all(sum(tally.values()) >= 10 for tally in counts)

        await wait_for(calls_decided, "each executor to run a few batches")
        daemon = await restart(daemon, signal.SIGTERM, tmp_path, port)
        restarted.set()
        batches = await asyncio.wait_for(asyncio.gather(*loops), PATIENCE)
    finally:
        await asyncio.gather(*(executor.close() for executor in executors))
        daemon.terminate(signal.SIGKILL)

    assert all(count >= 3 for count in batches)
    for tally, count in zip(counts, batches, strict=True):
        assert sum(tally.values()) == 5 * count
