"""Who may read the console, and where it listens: the daemon as a process.

Without the operator token every page answers 401 (the login form); the token as a
bearer header, or once (the form, or ``?token=``) for a session cookie, opens them.
Off by default, the console listens nowhere; on, it serves HTTPS with the TLS files, or
a unix socket. Its pages read the trace: their filters, and a wrong query answered 400
naming the parameter.
"""

from __future__ import annotations

import hashlib
import http.client
import signal
import socket
import ssl
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from errord_client import ErrordClient, pb

from tests.certificates import authority
from tests.console_helpers import console_url, fetch, scripted_turns
from tests.helpers import DaemonProcess, start_process

PAGES = ["/", "/tools", "/turns", "/turns/live?after=0", "/turn?id=trip-1", "/event?seq=1"]


@pytest.fixture
def console_daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    """A daemon whose console is on a loopback port, and which decided the scripted turns."""
    running = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--console-listen", "127.0.0.1:0",
    )  # fmt: skip
    with ErrordClient(running.address) as errord:
        scripted_turns(errord)
    yield running
    running.terminate(signal.SIGKILL)


def test_without_the_operator_token_every_page_answers_401_with_the_login_form(
    console_daemon: DaemonProcess,
) -> None:
    url = console_url(console_daemon)
    for page in PAGES:
        for headers in ({}, {"Authorization": "Bearer not-the-token"}, {"Cookie": "x=1"}):
            status, answered, text = fetch(url + page, headers)
            assert status == 401, (page, headers)
            assert 'name="token"' in text
            assert "hotel_search" not in text
            assert "timed out" not in text
            assert answered["WWW-Authenticate"].startswith("Bearer")
            assert "script-src 'self'" in answered["Content-Security-Policy"]
    forged = {"Cookie": "errord_console=v1.9999999999.00ff"}
    assert fetch(url + "/tools", forged)[0] == 401
    assert fetch(url + "/static/console.css")[0] == 200  # what the form is drawn with


def test_the_token_as_a_bearer_header_opens_every_page(console_daemon: DaemonProcess) -> None:
    url = console_url(console_daemon)
    bearer = {"Authorization": f"Bearer {console_daemon.token}"}
    for page in PAGES:
        status, headers, _ = fetch(url + page, bearer)
        assert status == 200, page
        assert headers["Cache-Control"] == "no-store"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert "default-src 'none'" in headers["Content-Security-Policy"]


def test_the_token_once_in_the_url_is_exchanged_for_a_session_cookie(
    console_daemon: DaemonProcess,
) -> None:
    url = console_url(console_daemon)
    token = urllib.parse.quote(console_daemon.token)
    status, headers, _ = fetch(f"{url}/turns?tool=flight_search&token={token}")
    assert status == 303
    assert headers["Location"] == "/turns?tool=flight_search"  # the token out of the URL
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "Path=/" in cookie
    assert console_daemon.token not in cookie
    session = {"Cookie": cookie.split(";", 1)[0]}
    status, _, text = fetch(f"{url}/turns?tool=flight_search", session)
    assert status == 200
    assert "trip-1" in text
    assert fetch(f"{url}/tools?token=wrong")[0] == 401


def test_the_turn_list_filters_by_tool_action_user_and_time(tmp_path: Path) -> None:
    """The user filter takes the id as the executor sent it, though errord records its hash."""
    (tmp_path / "errord.toml").write_text(
        'listen = "127.0.0.1:0"\ndb = "errord.db"\nconsole_listen = "127.0.0.1:0"\n'
        'telemetry_hash_ids = true\ntelemetry_id_salt = "pepper"\n'
    )
    daemon = start_process("--config", str(tmp_path / "errord.toml"))
    try:
        url = console_url(daemon)
        with ErrordClient(daemon.address) as errord:
            for turn, user, tool, code in (
                ("t-alice", "alice", "flights", pb.ERROR_CODE_TIMEOUT),
                ("t-bob", "bob", "hotels", pb.ERROR_CODE_INVALID_INPUT),
            ):
                request = pb.ReportFailureRequest(
                    turn_id=turn, call_id="c1", tool=tool, attempt=1, user_id=user,
                    error=pb.ToolError(code=code, message="it failed"),
                )  # fmt: skip
                errord.stub.ReportFailure(request)

        def listed(query: str) -> set[str]:
            bearer = {"Authorization": f"Bearer {daemon.token}"}
            status, _, text = fetch(f"{url}/turns?{query}", bearer)
            assert status == 200, text
            return {turn for turn in ("t-alice", "t-bob") if f'data-turn="{turn}"' in text}

        assert listed("") == {"t-alice", "t-bob"}
        assert listed("tool=hotels") == {"t-bob"}
        assert listed("action=RETRY") == {"t-alice"}
        assert listed("action=RETURN_TO_MODEL") == {"t-bob"}
        assert listed("user=alice") == {"t-alice"}
        assert listed("since=2000-01-01T00:00&until=2000-01-02T00:00") == set()
        assert listed("since=2000-01-01T00:00") == {"t-alice", "t-bob"}
        bearer = {"Authorization": f"Bearer {daemon.token}"}
        status, _, text = fetch(f"{url}/turns?action=NAP", bearer)
        assert status == 400
        assert "action: expected one of" in text
        status, _, text = fetch(f"{url}/turns?since=noon", bearer)
        assert status == 400
        assert "since: expected a time" in text
    finally:
        daemon.terminate(signal.SIGKILL)


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on, from /proc."""
    inodes = set()
    for descriptor in Path(f"/proc/{pid}/fd").iterdir():
        target = str(descriptor.readlink()) if descriptor.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_with_the_console_off_it_listens_nowhere(
    console_daemon: DaemonProcess, tmp_path: Path
) -> None:
    """Off by default: the daemon listens on its gRPC port alone, as it does without
    the console; on, on one port more, the console's."""
    off = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "off.db"))
    try:
        grpc_port = int(off.address.rsplit(":", 1)[1])
        assert listening_ports(off.process.pid) == {grpc_port}
        assert "console on" not in off.stderr
    finally:
        off.terminate(signal.SIGKILL)
    console_port = int(console_url(console_daemon).rsplit(":", 1)[1])
    on_ports = listening_ports(console_daemon.process.pid)
    assert on_ports == {int(console_daemon.address.rsplit(":", 1)[1]), console_port}
    console_daemon.terminate()
    with (
        pytest.raises(ConnectionRefusedError),
        socket.create_connection(("127.0.0.1", console_port), timeout=10),
    ):
        pass


def test_the_console_serves_https_with_the_tls_files(tmp_path: Path) -> None:
    pki = authority(tmp_path / "pki", "demo")
    (tmp_path / "errord.toml").write_text(
        'listen = "127.0.0.1:0"\ndb = "errord.db"\nconsole_listen = "127.0.0.1:0"\n'
        'tls_cert_file = "pki/demo-server.pem"\ntls_key_file = "pki/demo-server.key"\n'
    )
    daemon = start_process("--config", str(tmp_path / "errord.toml"))
    try:
        url = console_url(daemon)
        assert url.startswith("https://127.0.0.1:")
        context = ssl.create_default_context(cafile=str(pki.ca.cert))
        host, port = url.removeprefix("https://").rsplit(":", 1)
        connection = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
        connection.request("GET", "/tools")
        answer = connection.getresponse()
        assert answer.status == 401
        assert answer.read()
        connection.request("GET", f"/tools?token={urllib.parse.quote(daemon.token)}")
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 303
        cookie = answer.headers["Set-Cookie"]
        assert cookie.startswith("__Host-errord_console=")
        assert "Secure" in cookie
        connection.close()
        plain = http.client.HTTPConnection(host, int(port), timeout=30)
        plain.request("GET", "/tools")
        with pytest.raises(http.client.RemoteDisconnected):  # plain HTTP is refused
            plain.getresponse()
    finally:
        daemon.terminate(signal.SIGKILL)


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=30)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(self._path))


def test_the_console_serves_a_unix_socket_of_mode_0660(tmp_path: Path) -> None:
    path = tmp_path / "console.sock"
    daemon = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--console-listen", f"unix:{path}",
    )  # fmt: skip
    try:
        assert f"console on unix:{path}" in daemon.stderr
        assert path.stat().st_mode & 0o777 == 0o660
        for headers, wanted in (({}, 401), ({"Authorization": f"Bearer {daemon.token}"}, 200)):
            connection = UnixConnection(path)
            connection.request("GET", "/tools", headers=headers)
            assert connection.getresponse().status == wanted
            connection.close()
        daemon.terminate()
        assert not path.exists()
    finally:
        daemon.terminate(signal.SIGKILL)


def test_with_opentelemetry_export_on_a_turn_links_to_its_spans(tmp_path: Path) -> None:
    """The link names the trace errord's spans of the turn are in, and the turn."""
    (tmp_path / "errord.toml").write_text(
        'listen = "127.0.0.1:0"\ndb = "errord.db"\nconsole_listen = "127.0.0.1:0"\n'
        'otel_endpoint = "http://127.0.0.1:9"\n'  # nothing listens: the spans are dropped
        'console_trace_url = "https://tracing.example/trace/{trace_id}?turn={turn_id}"\n'
    )
    daemon = start_process("--config", str(tmp_path / "errord.toml"))
    try:
        with ErrordClient(daemon.address) as errord:
            scripted_turns(errord)
        bearer = {"Authorization": f"Bearer {daemon.token}"}
        _, _, text = fetch(f"{console_url(daemon)}/turn?id=trip-1", bearer)
        trace_id = hashlib.sha256(b"trip-1").digest()[:16].hex()
        assert f'href="https://tracing.example/trace/{trace_id}?turn=trip-1"' in text
    finally:
        daemon.terminate(signal.SIGKILL)
