"""Malformed requests, generated (hypothesis) and kept (fixtures/malformed/corpus.json),
sent as raw bytes through a generic channel to a real daemon process: each is answered
INVALID_ARGUMENT naming the field, or RESOURCE_EXHAUSTED, never UNKNOWN or INTERNAL;
the answers stay small, valid requests are served meanwhile, and memory stays flat.

A request a strategy finds answered wrong becomes a case of
tests/fixtures/malformed/build_corpus.py, so that it is replayed for good.
ERRORD_LONG=1 runs the memory test over 100,000 bad requests instead of 10,000.
"""

from __future__ import annotations

import base64
import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, message, struct_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from errord.wire.bounds import MAX_ATTEMPT, MAX_DURATION_SECONDS, MAX_SEQUENCE
from tests.fixtures.malformed.build_corpus import deep_list, deep_struct, field
from tests.fixtures.malformed.requests import (
    INVALID,
    METHODS,
    UNARY,
    Answer,
    answer_of,
    ask,
    bad_payloads,
    decodes,
    load_corpus,
    new_report,
    resident_kib,
    send,
)
from tests.helpers import DaemonProcess, start_process, sync_operator_channel

LONG = os.environ.get("ERRORD_LONG") == "1"
STREAMS = sorted(
    method.name
    for service in pb.DESCRIPTOR.services_by_name.values()
    for method in service.methods
    if method.server_streaming
)
"""WatchTrace and WatchTools: asked with ``ask_stream``."""
CALLS = [method for method in UNARY if method not in STREAMS]
"""The unary methods. A unary call of a stream that answers (WatchTools' snapshot) would
wait for the end of the stream until its deadline."""


@pytest.fixture(scope="module")
def errord(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """One daemon process for the module; it must log no bug while serving."""
    db = tmp_path_factory.mktemp("malformed") / "errord.db"
    running = start_process("--listen", "127.0.0.1:0", "--db", str(db))
    yield running
    running.terminate()
    assert "bug while serving" not in running.stderr
    assert "Traceback" not in running.stderr


@pytest.fixture(scope="module")
def channel(errord: DaemonProcess) -> Iterator[grpc.Channel]:
    with sync_operator_channel(errord.address, errord.token) as opened:
        yield opened


@pytest.mark.parametrize("entry", load_corpus(), ids=lambda entry: entry["case"])
def test_the_kept_corpus_gets_its_answers(channel: grpc.Channel, entry: dict[str, Any]) -> None:
    answer = ask(channel, entry["method"], base64.b64decode(entry["payload"]))
    assert answer.sound(), answer
    assert answer.code.name == entry["code"], answer
    if entry["field"] is not None:
        assert entry["field"] in answer.fields, answer


def test_a_request_over_the_message_size_limit_is_resource_exhausted(
    channel: grpc.Channel,
) -> None:
    huge = pb.ReportFailureRequest(turn_id="t", call_id="c", tool="s", attempt=1)
    huge.error.message = "x" * (5 * 1024 * 1024)
    answer = ask(channel, "ReportFailure", huge.SerializeToString())
    assert answer.code is grpc.StatusCode.RESOURCE_EXHAUSTED


SOME = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(SOME, max_examples=150)


@MANY
@given(method=st.sampled_from(CALLS), payload=st.binary(max_size=300))
def test_random_bytes_never_get_unknown_or_internal(
    channel: grpc.Channel, method: str, payload: bytes
) -> None:
    answer = ask(channel, method, payload)
    assert answer.sound(), answer
    if not decodes(method, payload):
        assert answer.code is INVALID, answer


def ask_stream(channel: grpc.Channel, method: str, payload: bytes) -> Answer:
    """``ask`` for a server-streaming method: OK once its first response arrives, or once
    half a second passes without one (a watch open, as asked); else how it ended."""
    stream = channel.unary_stream(METHODS[method][0])(payload, timeout=0.5)
    try:
        next(stream)
    except grpc.RpcError as error:
        return answer_of(error)
    finally:
        stream.cancel()
    return Answer(grpc.StatusCode.OK, "", {}, 0)


@SOME
@given(method=st.sampled_from(STREAMS), payload=st.binary(max_size=300))
def test_random_bytes_to_a_stream_never_get_unknown_or_internal(
    channel: grpc.Channel, method: str, payload: bytes
) -> None:
    answer = ask_stream(channel, method, payload)
    assert answer.sound(), answer
    if not decodes(method, payload):
        assert (answer.code, list(answer.fields)) == (INVALID, ["request"]), answer


@pytest.mark.parametrize("method", STREAMS)
def test_a_streams_empty_request_opens_it(channel: grpc.Channel, method: str) -> None:
    """WatchTools answers with its snapshot, WatchTrace waits for events: neither refuses."""
    assert ask_stream(channel, method, b"").code is grpc.StatusCode.OK


def valid_examples() -> list[tuple[str, bytes]]:
    """A well-formed request of each kind, rich enough to cut anywhere."""
    arguments = struct_pb2.Struct()
    arguments.update({"query": "flights", "limit": 5, "filters": {"stops": [0, 1]}})
    report = pb.ReportFailureRequest(
        turn_id="t",
        call_id="c",
        tool="search",
        attempt=2,
        error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="timed out", http_status=504),
        arguments=arguments,
        elapsed=duration_pb2.Duration(seconds=3, nanos=5),
    )
    plan = [
        pb.PlannedCall(call_id="a", tool="search", arguments=arguments),
        pb.PlannedCall(call_id="b", tool="book", depends_on=["a"], optional=True),
    ]
    requests: list[tuple[str, message.Message]] = [
        ("ReportFailure", report),
        ("ReportFailures", pb.ReportFailuresRequest(failures=[report, report])),
        ("BeginTurn", pb.BeginTurnRequest(turn_id="p", plan=plan)),
        ("GetTurnTrace", pb.GetTurnTraceRequest(turn_id="t", page_size=2, page_token="12")),
        ("ValidateCall", pb.ValidateCallRequest(tool="search", arguments=arguments)),
        (
            "ReconcileResults",
            pb.ReconcileResultsRequest(
                turn_id="t",
                calls=[pb.ToolCallRef(call_id="a", tool="search")],
                results=[pb.HeldToolResult(call_id="a", content="ok")],
            ),
        ),
        (
            "ReportOutcome",
            pb.ReportOutcomeRequest(
                turn_id="t", call_id="c", tool="search", attempt=3, outcome=pb.OUTCOME_SUCCESS
            ),
        ),
        ("RecallEpisodes", pb.RecallEpisodesRequest(tool="search", message="timed out")),
        (
            "AdmitCall",
            pb.AdmitCallRequest(
                turn_id="t", call_id="c", tool="search", attempt=2, arguments=arguments
            ),
        ),
    ]
    return [(method, request.SerializeToString()) for method, request in requests]


VALID = valid_examples()


@SOME
@given(example=st.sampled_from(VALID), data=st.data())
def test_truncated_requests_are_invalid_argument(
    channel: grpc.Channel, example: tuple[str, bytes], data: st.DataObject
) -> None:
    method, payload = example
    cut = payload[: data.draw(st.integers(0, len(payload) - 1))]
    answer = ask(channel, method, cut)
    assert answer.sound(), answer
    if not decodes(method, cut):
        assert answer.code is INVALID, answer


@SOME
@given(example=st.sampled_from(VALID), method=st.sampled_from(CALLS))
def test_another_methods_request_never_gets_unknown_or_internal(
    channel: grpc.Channel, example: tuple[str, bytes], method: str
) -> None:
    answer = ask(channel, method, example[1])
    assert answer.sound(), answer


BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe2\x82"]
"""A stray byte, a broken pair, a surrogate, beyond U+10FFFF, overlong, cut short."""
STRING_FIELDS = {
    "turn_id": lambda text: field(1, text),
    "call_id": lambda text: field(2, text),
    "tool": lambda text: field(3, text),
    "error.exception_type": lambda text: field(5, field(3, text)),
    "error.message": lambda text: field(5, field(4, text)),
    "arguments": lambda text: field(6, field(1, field(1, text) + field(2, field(3, b"v")))),
}
"""Each string of a report, as the bytes of a field holding ``text`` (a later occurrence
of a field replaces, or merges into, the earlier one)."""
bad_utf8 = st.builds(
    lambda before, bad, after: before.encode() + bad + after.encode(),
    st.text(max_size=8),
    st.sampled_from(BAD_UTF8),
    st.text(max_size=8),
)


@MANY
@given(name=st.sampled_from(sorted(STRING_FIELDS)), text=bad_utf8)
def test_invalid_utf8_in_a_string_is_invalid_argument_naming_it(
    channel: grpc.Channel, name: str, text: bytes
) -> None:
    payload = new_report().SerializeToString() + STRING_FIELDS[name](text)
    answer = ask(channel, "ReportFailure", payload)
    assert answer.sound(), answer
    assert answer.fields == {name: "not valid UTF-8 (protobuf strings must be)"}, answer


IDENTIFIERS = ("turn_id", "call_id", "tool")


@SOME
@given(
    name=st.sampled_from(IDENTIFIERS),
    text=st.builds(
        lambda before, control, after: before + control + after,
        st.text(max_size=8),
        st.sampled_from([chr(c) for c in [*range(0x20), 0x7F]]),
        st.text(max_size=8),
    ),
)
def test_nul_and_control_characters_in_identifiers_are_refused(
    channel: grpc.Channel, name: str, text: str
) -> None:
    answer = ask(channel, "ReportFailure", new_report(**{name: text}).SerializeToString())
    assert answer.sound(), answer
    assert answer.names(name), answer


ERROR_CODES = set(pb.ErrorCode.values())


@SOME
@given(code=st.integers(-(2**31), 2**31 - 1).filter(lambda code: code not in ERROR_CODES))
def test_an_error_code_out_of_range_is_invalid_argument(channel: grpc.Channel, code: int) -> None:
    report = new_report()
    report.error.code = code  # type: ignore[assignment]
    answer = ask(channel, "ReportFailure", report.SerializeToString())
    assert answer.fields == {"error.code": f"unknown enum value {code}"}, answer


@SOME
@given(outcome=st.integers(-(2**31), 2**31 - 1).filter(lambda n: n not in pb.Outcome.values()))
def test_an_outcome_out_of_range_is_invalid_argument(channel: grpc.Channel, outcome: int) -> None:
    request = pb.ReportOutcomeRequest(turn_id="t", call_id="c", tool="s", attempt=1)
    request.outcome = outcome  # type: ignore[assignment]
    answer = ask(channel, "ReportOutcome", request.SerializeToString())
    assert answer.sound(), answer
    assert answer.names("outcome"), answer


int32 = st.integers(-(2**31), 2**31 - 1)


@MANY
@given(
    attempt=st.one_of(
        int32, st.sampled_from([0, 1, 1024, 1025, 10_000, 10_001, -(2**31), 2**31 - 1])
    ),
    code=st.sampled_from([pb.ERROR_CODE_TIMEOUT, pb.ERROR_CODE_INVALID_INPUT]),
)
def test_attempts_are_decided_from_1_to_10000_and_refused_beyond(
    channel: grpc.Channel, attempt: int, code: int
) -> None:
    report = new_report(attempt=attempt, error=pb.ToolError(code=code))  # type: ignore[arg-type]
    answer = ask(channel, "ReportFailure", report.SerializeToString())
    assert answer.sound(), answer
    if 1 <= attempt <= MAX_ATTEMPT:
        assert answer.code is grpc.StatusCode.OK, answer
    else:
        assert answer.fields == {
            "attempt": f"must be from 1 to 10000 (attempts count from 1), got {attempt}"
        }


def valid_duration(seconds: int, nanos: int) -> bool:
    in_range = abs(seconds) <= MAX_DURATION_SECONDS and abs(nanos) < 1_000_000_000
    return in_range and seconds >= 0 and nanos >= 0


int64 = st.integers(-(2**63), 2**63 - 1)
durations = st.tuples(
    st.one_of(int64, st.integers(-2, MAX_DURATION_SECONDS + 2)),
    st.one_of(int32, st.integers(-2, 10**9 + 1)),
)


@MANY
@given(duration=durations, where=st.sampled_from(["elapsed", "error.retry_after"]))
def test_durations_are_in_range_or_invalid_argument_naming_them(
    channel: grpc.Channel, duration: tuple[int, int], where: str
) -> None:
    seconds, nanos = duration
    given_duration = duration_pb2.Duration(seconds=seconds, nanos=nanos)
    if where == "elapsed":
        report = new_report(elapsed=given_duration)
    else:
        report = new_report(error=pb.ToolError(retry_after=given_duration))
    answer = ask(channel, "ReportFailure", report.SerializeToString())
    assert answer.sound(), answer
    if valid_duration(seconds, nanos):
        assert answer.code is grpc.StatusCode.OK, answer
    else:
        assert list(answer.fields) == [where], answer


page_tokens = st.one_of(
    st.text(max_size=30),
    st.from_regex(r"\A[0-9]{1,30}\Z"),
    st.integers(1, 30_000).map(lambda digits: "9" * digits),
)


@MANY
@given(token=page_tokens)
def test_page_tokens_are_bounded_and_never_echoed(channel: grpc.Channel, token: str) -> None:
    request = pb.GetTurnTraceRequest(turn_id="t", page_token=token)
    answer = ask(channel, "GetTurnTrace", request.SerializeToString())
    assert answer.sound(), answer
    sequence = token.isascii() and token.isdigit() and len(token) <= 20
    if token and (not sequence or int(token) > MAX_SEQUENCE):  # empty: the first page
        assert list(answer.fields) == ["page_token"], answer
    assert answer.trailers < 1000, answer


@SOME
@given(count=st.integers(257, 3000))
def test_a_batch_of_too_many_failures_is_refused_naming_it(
    channel: grpc.Channel, count: int
) -> None:
    batch = pb.ReportFailuresRequest(failures=[new_report()] * count)
    answer = ask(channel, "ReportFailures", batch.SerializeToString())
    assert answer.fields == {"failures": f"must hold 1 to 256 failures, got {count}"}, answer


@SOME
@given(count=st.integers(1025, 5000), kind=st.sampled_from(["plan", "depends_on"]))
def test_a_plan_too_long_is_refused_naming_it(channel: grpc.Channel, count: int, kind: str) -> None:
    call = pb.PlannedCall(call_id="a", tool="s")
    if kind == "plan":
        request, named = pb.BeginTurnRequest(turn_id="t", plan=[call] * count), "plan"
    else:
        call.depends_on.extend(["b"] * count)
        request, named = pb.BeginTurnRequest(turn_id="t", plan=[call]), "plan[0].depends_on"
    answer = ask(channel, "BeginTurn", request.SerializeToString())
    assert answer.sound(), answer
    assert list(answer.fields) == [named], answer


@MANY
@given(levels=st.integers(1, 150), kind=st.sampled_from(["object", "array"]))
def test_json_nests_at_most_32_levels_else_the_field_is_named(
    channel: grpc.Channel, levels: int, kind: str
) -> None:
    """``levels`` counts the arguments object itself: {"k": [[...]]}."""
    build: Callable[[int], bytes] = deep_struct if kind == "object" else deep_list
    value = build(levels - 1)
    payload = new_report().SerializeToString() + field(
        6, field(1, field(1, b"k") + field(2, value))
    )
    answer = ask(channel, "ReportFailure", payload)
    assert answer.sound(), answer
    if levels <= 32:
        assert answer.code is grpc.StatusCode.OK, answer
    else:
        assert list(answer.fields) == ["arguments"], answer


def test_memory_stays_flat_over_bad_requests_and_valid_ones_are_served(
    daemon_process: DaemonProcess,
) -> None:
    """RSS grows by less than 10 MB over 10,000 bad requests (100,000 with ERRORD_LONG=1),
    counted after 2,000 to warm up; each batch of 200 also holds valid reports, answered."""
    total, warm_up, batch = (100_000 if LONG else 10_000), 2_000, 200
    pid = daemon_process.process.pid
    bad = bad_payloads(seed=7)
    sent, before = 0, 0
    with sync_operator_channel(daemon_process.address, daemon_process.token) as opened:
        while sent < warm_up + total:
            if sent == warm_up:
                before = resident_kib(pid)
            requests = list(itertools.islice(bad, batch))
            valid = new_report(turn_id="served", call_id=f"call-{sent}").SerializeToString()
            answers = send(opened, [*requests, ("ReportFailure", valid)])
            assert answers[-1].code is grpc.StatusCode.OK, answers[-1]
            unsound = [(r, a) for r, a in zip(requests, answers, strict=False) if not a.sound()]
            assert not unsound, unsound[:3]
            sent += batch
        grown = resident_kib(pid) - before
    assert grown < 10 * 1024, f"RSS grew {grown} KiB over {total} bad requests"
    assert "bug while serving" not in daemon_process.stderr
