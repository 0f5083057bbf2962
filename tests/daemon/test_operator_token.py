"""Operators need a credential by default: without ``token_file``, errord makes an operator
token at its first start (0600, beside its database), operator calls need it, and errord's
own commands read it; reports, turns and admission stay open to every caller.

Real daemon processes on real ports, the real grpcurl binary and errord's commands."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from errord_client import ErrordClient, pb
from errord_client.v1 import errord_pb2_grpc

from errord.wire.access import OPERATOR_METHODS
from tests.helpers import (
    DaemonProcess,
    GrpcurlFailed,
    grpcurl,
    run_errord,
    start_process,
)

OPERATOR_CALLS = {
    "ListBreakers": pb.ListBreakersRequest(),
    "GetBreaker": pb.GetBreakerRequest(tool="search"),
    "ResetBreaker": pb.ResetBreakerRequest(tool="search"),
    "ForceOpenBreaker": pb.ForceOpenBreakerRequest(tool="search"),
    "GetToolStats": pb.GetToolStatsRequest(),
    "RecallEpisodes": pb.RecallEpisodesRequest(tool="search"),
    "ReloadManifests": pb.ReloadManifestsRequest(),
}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    """errord on its defaults but for a free port and a database in tmp_path."""
    running = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    yield running
    running.terminate()


def report_timeout(client: ErrordClient, turn: str = "t1") -> pb.ReportFailureResponse:
    return client.report_failure(
        turn_id=turn, call_id="c1", tool="search", attempt=1, code=pb.ERROR_CODE_TIMEOUT
    )


def test_the_token_is_made_at_first_start_beside_the_database_private_and_kept(
    tmp_path: Path,
) -> None:
    first = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    try:
        path = first.token_file
        token = first.token
    finally:
        first.terminate()
    assert path == tmp_path / "operator.token"
    info = path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert info.st_uid == os.geteuid()
    assert len(token) >= 43  # 32 random bytes
    again = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    try:
        assert again.token == token
    finally:
        again.terminate()


def test_every_operator_call_is_refused_without_the_token_and_served_with_it(
    daemon: DaemonProcess,
) -> None:
    with grpc.insecure_channel(daemon.address) as channel:
        operators = errord_pb2_grpc.OperatorServiceStub(channel)
        errors = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        with ErrordClient(channel=channel) as client:
            report_timeout(client)
        for name, request in OPERATOR_CALLS.items():
            with pytest.raises(grpc.RpcError) as refused:
                getattr(operators, name)(request, timeout=10)
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED, name
            details = refused.value.details() or ""
            assert "it needs the operator token, which 'errord token' prints" in details
            assert "metadata" not in details
        trace = pb.GetTurnTraceRequest(turn_id="t1")
        with pytest.raises(grpc.RpcError) as refused:
            errors.GetTurnTrace(trace, timeout=10)
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        watch = errors.WatchTrace(pb.WatchTraceRequest(), timeout=10)
        with pytest.raises(grpc.RpcError) as refused:
            next(iter(watch))
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        replay = operators.ReplayManifests(pb.ReplayManifestsRequest(), timeout=10)
        with pytest.raises(grpc.RpcError) as refused:
            next(iter(replay))
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED

        wrong = (("authorization", "Bearer not-the-operator-token"),)
        with pytest.raises(grpc.RpcError) as refused:
            operators.ListBreakers(pb.ListBreakersRequest(), metadata=wrong, timeout=10)
        assert refused.value.details() == "invalid operator token"

        bearer = (("authorization", f"Bearer {daemon.token}"),)
        assert operators.ListBreakers(pb.ListBreakersRequest(), metadata=bearer, timeout=10)
        events = errors.GetTurnTrace(trace, metadata=bearer, timeout=10).events
        assert "search" in [event.tool for event in events]
        opened = operators.ForceOpenBreaker(
            pb.ForceOpenBreakerRequest(tool="search"), metadata=bearer, timeout=10
        )
        assert opened.breaker.effective_phase == pb.BREAKER_PHASE_OPEN


def test_reports_turns_and_admission_need_no_token(daemon: DaemonProcess) -> None:
    with ErrordClient(daemon.address) as client:
        client.begin_turn("t2")
        assert report_timeout(client, "t2").decision.action == pb.RECOVERY_ACTION_RETRY
        client.report_outcome(turn_id="t2", call_id="c1", tool="search", attempt=2, success=True)
        assert client.admit_call(turn_id="t2", call_id="c2", tool="search", attempt=1).admitted
        client.end_turn("t2")


def test_the_operator_methods_are_every_operator_service_method_and_the_trace_reads() -> None:
    operator_service = pb.DESCRIPTOR.services_by_name["OperatorService"]
    assert {f"/errord.v1.OperatorService/{method.name}" for method in operator_service.methods} | {
        "/errord.v1.ErrorHandlerService/GetTurnTrace",
        "/errord.v1.ErrorHandlerService/WatchTrace",
    } == OPERATOR_METHODS


def test_grpcurl_forces_a_breaker_open_only_with_the_token(daemon: DaemonProcess) -> None:
    data = {"tool": "search"}
    method = "errord.v1.OperatorService/ForceOpenBreaker"
    with pytest.raises(GrpcurlFailed) as refused:
        grpcurl(daemon.address, method, data=data)
    assert "Unauthenticated" in str(refused.value)
    with ErrordClient(daemon.address) as client:
        report_timeout(client)  # errord knows the tool from then on
    header = f"authorization: Bearer {daemon.token}"
    assert "BREAKER_PHASE_OPEN" in grpcurl(daemon.address, method, data=data, header=header)


def test_the_commands_read_the_token_beside_the_configured_database(tmp_path: Path) -> None:
    config = tmp_path / "errord.toml"
    config.write_text('listen = "127.0.0.1:0"\ndb = "errord.db"\n')
    daemon = start_process("--config", str(config))
    try:
        # The commands read the address from --config too; this daemon's port is its own.
        client_config = tmp_path / "client.toml"
        client_config.write_text(f'listen = "{daemon.address}"\ndb = "errord.db"\n')
        with ErrordClient(daemon.address) as client:
            report_timeout(client)
        opened = run_errord("breaker", "open", "search", "--config", str(client_config))
        assert opened.returncode == 0, opened.stderr
        listed = run_errord("breakers", "--config", str(client_config))
        assert "search" in listed.stdout
        assert "OPEN" in listed.stdout

        elsewhere = tmp_path / "elsewhere.toml"  # a database, and so a token, of its own
        elsewhere.write_text(f'listen = "{daemon.address}"\ndb = "other/errord.db"\n')
        refused = run_errord("breakers", "--config", str(elsewhere))
        assert refused.returncode == 1
        assert refused.stderr.startswith(
            "errord: UNAUTHENTICATED: this is an operator call: no token was found to send; "
            "give --config FILE, this daemon's settings"
        )
        assert "--token-file FILE ('errord token --config FILE' prints" in refused.stderr
        assert "metadata" not in refused.stderr

        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "operator.token").write_text("another-daemons-token\n")
        wrong = run_errord("breakers", "--config", str(elsewhere))
        assert wrong.returncode == 1
        sent = tmp_path / "other" / "operator.token"
        assert wrong.stderr.startswith(
            f"errord: UNAUTHENTICATED: invalid operator token: the token sent ({sent}, beside "
            f"the database {tmp_path / 'other' / 'errord.db'}) is not this daemon's; give "
        ), wrong.stderr
    finally:
        daemon.terminate()


def loose(mode: int) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_text("a-token\n")
        path.chmod(mode)

    return make


def link_elsewhere(path: Path) -> None:
    (path.parent / "elsewhere").write_text("a-token\n")
    (path.parent / "elsewhere").chmod(0o600)
    path.symlink_to(path.parent / "elsewhere")


def owned_by_nobody(path: Path) -> None:
    loose(0o600)(path)
    os.chown(path, 65534, -1)


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (loose(0o644), "mode 0644"),
        (loose(0o640), "mode 0640"),
        (link_elsewhere, "symbolic link"),
        (owned_by_nobody, "belongs to uid 65534"),
        (Path.mkdir, "not a regular file"),
    ],
    ids=["world-readable", "group-readable", "symlink", "another-user", "directory"],
)
def test_a_token_file_others_could_read_or_write_is_refused_at_start(
    tmp_path: Path, make: Callable[[Path], None], problem: str
) -> None:
    path = tmp_path / "operator.token"
    make(path)
    started = run_errord("serve", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    assert started.returncode == 78, started.stderr
    assert "operator_token_file" in started.stderr
    assert problem in started.stderr
    assert "Traceback" not in started.stderr


def test_with_token_file_the_operator_token_is_that_token_on_a_unix_socket_too(
    tmp_path: Path,
) -> None:
    token = tmp_path / "token"
    token.write_text("sh4red-t0ken\n")
    socket = tmp_path / "e.sock"
    config = tmp_path / "errord.toml"
    config.write_text(f'listen = "unix:{socket}"\ndb = "errord.db"\ntoken_file = "token"\n')
    daemon = start_process("--config", str(config))
    try:
        assert not (tmp_path / "operator.token").exists()
        with grpc.insecure_channel(f"unix:{socket}") as channel:
            errors = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            with ErrordClient(channel=channel) as client:
                report_timeout(client)  # reports on a unix socket need no token
            trace = pb.GetTurnTraceRequest(turn_id="t1")
            with pytest.raises(grpc.RpcError) as refused:
                errors.GetTurnTrace(trace, timeout=10)
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
            bearer = (("authorization", "Bearer sh4red-t0ken"),)
            assert errors.GetTurnTrace(trace, metadata=bearer, timeout=10).events
        listed = run_errord("stats", "--config", str(config))
        assert listed.returncode == 0, listed.stderr
        assert "search" in listed.stdout
    finally:
        daemon.terminate()
