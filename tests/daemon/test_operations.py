"""The daemon as an operator meets it: a database that cannot be written is reported
(health, STATUS=, metrics, log) and recovered from; one structured log line per decision;
problems named so they can be acted on."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from errord_client import ErrordClient, pb

from errord.config import Settings
from errord.errors import ConfigError
from tests.helpers import (
    NOT_SERVING,
    SERVING,
    errord_command,
    health,
    scrape,
    start_process,
    subprocess_env,
    wait_for_health,
)


def report(errord: ErrordClient, turn: str) -> pb.RecoveryDecision:
    return errord.report_failure(
        turn_id=turn,
        call_id="c",
        tool="search",
        attempt=1,
        code=pb.ERROR_CODE_TIMEOUT,
        message="timeout after 30s",
        arguments={"api_key": "sk-live-abcdefghijklmnopqrstuvwx", "query": "private words"},
    ).decision


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[list[Path]]:
    """Files made immutable (chattr +i) by the test, made mutable again afterwards."""
    made: list[Path] = []
    yield made
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=False)


def make_immutable(path: Path, made: list[Path]) -> None:
    if subprocess.run(["chattr", "+i", str(path)], check=False).returncode != 0:
        pytest.skip("chattr +i is not allowed here")
    made.append(path)


def test_a_database_that_stops_being_writable_is_reported_and_recovered_from(
    tmp_path: Path, immutable: list[Path]
) -> None:
    db = tmp_path / "errord.db"
    daemon = start_process(
        "--listen", "127.0.0.1:0", "--db", str(db), "--metrics-listen", "127.0.0.1:0"
    )
    try:
        with ErrordClient(daemon.address, token=daemon.token) as errord:
            before = report(errord, "before")
            make_immutable(db.with_name("errord.db-wal"), immutable)
            with pytest.raises(grpc.RpcError) as refused:
                report(errord, "during")
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert wait_for_health(daemon.address, NOT_SERVING) == NOT_SERVING
            assert health(daemon.address, "errord.v1.ErrorHandlerService") == NOT_SERVING
            scraped = scrape(daemon)
            assert "errord_store_writable 0.0" in scraped
            assert "errord_store_write_failures_total 1.0" in scraped
            subprocess.run(["chattr", "-i", str(immutable.pop())], check=True)
            # No report comes while health says NOT_SERVING: the probe finds the fix.
            assert wait_for_health(daemon.address, SERVING) == SERVING
            after = report(errord, "after")
            assert errord.get_turn_trace("before")[-1].failure.decision.decision_id == (
                before.decision_id
            )
            assert after.action == pb.RECOVERY_ACTION_RETRY
            assert "errord_store_writable 1.0" in scrape(daemon)
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    log = daemon.stderr
    assert "cannot write the trace database" in log
    assert "the trace database can be written again; serving" in log


def test_every_decision_has_one_structured_log_line_without_inputs(tmp_path: Path) -> None:
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    try:
        with ErrordClient(daemon.address, token=daemon.token) as errord:
            decision = report(errord, "turn-logged")
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    [line] = [line for line in daemon.lines if "msg=decision" in line]
    assert line.startswith("level=info logger=errord.decisions msg=decision turn=turn-logged ")
    for field in (
        "call=c",
        "tool=search",
        "attempt=1",
        "code=TIMEOUT",
        "class=TRANSIENT",
        "rule=default:code:TIMEOUT",
        "action=RETRY",
        f"delay_ms={round(decision.delay.ToTimedelta().total_seconds() * 1000)}",
        f"decision={decision.decision_id}",
    ):
        assert f" {field}" in line
    assert "sk-live" not in daemon.stderr
    assert "private words" not in daemon.stderr


def test_the_log_can_be_json(tmp_path: Path) -> None:
    config = tmp_path / "errord.toml"
    config.write_text('log_format = "json"\n')
    daemon = start_process(
        "--config", str(config), "--listen", "127.0.0.1:0", "--db", str(tmp_path / "e.db")
    )
    try:
        with ErrordClient(daemon.address, token=daemon.token) as errord:
            report(errord, "turn-json")
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    records = [json.loads(line) for line in daemon.lines if line.startswith("{")]
    assert len(records) == len([line for line in daemon.lines if line.strip()])
    [decision] = [r for r in records if r["msg"] == "decision"]
    assert (decision["turn"], decision["action"]) == ("turn-json", "RETRY")
    assert (decision["level"], decision["logger"]) == ("info", "errord.decisions")


def test_an_address_in_use_is_named(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            errord_command(
                "serve", "--listen", f"127.0.0.1:{port}", "--db", str(tmp_path / "e.db")
            ),
            capture_output=True,
            text=True,
            timeout=60,
            env=subprocess_env(),
            check=False,
        )
    assert result.stderr == (
        f"errord: cannot listen on 127.0.0.1:{port}: address 127.0.0.1:{port} is already in use\n"
    )
    assert result.returncode == 69  # EX_UNAVAILABLE


def test_a_database_directory_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    result = subprocess.run(
        errord_command("serve", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "no" / "e.db")),
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(),
        check=False,
    )
    assert f"the directory {tmp_path / 'no'} does not exist" in result.stderr
    assert result.returncode == 73  # EX_CANTCREAT
    assert not (tmp_path / "no").exists()


def test_a_manifest_directory_without_manifest_files_is_a_warning_and_a_check_error(
    tmp_path: Path,
) -> None:
    tools = tmp_path / "tools"
    (tools / "nested").mkdir(parents=True)
    (tools / "nested" / "search.yaml").write_text("tools:\n  - name: search\n")
    (tools / "Travel.YAML").write_text("tools:\n  - name: flights\n")
    daemon = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "e.db"), "--manifests", str(tools)
    )
    assert daemon.terminate(signal.SIGTERM) == 0
    log = daemon.stderr
    assert f"{tools}: no manifest files" in log
    assert f"{tools / 'Travel.YAML'}: not read" in log
    assert f"{tools / 'nested'}: not read: manifests in subdirectories" in log
    check = subprocess.run(
        errord_command("check", str(tools)),
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(),
        check=False,
    )
    assert check.returncode == 1
    assert f"{tools}: no manifest files" in check.stderr


def test_a_config_file_reports_every_problem_at_once(tmp_path: Path) -> None:
    config = tmp_path / "errord.toml"
    config.write_text(
        'listen = "nowhere"\nlog_level = "loud"\nmodel_corrections = "two"\nmemory_max_errors = 0\n'
    )
    with pytest.raises(ConfigError) as raised:
        Settings.from_toml(config)
    lines = str(raised.value).splitlines()
    assert [line.split(": ", 2)[:2] for line in lines] == [
        [f"{config}:1", "listen"],
        [f"{config}:2", "log_level"],
        [f"{config}:3", "model_corrections"],
        [f"{config}:4", "memory_max_errors"],
    ]


def test_sigterm_lets_requests_in_flight_finish_and_keeps_every_answer(tmp_path: Path) -> None:
    db = tmp_path / "errord.db"
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(db))
    answered: list[str] = []
    refused: dict[str, str] = {}
    """The turn of each client's refused report: its status."""
    started = threading.Barrier(17)

    def client(number: int) -> None:
        with ErrordClient(daemon.address, token=daemon.token) as errord:
            started.wait()
            for call in range(10_000):
                turn = f"t{number}-{call}"
                try:
                    answered.append(report(errord, turn).decision_id)
                except grpc.RpcError as error:
                    refused[turn] = error.code().name
                    return

    threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    started.wait()
    while len(answered) < 200:
        time.sleep(0.01)
    daemon.process.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join(60)
    assert daemon.process.wait(60) == 0  # one SIGTERM, as systemd sends
    daemon.terminate()
    # Refused once stopping: UNAVAILABLE, or CANCELLED for a call grpc had received but
    # handed to no handler yet (grpc/grpc#41785). None was cut off midway: no refused
    # report was recorded, and every answered one was.
    assert set(refused.values()) <= {"UNAVAILABLE", "CANCELLED"}
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT turn_id, body FROM events WHERE kind = 'failure'")
        recorded = {turn: json.loads(bytes(body))["decision"]["decision_id"] for turn, body in rows}
    assert set(answered) <= set(recorded.values())
    assert not set(refused) & set(recorded)
    assert len(answered) >= 200
    assert 'msg="errord stopped"' in daemon.stderr


def test_a_database_that_cannot_be_written_stops_serve_at_start(
    tmp_path: Path, immutable: list[Path]
) -> None:
    db = tmp_path / "errord.db"
    sqlite3.connect(db).close()
    make_immutable(db, immutable)
    result = subprocess.run(
        errord_command("serve", "--listen", "127.0.0.1:0", "--db", str(db)),
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(),
        check=False,
    )
    assert result.returncode == 73  # EX_CANTCREAT, never SERVING
    assert f"errord: {db}: cannot " in result.stderr
    assert "serving on" not in result.stderr
