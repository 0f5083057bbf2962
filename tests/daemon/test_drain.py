"""SIGTERM drains the daemon (lame duck): health turns NOT_SERVING and STOPPING=1 goes out at
once, yet every request that reached it is decided; it stops once requests stop arriving.

grpc answers CANCELLED, which clients do not retry, for a call its core had received but not
yet handed to a handler when the server stops (grpc/grpc#41785): a drain must hand them all
over first. Real daemon processes, real signals, real sockets."""

from __future__ import annotations

import asyncio
import math
import signal
import socket
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from errord_client import pb
from errord_client.requests import failure_request
from errord_client.v1 import errord_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from errord.wire.drain import ArrivalCounter, Drain, DrainEnd
from tests.fakes import FakeClock
from tests.helpers import DaemonProcess, start_process, subprocess_env, sync_operator_channel

SIGTERM_AFTER_MS = (0, 5, 20, 50, 100)
"""When SIGTERM follows the start of a burst of reports."""
CHANNELS = 4
REPORTS_PER_CHANNEL = 40
ANSWERED = {"OK", "UNAVAILABLE"}
"""What a client may be answered once SIGTERM arrives: decided, or refused (retryable)."""
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def report(turn: str) -> pb.ReportFailureRequest:
    return failure_request(
        turn_id=turn,
        call_id="c1",
        tool="search",
        attempt=1,
        code=pb.ERROR_CODE_TIMEOUT,
        message="timeout after 30s",
    )


def burst_then_sigterm(daemon: DaemonProcess, name: str, after_ms: int) -> dict[str, str]:
    """Send concurrent reports over several channels, SIGTERM ``after_ms`` after the first:
    each report's turn, with its decision id when it was decided or its status code name."""
    channels = [sync_operator_channel(daemon.address, daemon.token) for _ in range(CHANNELS)]
    try:
        for channel in channels:
            grpc.channel_ready_future(channel).result(timeout=60)
        stubs = [errord_pb2_grpc.ErrorHandlerServiceStub(channel) for channel in channels]
        sent: dict[str, Future[pb.ReportFailureResponse]] = {}
        started = time.monotonic()
        for number in range(REPORTS_PER_CHANNEL):
            for lane, stub in enumerate(stubs):
                turn = f"{name}-{lane}-{number}"
                sent[turn] = stub.ReportFailure.future(report(turn), timeout=120)
        time.sleep(max(0.0, started + after_ms / 1000 - time.monotonic()))
        daemon.process.send_signal(signal.SIGTERM)
        return {turn: answer(call) for turn, call in sent.items()}
    finally:
        for channel in channels:
            channel.close()


def answer(call: Future[pb.ReportFailureResponse]) -> str:
    try:
        return "OK " + call.result().decision.decision_id
    except grpc.RpcError as error:
        return str(error.code().name)


def recorded_decision(stub: errord_pb2_grpc.ErrorHandlerServiceStub, turn: str) -> str | None:
    """The decision id the trace holds for ``turn``'s failure; None when there is none."""
    try:
        trace = stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id=turn), timeout=60)
    except grpc.RpcError as error:
        if error.code() is grpc.StatusCode.NOT_FOUND:  # a turn without events
            return None
        raise
    decisions = [
        event.failure.decision.decision_id
        for event in trace.events
        if event.WhichOneof("event") == "failure"
    ]
    assert len(decisions) <= 1
    return decisions[0] if decisions else None


def check_trace(daemon: DaemonProcess, answers: dict[str, str]) -> None:
    """Every decided report is in the trace with the decision its client got; no refused one is."""
    with sync_operator_channel(daemon.address, daemon.token) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        for turn, got in answers.items():
            decided = got.removeprefix("OK ") if got.startswith("OK ") else None
            assert recorded_decision(stub, turn) == decided, turn


def serve(database: Path, *args: str, env: dict[str, str] | None = None) -> DaemonProcess:
    return start_process("--listen", "127.0.0.1:0", "--db", str(database), *args, env=env)


def test_reports_racing_sigterm_are_decided_or_refused_never_cancelled(tmp_path: Path) -> None:
    database = tmp_path / "errord.db"
    config = tmp_path / "errord.toml"
    # A grace no scheduler delay can exhaust: the drain ends because reports stopped.
    config.write_text("shutdown_grace_seconds = 120\n")
    daemon = serve(database, "--config", str(config))
    previous: dict[str, str] = {}
    for after_ms in SIGTERM_AFTER_MS:
        check_trace(daemon, previous)  # a restart on the same database
        previous = burst_then_sigterm(daemon, f"sigterm-{after_ms}ms", after_ms)
        statuses = Counter(got.split(" ")[0] for got in previous.values())
        assert set(statuses) <= ANSWERED, f"SIGTERM after {after_ms} ms: {statuses}"
        assert daemon.process.wait(60) == 0  # after the one SIGTERM sent in the burst
        daemon.terminate()
        assert "drained: " in daemon.stderr  # ended by the quiet, not by the limit
        assert 'msg="errord stopped"' in daemon.stderr
        daemon = serve(database, "--config", str(config))
    try:
        check_trace(daemon, previous)
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0


def notifications(listener: socket.socket) -> Iterator[dict[str, str]]:
    """Each sd_notify datagram the daemon sends, as its assignments."""
    while True:
        message = listener.recv(4096).decode()
        yield dict(line.split("=", 1) for line in message.splitlines())


def test_a_draining_daemon_says_so_yet_still_decides_until_a_second_signal(
    tmp_path: Path, notify_socket: socket.socket
) -> None:
    database = tmp_path / "errord.db"
    config = tmp_path / "errord.toml"
    # A quiet period the test never waits out: only the second SIGTERM ends the drain.
    config.write_text("shutdown_grace_seconds = 600\nshutdown_quiet_seconds = 300\n")
    env = subprocess_env(NOTIFY_SOCKET=notify_socket.getsockname())
    daemon = serve(database, "--config", str(config), env=env)
    sent = notifications(notify_socket)
    assert next(sent)["READY"] == "1"
    daemon.process.send_signal(signal.SIGTERM)
    assert next(sent)["STOPPING"] == "1"
    with sync_operator_channel(daemon.address, daemon.token) as channel:
        check = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        decided = errord_pb2_grpc.ErrorHandlerServiceStub(channel).ReportFailure(
            report("in-the-drain"), timeout=60
        )
    assert check.status == NOT_SERVING
    assert daemon.terminate(signal.SIGTERM) == 0
    assert "drain cut short by a second signal" in daemon.stderr
    again = serve(database)
    try:
        with sync_operator_channel(again.address, again.token) as channel:
            stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            assert recorded_decision(stub, "in-the-drain") == decided.decision.decision_id
    finally:
        assert again.terminate(signal.SIGTERM) == 0


class ArrivingClock(FakeClock):
    """A fake clock under which a call arrives at every sleep until ``calls_until``."""

    def __init__(self, counter: ArrivalCounter, calls_until: float) -> None:
        super().__init__()
        self.counter = counter
        self.calls_until = calls_until

    async def sleep(self, seconds: float) -> None:
        if self.monotonic_time < self.calls_until:
            self.counter.arrivals += 1
        await super().sleep(seconds)


async def test_the_drain_ends_once_no_call_arrived_for_the_whole_quiet_period() -> None:
    counter = ArrivalCounter()
    clock = ArrivingClock(counter, calls_until=2.95)
    end = await Drain(quiet=0.5, limit=60.0).run(counter, clock, asyncio.Event())
    assert end is DrainEnd.QUIET
    assert clock.monotonic() == pytest.approx(3.5)  # the last call came by 3.0: quiet restarts


async def test_calls_that_keep_arriving_hold_the_drain_only_until_its_limit() -> None:
    counter = ArrivalCounter()
    clock = ArrivingClock(counter, calls_until=math.inf)
    end = await Drain(quiet=0.5, limit=2.5).run(counter, clock, asyncio.Event())
    assert end is DrainEnd.LIMIT
    assert clock.monotonic() == pytest.approx(2.5)


async def test_a_second_signal_ends_the_drain_and_a_quiet_period_of_0_means_none() -> None:
    counter, hurry = ArrivalCounter(), asyncio.Event()
    hurry.set()
    assert await Drain(quiet=0.5, limit=60.0).run(counter, FakeClock(), hurry) is DrainEnd.HURRIED
    assert await Drain(quiet=0.0, limit=60.0).run(counter, FakeClock(), asyncio.Event()) is None


def test_the_counter_counts_each_call_and_hands_it_to_the_service_that_has_it() -> None:
    report_failure = grpc.unary_unary_rpc_method_handler(lambda request, context: b"")
    errors = grpc.method_handlers_generic_handler("errord.v1.A", {"Report": report_failure})
    operators = grpc.method_handlers_generic_handler("errord.v1.B", {"Reset": report_failure})
    counter = ArrivalCounter(errors, operators)
    found = [counter.service(Call(method)) for method in ("/errord.v1.B/Reset", "/x.Y/Z")]
    assert found == [report_failure, None]
    assert counter.arrivals == 2


@dataclass(frozen=True)
class Call:
    method: str
    invocation_metadata: tuple[tuple[str, str], ...] = ()
