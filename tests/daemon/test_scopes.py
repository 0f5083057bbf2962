"""Scopes against errord as a process: a tool's breaker, statistics, rate-limit window and
memory belong to the tool and the scope its executor names, on the wire, in the trace,
in the operator calls and commands and in the metrics.

The acceptance test: two MCP servers (real stdio processes) offer ``read_file``, and one
is killed. The dead one's breaker opens; calls to the healthy one run and succeed
meanwhile; and the dead one, restarted, is a new session with a breaker of its own,
whose first call runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from errord_client.adapters.mcp import mcp_tools, session_scope
from errord_client.executor import Executor, ResultStatus
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import json_format
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.executor_helpers import Errord, errord_process, write_manifests
from tests.helpers import (
    DaemonProcess,
    operator_channel,
    run_errord,
    scrape,
    start_process,
    violations,
)

SERVER = Path(__file__).parents[1] / "fixtures" / "mcp_files_server.py"
MANIFESTS = """\
    tools:
      - name: read_file
        timeout_ms: 5000
        retry_policy: {max_total_time_ms: 2000}
        circuit_breaker: {first_timeout_ms: 30000, timeout_ms: 30000}
    """
"""A 30 s break that outlasts the test, and 2 s of retries: a call refused by the open
breaker fails for now rather than waiting for it."""
DECISIONS = 10.0
"""Seconds each executor gives errord to answer: a loaded machine must not make it decide
locally."""


@dataclass
class Server:
    """An MCP server process and the client session on it."""

    name: str
    session: ClientSession
    pid: int

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def mcp_server(name: str, tmp_path: Path) -> AsyncIterator[Server]:
    """A stdio MCP server named ``name`` and an initialized session on it."""
    pid_file = tmp_path / f"{name}-{os.urandom(4).hex()}.pid"
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), name, str(pid_file)])
    async with contextlib.AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        server = Server(name, session, int(pid_file.read_text()))
        try:
            yield server
        finally:
            with contextlib.suppress(ProcessLookupError):
                server.kill()


def calls(prefix: str, count: int) -> list[dict[str, object]]:
    return [
        {"id": f"{prefix}-{n}", "name": "read_file", "arguments": {"path": f"/{n}"}}
        for n in range(count)
    ]


async def breaker(errord: Errord, scope: str) -> pb.Breaker:
    request = pb.GetBreakerRequest(tool="read_file", scope=scope)
    return (await errord.operators.GetBreaker(request, timeout=10)).breaker  # type: ignore[no-any-return]


async def test_a_dead_mcp_servers_breaker_never_refuses_the_healthy_one_nor_its_restart(
    tmp_path: Path,
) -> None:
    with errord_process(tmp_path, MANIFESTS) as daemon:
        async with (
            operator_channel(daemon.address, daemon.token) as channel,
            mcp_server("files-a", tmp_path) as dead,
            mcp_server("files-b", tmp_path) as healthy,
        ):
            errord = Errord(channel)
            dead_scope, healthy_scope = session_scope(dead.session), session_scope(healthy.session)
            assert dead_scope.startswith("files-a#")
            assert healthy_scope.startswith("files-b#")
            async with (
                Executor(
                    await mcp_tools(dead.session), target=daemon.address, decision_timeout=DECISIONS
                ) as on_dead,
                Executor(
                    await mcp_tools(healthy.session),
                    target=daemon.address,
                    decision_timeout=DECISIONS,
                ) as on_healthy,
            ):
                dead.kill()
                failed = await on_dead.run(calls("dead", 3), turn_id="turn-dead")
                assert all(not result.ok for result in failed)
                opened = await breaker(errord, dead_scope)
                assert opened.effective_phase == pb.BREAKER_PHASE_OPEN

                succeeded = await on_healthy.run(calls("healthy", 5), turn_id="turn-healthy")
                assert [result.status for result in succeeded] == [ResultStatus.SUCCEEDED] * 5
                assert [result.attempts for result in succeeded] == [1] * 5
                assert succeeded[0].output == "files-b:/0"
                assert (await breaker(errord, dead_scope)).effective_phase == pb.BREAKER_PHASE_OPEN
                kept = await breaker(errord, healthy_scope)
                assert kept.effective_phase == pb.BREAKER_PHASE_CLOSED

            async with mcp_server("files-a", tmp_path) as restarted:
                new_scope = session_scope(restarted.session)
                assert new_scope != dead_scope
                async with Executor(
                    await mcp_tools(restarted.session),
                    target=daemon.address,
                    decision_timeout=DECISIONS,
                ) as on_restarted:
                    [first] = await on_restarted.run(calls("restarted", 1), turn_id="turn-back")
                assert first.status is ResultStatus.SUCCEEDED
                assert first.attempts == 1
                assert first.output == "files-a:/0"
                assert (await breaker(errord, dead_scope)).effective_phase == pb.BREAKER_PHASE_OPEN

            listed = await errord.operators.ListBreakers(pb.ListBreakersRequest(), timeout=10)
            scopes = {(b.tool, b.scope) for b in listed.breakers}
            assert {("read_file", dead_scope), ("read_file", healthy_scope)} <= scopes
            assert ("read_file", new_scope) in scopes
            stats = await errord.operators.GetToolStats(
                pb.GetToolStatsRequest(tool="read_file"), timeout=10
            )
            by_scope = {each.scope: each for each in stats.tools}
            assert by_scope[healthy_scope].successes == 5
            assert by_scope[healthy_scope].errors == 0
            assert by_scope[dead_scope].breaker_opens == 1
            assert by_scope[dead_scope].successes == 0


FAILURE = {"code": "ERROR_CODE_TIMEOUT", "message": "upstream timed out"}


def failure(
    call: str, scope: str, turn: str = "turn-wire", attempt: int = 1
) -> pb.ReportFailureRequest:
    return json_format.ParseDict(
        {
            "turn_id": turn,
            "call_id": call,
            "tool": "read_file",
            "attempt": attempt,
            "error": FAILURE,
            "scope": scope,
        },
        pb.ReportFailureRequest(),
    )


async def open_in(errord: Errord, scope: str) -> None:
    """Open the breaker of read_file in ``scope``: three calls failing twice each."""
    for call in range(3):
        for attempt in (1, 2):
            await errord.errors.ReportFailure(
                failure(f"{scope}-{call}", scope, attempt=attempt), timeout=10
            )


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    """errord with MANIFESTS, its metrics served."""
    running = start_process(
        "--listen",
        "127.0.0.1:0",
        "--db",
        str(tmp_path / "errord.db"),
        "--manifests",
        str(write_manifests(tmp_path, MANIFESTS)),
        "--metrics-listen",
        "127.0.0.1:0",
    )
    try:
        yield running
    finally:
        running.terminate(signal.SIGKILL)


async def test_the_scope_is_on_the_wire_in_the_trace_and_in_the_operator_calls(
    daemon: DaemonProcess,
) -> None:
    async with operator_channel(daemon.address, daemon.token) as channel:
        errord = Errord(channel)
        await open_in(errord, "eu")
        refused = await errord.errors.AdmitCall(
            pb.AdmitCallRequest(
                turn_id="turn-wire", call_id="eu-late", tool="read_file", attempt=1, scope="eu"
            ),
            timeout=10,
        )
        assert not refused.admitted
        assert refused.decision.classification.code == pb.ERROR_CODE_CIRCUIT_OPEN
        for scope in ("us", ""):
            admitted = await errord.errors.AdmitCall(
                pb.AdmitCallRequest(
                    turn_id="turn-wire",
                    call_id=f"{scope}-x",
                    tool="read_file",
                    attempt=1,
                    scope=scope,
                ),
                timeout=10,
            )
            assert admitted.admitted

        trace = await errord.trace("turn-wire")
        opened = [e for e in trace if e.WhichOneof("event") == "breaker"]
        assert [(e.tool, e.scope, e.breaker.change) for e in opened] == [
            ("read_file", "eu", pb.BREAKER_CHANGE_OPENED)
        ]
        assert {e.scope for e in trace if e.WhichOneof("event") == "failure"} == {"eu"}

        watch = errord.errors.WatchTools(pb.WatchToolsRequest())
        snapshot = await watch.read()
        watch.cancel()
        policies = {(p.tool, p.scope): p for p in snapshot.tools}
        assert policies[("read_file", "eu")].breaker.phase == pb.BREAKER_PHASE_OPEN
        assert policies[("read_file", "")].breaker.phase == pb.BREAKER_PHASE_CLOSED

        metrics_text = scrape(daemon)
        assert 'errord_tool_breaker_state{scope="eu",state="open",tool="read_file"} 1.0' in (
            metrics_text
        )

        reset = await errord.operators.ResetBreaker(
            pb.ResetBreakerRequest(tool="read_file", scope="eu", by="test"), timeout=10
        )
        assert reset.breaker.scope == "eu"
        assert reset.breaker.effective_phase == pb.BREAKER_PHASE_CLOSED
        assert reset.event.scope == "eu"
        memory = await errord.operators.RecallEpisodes(
            pb.RecallEpisodesRequest(tool="read_file", scope="eu"), timeout=10
        )
        assert memory.errors  # the retries granted in eu
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await errord.operators.GetBreaker(
                pb.GetBreakerRequest(tool="unlisted", scope="asia"), timeout=10
            )
        assert unknown.value.code() is grpc.StatusCode.NOT_FOUND
        assert unknown.value.details() == (
            "no tool 'unlisted' in scope 'asia': errord has no report of it"
        )


async def test_a_scope_with_control_characters_is_refused_naming_the_field(
    daemon: DaemonProcess,
) -> None:
    async with operator_channel(daemon.address, daemon.token) as channel:
        bad = failure("c", "eu\nwest")
        assert (await violations(channel, "ReportFailure", bad.SerializeToString())) == {
            "scope": "must not contain control characters (U+0000 to U+001F, U+007F)"
        }
        admit = pb.AdmitCallRequest(
            turn_id="t", call_id="c", tool="read_file", attempt=1, scope="x" * 513
        )
        assert (await violations(channel, "AdmitCall", admit.SerializeToString())) == {
            "scope": "at most 512 characters, got 513"
        }


async def test_the_commands_show_and_take_the_scope(daemon: DaemonProcess) -> None:
    async with operator_channel(daemon.address, daemon.token) as channel:
        await open_in(Errord(channel), "eu")

    def errord(*args: str) -> str:
        done = run_errord(*args, "--target", daemon.address, *daemon.token_args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    listed = await asyncio.to_thread(errord, "breakers")
    [line] = [line for line in listed.splitlines() if "@" in line]
    assert line.startswith("read_file @ eu  breaker OPEN")
    reset = await asyncio.to_thread(errord, "breaker", "reset", "read_file", "--scope", "eu")
    assert reset.startswith("read_file @ eu  breaker CLOSED"), reset
    stats = await asyncio.to_thread(errord, "stats", "read_file", "--scope", "eu")
    assert stats.startswith("read_file @ eu  breaker CLOSED"), stats
    assert "attempts 6: 0 succeeded, 6 failed" in stats
    memory = await asyncio.to_thread(errord, "memory", "read_file", "--scope", "eu")
    assert memory.startswith("read_file @ eu  "), memory
