"""A daemon process reads as manifests only files under its manifests root that no other
user may write, whoever asks: a link to a 0600 canary file, handed to ReplayManifests or
dropped among its own manifests before ReloadManifests and SIGHUP, is refused unread, and
the canary's content is in no answer, no status, no line of the log and no byte of the
database; a directory outside the root is refused naming ``manifests_dir``; a
group-writable manifest is refused, naming its mode and the fix, by a replay and at
start; a daemon with neither manifests nor ``manifests_root`` replays only its own."""

from __future__ import annotations

import secrets
import signal
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

TIMEOUT = 60.0
"""Seconds an RPC, or the daemon's answer to SIGHUP, may take: only a hang comes near it."""
IN_FORCE = "tools:\n  - name: weather\n"


@pytest.fixture
def canary(tmp_path: Path) -> tuple[Path, str]:
    """A 0600 file outside the root, and its unique content: a line of /etc/shadow's form,
    which a manifest problem would quote if it were read (``got 'root:*:...'``)."""
    (tmp_path / "secret").mkdir()
    path = tmp_path / "secret" / "canary"
    content = f"canary-{secrets.token_hex(16)}"
    path.write_text(f"root:*:20228:{content}:0:99999:7:::\n")
    path.chmod(0o600)
    return path, content


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The daemon's manifests root: the parent of its manifests directory ``tools.d``."""
    (tmp_path / "etc" / "tools.d").mkdir(parents=True)
    (tmp_path / "etc" / "tools.d" / "tools.yaml").write_text(IN_FORCE)
    return tmp_path / "etc"


@pytest.fixture
def daemon(tmp_path: Path, root: Path) -> Iterator[DaemonProcess]:
    """errord serving ``root / "tools.d"``, with one failure of weather in its trace."""
    running = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--manifests", str(root / "tools.d"),
    )  # fmt: skip
    try:
        with ErrordClient(running.address) as errord:
            errord.report_failure(
                turn_id="t", call_id="c", tool="weather", attempt=1, http_status=503
            )
        yield running
    finally:
        running.terminate()


def operator(daemon: DaemonProcess) -> Iterator[errord_pb2_grpc.OperatorServiceStub]:
    """The daemon's OperatorService, called with its operator token."""
    with sync_operator_channel(daemon.address, daemon.token) as channel:
        yield errord_pb2_grpc.OperatorServiceStub(channel)


def refused_replay(daemon: DaemonProcess, directory: Path) -> grpc.RpcError:
    """The error ReplayManifests answers for ``directory``."""
    for stub in operator(daemon):
        request = pb.ReplayManifestsRequest(manifests_dir=str(directory))
        with pytest.raises(grpc.RpcError) as raised:
            list(stub.ReplayManifests(request, timeout=TIMEOUT))
        return raised.value
    raise AssertionError("unreachable")


def violations(error: grpc.RpcError) -> list[error_details_pb2.BadRequest.FieldViolation]:
    status = rpc_status.from_call(error)
    assert status is not None
    request = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(request)
    return list(request.field_violations)


def everything_in(error: grpc.RpcError) -> str:
    """The status code, message, details and every trailer of an RPC's error, as text."""
    trailers = [f"{key}={value!r}" for key, value in error.trailing_metadata() or ()]
    return "\n".join([str(error.code()), str(error.details()), *trailers, repr(error)])


def sighup_answered(daemon: DaemonProcess, refusals: int) -> None:
    """SIGHUP, then wait until the log holds ``refusals`` refused reloads."""
    daemon.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + TIMEOUT
    while daemon.stderr.count("manifest reload refused") < refusals:
        assert time.monotonic() < deadline, daemon.stderr
        time.sleep(0.05)


def test_a_link_to_a_canary_is_refused_unread_and_its_content_goes_nowhere(
    tmp_path: Path, root: Path, daemon: DaemonProcess, canary: tuple[Path, str]
) -> None:
    path, content = canary
    (root / "try.d").mkdir()
    (root / "try.d" / "a.yaml").symlink_to(path)
    leaving = "a symbolic link leading outside"

    error = refused_replay(daemon, root / "try.d")
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    [violation] = violations(error)
    assert violation.field == "manifests_dir"
    assert violation.description == (
        f"{root / 'try.d' / 'a.yaml'}: {leaving} {root}, where manifests are read"
        " (manifests_root); not read"
    )
    assert content not in everything_in(error)

    (root / "tools.d" / "zz.yaml").symlink_to(path)
    for stub in operator(daemon):
        reloaded = stub.ReloadManifests(pb.ReloadManifestsRequest(by="t"), timeout=TIMEOUT)
    assert not reloaded.applied
    assert list(reloaded.tools) == ["weather"]
    assert [problem.split(": ", 1) for problem in reloaded.problems] == [
        [str(root / "tools.d" / "zz.yaml"), violation.description.split(": ", 1)[1]]
    ]
    assert content not in str(reloaded)
    sighup_answered(daemon, refusals=2)

    assert daemon.terminate() == 0
    assert str(root / "tools.d" / "zz.yaml") in daemon.stderr  # the refusals were logged
    assert content not in daemon.stderr
    stored = b"".join(file.read_bytes() for file in tmp_path.glob("errord.db*") if file.is_file())
    assert str(root / "tools.d" / "zz.yaml").encode() in stored  # and recorded in the trace
    assert content.encode() not in stored


def test_a_directory_outside_the_root_is_refused_naming_manifests_dir(
    tmp_path: Path, root: Path, daemon: DaemonProcess, canary: tuple[Path, str]
) -> None:
    (tmp_path / "secret" / "tools.yaml").write_text(IN_FORCE)
    for directory in (tmp_path / "secret", root / ".." / "secret", root / "tools.d" / ".." / ".."):
        error = refused_replay(daemon, directory)
        assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert error.details() == (
            f"manifests_dir: {directory} is outside {root}, where this errord reads manifests"
            " (manifests_root)"
        )
        assert canary[1] not in everything_in(error)


def test_a_group_writable_manifest_is_refused_by_a_replay_and_at_start(
    tmp_path: Path, root: Path, daemon: DaemonProcess
) -> None:
    (root / "loose.d").mkdir()
    loose = root / "loose.d" / "tools.yaml"
    loose.write_text(IN_FORCE)
    loose.chmod(0o664)
    refusal = (
        f"{loose}: writable by its group (mode 0664): another user could change it; not read"
        f" (run: chmod go-w {loose})"
    )

    error = refused_replay(daemon, root / "loose.d")
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    [violation] = violations(error)  # a violation is cut to 256 bytes: the path once
    assert violation.description.startswith(refusal.rsplit(" ", 1)[0])

    started = run_errord(
        "serve", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "other.db"),
        "--manifests", str(root / "loose.d"),
    )  # fmt: skip
    assert started.returncode == 78
    assert started.stderr.splitlines() == [
        "errord: invalid tool manifests, refusing to start:",
        refusal,
    ]


def test_a_daemon_without_manifests_or_a_root_replays_only_its_own(tmp_path: Path) -> None:
    (tmp_path / "try.d").mkdir()
    (tmp_path / "try.d" / "tools.yaml").write_text(IN_FORCE)
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    try:
        error = refused_replay(daemon, tmp_path / "try.d")
        for stub in operator(daemon):
            *_, own = stub.ReplayManifests(pb.ReplayManifestsRequest(), timeout=TIMEOUT)
    finally:
        assert daemon.terminate() == 0
    assert error.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert error.details().startswith(
        "manifests_dir: this errord has no manifests directory and no manifests_root"
    )
    assert own.WhichOneof("result") == "summary"
