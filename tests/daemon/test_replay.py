"""``errord replay`` and ReplayManifests against a real database, written by a real
daemon that keeps running: exit 0 when nothing would change, 1 when something would, 78
for invalid manifests (file:line); the RPC streams progress, then the summary, and
answers invalid manifests with INVALID_ARGUMENT naming file:line."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from errord_client import ErrordClient, pb
from errord_client.v1 import errord_pb2_grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tests.helpers import DaemonProcess, run_errord, start_process, sync_operator_channel

IN_FORCE = """\
tools:
  - name: weather
    circuit_breaker: {failure_threshold: 100}
  - name: search
"""
PERMANENT_503 = IN_FORCE.replace(
    "  - name: weather\n",
    "  - name: weather\n    classification:\n      - {http_status: 503, class: permanent}\n",
)
BROKEN = """\
tools:
  - name: weather
    retry_policy:
      max_attempts: five
"""
WEATHER_FAILURES = 12


def directory(path: Path, text: str) -> Path:
    path.mkdir()
    (path / "tools.yaml").write_text(text)
    return path


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    """errord serving IN_FORCE, with a trace of weather 503s and search timeouts."""
    running = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--manifests", str(directory(tmp_path / "in_force", IN_FORCE)),
    )  # fmt: skip
    try:
        with ErrordClient(running.address, token=running.token) as errord:
            for turn in range(WEATHER_FAILURES):
                errord.report_failure(
                    turn_id=f"t{turn}", call_id="c", tool="weather", attempt=1,
                    http_status=503, message="HTTP 503 Service Unavailable",
                )  # fmt: skip
                errord.report_failure(
                    turn_id=f"t{turn}", call_id="d", tool="search", attempt=1,
                    code=pb.ERROR_CODE_TIMEOUT,
                )  # fmt: skip
        yield running
    finally:
        running.terminate()


def replay(tmp_path: Path, manifests: Path, *extra: str) -> tuple[int, str, str]:
    done = run_errord(
        "replay", "--manifests", str(manifests), "--db", str(tmp_path / "errord.db"), *extra
    )
    return done.returncode, done.stdout, done.stderr


def test_replay_exits_0_with_the_manifests_in_force(daemon: DaemonProcess, tmp_path: Path) -> None:
    status, out, err = replay(tmp_path, tmp_path / "in_force")
    assert status == 0, err
    assert f"{2 * WEATHER_FAILURES} failures re-decided, 0 decided otherwise" in out
    assert "nothing would change" in out
    assert err == ""  # no progress bar: stderr is not a terminal


def test_replay_exits_1_and_counts_what_would_change(daemon: DaemonProcess, tmp_path: Path) -> None:
    status, out, err = replay(tmp_path, directory(tmp_path / "new", PERMANENT_503))
    assert status == 1, err
    assert f"TRANSIENT/UNAVAILABLE -> PERMANENT/UNAVAILABLE: {WEATHER_FAILURES}" in out
    assert f"RETRY -> ESCALATE: {WEATHER_FAILURES}" in out
    before, after = re.search(r"escalations: (\d+) -> (\d+)", out).groups()  # type: ignore[union-attr]
    assert int(after) - int(before) == WEATHER_FAILURES

    status, out, _ = replay(tmp_path, tmp_path / "new", "--json", "--tool", "search")
    assert status == 0
    assert json.loads(out)["failures"] == str(WEATHER_FAILURES)  # proto3 JSON: uint64 as text


def test_replay_exits_78_naming_file_and_line_of_invalid_manifests(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    status, out, err = replay(tmp_path, directory(tmp_path / "broken", BROKEN))
    assert status == 78
    assert out == ""
    assert f"{tmp_path / 'broken' / 'tools.yaml'}:4: " in err
    assert err.rstrip().endswith("1 problem")


def test_replay_exits_66_without_a_database(tmp_path: Path) -> None:
    status, _, err = replay(tmp_path, directory(tmp_path / "in_force", IN_FORCE))
    assert status == 66
    assert "no trace database" in err


def test_the_rpc_streams_progress_then_the_summary(daemon: DaemonProcess, tmp_path: Path) -> None:
    new = directory(tmp_path / "new", PERMANENT_503)
    with sync_operator_channel(daemon.address, daemon.token) as channel:
        operator = errord_pb2_grpc.OperatorServiceStub(channel)
        responses = list(
            operator.ReplayManifests(pb.ReplayManifestsRequest(manifests_dir=str(new)))
        )
    *progress, last = responses
    assert progress
    assert all(r.WhichOneof("result") == "progress" for r in progress)
    assert progress[-1].progress.replayed == progress[-1].progress.total > 0
    summary = last.summary
    assert (summary.failures, summary.changed) == (2 * WEATHER_FAILURES, WEATHER_FAILURES)
    kinds = {(c.kind, c.before, c.after): c.count for c in summary.changes}
    assert kinds[("action", "RETRY", "ESCALATE")] == WEATHER_FAILURES
    assert len(summary.changes[0].examples) == 3


def test_the_rpc_answers_invalid_manifests_with_their_file_and_line(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    broken = directory(tmp_path / "broken", BROKEN)
    with sync_operator_channel(daemon.address, daemon.token) as channel:
        operator = errord_pb2_grpc.OperatorServiceStub(channel)
        with pytest.raises(grpc.RpcError) as failed:
            list(operator.ReplayManifests(pb.ReplayManifestsRequest(manifests_dir=str(broken))))
    error = failed.value
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(error)
    assert status is not None
    request = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(request)
    [violation] = request.field_violations
    assert violation.field == "manifests_dir"
    assert violation.description.startswith(f"{broken / 'tools.yaml'}:4: ")


def test_the_rpc_without_a_directory_replays_the_daemons_own_manifests(
    daemon: DaemonProcess,
) -> None:
    """An empty manifests_dir is the daemon's directory as it is now: nothing changes."""
    with sync_operator_channel(daemon.address, daemon.token) as channel:
        operator = errord_pb2_grpc.OperatorServiceStub(channel)
        *_, last = operator.ReplayManifests(pb.ReplayManifestsRequest())
    assert last.summary.failures == 2 * WEATHER_FAILURES
    assert last.summary.changed == 0


OUTAGES = """\
tools:
  - name: flaky
    timeout_ms: 2000
  - name: limited
"""


def test_replay_agrees_with_breakers_windows_and_memory_as_recorded(tmp_path: Path) -> None:
    """A trace of an outage (a breaker opening on five calls, waits for its probe, refused
    attempts, a failed probe reopening it for a longer break, an operator's reset), a rate
    limit (its window, an attempt it held, a failure whose retry waits for its end) and
    outcomes, replayed with the manifests in force: nothing is decided otherwise."""
    manifests = directory(tmp_path / "outages", OUTAGES)
    running = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--manifests", str(manifests),
    )  # fmt: skip
    try:
        with ErrordClient(running.address, token=running.token) as errord:
            for n in range(6):  # the fifth call's failure opens the breaker
                errord.report_failure(
                    turn_id=f"o{n}", call_id="c", tool="flaky", attempt=1,
                    code=pb.ERROR_CODE_CONNECTION, message="connection refused",
                )  # fmt: skip
            refused = errord.admit_call(turn_id="o0", call_id="c", tool="flaky", attempt=2)
            assert not refused.admitted
            opened = errord.report_failure(
                turn_id="o1", call_id="c", tool="flaky", attempt=2,
                code=pb.ERROR_CODE_CONNECTION, message="connection refused",
            ).decision  # fmt: skip
            time.sleep(opened.breaker.break_length.ToTimedelta().total_seconds() + 0.05)
            probe = errord.admit_call(turn_id="o2", call_id="c", tool="flaky", attempt=2)
            assert probe.probe
            waiting = errord.admit_call(turn_id="o3", call_id="c", tool="flaky", attempt=2)
            assert not waiting.admitted
            reopened = errord.report_failure(
                turn_id="o2", call_id="c", tool="flaky", attempt=2,
                code=pb.ERROR_CODE_CONNECTION, message="connection refused",
            ).decision  # fmt: skip
            assert reopened.breaker.streak == 2

            limited = errord.report_failure(
                turn_id="l0", call_id="c", tool="limited", attempt=1,
                http_status=429, message="429 Too Many Requests", retry_after=1.0,
            ).decision  # fmt: skip
            held = errord.admit_call(turn_id="l1", call_id="c", tool="limited", attempt=1)
            assert not held.admitted
            assert held.decision.classification.code == pb.ERROR_CODE_RATE_LIMITED
            behind = errord.report_failure(
                turn_id="l2", call_id="c", tool="limited", attempt=1,
                code=pb.ERROR_CODE_TIMEOUT, message="timed out",
            ).decision  # fmt: skip
            assert behind.delay.ToTimedelta().total_seconds() > 0.9
            errord.report_outcome(
                turn_id="l0", call_id="c", tool="limited", attempt=2, success=True
            )
        with sync_operator_channel(running.address, running.token) as channel:
            operators = errord_pb2_grpc.OperatorServiceStub(channel)
            operators.ResetBreaker(pb.ResetBreakerRequest(tool="flaky", by="test"))
        with ErrordClient(running.address, token=running.token) as errord:
            errord.report_failure(
                turn_id="after", call_id="c", tool="flaky", attempt=1,
                code=pb.ERROR_CODE_CONNECTION, message="connection refused",
            )  # fmt: skip
            for n in range(6):  # an outage in one scope: its breaker alone opens
                errord.report_failure(
                    turn_id=f"eu{n}", call_id="c", tool="flaky", attempt=1, scope="eu",
                    code=pb.ERROR_CODE_CONNECTION, message="connection refused",
                )  # fmt: skip
            assert not errord.admit_call(
                turn_id="eu0", call_id="c", tool="flaky", attempt=2, scope="eu"
            ).admitted
            elsewhere = errord.report_failure(
                turn_id="us0", call_id="c", tool="flaky", attempt=1, scope="us",
                code=pb.ERROR_CODE_CONNECTION, message="connection refused",
            ).decision  # fmt: skip
            assert elsewhere.action == pb.RECOVERY_ACTION_RETRY
            errord.report_outcome(
                turn_id="us0", call_id="c", tool="flaky", attempt=2, success=True, scope="us"
            )
    finally:
        running.terminate()
    assert limited.action == pb.RECOVERY_ACTION_RETRY
    status, out, err = replay(tmp_path, manifests)
    assert status == 0, out + err
    assert "0 decided otherwise" in out
