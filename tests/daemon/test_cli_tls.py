"""The operator commands reach a daemon serving TLS: ``--tls-ca``, ``--tls-cert`` and
``--tls-key`` (as grpcurl's ``-cacert``, ``-cert`` and ``-key``), or the ``[client]`` table
of ``--config``; with and without required client certificates, with the bearer token.

Real daemon processes on loopback ports, real commands as processes, certificates made by
``openssl`` at test time (tests/certificates.py).
"""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import grpc
import pytest
from errord_client import ErrordClient

from errord.cli.main import main
from errord.config import Settings
from errord.errors import ConfigError
from tests.certificates import Authority, authority
from tests.helpers import DaemonProcess, errord_command, run_errord, start_process, subprocess_env

TOKEN = "tls-t0ken"
TURN = "over-tls"
TOOL = "search"
LINE_TIMEOUT = 60.0
"""How long a test waits for a line of ``tail``: only a bound on a hang, never a measure."""
COMMANDS = {
    "trace": (["trace", TURN], "turn_began"),
    "tail": (["tail", TURN], "failure"),
    "breakers": (["breakers"], f"{TOOL}  breaker "),
    "breaker list": (["breaker", "list"], f"{TOOL}  breaker "),
    "breaker reset": (["breaker", "reset", TOOL], f"{TOOL}  breaker CLOSED"),
    "breaker open": (["breaker", "open", TOOL, "--for", "1"], f"{TOOL}  breaker "),
    "stats": (["stats", TOOL], f"{TOOL}  breaker "),
    "memory": (["memory", TOOL], f"{TOOL}  (no message)  [UNKNOWN:"),
    "health": (["health"], "SERVING  (server)"),
    "reload": (["reload"], f"manifests reloaded: 1 tools ({TOOL})"),
}
"""Each operator command, and what its answer holds; ``tail`` replays the turn's failure.
The tests of the module share each TLS daemon (its certificates are slow to make): every
command reads the turn recorded when it started, and the two that change the tool's
breaker (``breaker open``, ``breaker reset``) answer alike whatever state they find, so
no answer depends on which test ran before."""


@dataclass(frozen=True)
class TLSDaemon:
    """A daemon serving TLS, the PKI it trusts, and the files the commands are given."""

    process: DaemonProcess
    directory: Path
    pki: Authority
    client_certificates: bool
    """Whether the daemon requires a client certificate its CA signed."""
    token: Path | None
    began: int = 0
    """The sequence of the turn's turn_began event."""

    @property
    def address(self) -> str:
        return self.process.address

    def flags(self) -> list[str]:
        """The command-line options that reach it."""
        flags = ["--target", self.address, "--tls-ca", str(self.pki.ca.cert)]
        if self.client_certificates:
            flags += [
                "--tls-cert",
                str(self.pki.client.cert),
                "--tls-key",
                str(self.pki.client.key),
            ]
        return [*flags, "--token-file", str(self.token or self.process.token_file)]

    def client_config(self, name: str = "operator.toml") -> Path:
        """A settings file whose listen and ``[client]`` table reach it, with relative paths."""
        # Its database names the operator token beside it, which the commands read.
        lines = [f'listen = "{self.address}"', 'db = "errord.db"', "", "[client]"]
        lines.append('tls_ca_file = "pki/demo-ca.pem"')
        if self.client_certificates:
            lines += [
                'tls_cert_file = "pki/demo-client.pem"',
                'tls_key_file = "pki/demo-client.key"',
            ]
        config = self.directory / name
        config.write_text("\n".join(lines) + "\n")
        return config

    def credentials(self) -> grpc.ChannelCredentials:
        client = self.pki.client
        return grpc.ssl_channel_credentials(
            self.pki.ca.cert.read_bytes(),
            client.key.read_bytes() if self.client_certificates else None,
            client.cert.read_bytes() if self.client_certificates else None,
        )


def start_tls_daemon(directory: Path, *, client_certificates: bool, token: bool) -> TLSDaemon:
    """A daemon with a TLS listener (and a ``[client]`` table in its settings, which it
    ignores), one manifest, and a turn recorded over TLS."""
    pki = authority(directory / "pki", "demo")
    (directory / "tools").mkdir()
    (directory / "tools" / "tools.yaml").write_text(f"tools:\n  - name: {TOOL}\n")
    settings = [
        'listen = "127.0.0.1:0"',
        'db = "errord.db"',
        'manifests = "tools"',
        'tls_cert_file = "pki/demo-server.pem"',
        'tls_key_file = "pki/demo-server.key"',
    ]
    if client_certificates:
        settings.append('tls_client_ca_file = "pki/demo-ca.pem"')
    token_file = directory / "token" if token else None
    if token_file:
        token_file.write_text(f"{TOKEN}\n")
        settings.append('token_file = "token"')
    settings += ["", "[client]", 'tls_ca_file = "pki/demo-ca.pem"']
    (directory / "errord.toml").write_text("\n".join(settings) + "\n")
    process = start_process("--config", str(directory / "errord.toml"))
    daemon = TLSDaemon(process, directory, pki, client_certificates, token_file)
    return replace(daemon, began=record_a_turn(daemon))


def record_a_turn(daemon: TLSDaemon) -> int:
    """Record the turn of one failure over TLS; the sequence of its turn_began event."""
    token = TOKEN if daemon.token else daemon.process.token
    with ErrordClient(daemon.address, token=token, credentials=daemon.credentials()) as client:
        client.report_failure(turn_id=TURN, call_id="c1", tool=TOOL, attempt=1)
        return client.get_turn_trace(TURN)[0].sequence


@pytest.fixture(scope="module")
def tls_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TLSDaemon]:
    """TLS without client certificates, and a bearer token."""
    daemon = start_tls_daemon(tmp_path_factory.mktemp("tls"), client_certificates=False, token=True)
    yield daemon
    daemon.process.terminate(signal.SIGKILL)


@pytest.fixture(scope="module")
def mtls_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TLSDaemon]:
    """TLS requiring a client certificate its CA signed (mTLS)."""
    daemon = start_tls_daemon(
        tmp_path_factory.mktemp("mtls"), client_certificates=True, token=False
    )
    yield daemon
    daemon.process.terminate(signal.SIGKILL)


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    """Another CA, and a server and a client certificate it signed: trusted by no daemon."""
    return authority(tmp_path_factory.mktemp("stranger"), "stranger")


def run_command(name: str, *options: str) -> tuple[int, str, str]:
    """The command's exit status, stdout and stderr."""
    command, _ = COMMANDS[name]
    result = run_errord(*command, *options)
    return result.returncode, result.stdout, result.stderr


def answer(name: str, daemon: TLSDaemon, *options: str) -> tuple[int, str, str]:
    """As ``run_command``; ``tail`` replays what followed the turn's beginning and is
    interrupted after its first line."""
    if name == "tail":
        command, _ = COMMANDS[name]
        return first_line_of_tail(*command, "--after", str(daemon.began), *options)
    return run_command(name, *options)


def first_line_of_tail(*args: str) -> tuple[int, str, str]:
    """``errord tail ARGS`` until its first line, then Ctrl-C: exit status, the line, stderr."""
    process = subprocess.Popen(
        errord_command(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=subprocess_env(),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=LINE_TIMEOUT)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=LINE_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, line, stderr


def assert_answered(name: str, status: int, stdout: str, stderr: str) -> None:
    _, expected = COMMANDS[name]
    assert (status, stderr) == (0, ""), stderr
    assert expected in stdout


def one_line(stderr: str) -> str:
    """The one line a failing command writes on stderr."""
    assert stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    return stderr.removesuffix("\n")


# Every command reaches the daemon


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_reaches_a_tls_daemon_with_tls_ca_and_the_token(
    name: str, tls_daemon: TLSDaemon
) -> None:
    assert_answered(name, *answer(name, tls_daemon, *tls_daemon.flags()))


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_reaches_a_daemon_requiring_client_certificates_with_the_flags(
    name: str, mtls_daemon: TLSDaemon
) -> None:
    assert_answered(name, *answer(name, mtls_daemon, *mtls_daemon.flags()))


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_reaches_it_through_the_config_client_table(
    name: str, mtls_daemon: TLSDaemon
) -> None:
    config = mtls_daemon.client_config()
    assert_answered(name, *answer(name, mtls_daemon, "--config", str(config)))


def test_the_config_client_table_with_a_ca_only_and_the_token_file(tls_daemon: TLSDaemon) -> None:
    config = tls_daemon.client_config()
    assert tls_daemon.token is not None
    assert_answered(
        "stats",
        *run_command("stats", "--config", str(config), "--token-file", str(tls_daemon.token)),
    )
    status, _, stderr = run_command("stats", "--config", str(config))
    assert status == 1
    assert one_line(stderr).startswith("errord: UNAUTHENTICATED: ")


def test_the_flags_win_over_the_config_client_table(
    mtls_daemon: TLSDaemon, stranger: Authority
) -> None:
    """A certificate and its key replace the table's pair together; --tls-ca the table's CA."""
    config = mtls_daemon.client_config()
    stranger_client = str(stranger.client.cert.with_suffix(""))
    text = config.read_text().replace("pki/demo-client", stranger_client)
    config.write_text(text)
    refused, _, stderr = run_command("health", "--config", str(config))
    assert refused == 1, stderr
    client = mtls_daemon.pki.client
    flags = ["--tls-cert", str(client.cert), "--tls-key", str(client.key)]
    assert_answered("health", *run_command("health", "--config", str(config), *flags))
    wrong_ca = ["--tls-ca", str(stranger.ca.cert)]
    refused, _, stderr = run_command("health", "--config", str(config), *flags, *wrong_ca)
    assert refused == 1
    assert "its certificate is not signed by a CA in --tls-ca" in stderr


# What a failed connection says


def test_without_tls_ca_a_tls_daemon_is_a_clear_message(tls_daemon: TLSDaemon) -> None:
    status, stdout, stderr = run_command("health", "--target", tls_daemon.address)
    assert (status, stdout) == (1, "")
    assert one_line(stderr) == (
        f"errord: UNAVAILABLE: {tls_daemon.address} closed the connection without answering; "
        "if it serves TLS, give --tls-ca (and --tls-cert and --tls-key if it requires client "
        "certificates)"
    )


def test_without_a_client_certificate_an_mtls_daemon_is_a_clear_message(
    mtls_daemon: TLSDaemon,
) -> None:
    ca = ["--tls-ca", str(mtls_daemon.pki.ca.cert)]
    status, _, stderr = run_command("breakers", "--target", mtls_daemon.address, *ca)
    assert status == 1
    assert one_line(stderr) == (
        f"errord: UNAVAILABLE: {mtls_daemon.address} closed the connection during the TLS "
        "handshake; if it requires client certificates, give --tls-cert and --tls-key"
    )


def test_a_client_certificate_another_ca_signed_is_named(
    mtls_daemon: TLSDaemon, stranger: Authority
) -> None:
    flags = ["--target", mtls_daemon.address, "--tls-ca", str(mtls_daemon.pki.ca.cert)]
    flags += ["--tls-cert", str(stranger.client.cert), "--tls-key", str(stranger.client.key)]
    status, _, stderr = run_command("health", *flags)
    assert status == 1
    assert f"it may not accept --tls-cert {stranger.client.cert}" in one_line(stderr)


def test_a_wrong_ca_is_a_failed_handshake_in_one_line(
    tls_daemon: TLSDaemon, stranger: Authority
) -> None:
    """Nothing of grpc's own log: only errord's line."""
    flags = ["--target", tls_daemon.address, "--tls-ca", str(stranger.ca.cert)]
    for name in ("health", "tail"):
        status, _, stderr = run_command(name, *flags)
        assert status == 1
        assert one_line(stderr).startswith(
            f"errord: UNAVAILABLE: TLS handshake with {tls_daemon.address} failed: its "
            f"certificate is not signed by a CA in --tls-ca {stranger.ca.cert} ("
        )


def test_without_tls_ca_a_client_certificate_trusts_the_systems_cas(
    tls_daemon: TLSDaemon,
) -> None:
    """As grpcurl without -cacert: a private CA is not among them, and the line says so."""
    client = tls_daemon.pki.client
    flags = ["--tls-cert", str(client.cert), "--tls-key", str(client.key)]
    status, _, stderr = run_command("health", "--target", tls_daemon.address, *flags)
    assert status == 1
    line = one_line(stderr)
    assert "failed: its certificate is not signed by a CA the system trusts (" in line
    assert line.endswith("); give --tls-ca")


def test_a_certificate_for_another_host_is_named(tls_daemon: TLSDaemon, tmp_path: Path) -> None:
    """The server certificate is for localhost and 127.0.0.1, not ::ffff:127.0.0.1."""
    port = tls_daemon.address.rpartition(":")[2]
    flags = ["--target", f"[::ffff:127.0.0.1]:{port}", "--tls-ca", str(tls_daemon.pki.ca.cert)]
    status, _, stderr = run_command("health", *flags)
    assert status == 1
    assert one_line(stderr).endswith(
        f"failed: its certificate is not for the host of [::ffff:127.0.0.1]:{port}"
    )


def test_a_plaintext_daemon_answers_as_before_and_tls_flags_are_told_it_has_no_tls(
    tmp_path: Path, tls_daemon: TLSDaemon
) -> None:
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    try:
        plain = run_command("health", "--target", daemon.address)
        with_tls = run_command(
            "health", "--target", daemon.address, "--tls-ca", str(tls_daemon.pki.ca.cert)
        )
    finally:
        assert daemon.terminate() == 0
    assert_answered("health", *plain)
    status, _, stderr = with_tls
    assert status == 1
    assert one_line(stderr) == (
        f"errord: UNAVAILABLE: TLS handshake with {daemon.address} failed: it does not serve "
        "TLS; leave out --tls-ca, --tls-cert and --tls-key"
    )


# Bad TLS files and flags: one line naming the flag or the setting, and the file


def test_a_missing_or_unreadable_tls_file_is_named_with_its_flag(
    tmp_path: Path, tls_daemon: TLSDaemon
) -> None:
    missing = tmp_path / "missing.pem"
    target = ["--target", tls_daemon.address]
    status, _, stderr = run_command("health", *target, "--tls-ca", str(missing))
    assert (status, one_line(stderr)) == (
        1,
        f"errord: --tls-ca {missing}: cannot read: No such file or directory",
    )
    client = tls_daemon.pki.client
    status, _, stderr = run_command(
        "breakers", *target, "--tls-cert", str(tmp_path), "--tls-key", str(client.key)
    )
    assert (status, one_line(stderr)) == (
        1,
        f"errord: --tls-cert {tmp_path}: cannot read: Is a directory",
    )


def test_a_certificate_without_its_key_or_a_key_without_its_certificate_is_a_usage_error(
    tls_daemon: TLSDaemon,
) -> None:
    client = tls_daemon.pki.client
    target = ["--target", tls_daemon.address]
    status, _, stderr = run_command("stats", *target, "--tls-cert", str(client.cert))
    assert (status, one_line(stderr)) == (
        2,
        f"errord: --tls-cert {client.cert} needs --tls-key, its private key",
    )
    status, _, stderr = run_command("trace", *target, "--tls-key", str(client.key))
    assert (status, one_line(stderr)) == (
        2,
        f"errord: --tls-key {client.key} needs --tls-cert, the certificate it is the key of",
    )


def test_tls_files_that_do_not_hold_what_they_should_are_named(
    tls_daemon: TLSDaemon, stranger: Authority
) -> None:
    pki, target = tls_daemon.pki, ["--target", tls_daemon.address]
    cases = [
        (["--tls-ca", str(pki.ca.key)], f"--tls-ca {pki.ca.key}: holds no PEM CA certificate ("),
        (
            ["--tls-cert", str(pki.client.key), "--tls-key", str(pki.client.key)],
            f"--tls-cert {pki.client.key}: holds no PEM certificate",
        ),
        (
            ["--tls-cert", str(pki.client.cert), "--tls-key", str(pki.client.cert)],
            f"--tls-key {pki.client.cert}: holds no PEM private key",
        ),
        (
            ["--tls-cert", str(pki.client.cert), "--tls-key", str(stranger.client.key)],
            f"--tls-key {stranger.client.key}: is not the private key of --tls-cert "
            f"{pki.client.cert} (",
        ),
    ]
    for flags, message in cases:
        status, _, stderr = run_command("health", *target, *flags)
        assert status == 1
        assert one_line(stderr).startswith(f"errord: {message}")


def test_a_tls_file_of_the_config_is_named_with_the_file_and_setting(tmp_path: Path) -> None:
    config = tmp_path / "operator.toml"
    config.write_text('listen = "127.0.0.1:1"\n[client]\ntls_ca_file = "ca.pem"\n')
    status, _, stderr = run_command("health", "--config", str(config))
    assert (status, one_line(stderr)) == (
        1,
        f"errord: {config}: client.tls_ca_file {tmp_path / 'ca.pem'}: cannot read: "
        "No such file or directory",
    )


def test_tls_is_refused_on_a_unix_socket(tmp_path: Path, tls_daemon: TLSDaemon) -> None:
    socket_path = tmp_path / "errord.sock"
    ca = ["--tls-ca", str(tls_daemon.pki.ca.cert)]
    status, _, stderr = run_command("health", "--target", str(socket_path), *ca)
    assert status == 1
    assert one_line(stderr).startswith(
        f"errord: unix:{socket_path} is a unix socket, and errord serves TLS on TCP only"
    )


# The [client] table of the settings file


def test_the_client_table_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    config = tmp_path / "errord.toml"
    config.write_text(
        '[client]\ntls_ca_file = "tls/ca.pem"\ntls_cert_file = "/etc/c.pem"\n'
        'tls_key_file = "~/c.key"\n'
    )
    client = Settings.from_toml(config).client
    assert client.tls_ca_file == tmp_path / "tls" / "ca.pem"
    assert client.tls_cert_file == Path("/etc/c.pem")
    assert client.tls_key_file == Path("~/c.key").expanduser()
    assert Settings().client.tls is False
    assert client.tls is True


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        (
            'listen = "127.0.0.1:1"\n\n[client]\ntls_cert_file = "c.pem"\n',
            ["4: client.tls_cert_file: needs client.tls_key_file too"],
        ),
        (
            'client.tls_key_file = "c.key"\n',
            ["1: client.tls_key_file: needs client.tls_cert_file too"],
        ),
        (
            '[client]\ntls_ca_file = 3\ntls_cafile = "ca.pem"\n',
            [
                "2: client.tls_ca_file: expected a file path, got 3",
                "3: client.tls_cafile: unknown setting (known: tls_ca_file, tls_cert_file, "
                "tls_key_file)",
            ],
        ),
        ('log_level = "info"\nclient = "ca.pem"\n', ["2: client: expected a table, got str"]),
    ],
)
def test_a_bad_client_table_names_the_file_line_and_setting(
    tmp_path: Path, text: str, problems: list[str]
) -> None:
    config = tmp_path / "errord.toml"
    config.write_text(text)
    with pytest.raises(ConfigError) as refused:
        Settings.from_toml(config)
    assert str(refused.value).splitlines() == [f"{config}:{problem}" for problem in problems]


def test_a_bad_client_table_is_one_message_of_the_command(tmp_path: Path) -> None:
    config = tmp_path / "errord.toml"
    config.write_text('[client]\ntls_cert_file = "c.pem"\n')
    status, _, stderr = run_command("health", "--config", str(config))
    assert (status, one_line(stderr)) == (
        1,
        f"errord: {config}:2: client.tls_cert_file: needs client.tls_key_file too",
    )


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_documents_the_tls_options(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command, _ = COMMANDS[name]
    with pytest.raises(SystemExit) as exit_status:
        main([*command[: len(name.split())], "--help"])
    assert exit_status.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--tls-ca FILE", "--tls-cert FILE", "--tls-key FILE"):
        assert option in text
    assert "(default: the [client] table of --config, else plaintext)" in text
