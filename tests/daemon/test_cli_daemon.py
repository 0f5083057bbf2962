"""The errord subcommands for a running daemon: trace, tail, breakers, stats, memory, health.

Most run the real command as a process against a real daemon; a few run it in
this process against a small gRPC server of the test's own, to see the metadata
it sends or to make the server answer what errord rarely does (a watcher
dropped with RESOURCE_EXHAUSTED, a service NOT_SERVING).
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from errord_client import ErrordClient, pb
from errord_client.requests import failure_request
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from errord.cli.connection import default_target, grpc_target
from errord.cli.main import main
from errord.cli.trace_lines import event_line
from tests.helpers import DaemonProcess, errord_command, run_errord, start_process, subprocess_env

DAEMON_COMMANDS = [
    ["trace", "T"],
    ["tail"],
    ["breakers"],
    ["stats"],
    ["memory", "search"],
    ["health"],
    ["breaker", "list"],
    ["breaker", "reset", "search"],
    ["breaker", "open", "search"],
]
LINE_TIMEOUT = 60.0
"""How long a test waits for a line of ``tail``: only a bound on a hang, never a measure."""


@pytest.fixture(scope="module")
def errord(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """One daemon on a loopback port for the module: each test reports to turns and tools no
    other test touches, so none reads another's breakers, stats or memory."""
    directory = tmp_path_factory.mktemp("errord")
    running = start_process("--listen", "127.0.0.1:0", "--db", str(directory / "errord.db"))
    yield running
    running.terminate(signal.SIGKILL)


def report_retried_call(address: str, turn_id: str, tool: str) -> None:
    """A turn whose one call failed twice, then succeeded on its third attempt, then ended."""
    with ErrordClient(address) as client:
        for attempt in (1, 2):
            client.report_failure(
                turn_id=turn_id,
                call_id="c1",
                tool=tool,
                attempt=attempt,
                code=pb.ERROR_CODE_TIMEOUT,
                message="upstream timeout after 9s",
            )
        client.report_outcome(
            turn_id=turn_id, call_id="c1", tool=tool, attempt=3, success=True, duration=0.3
        )
        client.end_turn(turn_id)


def kinds(lines: list[str], *, column: int = 2) -> list[str]:
    return [line.split("  ")[column] for line in lines]


def test_trace_prints_one_line_per_event_oldest_first(errord: DaemonProcess) -> None:
    report_retried_call(errord.address, "trace-human", "trace_tool")
    result = run_errord("trace", "trace-human", "--target", errord.address, *errord.token_args)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert kinds(lines) == ["turn_began", "failure", "failure", "outcome", "turn_ended"]
    sequences = [int(line.split("  ")[1].removeprefix("#")) for line in lines]
    assert sequences == sorted(sequences)
    assert "  c1 trace_tool attempt 1  RETRY after " in lines[1]
    assert "[TIMEOUT transient]: " in lines[1]
    assert lines[3].endswith("  c1 trace_tool attempt 3  SUCCESS in 0.3 s, breaker CLOSED")
    assert "  1 call: 1 SUCCEEDED" in lines[4]
    assert "trace-human" not in result.stdout  # one turn: its id is not repeated per line


def test_trace_json_is_the_turns_events_as_proto3_json(errord: DaemonProcess) -> None:
    report_retried_call(errord.address, "trace-json", "trace_json_tool")
    result = run_errord(
        "trace", "trace-json", "--target", errord.address, *errord.token_args, "--json"
    )
    assert result.returncode == 0, result.stderr
    events = json.loads(result.stdout)["events"]
    assert [event["turnId"] for event in events] == ["trace-json"] * 5
    failure = events[1]
    assert (failure["callId"], failure["tool"], failure["attempt"]) == ("c1", "trace_json_tool", 1)
    assert failure["failure"]["decision"]["action"] == "RECOVERY_ACTION_RETRY"
    assert events[3]["outcome"]["outcome"] == "OUTCOME_SUCCESS"
    assert "turnEnded" in events[4]


def test_trace_follows_the_page_tokens_to_the_end(errord: DaemonProcess) -> None:
    """More than one page (1000 events): every event, once, in order."""
    failures = [
        failure_request(
            turn_id="trace-long", call_id=f"c{n}", tool="paged_tool", attempt=1, http_status=400
        )
        for n in range(1100)
    ]
    with ErrordClient(errord.address, token=errord.token) as client:
        for start in range(0, len(failures), 250):
            client.report_failures(failures[start : start + 250])
        expected = [event.sequence for event in client.get_turn_trace("trace-long")]
    result = run_errord(
        "trace", "trace-long", "--target", errord.address, *errord.token_args, "--json"
    )
    assert result.returncode == 0, result.stderr
    shown = [int(event["sequence"]) for event in json.loads(result.stdout)["events"]]
    assert len(shown) > 1000
    assert shown == expected


def test_trace_of_an_unknown_turn_prints_the_daemons_status(errord: DaemonProcess) -> None:
    result = run_errord("trace", "no-such-turn", "--target", errord.address, *errord.token_args)
    assert result.returncode == 1
    assert result.stderr == "errord: NOT_FOUND: no trace events for turn 'no-such-turn'\n"
    assert result.stdout == ""


@dataclass
class Tail:
    """``errord tail`` running as a process; its stdout lines arrive on a queue."""

    process: subprocess.Popen[str]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)

    def next_line(self, timeout: float = LINE_TIMEOUT) -> str:
        return self.lines.get(timeout=timeout)

    def interrupt(self) -> tuple[int, str]:
        """Ctrl-C: its exit status and what it wrote on stderr."""
        self.process.send_signal(signal.SIGINT)
        _, stderr = self.process.communicate(timeout=LINE_TIMEOUT)
        return self.process.returncode, stderr


@pytest.fixture
def start_tail() -> Iterator[Callable[..., Tail]]:
    started: list[Tail] = []

    def start(*args: str) -> Tail:
        process = subprocess.Popen(
            errord_command("tail", *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=subprocess_env(),
        )
        tail = Tail(process)
        threading.Thread(target=read_lines, args=(tail,), daemon=True).start()
        started.append(tail)
        return tail

    yield start
    for tail in started:
        if tail.process.poll() is None:
            tail.process.kill()
            tail.process.communicate()


def read_lines(tail: Tail) -> None:
    assert tail.process.stdout is not None
    for line in tail.process.stdout:
        tail.lines.put(line.rstrip("\n"))


def test_tail_prints_events_reported_after_it_started_and_ctrl_c_ends_it(
    errord: DaemonProcess, start_tail: Callable[..., Tail]
) -> None:
    """It watches new events only, so the test reports until its watch has begun."""
    tail = start_tail("tail-live", "--target", errord.address, *errord.token_args)
    with ErrordClient(errord.address, token=errord.token) as client:
        for attempt in range(1, 1000):
            client.report_failure(
                turn_id="tail-live", call_id=f"c{attempt}", tool="tail_live_tool", attempt=1
            )
            try:
                line = tail.next_line(timeout=0.5)
                break
            except queue.Empty:
                continue
        else:
            pytest.fail("tail printed nothing")
    assert kinds([line]) in (["turn_began"], ["failure"])  # the one turn: no turn column
    assert "tail-live" not in line
    assert tail.interrupt() == (0, "")


def test_tail_json_prints_one_object_per_line_from_after_sequence(
    errord: DaemonProcess, start_tail: Callable[..., Tail]
) -> None:
    report_retried_call(errord.address, "tail-json", "tail_json_tool")
    with ErrordClient(errord.address, token=errord.token) as client:
        began, first_failure, *_ = client.get_turn_trace("tail-json")
    tail = start_tail(
        "--after", str(began.sequence), "--target", errord.address, *errord.token_args, "--json"
    )
    replayed = json.loads(tail.next_line())
    assert replayed["event"]["sequence"] == str(first_failure.sequence)
    assert replayed["event"]["turnId"] == "tail-json"
    assert replayed["event"]["failure"]["decision"]["action"] == "RECOVERY_ACTION_RETRY"
    assert json.loads(tail.next_line())["event"]["callId"] == "c1"
    assert tail.interrupt() == (0, "")


def test_tail_of_every_turn_names_each_events_turn(
    errord: DaemonProcess, start_tail: Callable[..., Tail]
) -> None:
    report_retried_call(errord.address, "tail-every", "tail_every_tool")
    with ErrordClient(errord.address, token=errord.token) as client:
        began = client.get_turn_trace("tail-every")[0]
    tail = start_tail(
        "--after", str(began.sequence - 1), "--target", errord.address, *errord.token_args
    )
    line = tail.next_line()
    assert line.split("  ")[1:4] == [f"#{began.sequence}", "tail-every", "turn_began"]
    assert tail.interrupt() == (0, "")


def test_breakers_lists_every_breaker_as_breaker_list_does(errord: DaemonProcess) -> None:
    with ErrordClient(errord.address, token=errord.token) as client:
        client.report_failure(turn_id="breakers", call_id="c1", tool="listed_tool", attempt=1)
    listed = run_errord("breakers", "--target", errord.address, *errord.token_args)
    assert listed.returncode == 0, listed.stderr
    lines = [" ".join(line.split()) for line in listed.stdout.splitlines()]  # tools padded
    assert "listed_tool breaker CLOSED, 1 consecutive failures, opened 0 times" in lines
    assert (
        run_errord("breaker", "list", "--target", errord.address, *errord.token_args).stdout
        == listed.stdout
    )
    as_json = json.loads(
        run_errord("breakers", "--target", errord.address, *errord.token_args, "--json").stdout
    )
    by_tool = {breaker["tool"]: breaker for breaker in as_json["breakers"]}
    assert by_tool["listed_tool"]["effectivePhase"] == "BREAKER_PHASE_CLOSED"


def test_stats_and_memory_take_the_common_options(errord: DaemonProcess) -> None:
    with ErrordClient(errord.address, token=errord.token) as client:
        client.report_failure(
            turn_id="stats", call_id="c1", tool="stats_tool", attempt=1, message="disk full"
        )
    stats = run_errord(
        "stats", "stats_tool", "--target", errord.address, *errord.token_args, "--timeout", "30"
    )
    assert stats.returncode == 0, stats.stderr
    assert stats.stdout.startswith("stats_tool  breaker CLOSED")
    as_json = json.loads(
        run_errord(
            "stats", "stats_tool", "--target", errord.address, *errord.token_args, "--json"
        ).stdout
    )
    assert [tool["tool"] for tool in as_json["tools"]] == ["stats_tool"]
    memory = run_errord(
        "memory", "stats_tool", "--target", errord.address, *errord.token_args, "--json"
    )
    assert memory.returncode == 0, memory.stderr
    assert isinstance(json.loads(memory.stdout), dict)


def test_health_says_serving_for_the_server_and_each_service(errord: DaemonProcess) -> None:
    result = run_errord("health", "--target", errord.address, *errord.token_args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "SERVING  (server)",
        "SERVING  errord.v1.ErrorHandlerService",
        "SERVING  errord.v1.OperatorService",
    ]
    as_json = json.loads(
        run_errord("health", "--target", errord.address, *errord.token_args, "--json").stdout
    )
    assert as_json == {
        "": {"status": "SERVING"},
        "errord.v1.ErrorHandlerService": {"status": "SERVING"},
        "errord.v1.OperatorService": {"status": "SERVING"},
    }


def test_health_fails_where_nothing_listens(tmp_path: Path) -> None:
    socket_path = tmp_path / "nobody.sock"
    result = run_errord("health", "--target", str(socket_path))
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"errord: UNAVAILABLE: no errord answering at unix:{socket_path} ("
    )
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_unix_socket_is_reached_by_its_path_unix_path_or_the_config(tmp_path: Path) -> None:
    socket_path = tmp_path / "errord.sock"
    daemon = start_process("--listen", f"unix:{socket_path}", "--db", str(tmp_path / "e.db"))
    config = tmp_path / "errord.toml"
    config.write_text(f'listen = "unix:{socket_path}"\n')
    try:
        report_retried_call(daemon.address, "over-unix", "unix_tool")
        token = daemon.token_args
        by_path = run_errord("trace", "over-unix", "--target", str(socket_path), *token)
        by_uri = run_errord("breakers", "--target", f"unix:{socket_path}", *token)
        by_config = run_errord("health", "--config", str(config))
        by_alias = run_errord("stats", "unix_tool", "--address", str(socket_path), *token)
    finally:
        assert daemon.terminate() == 0
    assert by_path.returncode == 0, by_path.stderr
    assert len(by_path.stdout.splitlines()) == 5
    assert by_uri.stdout.startswith("unix_tool  breaker CLOSED")
    assert by_config.returncode == 0, by_config.stderr
    assert by_alias.stdout.startswith("unix_tool  breaker CLOSED")


def test_a_missing_or_empty_token_file_is_named(tmp_path: Path, errord: DaemonProcess) -> None:
    missing = tmp_path / "missing-token"
    result = run_errord("breakers", "--target", errord.address, "--token-file", str(missing))
    assert result.returncode == 1
    assert result.stderr == f"errord: cannot read token file {missing}: No such file or directory\n"
    empty = tmp_path / "empty-token"
    empty.write_text(" \n")
    result = run_errord("health", "--target", errord.address, "--token-file", str(empty))
    assert (result.returncode, result.stderr) == (1, f"errord: token file {empty} is empty\n")


def test_a_daemon_that_requires_a_token_answers_the_token_file(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cr3t-t0ken\n")
    config = tmp_path / "errord.toml"
    config.write_text(
        f'listen = "127.0.0.1:0"\ndb = "{tmp_path / "e.db"}"\ntoken_file = "{token}"\n'
    )
    daemon = start_process("--config", str(config))
    try:
        with ErrordClient(daemon.address, token="s3cr3t-t0ken") as client:
            client.report_failure(turn_id="with-token", call_id="c1", tool="search", attempt=1)
        refused = run_errord("stats", "--target", daemon.address)
        stats = run_errord("stats", "--target", daemon.address, "--token-file", str(token))
        trace = run_errord(
            "trace", "with-token", "--target", daemon.address, "--token-file", str(token)
        )
        health = run_errord("health", "--target", daemon.address)
    finally:
        assert daemon.terminate() == 0
    assert refused.returncode == 1
    assert refused.stderr.startswith("errord: UNAUTHENTICATED: ")
    assert stats.returncode == 0, stats.stderr
    assert stats.stdout.startswith("search  breaker CLOSED")
    assert kinds(trace.stdout.splitlines()) == ["turn_began", "failure"]
    assert health.returncode == 0, health.stderr  # health needs no token


@pytest.mark.parametrize("command", DAEMON_COMMANDS, ids=" ".join)
def test_each_daemon_command_documents_the_common_options_and_defaults(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main([*command, "--help"])
    assert exit_status.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--target ADDR", "--config FILE", "--token-file FILE", "--json", "--timeout"):
        assert option in text
    assert "(default: the listen setting of --config, else 127.0.0.1:50051)" in text
    assert "(default: 10)" in text
    assert "--address" not in text


@pytest.mark.parametrize(
    ("given", "target"),
    [
        ("/run/errord/errord.sock", "unix:/run/errord/errord.sock"),
        ("./errord.sock", "unix:./errord.sock"),
        ("unix:/run/errord/errord.sock", "unix:/run/errord/errord.sock"),
        ("127.0.0.1:50051", "127.0.0.1:50051"),
        ("[::1]:50051", "[::1]:50051"),
        ("localhost:50051", "localhost:50051"),
        ("dns:///errord.internal:50051", "dns:///errord.internal:50051"),
    ],
)
def test_a_path_with_a_slash_is_a_unix_socket(given: str, target: str) -> None:
    assert grpc_target(given) == target


def test_the_default_target_reaches_a_wildcard_listen_over_loopback(tmp_path: Path) -> None:
    config = tmp_path / "errord.toml"
    config.write_text('listen = "0.0.0.0:5005"\n')
    assert default_target(config) == "127.0.0.1:5005"
    assert default_target(None) == "127.0.0.1:50051"


def test_a_breaker_event_line_names_the_tool_the_change_and_who() -> None:
    event = pb.TraceEvent(
        sequence=42,
        tool="search",
        breaker=pb.BreakerEvent(change=pb.BREAKER_CHANGE_FORCED_OPEN, by="ops: maintenance"),
    )
    event.time.FromSeconds(1_750_000_000)
    assert event_line(event) == (
        "2025-06-15T15:06:40.000Z  #42  -  breaker  search  FORCED_OPEN, by ops: maintenance"
    )


@dataclass
class FakeErrord:
    """A gRPC server of the test's own on a loopback port, answering as the test scripts."""

    address: str
    health: health.HealthServicer
    watches: list[pb.WatchTraceRequest] = field(default_factory=list)
    metadata: list[dict[str, str]] = field(default_factory=list)
    watch: Callable[[pb.WatchTraceRequest, Any], Iterator[pb.WatchTraceResponse]] | None = None


@pytest.fixture
def fake_errord() -> Iterator[FakeErrord]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    checker = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    fake = FakeErrord(f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}", checker)

    def list_breakers(request: pb.ListBreakersRequest, context: Any) -> pb.ListBreakersResponse:
        fake.metadata.append(dict(context.invocation_metadata()))
        return pb.ListBreakersResponse(breakers=[pb.Breaker(tool="fake_tool")])

    def watch_trace(request: pb.WatchTraceRequest, context: Any) -> Iterator[Any]:
        fake.watches.append(request)
        assert fake.watch is not None
        yield from fake.watch(request, context)

    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "errord.v1.OperatorService",
                {"ListBreakers": unary(list_breakers, pb.ListBreakersRequest)},
            ),
            grpc.method_handlers_generic_handler(
                "errord.v1.ErrorHandlerService",
                {"WatchTrace": streaming(watch_trace, pb.WatchTraceRequest)},
            ),
        )
    )
    server.start()
    yield fake
    server.stop(None)


def unary(handle: Callable[..., Any], request: type[Any]) -> grpc.RpcMethodHandler:
    return grpc.unary_unary_rpc_method_handler(
        handle, request_deserializer=request.FromString, response_serializer=serialize
    )


def streaming(handle: Callable[..., Any], request: type[Any]) -> grpc.RpcMethodHandler:
    return grpc.unary_stream_rpc_method_handler(
        handle, request_deserializer=request.FromString, response_serializer=serialize
    )


def serialize(response: Any) -> bytes:
    data: bytes = response.SerializeToString()
    return data


def watched(*sequences: int) -> Iterator[pb.WatchTraceResponse]:
    for sequence in sequences:
        event = pb.TraceEvent(sequence=sequence, turn_id="t", call_id="c", tool="x", attempt=1)
        event.outcome.outcome = pb.OUTCOME_SUCCESS
        yield pb.WatchTraceResponse(event=event)


def test_the_token_file_is_sent_as_a_bearer_token(
    fake_errord: FakeErrord, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "token"
    token.write_text("  s3cr3t-t0ken\n")
    assert main(["breakers", "--target", fake_errord.address, "--token-file", str(token)]) == 0
    assert main(["breakers", "--target", fake_errord.address]) == 0
    sent = [metadata.get("authorization") for metadata in fake_errord.metadata]
    assert sent == ["Bearer s3cr3t-t0ken", None]
    assert capsys.readouterr().out.startswith("fake_tool  breaker UNSPECIFIED")


def test_tail_resumes_after_the_last_sequence_when_dropped_for_falling_behind(
    fake_errord: FakeErrord, capsys: pytest.CaptureFixture[str]
) -> None:
    def watch(request: pb.WatchTraceRequest, context: Any) -> Iterator[pb.WatchTraceResponse]:
        if request.after_sequence == 0:
            yield from watched(5, 6)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "the watcher fell behind")
        else:
            yield from watched(request.after_sequence + 1)

    fake_errord.watch = watch
    assert main(["tail", "--target", fake_errord.address]) == 0
    assert [request.after_sequence for request in fake_errord.watches] == [0, 6]
    printed = capsys.readouterr()
    assert [line.split("  ")[1] for line in printed.out.splitlines()] == ["#5", "#6", "#7"]
    assert printed.err == (
        "errord: RESOURCE_EXHAUSTED: the watcher fell behind; watching again after sequence 6\n"
    )


def test_tail_prints_each_event_of_a_response_that_holds_several(
    fake_errord: FakeErrord, capsys: pytest.CaptureFixture[str]
) -> None:
    """The daemon sends the events that came while a response was written together, in
    ``events``; tail prints them one a line, and resumes after the last of them."""

    def watch(request: pb.WatchTraceRequest, context: Any) -> Iterator[pb.WatchTraceResponse]:
        if len(fake_errord.watches) == 1:
            yield from watched(5)
            yield pb.WatchTraceResponse(events=[r.event for r in watched(6, 7, 8)])
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "the watcher fell behind")
        else:
            yield from watched(request.after_sequence + 1)

    fake_errord.watch = watch
    assert main(["tail", "--target", fake_errord.address, "--json"]) == 0
    assert [request.after_sequence for request in fake_errord.watches] == [0, 8]
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["event"]["sequence"] for line in lines] == ["5", "6", "7", "8", "9"]


def test_tail_gives_up_when_dropped_again_and_again_without_an_event(
    fake_errord: FakeErrord, capsys: pytest.CaptureFixture[str]
) -> None:
    def watch(request: pb.WatchTraceRequest, context: Any) -> Iterator[pb.WatchTraceResponse]:
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "the watcher fell behind")
        yield from ()

    fake_errord.watch = watch
    assert main(["tail", "t", "--after", "9", "--target", fake_errord.address]) == 1
    assert [request.after_sequence for request in fake_errord.watches] == [9, 9, 9]
    assert all(request.turn_id == "t" for request in fake_errord.watches)
    assert capsys.readouterr().err.splitlines()[-1] == (
        "errord: RESOURCE_EXHAUSTED: the watcher fell behind (3 times without an event)"
    )


def test_health_fails_when_a_service_is_not_serving(
    fake_errord: FakeErrord, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_errord.health.set("", health_pb2.HealthCheckResponse.SERVING)
    fake_errord.health.set("errord.v1.ErrorHandlerService", health_pb2.HealthCheckResponse.SERVING)
    fake_errord.health.set("errord.v1.OperatorService", health_pb2.HealthCheckResponse.NOT_SERVING)
    assert main(["health", "--target", fake_errord.address]) == 1
    printed = capsys.readouterr()
    assert printed.out.splitlines()[-1] == "NOT_SERVING  errord.v1.OperatorService"
    assert printed.err == (
        f"errord: not serving at {fake_errord.address}: errord.v1.OperatorService NOT_SERVING\n"
    )
