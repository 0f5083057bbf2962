"""A fleet of three errord daemons (separate databases, real processes) sharing through a
real Redis server on loopback: rate-limit windows, breaker evidence with a quorum, one
half-open probe for the fleet, memory; and Redis killed and restarted under them."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from errord_client import ErrordClient, tool
from errord_client.executor import Executor, ResultStatus
from errord_client.v1 import errord_pb2 as pb

from tests.executor_helpers import Errord, failures, recorded_trace, wait_for
from tests.helpers import DaemonProcess, operator_channel, start_fleet_daemon
from tests.redis_server import RedisServer

HOSTS = ("a", "b", "c")
DECISIONS = 10.0


@contextmanager
def fleet(
    tmp_path: Path, redis: RedisServer, manifests: str = "tools: []\n", **settings: object
) -> Iterator[dict[str, DaemonProcess]]:
    """Three daemons a, b, c of one fleet, each in its own directory, killed at the end."""
    daemons: dict[str, DaemonProcess] = {}
    try:
        for host in HOSTS:
            daemons[host] = start_fleet_daemon(
                tmp_path / host, host, redis.url, manifests, **settings
            )
        yield daemons
    finally:
        for daemon in daemons.values():
            daemon.terminate(signal.SIGKILL)


async def get_fleet(daemon: DaemonProcess) -> pb.GetFleetResponse:
    async with operator_channel(daemon.address, daemon.token) as channel:
        response: pb.GetFleetResponse = await Errord(channel).operators.GetFleet(
            pb.GetFleetRequest(), timeout=10
        )
        return response


async def in_sync(daemons: dict[str, DaemonProcess]) -> None:
    """Wait until every daemon is in sync and hears the three hosts."""

    async def synced() -> bool:
        for daemon in daemons.values():
            answer = await get_fleet(daemon)
            if answer.sync.state != pb.FLEET_STATE_IN_SYNC or answer.sync.hosts < len(HOSTS):
                return False
        return True

    await wait_for(synced, "every daemon in sync with the three hosts")


async def admit(daemon: DaemonProcess, tool: str, turn: str, call: str) -> pb.AdmitCallResponse:
    async with operator_channel(daemon.address, daemon.token) as channel:
        response: pb.AdmitCallResponse = await Errord(channel).errors.AdmitCall(
            pb.AdmitCallRequest(turn_id=turn, call_id=call, tool=tool, attempt=1), timeout=10
        )
        return response


async def test_a_retry_after_on_one_host_holds_the_calls_of_another_until_it_ends(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """A 429 with Retry-After: 2 reported to a: the executor on b does not call the tool
    inside the window (errord on b answers its admission with the rate-limit decision,
    recorded as a held attempt), and calls it once the window is over."""
    with fleet(tmp_path, redis_server) as daemons:
        await in_sync(daemons)
        with ErrordClient(daemons["a"].address) as errord:
            limited = errord.report_failure(
                turn_id="t-a",
                call_id="c1",
                tool="quotes",
                attempt=1,
                http_status=429,
                message="429 Too Many Requests",
                retry_after=2.0,
            ).decision
        assert limited.action == pb.RECOVERY_ACTION_RETRY
        window_ends = datetime.now(UTC)  # at least: the window began at the report

        async def b_holds() -> bool:
            return any(w.tool == "quotes" for w in (await get_fleet(daemons["b"])).windows)

        await wait_for(b_holds, "b to hear of a's window")
        called_at: list[datetime] = []

        @tool(name="quotes")
        async def quotes() -> dict[str, int]:
            called_at.append(datetime.now(UTC))
            return {"price": 1}

        async with Executor(
            [quotes], target=daemons["b"].address, decision_timeout=DECISIONS
        ) as executor:
            await executor.start()
            result = await executor.run_one(
                {"id": "c1", "name": "quotes", "arguments": {}}, turn_id="t-b"
            )
        events = await recorded_trace(daemons["b"], "t-b")

    held = [e for e in failures(events) if e.failure.error.code == pb.ERROR_CODE_RATE_LIMITED]
    assert held, "b's executor was not held by a's window"
    assert held[0].failure.decision.action == pb.RECOVERY_ACTION_RETRY
    assert result.status is ResultStatus.SUCCEEDED
    assert len(called_at) == 1
    # The one call was made after the window a received: 2 s after its report at least.
    assert (called_at[0] - window_ends).total_seconds() >= 2.0 - 0.05
