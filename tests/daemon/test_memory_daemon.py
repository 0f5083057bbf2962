"""RecallEpisodes and ``errord memory TOOL`` against the real daemon process: what episodic
memory holds, per error signature, and that it survives a restart."""

from __future__ import annotations

import json
import signal
import sqlite3
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from errord_client import ErrordClient, pb
from errord_client.v1 import errord_pb2_grpc

from tests.helpers import DaemonProcess, run_errord, start_process, sync_operator_channel

MANIFEST = """\
tools:
  - name: search
    circuit_breaker: {failure_threshold: 1000}
"""


def start(tmp_path: Path) -> DaemonProcess:
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "search.yaml").write_text(textwrap.dedent(MANIFEST))
    return start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"), "--manifests", str(tools)
    )


def report_history(address: str) -> None:
    """Three calls whose retries failed, and one whose retry succeeded: one burst, which
    counts once as failed and once as fixed."""
    with ErrordClient(address) as errord:
        for number in range(4):
            call = f"call_{number}"
            errord.report_failure(
                turn_id="t",
                call_id=call,
                tool="search",
                attempt=1,
                code=pb.ERROR_CODE_TIMEOUT,
                message=f"upstream timeout after 3{number}s on req 88{number}2",
            )
            errord.report_outcome(
                turn_id="t", call_id=call, tool="search", attempt=2, success=number == 3
            )


def counts(error: pb.RememberedError) -> dict[str, tuple[float, float, float]]:
    """Each recovery's counts: they decay while a test reads them (by 0.02 % a second)."""
    return {e.recovery: (e.succeeded, e.failed, e.unknown) for e in error.recoveries}


def same_counts(
    first: dict[str, tuple[float, float, float]], second: dict[str, tuple[float, float, float]]
) -> bool:
    return first.keys() == second.keys() and all(
        first[name] == pytest.approx(second[name], abs=0.05) for name in first
    )


def recall(daemon: DaemonProcess, **request: str) -> pb.RecallEpisodesResponse:
    with sync_operator_channel(daemon.address, daemon.token) as channel:
        stub = errord_pb2_grpc.OperatorServiceStub(channel)
        response: pb.RecallEpisodesResponse = stub.RecallEpisodes(
            pb.RecallEpisodesRequest(**request)
        )
        return response


def test_memory_is_recalled_over_grpc_and_the_cli_and_survives_a_restart(tmp_path: Path) -> None:
    daemon = start(tmp_path)
    try:
        report_history(daemon.address)
        [error] = recall(daemon, tool="search").errors
        assert error.fingerprint == "upstream timeout after <n> on req <n>"
        assert same_counts(counts(error), {"RETRY": (1.0, 1.0, 0.0)})
        assert error.recoveries[0].success_rate == pytest.approx(0.5, abs=0.01)
        assert error.recoveries[0].HasField("last_failed")
        assert not error.recoveries[0].stops_retries
        [one] = recall(daemon, tool="search", message="upstream timeout after 9s on req 1").errors
        assert one.signature == error.signature
        assert same_counts(counts(one), counts(error))
        assert not recall(daemon, tool="search", message="something else").errors

        human = run_errord("memory", "search", "--address", daemon.address, *daemon.token_args)
        assert human.returncode == 0, human.stderr
        assert human.stdout.startswith("search  upstream timeout after <n> on req <n>  [TIMEOUT:")
        assert "  retry: fixed it in 1 burst, failed in 1 burst, last failed at " in human.stdout
        assert "    Retries go on: 2 of the 5 bursts a verdict needs." in human.stdout
        as_json = run_errord(
            "memory", "search", "--address", daemon.address, *daemon.token_args, "--json"
        )
        assert json.loads(as_json.stdout)["errors"][0]["signature"] == error.signature
        unknown = run_errord(
            "memory", "nosuchtool", "--address", daemon.address, *daemon.token_args
        )
        assert unknown.returncode == 1
        assert "NOT_FOUND" in unknown.stderr
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    restarted = start(tmp_path)
    try:
        [again] = recall(restarted, tool="search").errors
        assert (again.signature, again.fingerprint) == (error.signature, error.fingerprint)
        assert same_counts(counts(again), counts(error))
    finally:
        assert restarted.terminate(signal.SIGTERM) == 0


def test_a_decision_shows_the_evidence_it_read(tmp_path: Path) -> None:
    daemon = start(tmp_path)
    try:
        report_history(daemon.address)
        with ErrordClient(daemon.address, token=daemon.token) as errord:
            decision = errord.report_failure(
                turn_id="u",
                call_id="c",
                tool="search",
                attempt=1,
                code=pb.ERROR_CODE_TIMEOUT,
                message="upstream timeout after 9s on req 4",
            ).decision
            [recalled] = decision.recalled
            assert recalled.recovery == "RETRY"
            assert (recalled.succeeded, recalled.failed) == pytest.approx((1, 1), abs=0.05)
            [event] = [e for e in errord.get_turn_trace("u") if e.HasField("failure")]
            assert list(event.failure.decision.recalled) == [recalled]
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0


def test_memory_stays_within_its_bound_under_concurrent_clients(tmp_path: Path) -> None:
    config = tmp_path / "errord.toml"
    config.write_text("memory_max_errors = 25\n")
    daemon = start_process(
        "--config", str(config), "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db")
    )

    def report_new_errors(client: int) -> None:
        with ErrordClient(daemon.address, token=daemon.token) as errord:
            for number in range(20):
                errord.report_failure(
                    turn_id=f"turn-{client}-{number}",
                    call_id="c",
                    tool=f"tool{client}x{number}",
                    attempt=1,
                    code=pb.ERROR_CODE_TIMEOUT,
                    message="upstream timeout",
                )

    try:
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(report_new_errors, range(16)))
        with sqlite3.connect(tmp_path / "errord.db") as db:
            [(held,)] = db.execute("SELECT COUNT(*) FROM state WHERE projection = 'memory'")
            [(forgotten,)] = db.execute(
                "SELECT COUNT(*) FROM events WHERE kind = 'memory_forgotten'"
            )
        assert held == 25
        assert forgotten > 0
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
