"""Bad requests get INVALID_ARGUMENT with google.rpc.BadRequest naming each field; never UNKNOWN."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from errord.state.feed import TraceFeed
from errord.wire.operator import OperatorService
from errord.wire.server import start_server
from errord.wire.service import ErrorHandlerService
from tests.conftest import InProcessDaemon

SERVICE = "/errord.v1.ErrorHandlerService/"


@pytest.fixture
async def channel(daemon: InProcessDaemon) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(daemon.address) as opened:
        yield opened


async def call_raw(channel: grpc.aio.Channel, method: str, payload: bytes) -> bytes:
    identity: Any = None
    call = channel.unary_unary(
        SERVICE + method, request_serializer=identity, response_deserializer=identity
    )
    return await call(payload)  # type: ignore[no-any-return]


async def violations(channel: grpc.aio.Channel, method: str, payload: bytes) -> dict[str, str]:
    """The field violations of the INVALID_ARGUMENT the call must fail with."""
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call_raw(channel, method, payload)
    error = failed.value
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT, error.details()
    status = rpc_status.from_call(error)
    assert status is not None
    found = {}
    for detail in status.details:
        bad_request = error_details_pb2.BadRequest()
        assert detail.Unpack(bad_request)
        found.update({v.field: v.description for v in bad_request.field_violations})
    assert all(field in (error.details() or "") for field in found)
    return found


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


@pytest.mark.parametrize("method", ["ReportFailure", "ReportOutcome", "GetTurnTrace"])
async def test_undecodable_bytes_are_invalid_argument(
    channel: grpc.aio.Channel, method: str
) -> None:
    found = await violations(channel, method, b"\x0a\xff\xff\xff")
    assert list(found) == ["request"]
    assert found["request"].startswith("cannot decode the bytes as ")


async def test_invalid_utf8_in_a_string_field_is_invalid_argument(
    channel: grpc.aio.Channel,
) -> None:
    found = await violations(channel, "ReportFailure", b"\x0a\x02\xc3\x28")  # turn_id = b"\xc3("
    assert list(found) == ["request"]


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

    async def report_failure(self, report: object) -> object:
        raise RuntimeError("a bug")


async def test_a_bug_is_answered_internal_never_unknown_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine: Any = BrokenEngine()
    unused: Any = None
    running = await start_server(
        "127.0.0.1:0",
        ErrorHandlerService(engine, TraceFeed()),
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
