"""The MCP adapter reconnects a dead stdio server: against errord as a process, an
``MCPConnection`` on the stdio server of tests/fixtures/mcp_files_server.py answers a
call, the server is killed as a crash would kill it, and the next call's failed attempt
is followed by one on a new server process, which succeeds.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from errord_client import Executor, ResultStatus
from errord_client.adapters.mcp import MCPSession
from errord_client.adapters.mcp_connection import MCPConnection, stdio_session
from errord_client.v1 import errord_pb2 as pb
from mcp import StdioServerParameters

from tests.executor_helpers import errord_process, failures, recorded_trace

SERVER = Path(__file__).parents[1] / "fixtures" / "mcp_files_server.py"
MANIFESTS = """\
    tools:
      - name: read_file
        timeout_ms: 5000
        retry_policy: {initial_delay_ms: 10}
    """
DECISIONS = 10.0
"""Seconds the executor gives errord to answer: a loaded machine must not make it decide
locally."""


async def test_a_killed_stdio_server_is_started_again_before_the_next_attempt(
    tmp_path: Path,
) -> None:
    """The first call runs on the first server process; after SIGKILL, the second call's
    first attempt fails on the closed session (CONNECTION, which errord retries), and its
    retry runs on a new process, in a new scope, and succeeds."""
    started = itertools.count(1)
    pid_files: list[Path] = []

    def files_server() -> AbstractAsyncContextManager[MCPSession]:
        pid_file = tmp_path / f"server-{next(started)}.pid"
        pid_files.append(pid_file)
        arguments = [str(SERVER), "files", str(pid_file)]
        return stdio_session(StdioServerParameters(command=sys.executable, args=arguments))

    with errord_process(tmp_path, MANIFESTS) as daemon:
        async with MCPConnection(files_server, server="files") as files:
            first_scope = (await files.tools())[0].scope
            async with Executor(
                await files.tools(), target=daemon.address, decision_timeout=DECISIONS
            ) as executor:
                [before] = await executor.run(
                    [{"id": "c1", "name": "read_file", "arguments": {"path": "/a"}}]
                )
                os.kill(int(pid_files[0].read_text()), signal.SIGKILL)
                [after] = await executor.run(
                    [{"id": "c2", "name": "read_file", "arguments": {"path": "/b"}}],
                    turn_id="turn-after",
                )
            second_scope = (await files.tools())[0].scope
            pids = [int(path.read_text()) for path in pid_files]
        events = await recorded_trace(daemon, "turn-after")
    assert (before.status, before.output) == (ResultStatus.SUCCEEDED, "files:/a")
    assert (after.status, after.output, after.attempts) == (ResultStatus.SUCCEEDED, "files:/b", 2)
    assert files.sessions == 2
    assert len(pids) == 2
    assert pids[0] != pids[1]
    assert first_scope != second_scope
    assert first_scope.startswith("files#")
    [failed] = failures(events, "c2")
    assert failed.failure.decision.classification.code == pb.ERROR_CODE_CONNECTION
    assert failed.failure.decision.action == pb.RECOVERY_ACTION_RETRY
