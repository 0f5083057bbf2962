"""The errord command: `check` validates manifests; `serve` refuses to start on bad input."""

from __future__ import annotations

import socket
from pathlib import Path

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.helpers import run_errord, start_process, subprocess_env

VALID = """\
tools:
  - name: flight_search
    timeout_ms: 20000
    classification:
      - http_status: 503
        class: permanent
    alternatives: [flight_search_backup]
  - name: flight_search_backup
"""
INVALID = """\
tools:
  - name: flight_search
    retry_policy:
      max_attempts: five
  - name: hotels
    retries: 3
"""


run = run_errord


def manifest_dir(tmp_path: Path, text: str) -> Path:
    directory = tmp_path / "tools.d"
    directory.mkdir()
    (directory / "travel.yaml").write_text(text)
    return directory


def test_check_accepts_a_valid_directory(tmp_path: Path) -> None:
    result = run("check", str(manifest_dir(tmp_path, VALID)))
    assert result.returncode == 0
    assert "2 tools valid (flight_search, flight_search_backup)" in result.stdout


def test_check_prints_every_problem_with_file_line_and_field_and_fails(tmp_path: Path) -> None:
    directory = manifest_dir(tmp_path, INVALID)
    result = run("check", str(directory))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"{directory}/travel.yaml:4: tools[0].retry_policy.max_attempts: "
        "expected an integer, got 'five'"
    )
    assert lines[1].startswith(
        f"{directory}/travel.yaml:6: tools[1].retries: unknown key "
        "'retries' (did you mean 'retry_policy'?)"
    )
    assert lines[-1] == f"{directory}: 2 problems"
    assert "Traceback" not in result.stderr


def test_check_of_a_missing_directory_fails_cleanly(tmp_path: Path) -> None:
    result = run("check", str(tmp_path / "nowhere"))
    assert result.returncode == 1
    assert "manifest directory does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_refuses_invalid_manifests_with_the_same_message(tmp_path: Path) -> None:
    directory = manifest_dir(tmp_path, INVALID)
    checked = run("check", str(directory))
    served = run(
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--db",
        str(tmp_path / "e.db"),
        "--manifests",
        str(directory),
    )
    assert served.returncode == 78
    problems = checked.stderr.splitlines()[:-1]
    assert served.stderr.splitlines() == [
        "errord: invalid tool manifests, refusing to start:",
        *problems,
    ]
    assert not (tmp_path / "e.db").exists()


def test_serve_refuses_a_bad_config_file_naming_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "errord.toml"
    config.write_text('listen = "127.0.0.1:0"\nlisten_port = 5\n')
    result = run("serve", "--config", str(config))
    assert result.returncode == 78
    assert result.stderr.startswith(f"errord: {config}:2: unknown setting 'listen_port'")


def test_serve_reports_a_port_already_in_use(tmp_path: Path) -> None:
    first = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "a.db"))
    try:
        result = run("serve", "--listen", first.address, "--db", str(tmp_path / "b.db"))
    finally:
        first.terminate()
    assert result.returncode == 69  # EX_UNAVAILABLE
    # errord's message alone: not gRPC core's raw line (E... add_port.cc:83] ...) before it.
    assert result.stderr == (
        f"errord: cannot listen on {first.address}: address {first.address} is already in use\n"
    )


def test_serve_reports_a_metrics_port_already_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--db",
            str(tmp_path / "e.db"),
            "--metrics-listen",
            f"127.0.0.1:{port}",
        )
    assert result.returncode == 69  # EX_UNAVAILABLE
    assert f"errord: cannot serve metrics on 127.0.0.1:{port}: Address already in use" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


def test_serve_applies_the_manifests_it_was_given(tmp_path: Path) -> None:
    directory = manifest_dir(tmp_path, VALID)
    config = tmp_path / "errord.toml"
    config.write_text(f'listen = "127.0.0.1:0"\nmanifests = "{directory}"\ndb = "e.db"\n')
    daemon = start_process("--config", str(config))
    try:
        with grpc.insecure_channel(daemon.address) as channel:
            decision = (
                errord_pb2_grpc.ErrorHandlerServiceStub(channel)
                .ReportFailure(
                    pb.ReportFailureRequest(
                        turn_id="t",
                        call_id="c",
                        tool="flight_search",
                        attempt=1,
                        error=pb.ToolError(http_status=503),
                    )
                )
                .decision
            )
    finally:
        assert daemon.terminate() == 0
    assert decision.action == pb.RECOVERY_ACTION_USE_ALTERNATIVE
    assert decision.alternative_tool == "flight_search_backup"
    assert decision.classification.rule == "manifest:flight_search:classification[0]"
    assert decision.next_attempt_timeout.seconds == 30
    assert not decision.default_policy
    assert (tmp_path / "e.db").exists()


def test_a_second_daemon_on_the_same_database_refuses_to_start(tmp_path: Path) -> None:
    database = str(tmp_path / "e.db")
    first = start_process("--listen", "127.0.0.1:0", "--db", database)
    try:
        second = run("serve", "--listen", "127.0.0.1:0", "--db", database)
    finally:
        first.terminate()
    assert second.returncode == 73  # EX_CANTCREAT
    assert f"errord: {database}: in use by another errord" in second.stderr


def test_debug_logging_keeps_sql_parameters_out_of_the_log(tmp_path: Path) -> None:
    daemon = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "e.db"), "--log-level", "debug"
    )
    try:
        with grpc.insecure_channel(daemon.address) as channel:
            errord_pb2_grpc.ErrorHandlerServiceStub(channel).ReportFailure(
                pb.ReportFailureRequest(
                    turn_id="t",
                    call_id="c",
                    tool="search",
                    attempt=1,
                    error=pb.ToolError(message="secret-ish detail"),
                )
            )
    finally:
        daemon.terminate()
    assert "search attempt 1 failed" in daemon.stderr  # debug is on
    assert "INSERT" not in daemon.stderr


def test_serve_without_arguments_runs_on_the_embedded_defaults(tmp_path: Path) -> None:
    """127.0.0.1:50051 and the database in the user's state directory."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 50051)) == 0:
            pytest.skip("something already listens on 127.0.0.1:50051")
    env = subprocess_env(XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("STATE_DIRECTORY", None)
    daemon = start_process(env=env)
    try:
        assert daemon.address == "127.0.0.1:50051"
        with grpc.insecure_channel(daemon.address) as channel:
            check = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    finally:
        assert daemon.terminate() == 0
    assert check.status == health_pb2.HealthCheckResponse.SERVING
    assert (tmp_path / "state" / "errord" / "errord.db").exists()
    assert (tmp_path / "state" / "errord").stat().st_mode & 0o777 == 0o700
