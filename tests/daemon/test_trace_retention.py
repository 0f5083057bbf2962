"""Trace retention in the real daemon: turns older than trace_retention_seconds leave the
trace, the database stays within trace_retention_bytes while turns keep coming, and every
open turn and every breaker survives, across a restart too."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from errord_client import ErrordClient, pb
from errord_client.v1 import errord_pb2_grpc

from errord.decide.model import ErrorCode, ToolFailure
from tests.benchmarks.trace_soak import Options, soak
from tests.harness import Harness, failure_report
from tests.helpers import DaemonProcess, start_process

PATIENCE = 60.0
"""Seconds a test waits for the daemon's first retention pass: a bound on a hang only."""


async def recorded_two_hours_ago(directory: Path) -> None:
    """A database whose turns were recorded two hours ago: one ended after opening search's
    breaker, one past its deadline, one still open (its deadline days away)."""
    harness = Harness(directory)
    harness.clock.wall_time = datetime.now(UTC) - timedelta(hours=2)
    handler = await harness.start()
    timeout = ToolFailure(code=ErrorCode.TIMEOUT, message="read timed out")
    for call in range(5):
        await handler.report_failure(failure_report(f"c{call}", turn="ended", error=timeout))
    await handler.end_turn("ended")
    await handler.report_failure(failure_report(turn="expired", tool="lookup", error=timeout))
    await handler.begin_turn("open", datetime.now(UTC) + timedelta(days=3), None)
    await handler.report_failure(failure_report(turn="open", tool="lookup", error=timeout))
    await harness.close()


def start(directory: Path) -> DaemonProcess:
    config = directory / "errord.toml"
    config.write_text('listen = "127.0.0.1:0"\ndb = "errord.db"\ntrace_retention_seconds = 3600\n')
    return start_process("--config", str(config))


def has_turn(client: ErrordClient, turn: str) -> bool:
    try:
        return bool(client.get_turn_trace(turn, timeout=30))
    except grpc.RpcError as error:
        if error.code() is grpc.StatusCode.NOT_FOUND:
            return False
        raise


def test_turns_older_than_the_age_leave_and_open_turns_and_breakers_survive_a_restart(
    tmp_path: Path,
) -> None:
    asyncio.run(recorded_two_hours_ago(tmp_path))
    daemon = start(tmp_path)
    try:
        with ErrordClient(daemon.address, token=daemon.token) as client:
            deadline = time.monotonic() + PATIENCE
            while has_turn(client, "ended") and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not has_turn(client, "ended")
            assert not has_turn(client, "expired")
            assert has_turn(client, "open")
    finally:
        assert daemon.terminate() == 0
    assert "trace retention removed 2 turns older than 3600 s" in daemon.stderr

    again = start(tmp_path)
    try:
        with ErrordClient(again.address, token=again.token) as client:
            assert not has_turn(client, "ended")
            assert has_turn(client, "open")
        with grpc.insecure_channel(again.address) as channel:
            breaker = (
                errord_pb2_grpc.OperatorServiceStub(channel)
                .GetBreaker(
                    pb.GetBreakerRequest(tool="search"),
                    metadata=(("authorization", f"Bearer {again.token}"),),
                    timeout=30,
                )
                .breaker
            )
        assert (breaker.state.opens, breaker.state.consecutive_failures) == (1, 5)
    finally:
        assert again.terminate() == 0


@pytest.mark.parametrize("bound_mib", [16])
def test_the_database_stays_within_its_bound_while_turns_keep_coming(bound_mib: int) -> None:
    """A short soak (tests/benchmarks/trace_soak.py runs the ten-minute one): about 1.5
    times the bound written, the file never past it."""
    options = Options(
        seconds=20, bound_mib=bound_mib, kib=32, reports=3, turns_per_second=12, every=0.1
    )
    figures = soak(options)
    assert figures.written_bytes > 1.2 * figures.bound_bytes
    assert 0 < figures.peak_bytes <= figures.bound_bytes
    assert figures.removed_turns > 0
    assert figures.first_turn_removed
    assert figures.last_turn_kept
    assert figures.open_turn_kept
    assert figures.breaker_kept
