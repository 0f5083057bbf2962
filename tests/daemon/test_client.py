"""ErrordClient and AsyncErrordClient against a real grpc.aio server on port 0.

The server runs a recording servicer on the test's event loop; the blocking
client runs in a worker thread (``InThread``) so it never blocks that loop.
AdmitCall and WatchTools are also called on the real daemon, in process, with
manifests of the test's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
import pytest_asyncio
from errord_client import DEFAULT_TARGET, AsyncErrordClient, ErrordClient, pb
from errord_client.errors import field_violations
from errord_client.requests import failure_request
from errord_client.v1 import errord_pb2_grpc
from google.protobuf import any_pb2, duration_pb2, json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from errord.config import Settings
from tests.certificates import self_signed
from tests.helpers import START_TIMEOUT, InProcessDaemon, operator_channel, start_in_process

DECISION = pb.RecoveryDecision(decision_id="d-1", action=pb.RECOVERY_ACTION_RETRY, turn_id="t-1")
OUTCOME_EVENT = pb.TraceEvent(sequence=3, turn_id="t-1", outcome=pb.OutcomeEvent(decision_id="d-1"))
EVENTS = [
    pb.TraceEvent(sequence=1, turn_id="t-1", call_id="c-1", tool="search", attempt=1),
    pb.TraceEvent(sequence=2, turn_id="t-1", call_id="c-1", tool="search", attempt=2),
]
CALL: dict[str, Any] = {"turn_id": "t-1", "call_id": "c-1", "tool": "search", "attempt": 2}
ADMISSION = pb.AdmitCallResponse(admitted=True, probe=True)
POLICIES = [
    pb.WatchToolsResponse(snapshot=True, tools=[pb.ToolPolicy(tool="search", has_manifest=True)]),
    pb.WatchToolsResponse(tools=[pb.ToolPolicy(tool="search")]),
]


class RecordingServicer(errord_pb2_grpc.ErrorHandlerServiceServicer):  # type: ignore[misc]  # generated base is untyped
    """Records every request and its deadline, and answers with canned responses.

    Like errord, it rejects an empty turn_id with INVALID_ARGUMENT carrying a
    google.rpc.BadRequest detail, and an unknown turn with a bare NOT_FOUND.
    WatchTrace streams EVENTS and WatchTools POLICIES, then each ends; with
    ``follow`` set it then waits, so ``watch_ended`` is set only once the client
    cancels the stream.
    """

    def __init__(self) -> None:
        self.requests: list[Message] = []
        self.deadlines: list[float | None] = []
        self.follow = False
        self.watch_ended = asyncio.Event()

    async def AdmitCall(  # noqa: N802 - generated name
        self, request: pb.AdmitCallRequest, context: grpc.aio.ServicerContext
    ) -> pb.AdmitCallResponse:
        await self._record(request, context)
        return ADMISSION

    async def WatchTools(  # noqa: N802 - generated name
        self, request: pb.WatchToolsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.WatchToolsResponse]:
        self.requests.append(request)
        self.deadlines.append(context.time_remaining())
        try:
            for response in POLICIES:
                yield response
            if self.follow:
                await asyncio.Event().wait()
        finally:
            self.watch_ended.set()

    async def ReportFailure(  # noqa: N802 - generated name
        self, request: pb.ReportFailureRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReportFailureResponse:
        await self._record(request, context)
        return pb.ReportFailureResponse(decision=DECISION)

    async def ReportFailures(  # noqa: N802 - generated name
        self, request: pb.ReportFailuresRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReportFailuresResponse:
        self.requests.append(request)
        self.deadlines.append(context.time_remaining())
        answer = pb.ReportFailureResponse(decision=DECISION)
        results = [pb.ReportFailuresResult(answer=answer) for _ in request.failures]
        return pb.ReportFailuresResponse(results=results)

    async def ReconcileResults(  # noqa: N802 - generated name
        self, request: pb.ReconcileResultsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReconcileResultsResponse:
        await self._record(request, context)
        return pb.ReconcileResultsResponse(
            results=[pb.ReconciledResult(call_id=call.call_id) for call in request.calls]
        )

    async def BeginTurn(  # noqa: N802 - generated name
        self, request: pb.BeginTurnRequest, context: grpc.aio.ServicerContext
    ) -> pb.BeginTurnResponse:
        await self._record(request, context)
        return pb.BeginTurnResponse()

    async def ReportOutcome(  # noqa: N802 - generated name
        self, request: pb.ReportOutcomeRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReportOutcomeResponse:
        await self._record(request, context)
        return pb.ReportOutcomeResponse(event=OUTCOME_EVENT, replayed=True)

    async def GetTurnTrace(  # noqa: N802 - generated name
        self, request: pb.GetTurnTraceRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetTurnTraceResponse:
        await self._record(request, context)
        if request.turn_id == "unknown":
            await context.abort(grpc.StatusCode.NOT_FOUND, "no such turn")
        if not request.page_token:  # one event a page
            return pb.GetTurnTraceResponse(events=EVENTS[:1], next_page_token="1")
        return pb.GetTurnTraceResponse(events=EVENTS[1:])

    async def WatchTrace(  # noqa: N802 - generated name
        self, request: pb.WatchTraceRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.WatchTraceResponse]:
        self.requests.append(request)
        try:
            for event in EVENTS:
                yield pb.WatchTraceResponse(event=event)
            if self.follow:
                await asyncio.Event().wait()
        finally:  # CancelledError or GeneratorExit, whichever the cancel interrupts
            self.watch_ended.set()

    async def _record(self, request: Message, context: grpc.aio.ServicerContext) -> None:
        self.requests.append(request)
        self.deadlines.append(context.time_remaining())
        if not getattr(request, "turn_id"):  # noqa: B009 - every recorded request has one
            await context.abort_with_status(rpc_status.to_status(_bad_request("turn_id")))


def _bad_request(field: str) -> status_pb2.Status:
    detail = any_pb2.Any()
    violation = error_details_pb2.BadRequest.FieldViolation(
        field=field, description="must not be empty"
    )
    detail.Pack(error_details_pb2.BadRequest(field_violations=[violation]))
    return status_pb2.Status(
        code=code_pb2.INVALID_ARGUMENT, message=f"{field}: must not be empty", details=[detail]
    )


@dataclass
class Daemon:
    """A running test server: its servicer and the two addresses it listens on."""

    servicer: RecordingServicer
    target: str
    unix_target: str


class InThread:
    """An ErrordClient whose blocking calls run in a worker thread, off the server's loop."""

    def __init__(self, client: ErrordClient) -> None:
        self.client = client

    async def report_failure(self, **fields: Any) -> pb.ReportFailureResponse:
        return await asyncio.to_thread(functools.partial(self.client.report_failure, **fields))

    async def report_failures(
        self, failures: list[pb.ReportFailureRequest], **fields: Any
    ) -> pb.ReportFailuresResponse:
        call = functools.partial(self.client.report_failures, failures, **fields)
        return await asyncio.to_thread(call)

    async def report_outcome(self, **fields: Any) -> pb.ReportOutcomeResponse:
        return await asyncio.to_thread(functools.partial(self.client.report_outcome, **fields))

    async def begin_turn(self, *args: Any, **fields: Any) -> pb.BeginTurnResponse:
        return await asyncio.to_thread(functools.partial(self.client.begin_turn, *args, **fields))

    async def reconcile_results(self, *args: Any, **fields: Any) -> pb.ReconcileResultsResponse:
        call = functools.partial(self.client.reconcile_results, *args, **fields)
        return await asyncio.to_thread(call)

    async def get_turn_trace(self, turn_id: str, **fields: Any) -> list[pb.TraceEvent]:
        call = functools.partial(self.client.get_turn_trace, turn_id, **fields)
        return await asyncio.to_thread(call)

    async def admit_call(self, **fields: Any) -> pb.AdmitCallResponse:
        return await asyncio.to_thread(functools.partial(self.client.admit_call, **fields))

    async def watch_tools(self, **fields: Any) -> AsyncGenerator[pb.WatchToolsResponse]:
        """The blocking iterator, each ``next()`` and its closing in a worker thread."""
        stream = self.client.watch_tools(**fields)
        try:
            while (response := await asyncio.to_thread(next, stream, None)) is not None:
                yield response
        finally:
            await asyncio.to_thread(stream.close)


@pytest_asyncio.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    servicer = RecordingServicer()
    server = grpc.aio.server()
    errord_pb2_grpc.add_ErrorHandlerServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    unix_target = f"unix:{tmp_path / 'errord.sock'}"
    server.add_insecure_port(unix_target)
    await server.start()
    yield Daemon(servicer, f"127.0.0.1:{port}", unix_target)
    await server.stop(None)


@pytest_asyncio.fixture(params=["sync", "async"])
async def client(
    request: pytest.FixtureRequest, daemon: Daemon
) -> AsyncIterator[InThread | AsyncErrordClient]:
    if request.param == "sync":
        with ErrordClient(daemon.target) as blocking:
            yield InThread(blocking)
    else:
        async with AsyncErrordClient(daemon.target) as aio:
            yield aio


def _seconds(duration: duration_pb2.Duration) -> float:
    return duration.ToNanoseconds() / 1e9


@pytest.mark.asyncio
async def test_report_failure_sends_error_fields_struct_arguments_and_durations(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    arguments = {"query": "paris", "limit": 3, "filters": {"nonstop": True}, "tags": ["a", None]}

    response = await client.report_failure(
        **CALL,
        code=pb.ERROR_CODE_RATE_LIMITED,
        message="429 Too Many Requests",
        http_status=429,
        exception_type="HTTPStatusError",
        retry_after=2.5,
        arguments=arguments,
        elapsed=0.125,
    )

    assert response == pb.ReportFailureResponse(decision=DECISION)
    [sent] = daemon.servicer.requests
    assert isinstance(sent, pb.ReportFailureRequest)
    assert (sent.turn_id, sent.call_id, sent.tool, sent.attempt) == ("t-1", "c-1", "search", 2)
    assert sent.error.code == pb.ERROR_CODE_RATE_LIMITED
    assert sent.error.message == "429 Too Many Requests"
    assert sent.error.http_status == 429
    assert sent.error.exception_type == "HTTPStatusError"
    assert _seconds(sent.error.retry_after) == 2.5
    assert json_format.MessageToDict(sent.arguments) == arguments
    assert _seconds(sent.elapsed) == 0.125


@pytest.mark.asyncio
async def test_report_failure_sends_a_given_tool_error_unchanged(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    error = pb.ToolError(code=pb.ERROR_CODE_UNAVAILABLE, message="503")
    error.retry_at.FromSeconds(1_800_000_000)
    error.partial_result.string_value = "half a page"

    await client.report_failure(**CALL, error=error)

    [sent] = daemon.servicer.requests
    assert isinstance(sent, pb.ReportFailureRequest)
    assert sent.error == error


@pytest.mark.asyncio
async def test_report_failure_leaves_omitted_optional_fields_unset(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    await client.report_failure(**CALL)

    [sent] = daemon.servicer.requests
    assert isinstance(sent, pb.ReportFailureRequest)
    assert sent.error == pb.ToolError()
    assert not sent.HasField("arguments")
    assert not sent.HasField("elapsed")


@pytest.mark.asyncio
async def test_report_failure_rejects_error_together_with_error_fields_before_sending(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    with pytest.raises(ValueError, match=r"not both \(got message, retry_after\)"):
        await client.report_failure(**CALL, error=pb.ToolError(), message="boom", retry_after=1)

    assert daemon.servicer.requests == []


@pytest.mark.asyncio
async def test_report_failures_sends_the_failures_built_with_failure_request(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    failures = [
        failure_request(**CALL, code=pb.ERROR_CODE_TIMEOUT, arguments={"q": "paris"}),
        failure_request(**(CALL | {"call_id": "c-2"}), message="503", elapsed=1.5),
    ]

    response = await client.report_failures(failures, timeout=5.0)

    assert len(response.results) == 2
    [sent] = daemon.servicer.requests
    assert sent == pb.ReportFailuresRequest(failures=failures)
    assert failures[0].error.code == pb.ERROR_CODE_TIMEOUT
    assert json_format.MessageToDict(failures[0].arguments) == {"q": "paris"}
    assert _seconds(failures[1].elapsed) == 1.5
    [deadline] = daemon.servicer.deadlines
    assert deadline is not None
    assert 0 < deadline <= 5.1  # gRPC rounds the deadline it sends


@pytest.mark.asyncio
async def test_begin_turn_sends_the_deadline_and_only_the_budget_given(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    deadline = datetime(2030, 1, 1, tzinfo=UTC)
    await client.begin_turn("t-1", deadline=deadline, max_retries=3)
    await client.begin_turn("t-2")
    with_budget, plain = daemon.servicer.requests
    assert isinstance(with_budget, pb.BeginTurnRequest)
    assert with_budget.deadline.ToDatetime(UTC) == deadline
    assert with_budget.retry_budget.max_retries == 3
    assert not with_budget.retry_budget.HasField("max_share")
    assert isinstance(plain, pb.BeginTurnRequest)
    assert not plain.HasField("deadline")
    assert not plain.HasField("retry_budget")


@pytest.mark.asyncio
async def test_reconcile_results_sends_the_calls_and_the_results_held(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    calls = [pb.ToolCallRef(call_id="c-1", tool="search"), pb.ToolCallRef(call_id="c-2", tool="x")]
    held = [pb.HeldToolResult(call_id="c-1", content="3 flights")]

    response = await client.reconcile_results("t-1", calls, held, timeout=5.0)

    assert [result.call_id for result in response.results] == ["c-1", "c-2"]
    [sent] = daemon.servicer.requests
    assert sent == pb.ReconcileResultsRequest(turn_id="t-1", calls=calls, results=held)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("success", "outcome"),
    [(True, pb.OUTCOME_SUCCESS), (False, pb.OUTCOME_FAILURE)],
    ids=["success", "failure"],
)
async def test_report_outcome_sends_success_as_outcome_with_duration_and_decision(
    client: InThread | AsyncErrordClient,
    daemon: Daemon,
    success: bool,
    outcome: pb.Outcome,
) -> None:
    response = await client.report_outcome(**CALL, success=success, duration=1.5, decision_id="d-1")

    assert response == pb.ReportOutcomeResponse(event=OUTCOME_EVENT, replayed=True)
    [sent] = daemon.servicer.requests
    assert sent == pb.ReportOutcomeRequest(
        **CALL,
        outcome=outcome,
        duration=duration_pb2.Duration(seconds=1, nanos=500_000_000),
        decision_id="d-1",
    )


@pytest.mark.asyncio
async def test_get_turn_trace_reads_every_page_into_one_list(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    events = await client.get_turn_trace("t-1")

    assert events == EVENTS
    assert daemon.servicer.requests == [
        pb.GetTurnTraceRequest(turn_id="t-1"),
        pb.GetTurnTraceRequest(turn_id="t-1", page_token="1"),
    ]


@pytest.mark.asyncio
async def test_timeout_becomes_the_calls_deadline_and_none_sends_no_deadline(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    await client.get_turn_trace("t-1", timeout=30)
    await client.get_turn_trace("t-1")

    # Two pages each: the timeout applies to every page.
    first, second, third, fourth = daemon.servicer.deadlines
    assert first == pytest.approx(30, abs=1)
    assert second == pytest.approx(30, abs=1)
    assert (third, fourth) == (None, None)


@pytest.mark.asyncio
async def test_field_violations_names_the_bad_fields_of_an_invalid_argument(
    client: InThread | AsyncErrordClient,
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        await client.report_failure(**{**CALL, "turn_id": ""})

    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field_violations(caught.value) == [("turn_id", "must not be empty")]


@pytest.mark.asyncio
async def test_field_violations_is_empty_for_an_error_without_status_details(
    client: InThread | AsyncErrordClient,
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        await client.get_turn_trace("unknown")

    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert field_violations(caught.value) == []


@pytest.mark.asyncio
async def test_sync_watch_trace_yields_each_streamed_event_for_the_requested_turn(
    daemon: Daemon,
) -> None:
    with ErrordClient(daemon.target) as client:
        stream = client.watch_trace("t-1", include_history=True, after_sequence=7)
        events = await asyncio.to_thread(list, stream)

    assert events == EVENTS
    assert daemon.servicer.requests == [
        pb.WatchTraceRequest(turn_id="t-1", include_history=True, after_sequence=7)
    ]


@pytest.mark.asyncio
async def test_async_watch_trace_yields_each_streamed_event_for_the_requested_turn(
    daemon: Daemon,
) -> None:
    async with AsyncErrordClient(daemon.target) as client:
        stream = client.watch_trace("t-1", include_history=True, after_sequence=7)
        events = [event async for event in stream]

    assert events == EVENTS
    assert daemon.servicer.requests == [
        pb.WatchTraceRequest(turn_id="t-1", include_history=True, after_sequence=7)
    ]


@pytest.mark.asyncio
async def test_closing_the_sync_watch_trace_iterator_cancels_the_stream(daemon: Daemon) -> None:
    daemon.servicer.follow = True

    def first_then_close(client: ErrordClient) -> pb.TraceEvent:
        stream = client.watch_trace()
        first = next(stream)
        stream.close()
        return first

    with ErrordClient(daemon.target) as client:
        assert await asyncio.to_thread(first_then_close, client) == EVENTS[0]
        await asyncio.wait_for(daemon.servicer.watch_ended.wait(), timeout=10)


@pytest.mark.asyncio
async def test_closing_the_async_watch_trace_iterator_cancels_the_stream(daemon: Daemon) -> None:
    daemon.servicer.follow = True

    async with AsyncErrordClient(daemon.target) as client:
        async with contextlib.aclosing(client.watch_trace()) as stream:
            assert await anext(stream) == EVENTS[0]
        await asyncio.wait_for(daemon.servicer.watch_ended.wait(), timeout=10)


@pytest.mark.asyncio
async def test_sync_client_closes_the_channel_it_opened(daemon: Daemon) -> None:
    with ErrordClient(daemon.target) as client:
        pass

    with pytest.raises(ValueError, match="closed channel"):
        await asyncio.to_thread(client.get_turn_trace, "t-1")


@pytest.mark.asyncio
async def test_sync_client_leaves_a_channel_passed_in_open(daemon: Daemon) -> None:
    with grpc.insecure_channel(daemon.target) as channel:
        with ErrordClient(channel=channel):
            pass

        events = await asyncio.to_thread(ErrordClient(channel=channel).get_turn_trace, "t-1")

    assert events == EVENTS


@pytest.mark.asyncio
async def test_async_client_closes_the_channel_it_opened(daemon: Daemon) -> None:
    async with AsyncErrordClient(daemon.target) as client:
        pass

    with pytest.raises(grpc.aio.UsageError, match="closed"):
        await client.get_turn_trace("t-1")


@pytest.mark.asyncio
async def test_async_client_leaves_a_channel_passed_in_open(daemon: Daemon) -> None:
    async with grpc.aio.insecure_channel(daemon.target) as channel:
        async with AsyncErrordClient(channel=channel):
            pass

        events = await AsyncErrordClient(channel=channel).get_turn_trace("t-1")

    assert events == EVENTS


@pytest.mark.asyncio
async def test_both_clients_reach_errord_on_a_unix_socket_target(daemon: Daemon) -> None:
    with ErrordClient(daemon.unix_target) as blocking:
        assert await asyncio.to_thread(blocking.get_turn_trace, "t-1") == EVENTS
    async with AsyncErrordClient(daemon.unix_target) as aio:
        assert await aio.get_turn_trace("t-1") == EVENTS


def test_default_target_is_errords_local_port() -> None:
    assert DEFAULT_TARGET == "127.0.0.1:50051"


async def test_the_async_client_against_the_real_daemon(tmp_path: Path) -> None:
    """The typed client and the daemon speak the same generated contract end to end."""
    errord = await start_in_process(Settings(listen="127.0.0.1:0", db=tmp_path / "e.db"))
    async with AsyncErrordClient(errord.address, token=errord.token) as client:
        response = await client.report_failure(
            turn_id="real",
            call_id="call_1",
            tool="flight_search",
            attempt=1,
            code="ERROR_CODE_TIMEOUT",
            message="Connection timeout after 30s",
            arguments={"origin": "SFO"},
            elapsed=30.0,
        )
        await client.report_outcome(
            turn_id="real",
            call_id="call_1",
            tool="flight_search",
            attempt=2,
            success=True,
            duration=0.4,
            decision_id=response.decision.decision_id,
        )
        events = await client.get_turn_trace("real")
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await client.report_failure(turn_id="real", call_id="", tool="t", attempt=0)
    errord.stop.set()
    await errord.task
    assert response.decision.action == pb.RECOVERY_ACTION_RETRY
    assert [event.WhichOneof("event") for event in events] == ["turn_began", "failure", "outcome"]
    assert events[2].outcome.decision_id == response.decision.decision_id
    assert field_violations(failed.value) == [
        ("call_id", "required"),
        ("attempt", "must be from 1 to 10000 (attempts count from 1), got 0"),
    ]


async def test_both_clients_send_the_token_over_tls_to_a_daemon_that_requires_it(
    tmp_path: Path,
) -> None:
    """``token`` and ``credentials``: what a daemon with token_file and TLS set asks for."""
    token = "s3cret-T0ken.for~tests"
    (tmp_path / "token").write_text(f"{token}\n")
    server = self_signed(tmp_path, "server")
    settings = Settings(
        listen="127.0.0.1:0",
        db=tmp_path / "e.db",
        token_file=tmp_path / "token",
        tls_cert_file=server.cert,
        tls_key_file=server.key,
    )
    trusted = grpc.ssl_channel_credentials(root_certificates=server.cert.read_bytes())
    errord = await start_in_process(settings)
    try:
        with ErrordClient(errord.address, token=token, credentials=trusted) as blocking:
            began = await asyncio.to_thread(blocking.begin_turn, "sync-turn")
        async with AsyncErrordClient(errord.address, token=token, credentials=trusted) as aio:
            await aio.begin_turn("async-turn")
            assert len(await aio.get_turn_trace("sync-turn")) == 1
        with (
            ErrordClient(errord.address, credentials=trusted) as anonymous,
            pytest.raises(grpc.RpcError) as refused,
        ):
            await asyncio.to_thread(anonymous.begin_turn, "no-token")
        async with AsyncErrordClient(errord.address, token="wrong", credentials=trusted) as aio:
            with pytest.raises(grpc.aio.AioRpcError) as wrong:
                await aio.begin_turn("wrong-token")
    finally:
        errord.stop.set()
        await errord.task
    assert began.event.turn_id == "sync-turn"
    assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert wrong.value.code() is grpc.StatusCode.UNAUTHENTICATED


def test_a_client_refuses_credentials_with_a_channel_and_a_token_metadata_cannot_carry() -> None:
    with grpc.insecure_channel(DEFAULT_TARGET) as channel:
        credentials = grpc.ssl_channel_credentials()
        with pytest.raises(ValueError, match="not both"):
            ErrordClient(channel=channel, credentials=credentials)
    for token in ("", "two words", "caf\u00e9"):
        with pytest.raises(ValueError, match="printable ASCII"):
            ErrordClient(token=token)
        with pytest.raises(ValueError, match="printable ASCII"):
            AsyncErrordClient(token=token)


# AdmitCall and WatchTools


@pytest.mark.asyncio
async def test_admit_call_sends_the_attempt_with_struct_arguments_and_the_deadline(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    arguments = {"query": "paris", "filters": {"nonstop": True}}

    response = await client.admit_call(**CALL, arguments=arguments, timeout=5.0)

    assert response == ADMISSION
    [sent] = daemon.servicer.requests
    assert isinstance(sent, pb.AdmitCallRequest)
    assert (sent.turn_id, sent.call_id, sent.tool, sent.attempt) == ("t-1", "c-1", "search", 2)
    assert json_format.MessageToDict(sent.arguments) == arguments
    [deadline] = daemon.servicer.deadlines
    assert deadline is not None
    assert 0 < deadline <= 5.1


@pytest.mark.asyncio
async def test_admit_call_without_arguments_leaves_them_unset_and_sends_no_deadline(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    await client.admit_call(**CALL)

    [sent] = daemon.servicer.requests
    assert isinstance(sent, pb.AdmitCallRequest)
    assert not sent.HasField("arguments")
    assert daemon.servicer.deadlines == [None]


@pytest.mark.asyncio
async def test_watch_tools_yields_each_response_whole_with_its_snapshot_flag(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    responses = [response async for response in client.watch_tools()]

    assert responses == POLICIES
    assert daemon.servicer.requests == [pb.WatchToolsRequest()]
    assert daemon.servicer.deadlines == [None]


@pytest.mark.asyncio
async def test_watch_tools_timeout_is_the_streams_deadline(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    async with contextlib.aclosing(client.watch_tools(timeout=30)) as stream:
        assert await anext(stream) == POLICIES[0]

    [deadline] = daemon.servicer.deadlines
    assert deadline == pytest.approx(30, abs=1)


@pytest.mark.asyncio
async def test_closing_the_watch_tools_iterator_cancels_the_stream(
    client: InThread | AsyncErrordClient, daemon: Daemon
) -> None:
    daemon.servicer.follow = True

    async with contextlib.aclosing(client.watch_tools()) as stream:
        assert [await anext(stream), await anext(stream)] == POLICIES

    await asyncio.wait_for(daemon.servicer.watch_ended.wait(), timeout=10)


TOOLS = """\
tools:
  - name: search
    timeout_ms: 1500
    alternatives: [search_backup]
  - name: search_backup
    timeout_ms: 4000
"""


@pytest_asyncio.fixture
async def errord(tmp_path: Path) -> AsyncIterator[InProcessDaemon]:
    """The real daemon in this process, knowing the tools search (alternative:
    search_backup) and search_backup."""
    manifests = tmp_path / "tools"
    manifests.mkdir()
    (manifests / "tools.yaml").write_text(TOOLS)
    running = await start_in_process(
        Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db", manifests=manifests)
    )
    yield running
    running.stop.set()
    await asyncio.wait_for(running.task, START_TIMEOUT)


@pytest_asyncio.fixture(params=["sync", "async"])
async def errord_client(
    request: pytest.FixtureRequest, errord: InProcessDaemon
) -> AsyncIterator[InThread | AsyncErrordClient]:
    """Each client against the real daemon; the blocking one in worker threads."""
    if request.param == "sync":
        with ErrordClient(errord.address, token=errord.token) as blocking:
            yield InThread(blocking)
    else:
        async with AsyncErrordClient(errord.address, token=errord.token) as aio:
            yield aio


async def force_open(errord: InProcessDaemon, tool: str) -> None:
    """ForceOpenBreaker, until reset."""
    async with operator_channel(errord.address, errord.token) as channel:
        operators = errord_pb2_grpc.OperatorServiceStub(channel)
        request = pb.ForceOpenBreakerRequest(tool=tool, by="test")
        await operators.ForceOpenBreaker(request, timeout=10)


@pytest.mark.asyncio
async def test_admit_call_on_the_daemon_admits_while_closed_then_refuses_with_a_decision(
    errord_client: InThread | AsyncErrordClient, errord: InProcessDaemon
) -> None:
    """A closed breaker admits the attempt with no decision; once an operator forces
    it open, the attempt is refused with errord's decision (the alternative, code
    CIRCUIT_OPEN), the same decision when asked again."""
    attempt: dict[str, Any] = {"turn_id": "t", "tool": "search", "attempt": 1}

    admitted = await errord_client.admit_call(**attempt, call_id="c-1", arguments={"q": "x"})
    await force_open(errord, "search")
    refused = await errord_client.admit_call(**attempt, call_id="c-2", arguments={"q": "y"})
    again = await errord_client.admit_call(**attempt, call_id="c-2", arguments={"q": "y"})

    assert (admitted.admitted, admitted.probe) == (True, False)
    assert not admitted.HasField("decision")
    assert admitted.breaker.phase == pb.BREAKER_PHASE_CLOSED
    assert not refused.admitted
    assert refused.breaker.phase == pb.BREAKER_PHASE_OPEN
    decision = refused.decision
    assert (decision.call_id, decision.tool, decision.attempt) == ("c-2", "search", 1)
    assert decision.classification.code == pb.ERROR_CODE_CIRCUIT_OPEN
    assert decision.action == pb.RECOVERY_ACTION_USE_ALTERNATIVE
    assert decision.alternative_tool == "search_backup"
    assert (again.replayed, again.decision) == (True, decision)


@pytest.mark.asyncio
async def test_watch_tools_on_the_daemon_sends_the_manifest_tools_then_a_breaker_change(
    errord_client: InThread | AsyncErrordClient, errord: InProcessDaemon
) -> None:
    """The first response is a snapshot of every manifest tool with its timeout and a
    closed breaker; forcing search open sends search alone, open, not a snapshot."""
    async with contextlib.aclosing(errord_client.watch_tools()) as stream:
        snapshot = await asyncio.wait_for(anext(stream), START_TIMEOUT)
        await force_open(errord, "search")  # the watch is subscribed once it sent the snapshot
        change = await asyncio.wait_for(anext(stream), START_TIMEOUT)

    assert snapshot.snapshot
    assert {policy.tool: _seconds(policy.timeout) for policy in snapshot.tools} == {
        "search": 1.5,
        "search_backup": 4.0,
    }
    assert all(policy.has_manifest for policy in snapshot.tools)
    assert {policy.breaker.phase for policy in snapshot.tools} == {pb.BREAKER_PHASE_CLOSED}
    assert _seconds(snapshot.default_timeout) > 0
    assert not change.snapshot
    assert [(policy.tool, policy.breaker.phase) for policy in change.tools] == [
        ("search", pb.BREAKER_PHASE_OPEN)
    ]
