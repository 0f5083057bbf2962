"""Who may call: the bearer token, TLS on TCP, and the unix socket's mode, group and ownership.

Real daemons on real sockets; certificates come from the ``openssl`` command.
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import logging
import os
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from errord_client import pb
from errord_client.v1 import errord_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from errord.config import Settings
from errord.errors import ConfigError, ListenError
from errord.wire.access import INVALID, MISSING, check_bearer
from errord.wire.server import Access, warn_if_exposed
from tests.certificates import self_signed
from tests.helpers import (
    START_TIMEOUT,
    InProcessDaemon,
    errord_command,
    start_in_process,
    start_process,
    subprocess_env,
)

TOKEN = "s3cret-T0ken.for~tests"
BEARER = (("authorization", f"Bearer {TOKEN}"),)
REFLECTION_METHOD = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


@contextlib.asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[InProcessDaemon]:
    running = await start_in_process(settings)
    try:
        yield running
    finally:
        running.stop.set()
        await asyncio.wait_for(running.task, START_TIMEOUT)


def token_file(tmp_path: Path, text: str = f"  {TOKEN}\n") -> Path:
    path = tmp_path / "token"
    path.write_text(text)
    return path


@pytest.fixture
def socket_path(tmp_path: Path) -> Iterator[Path]:
    """A socket path well within the 107 bytes of sun_path, however long tmp_path is."""
    if len(str(tmp_path)) < 80:
        yield tmp_path / "errord.sock"
        return
    directory = Path(tempfile.mkdtemp(prefix="errord-"))
    yield directory / "errord.sock"
    shutil.rmtree(directory)


async def health_status(channel: grpc.aio.Channel) -> Any:
    stub = health_pb2_grpc.HealthStub(channel)
    response = await stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
    return response.status


async def list_breakers(channel: grpc.aio.Channel, metadata: Any = None) -> Any:
    stub = errord_pb2_grpc.OperatorServiceStub(channel)
    return await stub.ListBreakers(pb.ListBreakersRequest(), metadata=metadata, timeout=10)


async def begin_turn(channel: grpc.aio.Channel, metadata: Any = None) -> Any:
    stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
    request = pb.BeginTurnRequest(turn_id="turn-1")
    return await stub.BeginTurn(request, metadata=metadata, timeout=10)


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call
    return failed.value


# The bearer token on TCP


async def test_on_tcp_every_call_needs_the_token_and_succeeds_with_it(tmp_path: Path) -> None:
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "e.db", token_file=token_file(tmp_path))
    async with serving(settings) as daemon, grpc.aio.insecure_channel(daemon.address) as channel:
        for call in (begin_turn(channel), list_breakers(channel)):
            error = await refused(call)
            assert error.code() is grpc.StatusCode.UNAUTHENTICATED
            assert error.details() == MISSING
        wrong = (("authorization", "Bearer not-the-token"),)
        error = await refused(begin_turn(channel, wrong))
        assert (error.code(), error.details()) == (grpc.StatusCode.UNAUTHENTICATED, INVALID)
        assert "not-the-token" not in (error.details() or "")
        await begin_turn(channel, BEARER)
        await list_breakers(channel, BEARER)


async def test_on_tcp_health_answers_without_the_token(tmp_path: Path) -> None:
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "e.db", token_file=token_file(tmp_path))
    async with serving(settings) as daemon, grpc.aio.insecure_channel(daemon.address) as channel:
        assert await health_status(channel) == health_pb2.HealthCheckResponse.SERVING


async def test_on_tcp_streaming_calls_and_reflection_need_the_token_too(tmp_path: Path) -> None:
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "e.db", token_file=token_file(tmp_path))
    async with serving(settings) as daemon, grpc.aio.insecure_channel(daemon.address) as channel:
        watch = errord_pb2_grpc.ErrorHandlerServiceStub(channel).WatchTrace(
            pb.WatchTraceRequest(), timeout=10
        )
        error = await refused(watch.read())
        assert error.code() is grpc.StatusCode.UNAUTHENTICATED
        reflect = channel.stream_stream(REFLECTION_METHOD)(iter([b""]), timeout=10)
        error = await refused(reflect.read())
        assert error.code() is grpc.StatusCode.UNAUTHENTICATED


def test_the_bearer_scheme_is_case_insensitive_and_a_non_ascii_token_is_invalid() -> None:
    assert check_bearer((("authorization", f"bearer {TOKEN}"),), TOKEN) is None
    assert check_bearer((("authorization", f"Basic {TOKEN}"),), TOKEN) == MISSING
    assert check_bearer((("authorization", "Bearer tökén"),), TOKEN) == INVALID


def test_a_non_loopback_listener_without_a_token_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        warn_if_exposed("0.0.0.0:50051", Access())
        warn_if_exposed("127.0.0.1:50051", Access())
        warn_if_exposed("unix:/run/errord.sock", Access())
    assert len(caplog.records) == 1
    assert "without a bearer token" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        warn_if_exposed("10.0.0.1:50051", Access(token=TOKEN))
    assert "without TLS" in caplog.text


# The unix socket


async def test_on_a_unix_socket_only_operator_service_needs_the_token(
    tmp_path: Path, socket_path: Path
) -> None:
    settings = Settings(
        listen=f"unix:{socket_path}", db=tmp_path / "e.db", token_file=token_file(tmp_path)
    )
    async with serving(settings) as daemon, grpc.aio.insecure_channel(daemon.address) as channel:
        await begin_turn(channel)
        assert await health_status(channel) == health_pb2.HealthCheckResponse.SERVING
        error = await refused(list_breakers(channel))
        assert error.code() is grpc.StatusCode.UNAUTHENTICATED
        await list_breakers(channel, BEARER)


async def test_the_unix_socket_is_mode_0660_in_the_configured_group(
    tmp_path: Path, socket_path: Path
) -> None:
    group = grp.getgrgid(os.getgid())
    settings = Settings(
        listen=f"unix:{socket_path}", db=tmp_path / "e.db", socket_group=group.gr_name
    )
    async with serving(settings):
        info = os.lstat(socket_path)
        assert stat.S_ISSOCK(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == 0o660
        assert info.st_gid == group.gr_gid
        hidden = [name for name in os.listdir(socket_path.parent) if name.startswith(".")]
        assert hidden == [], "the private directory grpc bound in is gone"
    with pytest.raises(FileNotFoundError):  # a daemon removes its own socket when it stops
        os.lstat(socket_path)


def test_a_second_daemon_on_the_same_socket_is_refused_and_the_first_keeps_serving(
    tmp_path: Path, socket_path: Path
) -> None:
    listen = f"unix:{socket_path}"
    first = start_process("--listen", listen, "--db", str(tmp_path / "first.db"))
    try:
        second = subprocess.run(
            errord_command("serve", "--listen", listen, "--db", str(tmp_path / "second.db")),
            env=subprocess_env(),
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
            check=False,
        )
        assert second.returncode != 0
        assert f"unix socket {socket_path} is in use by another process" in second.stderr
        assert "serving on" not in second.stderr
        assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)
        with grpc.insecure_channel(listen) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            response = stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert response.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        assert first.terminate() == 0
    assert not socket_path.exists()


async def test_a_stale_socket_left_by_a_crashed_daemon_is_replaced(
    tmp_path: Path, socket_path: Path
) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(str(socket_path))  # bound, never listening, closed: connect() is refused
    # A second name keeps the stale inode alive, so the new socket cannot reuse its number.
    os.link(socket_path, tmp_path / "stale.sock")
    settings = Settings(listen=f"unix:{socket_path}", db=tmp_path / "e.db")
    async with serving(settings) as daemon, grpc.aio.insecure_channel(daemon.address) as channel:
        assert await health_status(channel) == health_pb2.HealthCheckResponse.SERVING
        replaced = await asyncio.to_thread(os.path.samefile, socket_path, tmp_path / "stale.sock")
        assert not replaced


async def test_a_path_that_is_not_a_socket_is_refused_and_left_alone(
    tmp_path: Path, socket_path: Path
) -> None:
    os.mkdir(socket_path)
    settings = Settings(listen=f"unix:{socket_path}", db=tmp_path / "e.db")
    with pytest.raises(ListenError, match=f"{socket_path} exists and is not a socket"):
        await start_in_process(settings)
    assert stat.S_ISDIR(os.lstat(socket_path).st_mode)


async def test_stopping_leaves_a_socket_that_is_no_longer_ours_in_place(
    tmp_path: Path, socket_path: Path
) -> None:
    settings = Settings(listen=f"unix:{socket_path}", db=tmp_path / "e.db")
    async with serving(settings):
        os.unlink(socket_path)  # someone removed ours and another server bound the path
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        other.bind(str(socket_path))
    with other:
        assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)


async def test_a_socket_path_too_long_for_sun_path_is_refused_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / ("s" * 110)
    settings = Settings(listen=f"unix:{path}", db=tmp_path / "e.db")
    with pytest.raises(ListenError, match="is longer than a unix socket path may be"):
        await start_in_process(settings)
    assert [name for name in os.listdir(tmp_path) if name.startswith(".")] == []


async def test_an_unknown_socket_group_is_a_config_error(tmp_path: Path) -> None:
    settings = Settings(listen="unix:/run/x.sock", socket_group="no-such-group-errord")
    with pytest.raises(ConfigError, match="socket_group: no group named 'no-such-group-errord'"):
        Access.from_settings(settings)


# The token file


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "is empty"),
        (" \n\n", "is empty"),
        ("two words\n", "must be printable ASCII without spaces"),
    ],
)
def test_a_token_file_without_one_usable_token_is_a_config_error(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = token_file(tmp_path, text)
    with pytest.raises(ConfigError, match=f"^token_file: {path}.* {problem}"):
        Access.from_settings(Settings(token_file=path))


def test_an_unreadable_token_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"^token_file: cannot read {tmp_path}/missing: No such"):
        Access.from_settings(Settings(token_file=tmp_path / "missing"))


async def test_the_daemon_refuses_to_start_with_an_empty_token_file(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "e.db", token_file=token_file(tmp_path, ""))
    with pytest.raises(ConfigError, match=r"token_file: .* is empty"):
        await start_in_process(settings)


# Reflection


async def test_reflection_false_turns_reflection_off_on_loopback(tmp_path: Path) -> None:
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "e.db", reflection=False)
    async with serving(settings) as daemon, grpc.aio.insecure_channel(daemon.address) as channel:
        reflect = channel.stream_stream(REFLECTION_METHOD)(iter([b""]), timeout=10)
        error = await refused(reflect.read())
        assert error.code() is grpc.StatusCode.UNIMPLEMENTED


# TLS


async def test_over_tls_a_client_trusting_the_cert_succeeds_and_plaintext_fails(
    tmp_path: Path,
) -> None:
    server = self_signed(tmp_path, "server")
    settings = Settings(
        listen="127.0.0.1:0",
        db=tmp_path / "e.db",
        tls_cert_file=server.cert,
        tls_key_file=server.key,
    )
    async with serving(settings) as daemon:
        trusted = grpc.ssl_channel_credentials(root_certificates=server.cert.read_bytes())
        async with grpc.aio.secure_channel(daemon.address, trusted) as channel:
            await begin_turn(channel)
        async with grpc.aio.insecure_channel(daemon.address) as plaintext:
            error = await refused(begin_turn(plaintext))
        assert error.code() is grpc.StatusCode.UNAVAILABLE


async def test_with_a_client_ca_a_client_without_a_certificate_is_refused(tmp_path: Path) -> None:
    server, client = self_signed(tmp_path, "server"), self_signed(tmp_path, "client")
    settings = Settings(
        listen="127.0.0.1:0",
        db=tmp_path / "e.db",
        tls_cert_file=server.cert,
        tls_key_file=server.key,
        tls_client_ca_file=client.cert,
    )
    roots = server.cert.read_bytes()
    async with serving(settings) as daemon:
        anonymous = grpc.ssl_channel_credentials(root_certificates=roots)
        async with grpc.aio.secure_channel(daemon.address, anonymous) as channel:
            error = await refused(begin_turn(channel))
        assert error.code() is grpc.StatusCode.UNAVAILABLE
        key, chain = client.pair
        known = grpc.ssl_channel_credentials(roots, private_key=key, certificate_chain=chain)
        async with grpc.aio.secure_channel(daemon.address, known) as channel:
            await begin_turn(channel)


def test_tls_files_that_do_not_load_are_config_errors_naming_the_setting(tmp_path: Path) -> None:
    server, other = self_signed(tmp_path, "server"), self_signed(tmp_path, "other")
    cases = [
        (tmp_path / "missing.pem", server.key, None, "tls_cert_file: cannot read"),
        (server.key, server.key, None, "tls_cert_file: .* holds no PEM certificate"),
        (server.cert, server.cert, None, "tls_key_file: .* holds no PEM private key"),
        (server.cert, other.key, None, "tls_key_file: .* is not the private key of tls_cert_file"),
        (server.cert, server.key, server.key, "tls_client_ca_file: .* holds no PEM CA cert"),
    ]
    for cert, key, client_ca, message in cases:
        settings = Settings(tls_cert_file=cert, tls_key_file=key, tls_client_ca_file=client_ca)
        with pytest.raises(ConfigError, match=f"^{message}"):
            Access.from_settings(settings)
