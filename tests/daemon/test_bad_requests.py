"""Bad requests get INVALID_ARGUMENT with google.rpc.BadRequest naming each field; never UNKNOWN."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from errord.config import Settings
from errord.errors import ConfigError
from errord.handler.room import Room
from errord.limits import Limits
from errord.state.after_commit import AfterCommit
from errord.state.projections import Projections
from errord.wire.operator import OperatorService
from errord.wire.server import start_server
from errord.wire.service import ErrorHandlerService
from tests.helpers import InProcessDaemon, call_raw, operator_channel, start_in_process, violations

SERVICE = "/errord.v1.ErrorHandlerService/"


@pytest.fixture
async def channel(daemon: InProcessDaemon) -> AsyncIterator[grpc.aio.Channel]:
    async with operator_channel(daemon.address, daemon.token) as opened:
        yield opened


def failure(**fields: Any) -> bytes:
    request = pb.ReportFailureRequest(turn_id="t", call_id="c", tool="search", attempt=1)
    for name, value in fields.items():
        if isinstance(value, Message):
            getattr(request, name).CopyFrom(value)
        else:
            setattr(request, name, value)
    return request.SerializeToString()


def struct(**values: Any) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(values)
    return message


def number(value: float) -> struct_pb2.Value:
    return struct_pb2.Value(number_value=value)


@pytest.mark.parametrize(
    ("fields", "field", "description"),
    [
        ({"turn_id": ""}, "turn_id", "required"),
        ({"call_id": ""}, "call_id", "required"),
        ({"tool": "  "}, "tool", "required"),
        ({"attempt": 0}, "attempt", "must be from 1 to 10000 (attempts count from 1), got 0"),
        ({"attempt": -3}, "attempt", "must be from 1 to 10000 (attempts count from 1), got -3"),
        ({"turn_id": "x" * 600}, "turn_id", "at most 512 characters, got 600"),
        ({"elapsed": duration_pb2.Duration(seconds=-1)}, "elapsed", "must not be negative"),
        (
            {"error": pb.ToolError(http_status=42)},
            "error.http_status",
            "must be an HTTP status from 100 to 599, got 42",
        ),
        ({"error": pb.ToolError(code=99)}, "error.code", "unknown enum value 99"),  # type: ignore[arg-type]
        (
            {"error": pb.ToolError(retry_after=duration_pb2.Duration(seconds=1, nanos=-1))},
            "error.retry_after",
            "seconds and nanos must have the same sign",
        ),
        (
            {"error": pb.ToolError(retry_at=timestamp_pb2.Timestamp(seconds=1, nanos=-5))},
            "error.retry_at",
            "out of range for a google.protobuf.Timestamp",
        ),
        (
            {"arguments": struct(limit=math.nan)},
            "arguments",
            "numbers must be finite (NaN and Infinity are not JSON)",
        ),
        (
            {"error": pb.ToolError(partial_result=number(math.inf))},
            "error.partial_result",
            "numbers must be finite (NaN and Infinity are not JSON)",
        ),
        (
            {"error": pb.ToolError(message="x" * 20_000)},
            "error.message",
            "at most 16384 characters, got 20000",
        ),
        (
            {"arguments": struct(blob="x" * 300_000)},
            "arguments",
            "at most 262144 bytes serialized, got 300018",
        ),
    ],
)
async def test_report_failure_names_the_bad_field(
    channel: grpc.aio.Channel, fields: dict[str, Any], field: str, description: str
) -> None:
    assert await violations(channel, "ReportFailure", failure(**fields)) == {field: description}


async def test_every_missing_identifier_is_reported_at_once(channel: grpc.aio.Channel) -> None:
    empty = pb.ReportFailureRequest().SerializeToString()
    found = await violations(channel, "ReportFailure", empty)
    assert set(found) == {"turn_id", "call_id", "tool", "attempt"}


@pytest.mark.parametrize("method", ["ReportFailure", "ReportOutcome", "GetTurnTrace", "AdmitCall"])
async def test_undecodable_bytes_are_invalid_argument(
    channel: grpc.aio.Channel, method: str
) -> None:
    found = await violations(channel, method, b"\x0a\xff\xff\xff")
    assert list(found) == ["request"]
    assert found["request"].startswith("cannot decode the bytes as ")


async def stream_violations(
    channel: grpc.aio.Channel, method: str, payload: bytes
) -> dict[str, str]:
    """The field violations of the INVALID_ARGUMENT a server-streaming call must end with
    before its first response."""
    identity: Any = None
    stream = channel.unary_stream(
        SERVICE + method, request_serializer=identity, response_deserializer=identity
    )(payload)
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await stream.read()
    assert failed.value.code() is grpc.StatusCode.INVALID_ARGUMENT, failed.value.details()
    status = rpc_status.from_call(failed.value)
    assert status is not None
    found: dict[str, str] = {}
    for detail in status.details:
        bad_request = error_details_pb2.BadRequest()
        assert detail.Unpack(bad_request)
        found.update({v.field: v.description for v in bad_request.field_violations})
    return found


@pytest.mark.parametrize("method", ["WatchTrace", "WatchTools"])
async def test_a_stream_of_undecodable_bytes_ends_invalid_argument_naming_the_request(
    channel: grpc.aio.Channel, method: str
) -> None:
    found = await stream_violations(channel, method, b"\x0a\xff\xff\xff")
    assert list(found) == ["request"]
    assert found["request"].startswith("cannot decode the bytes as ")


def admission(**fields: Any) -> bytes:
    """An AdmitCall of attempt 1 of call c of search in turn t, changed by ``fields``."""
    request = pb.AdmitCallRequest(turn_id="t", call_id="c", tool="search", attempt=1)
    for name, value in fields.items():
        if isinstance(value, Message):
            getattr(request, name).CopyFrom(value)
        else:
            setattr(request, name, value)
    return request.SerializeToString()


@pytest.mark.parametrize(
    ("fields", "field", "description"),
    [
        ({"turn_id": ""}, "turn_id", "required"),
        ({"call_id": " "}, "call_id", "required"),
        ({"tool": "x" * 600}, "tool", "at most 512 characters, got 600"),
        ({"attempt": 0}, "attempt", "must be from 1 to 10000 (attempts count from 1), got 0"),
        (
            {"attempt": 10_001},
            "attempt",
            "must be from 1 to 10000 (attempts count from 1), got 10001",
        ),
        (
            {"call_id": "c\x00"},
            "call_id",
            "must not contain control characters (U+0000 to U+001F, U+007F)",
        ),
        (
            {"arguments": struct(limit=math.inf)},
            "arguments",
            "numbers must be finite (NaN and Infinity are not JSON)",
        ),
    ],
)
async def test_admit_call_names_the_bad_field(
    channel: grpc.aio.Channel, fields: dict[str, Any], field: str, description: str
) -> None:
    assert await violations(channel, "AdmitCall", admission(**fields)) == {field: description}


async def test_a_bad_admit_call_names_every_bad_field_at_once(
    channel: grpc.aio.Channel,
) -> None:
    found = await violations(channel, "AdmitCall", b"")
    assert set(found) == {"turn_id", "call_id", "tool", "attempt"}
    bad = admission(attempt=0, arguments=struct(limit=math.nan))
    assert set(await violations(channel, "AdmitCall", bad)) == {"attempt", "arguments"}


async def test_invalid_utf8_in_a_string_field_is_invalid_argument(
    channel: grpc.aio.Channel,
) -> None:
    found = await violations(channel, "ReportFailure", b"\x0a\x02\xc3\x28")  # turn_id = b"\xc3("
    assert found == {"turn_id": "not valid UTF-8 (protobuf strings must be)"}


async def test_report_outcome_requires_an_outcome(channel: grpc.aio.Channel) -> None:
    request = pb.ReportOutcomeRequest(turn_id="t", call_id="c", tool="search", attempt=1)
    found = await violations(channel, "ReportOutcome", request.SerializeToString())
    assert found == {"outcome": "required: OUTCOME_SUCCESS or OUTCOME_FAILURE"}


async def test_report_outcome_limits_the_decision_id(channel: grpc.aio.Channel) -> None:
    request = pb.ReportOutcomeRequest(
        turn_id="t",
        call_id="c",
        tool="search",
        attempt=1,
        outcome=pb.OUTCOME_SUCCESS,
        decision_id="d" * 600,
    )
    found = await violations(channel, "ReportOutcome", request.SerializeToString())
    assert found == {"decision_id": "at most 512 characters, got 600"}


async def test_get_turn_trace_requires_a_turn_id(channel: grpc.aio.Channel) -> None:
    found = await violations(channel, "GetTurnTrace", b"")
    assert found == {"turn_id": "required"}


async def test_a_bad_request_records_nothing_and_earlier_decisions_stay(
    channel: grpc.aio.Channel,
) -> None:
    good = await call_raw(channel, "ReportFailure", failure())
    await violations(channel, "ReportFailure", failure(attempt=0))
    trace = pb.GetTurnTraceResponse.FromString(
        await call_raw(
            channel, "GetTurnTrace", pb.GetTurnTraceRequest(turn_id="t").SerializeToString()
        )
    )
    assert [event.failure.decision for event in trace.events if event.HasField("failure")] == [
        pb.ReportFailureResponse.FromString(good).decision
    ]
    assert len(trace.events) == 2  # the turn began, the good failure


async def test_a_repeated_key_with_a_different_error_is_already_exists(
    channel: grpc.aio.Channel,
) -> None:
    await call_raw(channel, "ReportFailure", failure())
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call_raw(channel, "ReportFailure", failure(error=pb.ToolError(http_status=401)))
    assert failed.value.code() is grpc.StatusCode.ALREADY_EXISTS
    assert "already recorded with a different error" in (failed.value.details() or "")


class BrokenEngine:
    """An engine with a bug: every report raises."""

    def __init__(self) -> None:
        self.after_commit = AfterCommit()
        self.room = Room(Projections())

    async def report_failure(self, report: object) -> object:
        raise RuntimeError("a bug")


async def test_a_bug_is_answered_internal_never_unknown_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine: Any = BrokenEngine()
    unused: Any = None
    running = await start_server(
        "127.0.0.1:0",
        ErrorHandlerService(engine),
        OperatorService(unused, unused, unused),
    )
    try:
        async with grpc.aio.insecure_channel(running.address) as opened:
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await call_raw(opened, "ReportFailure", failure())
    finally:
        await running.server.stop(None)
    assert failed.value.code() is grpc.StatusCode.INTERNAL
    assert failed.value.details() == "internal error in errord; the daemon logged it"
    assert "RuntimeError: a bug" in caplog.text


# Every field bounded before use; what an answer carries stays small.


def trailer_size(error: grpc.aio.AioRpcError) -> int:
    return sum(len(key) + len(value) for key, value in error.trailing_metadata() or ())


@pytest.mark.parametrize("digits", [21, 4300, 4301, 100_000])
async def test_a_page_token_of_many_digits_is_invalid_and_never_echoed(
    channel: grpc.aio.Channel, digits: int
) -> None:
    """Once INTERNAL past 4,300 digits (Python's integer-string limit), and echoed into
    ~8.7 KB of trailers at 4,300, which clients refused as RESOURCE_EXHAUSTED."""
    await call_raw(channel, "ReportFailure", failure())
    request = pb.GetTurnTraceRequest(turn_id="t", page_token="9" * digits)
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call_raw(channel, "GetTurnTrace", request.SerializeToString())
    assert failed.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert failed.value.details() == (
        "page_token: not a next_page_token from a previous GetTurnTrace"
    )
    assert trailer_size(failed.value) < 1000


async def test_a_page_token_of_twenty_digits_beyond_any_sequence_is_invalid(
    channel: grpc.aio.Channel,
) -> None:
    request = pb.GetTurnTraceRequest(turn_id="t", page_token="9" * 20)
    found = await violations(channel, "GetTurnTrace", request.SerializeToString())
    assert found == {"page_token": f"at most {2**63 - 1}, got {'9' * 20}"}


@pytest.mark.parametrize("attempt", [1024, 1025, 5000, 10_000])
@pytest.mark.parametrize("code", [pb.ERROR_CODE_TIMEOUT, pb.ERROR_CODE_INVALID_INPUT])
async def test_attempts_in_the_thousands_get_a_decision(
    tmp_path: Path, attempt: int, code: int
) -> None:
    """Attempts of 1025 and more once answered INTERNAL: the backoff's multiplier ** exponent
    overflowed, for permanent errors too. A manifest that allows them all must decide."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "search.yaml").write_text(
        "tools:\n"
        "  - name: search\n"
        "    retry_policy: {max_attempts: 10000, multiplier: 10, max_delay_ms: 800}\n"
    )
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db", manifests=tools)
    async with running(settings) as opened:
        request = failure(attempt=attempt, error=pb.ToolError(code=code))  # type: ignore[arg-type]
        decision = pb.ReportFailureResponse.FromString(
            await call_raw(opened, "ReportFailure", request)
        ).decision
    assert decision.attempt == attempt
    if code == pb.ERROR_CODE_TIMEOUT and attempt < 10_000:
        assert decision.action == pb.RECOVERY_ACTION_RETRY
        assert decision.delay.ToTimedelta().total_seconds() <= 0.8 * 1.1


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[grpc.aio.Channel]:
    """A daemon with ``settings``, and a channel to it."""
    daemon = await start_in_process(settings)
    try:
        async with operator_channel(daemon.address, daemon.token) as opened:
            yield opened
    finally:
        daemon.stop.set()
        await asyncio.wait_for(daemon.task, 30)


async def test_control_characters_in_an_identifier_are_refused(
    channel: grpc.aio.Channel,
) -> None:
    found = await violations(channel, "ReportFailure", failure(turn_id="t\x00", call_id="c\n"))
    description = "must not contain control characters (U+0000 to U+001F, U+007F)"
    assert found == {"turn_id": description, "call_id": description}


def nested(levels: int, kind: str) -> struct_pb2.Value:
    """A JSON value of ``levels`` objects (``kind`` "struct") or arrays ("list")."""
    value = struct_pb2.Value(string_value="x")
    for _ in range(levels):
        if kind == "list":
            value = struct_pb2.Value(list_value=struct_pb2.ListValue(values=[value]))
        else:
            value = struct_pb2.Value(struct_value=struct_pb2.Struct(fields={"a": value}))
    return value


def partial_result(levels: int) -> bytes:
    return failure(error=pb.ToolError(partial_result=nested(levels, "list")))


def arguments(levels: int) -> bytes:
    return failure(arguments=struct_pb2.Struct(fields={"a": nested(levels - 1, "struct")}))


@pytest.mark.parametrize(
    ("field", "levels"), [("error.partial_result", partial_result), ("arguments", arguments)]
)
async def test_json_may_nest_32_levels(
    channel: grpc.aio.Channel, field: str, levels: Callable[[int], bytes]
) -> None:
    await call_raw(channel, "ReportFailure", levels(32))
    found = await violations(channel, "ReportFailure", levels(33))
    assert found == {field: "at most 32 levels of nested objects and arrays"}


async def test_json_too_deep_to_decode_names_the_field(channel: grpc.aio.Channel) -> None:
    """Beyond about 48 arrays (33 objects) protobuf itself refuses to decode."""
    deep = pb.ReportFailureRequest(turn_id="t", call_id="c", tool="search", attempt=1)
    value = wire_field(3, b"x")  # built as bytes: protobuf would not build it
    for _ in range(60):
        value = wire_field(6, wire_field(1, value))  # Value.list_value, ListValue.values
    entry = wire_field(1, b"k") + wire_field(2, value)  # arguments = {"k": [[[...]]]}
    payload = deep.SerializeToString() + wire_field(6, wire_field(1, entry))
    found = await violations(channel, "ReportFailure", payload)
    assert found == {
        "arguments": "nested too deeply to decode (JSON values may nest at most 32 levels)"
    }


def wire_field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field."""
    tag, length = bytearray([number << 3 | 2]), bytearray()
    size = len(data)
    while True:
        length.append(size & 0x7F | (0x80 if size > 0x7F else 0))
        size >>= 7
        if not size:
            return bytes(tag + length) + data


async def test_json_may_hold_10000_members_and_items(channel: grpc.aio.Channel) -> None:
    many = struct_pb2.Struct()
    many.fields["items"].list_value.values.extend([struct_pb2.Value()] * 9_999)
    await call_raw(channel, "ReportFailure", failure(arguments=many))
    many.fields["items"].list_value.values.append(struct_pb2.Value())
    found = await violations(channel, "ReportFailure", failure(call_id="c2", arguments=many))
    assert found == {"arguments": "at most 10000 object members and array items in all"}


async def test_at_most_20_violations_are_listed_then_how_many_more(
    channel: grpc.aio.Channel,
) -> None:
    empty = pb.ReportFailureRequest()
    request = pb.ReportFailuresRequest(failures=[empty] * 256)  # four violations each
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call_raw(channel, "ReportFailures", request.SerializeToString())
    status = rpc_status.from_call(failed.value)
    assert status is not None
    bad_request = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(bad_request)
    listed = [(v.field, v.description) for v in bad_request.field_violations]
    assert len(listed) == 21
    assert listed[:2] == [("failures[0].turn_id", "required"), ("failures[0].call_id", "required")]
    assert listed[-1] == ("request", "and 1004 more, not listed")
    assert (failed.value.details() or "").endswith("; request: and 1004 more, not listed")
    assert trailer_size(failed.value) < 4096


async def test_a_long_description_is_cut_and_the_trailers_stay_small(
    channel: grpc.aio.Channel,
) -> None:
    """A cycle through long call ids makes a long description; non-ASCII ids make
    each character take up to twelve bytes of trailers."""
    ids = [f"{n}-" + "é" * 500 for n in range(40)]
    plan = [
        pb.PlannedCall(call_id=call, tool="search", depends_on=[ids[n - 1]])
        for n, call in enumerate(ids)
    ]
    request = pb.BeginTurnRequest(turn_id="cycle", plan=plan)
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call_raw(channel, "BeginTurn", request.SerializeToString())
    assert failed.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    field, _, description = (failed.value.details() or "").partition(": ")
    assert field == "plan[0].depends_on"
    assert description.startswith("forms a cycle: ")
    assert description.endswith("…")
    assert len(description.encode()) <= 256
    assert trailer_size(failed.value) < 4096


# Limits: configured, and each answered with its status code.


async def test_a_message_over_max_message_bytes_is_resource_exhausted(tmp_path: Path) -> None:
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db", max_message_bytes=65_536)
    async with running(settings) as opened:
        large = failure(error=pb.ToolError(message="x" * 16_000), arguments=struct(b="y" * 60_000))
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await call_raw(opened, "ReportFailure", large)
        assert failed.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        await call_raw(opened, "ReportFailure", failure())  # smaller ones are served


async def watching(opened: grpc.aio.Channel, turn_id: str) -> Any:
    """A WatchTrace of a turn with one failure, once it has read that failure: open."""
    await call_raw(opened, "ReportFailure", failure(turn_id=turn_id))
    identity: Any = None
    watch = opened.unary_stream(
        SERVICE + "WatchTrace", request_serializer=identity, response_deserializer=identity
    )
    stream = watch(pb.WatchTraceRequest(turn_id=turn_id, include_history=True).SerializeToString())
    await stream.read()  # the turn began
    return stream


async def test_watchers_beyond_max_watchers_are_resource_exhausted(tmp_path: Path) -> None:
    settings = Settings(
        listen="127.0.0.1:0", db=tmp_path / "errord.db", max_watchers=2, peer_stream_share=1.0
    )
    async with running(settings) as opened:
        first, _ = await watching(opened, "a"), await watching(opened, "b")
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await watching(opened, "c")
        assert failed.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert failed.value.details() == (
            "2 WatchTrace streams are open, the most errord serves at once (max_watchers); "
            "close one, or watch again later"
        )
        first.cancel()
        for _ in range(100):  # the server sees the cancellation soon after
            with contextlib.suppress(grpc.aio.AioRpcError):
                await watching(opened, "d")
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("a slot freed by a watcher that left is never taken again")


async def test_streams_have_room_of_their_own_beside_max_concurrent_rpcs(
    tmp_path: Path,
) -> None:
    """Streams held open, up to their own limits, never take the calls' room: with one
    call's room and every WatchTrace slot taken, a report is answered."""
    settings = Settings(
        listen="127.0.0.1:0",
        db=tmp_path / "errord.db",
        max_concurrent_rpcs=1,
        max_watchers=2,
        peer_stream_share=1.0,
    )
    async with running(settings) as opened:
        await watching(opened, "a")
        await watching(opened, "b")
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await watching(opened, "c")
        assert failed.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "(max_watchers)" in (failed.value.details() or "")
        await call_raw(opened, "ReportFailure", failure(turn_id="c"))


async def test_pings_more_often_than_allowed_close_the_connection(tmp_path: Path) -> None:
    """grpc strikes a ping sooner than keepalive_min_ping_seconds; after two it sends GOAWAY
    (ENHANCE_YOUR_CALM, too_many_pings), and the client's calls end UNAVAILABLE."""
    settings = Settings(
        listen="127.0.0.1:0", db=tmp_path / "errord.db", keepalive_min_ping_seconds=2
    )
    daemon = await start_in_process(settings)
    pinging = [
        ("grpc.keepalive_time_ms", 100),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]
    try:
        async with operator_channel(daemon.address, daemon.token, pinging) as opened:
            stream = await watching(opened, "pinged")
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await asyncio.wait_for(read_to_the_end(stream), 30)
    finally:
        daemon.stop.set()
        await asyncio.wait_for(daemon.task, 30)
    assert failed.value.code() is grpc.StatusCode.UNAVAILABLE
    assert failed.value.details() == "Too many pings"


async def read_to_the_end(stream: Any) -> None:
    while await stream.read() is not grpc.aio.EOF:
        pass


async def test_a_turn_holds_at_most_max_turn_events(tmp_path: Path) -> None:
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db", max_turn_events=10)
    async with running(settings) as opened:
        for call in range(9):  # the turn began, then nine failures of five tools
            await call_raw(
                opened, "ReportFailure", failure(call_id=f"c{call}", tool=f"t{call % 5}")
            )
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await call_raw(opened, "ReportFailure", failure(call_id="c9", tool="t9"))
        assert failed.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert failed.value.details() == (
            "turn 't' holds 10 of the 10 trace events one turn may (max_turn_events); end it, "
            "and report further failures under a new turn_id"
        )
        batch = pb.ReportFailuresRequest(
            failures=[pb.ReportFailureRequest.FromString(failure(call_id="c10", tool="t0"))]
        )
        answered = pb.ReportFailuresResponse.FromString(
            await call_raw(opened, "ReportFailures", batch.SerializeToString())
        )
        assert answered.results[0].refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
        await call_raw(opened, "ReportFailure", failure(call_id="c0", tool="t0"))  # a repeat
        ended = await call_raw(
            opened, "EndTurn", pb.EndTurnRequest(turn_id="t").SerializeToString()
        )
        assert pb.EndTurnResponse.FromString(ended).summary.turn_id == "t"
        await call_raw(opened, "ReportFailure", failure(turn_id="next"))


def test_limits_are_settings_checked_by_name(tmp_path: Path) -> None:
    assert Settings().limits() == Limits()
    toml = tmp_path / "errord.toml"
    toml.write_text("max_turn_events = 20\nkeepalive_permit_without_calls = false\n")
    limits = Settings.from_toml(toml).limits()
    assert limits == Limits(max_turn_events=20, keepalive_permit_without_calls=False)
    toml.write_text("max_watchers = 1.5\n")
    with pytest.raises(ConfigError, match=r"errord\.toml:1: max_watchers: expected int, got float"):
        Settings.from_toml(toml)
    with pytest.raises(ConfigError, match="max_watchers: must be from 1 to 100000"):
        Settings(max_watchers=0)
    with pytest.raises(ConfigError, match="max_health_watches: must be from 1 to 100000"):
        Settings(max_health_watches=100_001)
    with pytest.raises(ConfigError, match="peer_stream_share: must be above 0 and at most 1"):
        Settings(peer_stream_share=0.0)
    with pytest.raises(ConfigError, match="peer_stream_share: must be above 0 and at most 1"):
        Settings(peer_stream_share=float("nan"))
    with pytest.raises(ConfigError, match="max_message_bytes: must be from 65536"):
        Settings(max_message_bytes=100)


async def test_many_concurrent_reports_never_take_a_turn_past_max_turn_events(
    tmp_path: Path,
) -> None:
    settings = Settings(listen="127.0.0.1:0", db=tmp_path / "errord.db", max_turn_events=10)
    async with running(settings) as opened:
        answers = await asyncio.gather(
            *(
                call_raw(opened, "ReportFailure", failure(call_id=f"c{n}", tool=f"t{n}"))
                for n in range(40)
            ),
            return_exceptions=True,
        )
        trace = pb.GetTurnTraceResponse.FromString(
            await call_raw(
                opened, "GetTurnTrace", pb.GetTurnTraceRequest(turn_id="t").SerializeToString()
            )
        )
    refused = [a for a in answers if isinstance(a, grpc.aio.AioRpcError)]
    assert all(a.code() is grpc.StatusCode.RESOURCE_EXHAUSTED for a in refused)
    assert len(trace.events) <= 10
    assert len(answers) - len(refused) == sum(e.HasField("failure") for e in trace.events)
