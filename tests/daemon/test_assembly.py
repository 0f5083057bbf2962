"""The daemon and the what-if replay decide with one assembly (errord.assembly): a change
to it, made once, is followed by ``errord serve``, by ``errord replay`` and by
ReplayManifests, so that a replay of the daemon's own trace changes nothing."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord import assembly
from errord.cli import main
from errord.config import Settings
from errord.decide.engine import Engine
from tests.helpers import operator_channel, start_in_process

MANIFESTS = "tools:\n  - name: weather\n"
WAIT = 30.0


@pytest.fixture
def no_retries(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The assembly changed once: its engine grants a turn no retries at all."""
    assembled = assembly.engine_for

    def without_retries(settings: Settings) -> Engine:
        return assembled(replace(settings, turn_retry_budget=0))

    monkeypatch.setattr(assembly, "engine_for", without_retries)
    return monkeypatch


def replay_command(manifests: Path, db: Path) -> int:
    return main(["replay", "--manifests", str(manifests), "--db", str(db)])


async def test_serve_and_replay_follow_one_change_to_the_assembly(
    tmp_path: Path, no_retries: pytest.MonkeyPatch
) -> None:
    manifests = tmp_path / "tools.d"
    manifests.mkdir()
    (manifests / "tools.yaml").write_text(MANIFESTS)
    db = tmp_path / "errord.db"
    settings = Settings(listen="127.0.0.1:0", db=db, manifests=manifests)
    daemon = await start_in_process(settings)
    try:
        async with operator_channel(daemon.address, daemon.token) as channel:
            errors = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            answer = await errors.ReportFailure(
                pb.ReportFailureRequest(
                    turn_id="t",
                    call_id="c",
                    tool="weather",
                    attempt=1,
                    error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT),
                )
            )
            # The daemon decided with the changed assembly: the budget of no retries.
            assert answer.decision.action == pb.RECOVERY_ACTION_FAIL
            assert "retry budget is spent" in answer.decision.reason
            operator = errord_pb2_grpc.OperatorServiceStub(channel)
            replayed = [
                response async for response in operator.ReplayManifests(pb.ReplayManifestsRequest())
            ]
        summary = replayed[-1].summary
        assert (summary.failures, summary.changed) == (1, 0)
        assert replay_command(manifests, db) == 0  # nothing would change
        no_retries.undo()  # the assembly as it was: the replay would retry
        assert replay_command(manifests, db) == 1
    finally:
        daemon.stop.set()
        await asyncio.wait_for(daemon.task, WAIT)
