"""A fleet of three errord daemons (separate databases, real processes) sharing through a
real Redis server on loopback: rate-limit windows, breaker evidence with a quorum, one
half-open probe for the fleet, memory; and Redis killed and restarted under them."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from errord_client import AsyncErrordClient, ErrordClient, tool
from errord_client.executor import Executor, ResultStatus
from errord_client.v1 import errord_pb2 as pb

from errord.fleet.records import Batch, Card, HelloWord, WindowWord, Word, encode, message
from tests.certificates import authority
from tests.executor_helpers import Errord, failures, recorded_trace, wait_for
from tests.helpers import (
    ROOT,
    DaemonProcess,
    operator_channel,
    receive,
    run_errord,
    start_fleet_daemon,
    start_process,
    subprocess_env,
)
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
                tmp_path / host, host, redis.url, manifests, settings
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


LEDGER = """\
    tools:
      - name: ledger
        timeout_ms: 30000
        circuit_breaker: {failure_threshold: 2, first_timeout_ms: 3000}
    """


def open_breaker(daemon: DaemonProcess, turn: str) -> None:
    """Two calls time out on ``daemon``: its own breaker of ledger opens."""
    with ErrordClient(daemon.address) as errord:
        for call in ("c1", "c2"):
            decision = errord.report_failure(
                turn_id=turn,
                call_id=call,
                tool="ledger",
                attempt=1,
                code=pb.ERROR_CODE_TIMEOUT,
                message="upstream timeout",
            ).decision
        assert decision.breaker.phase == pb.BREAKER_PHASE_OPEN


async def test_one_host_opening_refuses_nothing_elsewhere_a_quorum_refuses_everywhere_and_one_probe_runs(  # noqa: E501 - the test's name is its claim
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """a's breaker opens: b still admits ledger. c's opens too (quorum 2): b refuses it, as
    soon as b's view has c's word. When the breakers half-open, the three daemons asked
    again and again admit exactly one probe between them."""
    with fleet(tmp_path, redis_server, LEDGER) as daemons:
        await in_sync(daemons)
        open_breaker(daemons["a"], "t-a")

        async def b_hears_a() -> bool:
            breakers = (await get_fleet(daemons["b"])).breakers
            return any(list(each.open_on) == ["a"] for each in breakers)

        await wait_for(b_hears_a, "b to hear of a's breaker")
        alone = await admit(daemons["b"], "ledger", "t-b", "first")
        assert alone.admitted, "one host's breaker switched ledger off for b"

        open_breaker(daemons["c"], "t-c")
        opened = asyncio.get_running_loop().time()
        calls = iter(range(10_000))

        async def b_refuses() -> pb.AdmitCallResponse | None:
            response = await admit(daemons["b"], "ledger", "t-b", f"call-{next(calls)}")
            return None if response.admitted else response

        refused = await wait_for(b_refuses, "b to refuse ledger")
        print(
            f"b refused ledger {asyncio.get_running_loop().time() - opened:.3f} s after c's opened"
        )
        assert refused.decision.classification.code == pb.ERROR_CODE_CIRCUIT_OPEN
        [shared] = (await get_fleet(daemons["b"])).breakers
        assert (list(shared.open_on), shared.refused) == (["a", "c"], True)

        # The fleet's break ends with c's (the latest opening): then one probe, fleet-wide.
        half_opens = shared.half_opens_at.ToDatetime(tzinfo=UTC)
        await asyncio.sleep(max(0.0, (half_opens - datetime.now(UTC)).total_seconds()))
        admitted: list[tuple[str, pb.AdmitCallResponse]] = []
        ends = asyncio.get_running_loop().time() + 3.0
        while asyncio.get_running_loop().time() < ends:
            answers = await asyncio.gather(
                *(
                    admit(daemon, "ledger", f"t-probe-{host}", f"call-{next(calls)}")
                    for host, daemon in daemons.items()
                )
            )
            admitted += [(host, a) for host, a in zip(daemons, answers, strict=True) if a.admitted]
            await asyncio.sleep(0.05)
        probe = (await get_fleet(daemons["b"])).breakers[0].probe_host

    assert len(admitted) == 1, [(host, a.probe) for host, a in admitted]
    [(host, answer)] = admitted
    assert answer.probe
    assert host == probe
    assert host in ("a", "c")


SEARCH = """\
    tools:
      - name: search
        circuit_breaker: {failure_threshold: 1000}
    """


async def test_recoveries_learned_on_one_host_steer_the_first_decision_of_another(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """20 calls on a whose retries of one error all failed: b, which never saw the error,
    does not retry it at its first report, and its decision's ``recalled`` says the
    evidence came from the fleet. (A daemon alone retries a first timeout.)"""
    with fleet(tmp_path, redis_server, SEARCH, memory_min_episodes=1) as daemons:
        await in_sync(daemons)
        with ErrordClient(daemons["a"].address) as errord:
            for number in range(20):
                call = f"call-{number}"
                first = errord.report_failure(
                    turn_id="t-a",
                    call_id=call,
                    tool="search",
                    attempt=1,
                    code=pb.ERROR_CODE_TIMEOUT,
                    message=f"upstream timeout after {number}s",
                ).decision
                if first.action == pb.RECOVERY_ACTION_RETRY:
                    errord.report_outcome(
                        turn_id="t-a", call_id=call, tool="search", attempt=2, success=False
                    )

        async def b_shares() -> bool:
            return (await get_fleet(daemons["b"])).shared_errors == 1

        await wait_for(b_shares, "b to hear of a's memory")
        with ErrordClient(daemons["b"].address) as errord:
            decision = errord.report_failure(
                turn_id="t-b",
                call_id="c1",
                tool="search",
                attempt=1,
                code=pb.ERROR_CODE_TIMEOUT,
                message="upstream timeout after 7s",
            ).decision
        with ErrordClient(daemons["c"].address) as errord:
            other = errord.report_failure(
                turn_id="t-c",
                call_id="c1",
                tool="search",
                attempt=1,
                code=pb.ERROR_CODE_TIMEOUT,
                message="another error altogether",
            ).decision

    assert first.action != pb.RECOVERY_ACTION_RETRY, "a never learned that retries fail"
    assert decision.action != pb.RECOVERY_ACTION_RETRY
    [recalled] = decision.recalled
    assert recalled.recovery == "RETRY"
    assert recalled.failed > 0.9  # one burst, decaying
    assert recalled.succeeded == 0
    assert recalled.from_fleet == pytest.approx(recalled.failed + recalled.unknown, abs=0.01)
    assert other.action == pb.RECOVERY_ACTION_RETRY  # a new error: nothing learned of it


async def decide_until(
    daemon: DaemonProcess, turn: str, stop: asyncio.Event, latencies: list[float]
) -> int:
    """Report failures of search to ``daemon`` one after another until ``stop``; each
    decision's latency into ``latencies``; how many were decided."""
    loop = asyncio.get_running_loop()
    decided = 0
    async with AsyncErrordClient(daemon.address) as errord:
        while not stop.is_set():
            began = loop.time()
            await errord.report_failure(
                turn_id=turn,
                call_id=f"call-{decided}",
                tool="search",
                attempt=1,
                code=pb.ERROR_CODE_TIMEOUT,
                message="upstream timeout",
                timeout=10,
            )
            latencies.append(loop.time() - began)
            decided += 1
            await asyncio.sleep(0.005)
    return decided


async def states(daemons: dict[str, DaemonProcess], wanted: int) -> bool:
    answers = [await get_fleet(daemon) for daemon in daemons.values()]
    return all(answer.sync.state == wanted for answer in answers)


async def test_redis_killed_under_load_each_host_goes_on_alone_and_resyncs_when_it_returns(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Redis is killed while the three daemons decide: no decision fails, each daemon goes
    on alone and logs the outage once, and every decision is in its trace. Breakers opened
    on a and c meanwhile refuse nothing on b (alone, its own breaker rules); Redis
    restarted, every daemon resyncs and b refuses ledger (a quorum opened meanwhile)."""
    manifests = LEDGER + "  - name: search\n        circuit_breaker: {failure_threshold: 1000}\n"
    with fleet(tmp_path, redis_server, manifests) as daemons:
        await in_sync(daemons)
        stop = asyncio.Event()
        latencies: dict[str, list[float]] = {host: [] for host in HOSTS}
        load = [
            asyncio.create_task(decide_until(daemon, f"load-{host}", stop, latencies[host]))
            for host, daemon in daemons.items()
        ]
        await asyncio.sleep(0.5)
        redis_server.kill()
        await wait_for(lambda: states(daemons, pb.FLEET_STATE_ALONE), "every daemon alone")
        await asyncio.sleep(1.0)  # deciding alone, under load
        open_breaker(daemons["a"], "t-a")
        open_breaker(daemons["c"], "t-c")
        alone = await admit(daemons["b"], "ledger", "t-b", "while-alone")
        redis_server.start()
        await wait_for(lambda: states(daemons, pb.FLEET_STATE_IN_SYNC), "every daemon resynced")
        await asyncio.sleep(0.5)
        stop.set()
        decided = dict(zip(HOSTS, await asyncio.gather(*load), strict=True))
        after = iter(range(10_000))

        async def b_refuses() -> pb.AdmitCallResponse | None:
            response = await admit(daemons["b"], "ledger", "t-b", f"after-{next(after)}")
            return None if response.admitted else response

        resynced = await wait_for(b_refuses, "b to see the breakers opened while alone")
        breakers = (await get_fleet(daemons["b"])).breakers
        [shared] = [each for each in breakers if each.tool == "ledger"]
        sync = (await get_fleet(daemons["b"])).sync
        traced = {
            host: len(failures(await recorded_trace(daemon, f"load-{host}")))
            for host, daemon in daemons.items()
        }
        logs = {host: daemon.stderr for host, daemon in daemons.items()}

    every = sorted(latency for each in latencies.values() for latency in each)
    print(
        f"{len(every)} decisions while Redis was killed and restarted: p50 "
        f"{every[len(every) // 2] * 1000:.1f} ms, p99 {every[int(len(every) * 0.99)] * 1000:.1f} "
        f"ms, max {every[-1] * 1000:.1f} ms"
    )
    assert traced == decided  # every decision answered is in its host's trace
    assert all(count > 0 for count in decided.values())
    for host, log in logs.items():
        assert log.count("Redis cannot be reached") == 1, (host, log)
        assert log.count("Redis is back") == 1, (host, log)
    assert alone.admitted, "b refused ledger while alone: its own breaker is closed"
    assert resynced.decision.classification.code == pb.ERROR_CODE_CIRCUIT_OPEN
    assert (list(shared.open_on), shared.refused) == (["a", "c"], True)
    assert sync.outages == 1


async def test_hostile_values_in_redis_are_ignored_and_counted_never_applied(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Values in the fleet's keys and channel that are not errord's words (garbage as a
    card and as a message, a string where a host's hash belongs, oversized, another
    fleet's, a window a year long) are ignored and counted by reason: the daemon stays in
    sync and decides as if they were not there."""
    now = datetime.now(UTC)
    window = WindowWord(key="quotes", opened_at=now, until=now + timedelta(days=365))
    foreign = Word("another", "x", 1, 1, now, WindowWord("quotes", now, now + timedelta(hours=1)))
    prefix = "errord:fleet:test:"
    daemon = start_fleet_daemon(tmp_path / "b", "b", redis_server.url)
    try:
        await wait_for(lambda: states({"b": daemon}, pb.FLEET_STATE_IN_SYNC), "b in sync")
        raw = redis.Redis(host="127.0.0.1", port=redis_server.port)
        with raw:
            raw.hset(prefix + "hosts", "evil", b"\xc1 not msgpack")
            raw.hset(prefix + "hosts", "x", encode(Card("test", "x", 1, now)))
            raw.set(prefix + "host:x", "a string where a hash belongs")
            raw.publish(prefix + "words", b"\x00garbage")
            raw.publish(prefix + "words", b"\x00" * 2_000_000)
            raw.publish(prefix + "words", message("x", Batch([foreign])))
            raw.publish(
                prefix + "words", message("x", Batch([Word("test", "x", 1, 2, now, window)]))
            )
            raw.publish(
                prefix + "words", message("x", Batch([Word("test", "x", 1, 3, now, HelloWord())]))
            )

        def counted(answer: pb.GetFleetResponse) -> bool:
            reasons = {"malformed", "oversized", "foreign", "out_of_bounds", "wrong_type"}
            return reasons <= set(answer.ignored) and answer.ignored["malformed"] >= 2

        async def all_counted() -> pb.GetFleetResponse | None:
            answer = await get_fleet(daemon)
            return answer if counted(answer) else None

        answer = await wait_for(all_counted, "every hostile value counted")
        with ErrordClient(daemon.address) as errord:
            decision = errord.report_failure(
                turn_id="t",
                call_id="c1",
                tool="quotes",
                attempt=1,
                code=pb.ERROR_CODE_TIMEOUT,
                message="upstream timeout",
            ).decision
    finally:
        daemon.terminate(signal.SIGKILL)

    assert answer.sync.state == pb.FLEET_STATE_IN_SYNC
    assert not answer.windows
    assert decision.action == pb.RECOVERY_ACTION_RETRY
    assert "Traceback" not in daemon.stderr


async def test_errord_fleet_and_stats_show_the_hosts_and_what_is_shared(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """``errord fleet`` on b lists the three hosts (b first), a's breaker open below the
    quorum; ``errord stats`` begins with the fleet's state; a daemon without fleet_url says
    it decides alone."""
    with fleet(tmp_path, redis_server, LEDGER) as daemons:
        await in_sync(daemons)
        open_breaker(daemons["a"], "t-a")

        async def b_hears_a() -> bool:
            return bool((await get_fleet(daemons["b"])).breakers)

        await wait_for(b_hears_a, "b to hear of a's breaker")
        b = daemons["b"]
        shown = run_errord("fleet", "--address", b.address, *b.token_args)
        stats = run_errord("stats", "--address", b.address, *b.token_args)
    alone = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "alone.db"))
    try:
        solo = run_errord("fleet", "--address", alone.address, *alone.token_args)
    finally:
        alone.terminate(signal.SIGKILL)

    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("fleet test as b: in sync with 3 hosts (quorum 2), since ")
    assert lines[1] == "hosts:"
    assert lines[2].startswith("  b (this one): live")
    assert [line.split(":")[0].strip() for line in lines[3:5]] == ["a", "c"]
    assert "  ledger: open on a; below the quorum: not refused" in lines
    assert stats.stdout.startswith("fleet test as b: in sync with 3 hosts")
    assert solo.stdout.strip() == "no fleet: this daemon decides alone (fleet_url is not set)"


async def test_a_host_that_joins_loads_the_fleets_state_before_it_says_it_is_in_sync(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """a and c open ledger's breaker and a receives a Retry-After before b starts: b's
    first admissions, asked as soon as b says it is in sync, are refused and held."""
    daemons = {
        host: start_fleet_daemon(tmp_path / host, host, redis_server.url, LEDGER)
        for host in ("a", "c")
    }
    try:
        open_breaker(daemons["a"], "t-a")
        open_breaker(daemons["c"], "t-c")
        with ErrordClient(daemons["a"].address) as errord:
            errord.report_failure(
                turn_id="t-a",
                call_id="q",
                tool="quotes",
                attempt=1,
                http_status=429,
                message="429 Too Many Requests",
                retry_after=30.0,
            )
        await asyncio.sleep(0.2)
        b = start_fleet_daemon(tmp_path / "b", "b", redis_server.url, LEDGER)
        daemons["b"] = b
        await wait_for(lambda: states({"b": b}, pb.FLEET_STATE_IN_SYNC), "b in sync")
        ledger = await admit(b, "ledger", "t-b", "c1")
        quotes = await admit(b, "quotes", "t-b", "c2")
    finally:
        for daemon in daemons.values():
            daemon.terminate(signal.SIGKILL)

    assert not ledger.admitted
    assert ledger.decision.classification.code == pb.ERROR_CODE_CIRCUIT_OPEN
    assert not quotes.admitted
    assert quotes.decision.classification.code == pb.ERROR_CODE_RATE_LIMITED


async def test_a_password_protected_redis_is_joined_and_a_wrong_password_leaves_it_alone(
    tmp_path: Path,
) -> None:
    """fleet_url with a password joins a Redis that requires it; with a wrong one the daemon
    serves alone, says why, and never logs the password."""
    server = RedisServer(tmp_path / "redis", password="s3cret-pass").start()
    wrong = server.url.replace("s3cret-pass", "not-the-pass")
    try:
        right = start_fleet_daemon(tmp_path / "a", "a", server.url)
        refused = start_fleet_daemon(tmp_path / "b", "b", wrong)
        try:
            await wait_for(lambda: states({"a": right}, pb.FLEET_STATE_IN_SYNC), "a in sync")
            await wait_for(lambda: states({"b": refused}, pb.FLEET_STATE_ALONE), "b alone")
            alone = (await get_fleet(refused)).sync
            with ErrordClient(refused.address) as errord:
                decision = errord.report_failure(
                    turn_id="t",
                    call_id="c1",
                    tool="quotes",
                    attempt=1,
                    code=pb.ERROR_CODE_TIMEOUT,
                    message="upstream timeout",
                ).decision
        finally:
            right.terminate(signal.SIGKILL)
            refused.terminate(signal.SIGKILL)
    finally:
        server.kill()

    assert "password" in alone.problem.lower() or "auth" in alone.problem.lower()
    assert decision.action == pb.RECOVERY_ACTION_RETRY
    assert "not-the-pass" not in refused.stderr
    assert refused.stderr.count("Redis cannot be reached") == 1


def test_systemd_status_says_the_fleets_state_as_it_changes(
    tmp_path: Path, redis_server: RedisServer, notify_socket: socket.socket
) -> None:
    """STATUS= (systemctl status) ends with the link's state: in sync once the fleet is
    loaded, alone (and why) once Redis is killed."""
    env = subprocess_env(NOTIFY_SOCKET=notify_socket.getsockname())
    daemon = start_fleet_daemon(tmp_path / "a", "a", redis_server.url, env=env)
    try:
        statuses: list[str] = []

        def until(words: str) -> None:
            while words not in (statuses[-1] if statuses else ""):
                statuses.append(receive(notify_socket).get("STATUS", ""))

        until("fleet test as a: in sync")
        redis_server.kill()
        until("fleet test as a: alone (")
    finally:
        daemon.terminate(signal.SIGKILL)
    assert statuses[-1].startswith("serving on ")


async def test_a_fleet_over_tls_shares_through_rediss(tmp_path: Path) -> None:
    """fleet_url rediss:// with the CA that signed Redis' certificate (ssl_ca_certs):
    two daemons join and share a rate-limit window over TLS."""
    signed = authority(tmp_path / "tls", "redis")
    server = RedisServer(tmp_path / "redis", tls=signed.server).start()
    url = f"{server.url}?ssl_ca_certs={signed.ca.cert}"
    daemons = {host: start_fleet_daemon(tmp_path / host, host, url) for host in ("a", "b")}
    try:
        await wait_for(lambda: states(daemons, pb.FLEET_STATE_IN_SYNC), "both in sync")
        with ErrordClient(daemons["a"].address) as errord:
            errord.report_failure(
                turn_id="t-a",
                call_id="c1",
                tool="quotes",
                attempt=1,
                http_status=429,
                message="429 Too Many Requests",
                retry_after=30.0,
            )

        async def b_holds() -> bool:
            return any(w.tool == "quotes" for w in (await get_fleet(daemons["b"])).windows)

        await wait_for(b_holds, "b to hear of a's window over TLS")
    finally:
        for daemon in daemons.values():
            daemon.terminate(signal.SIGKILL)
        server.kill()


async def test_the_acl_user_docs_fleet_md_shows_is_all_a_daemon_needs(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """docs/fleet.md's ``ACL SETUSER`` line, run as it is: two daemons joining as that
    user get in sync and share a window."""
    [line] = [
        line.strip()
        for line in (ROOT / "docs" / "fleet.md").read_text().splitlines()
        if line.strip().startswith("ACL SETUSER errord ")
    ]
    assert redis_server.command(*line.split()).strip() == "OK"
    url = redis_server.url.replace("redis://", "redis://errord:secret@")
    daemons = {host: start_fleet_daemon(tmp_path / host, host, url) for host in ("a", "b")}
    try:
        await wait_for(lambda: states(daemons, pb.FLEET_STATE_IN_SYNC), "both in sync")
        with ErrordClient(daemons["a"].address) as errord:
            errord.report_failure(
                turn_id="t-a",
                call_id="c1",
                tool="quotes",
                attempt=1,
                http_status=429,
                message="429 Too Many Requests",
                retry_after=30.0,
            )

        async def b_holds() -> bool:
            return any(w.tool == "quotes" for w in (await get_fleet(daemons["b"])).windows)

        await wait_for(b_holds, "b to hear of a's window")
    finally:
        for daemon in daemons.values():
            daemon.terminate(signal.SIGKILL)
    assert all("cannot be reached" not in daemon.stderr for daemon in daemons.values())


async def test_a_frozen_redis_is_a_gone_one_and_decisions_never_wait_for_it(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Redis stopped (SIGSTOP: connections open, no answers): the daemon is alone once a
    command goes unanswered, and decides meanwhile; Redis continued, it resyncs."""
    daemon = start_fleet_daemon(tmp_path / "a", "a", redis_server.url)
    process = redis_server.process
    assert process is not None
    try:
        await wait_for(lambda: states({"a": daemon}, pb.FLEET_STATE_IN_SYNC), "a in sync")
        process.send_signal(signal.SIGSTOP)
        try:
            with ErrordClient(daemon.address) as errord:
                decisions = [
                    errord.report_failure(
                        turn_id="t",
                        call_id=f"c{n}",
                        tool="quotes",
                        attempt=1,
                        code=pb.ERROR_CODE_TIMEOUT,
                        message="upstream timeout",
                        timeout=5,
                    ).decision
                    for n in range(20)
                ]
            await wait_for(lambda: states({"a": daemon}, pb.FLEET_STATE_ALONE), "a alone")
            alone = (await get_fleet(daemon)).sync
        finally:
            process.send_signal(signal.SIGCONT)
        await wait_for(lambda: states({"a": daemon}, pb.FLEET_STATE_IN_SYNC), "a resynced")
    finally:
        daemon.terminate(signal.SIGKILL)

    assert len(decisions) == 20
    assert "no answer within" in alone.problem or "Timeout" in alone.problem
    assert daemon.stderr.count("Redis cannot be reached") == 1
    assert daemon.stderr.count("Redis is back") == 1
