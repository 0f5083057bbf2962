"""ReconcileResults: exactly one result per tool call, in call order, in every model API's shape."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import jsonschema
import pytest
from errord_client.results import (
    anthropic_tool_results,
    openai_chat_messages,
    openai_responses_items,
)
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.texts.tool_results import (
    DropReason,
    HeldResult,
    Origin,
    Synthesized,
    ToolCall,
    reconcile,
)
from tests.helpers import InProcessDaemon, violations

ids = st.text(alphabet="abcdefgh_0123456789", min_size=1, max_size=6)


@st.composite
def turns(draw: st.DrawFn) -> tuple[list[ToolCall], list[HeldResult]]:
    """The model's calls (distinct ids) and the executor's results: some missing, some
    repeated, some for ids the model never used, in any order."""
    call_ids = draw(st.lists(ids, min_size=1, max_size=12, unique=True))
    calls = [ToolCall(call_id, draw(st.sampled_from(("search", "book")))) for call_id in call_ids]
    answered = draw(st.lists(st.sampled_from(call_ids), max_size=16))
    strangers = draw(st.lists(ids.filter(lambda i: i not in call_ids), max_size=4))
    held = [
        HeldResult(call_id, draw(st.text(max_size=8)), draw(st.booleans()))
        for call_id in answered + strangers
    ]
    return calls, draw(st.permutations(held))


def unknown(call: ToolCall) -> Synthesized:
    return Synthesized(f"no result for {call.call_id}", "test")


@given(turns())
def test_exactly_one_result_per_call_in_order(
    turn: tuple[list[ToolCall], list[HeldResult]],
) -> None:
    calls, held = turn
    reconciled = reconcile(calls, held, unknown)
    assert [(r.call_id, r.tool) for r in reconciled.results] == [(c.call_id, c.tool) for c in calls]
    first: dict[str, HeldResult] = {}
    for held_result in held:
        first.setdefault(held_result.call_id, held_result)
    for result in reconciled.results:
        own = first.get(result.call_id)
        if own is None:
            assert (result.origin, result.is_error) == (Origin.SYNTHESIZED, True)
            assert result.content == f"no result for {result.call_id}"
        else:
            assert result.origin is Origin.KEPT
            assert (result.content, result.is_error) == (own.content, own.is_error)
    kept = sum(r.origin is Origin.KEPT for r in reconciled.results)
    assert kept + len(reconciled.dropped) == len(held)  # every held result kept or dropped once
    called = {c.call_id for c in calls}
    for dropped in reconciled.dropped:
        assert held[dropped.index].call_id == dropped.call_id
        expected = DropReason.DUPLICATE if dropped.call_id in called else DropReason.UNKNOWN_CALL
        assert dropped.reason is expected


# The shapes the model APIs document for returning tool results.
OPENAI_CHAT_TOOL_MESSAGE = {
    "type": "object",
    "required": ["role", "tool_call_id", "content"],
    "properties": {
        "role": {"const": "tool"},
        "tool_call_id": {"type": "string", "minLength": 1},
        "content": {"type": "string"},
    },
    "additionalProperties": False,
}
OPENAI_FUNCTION_CALL_OUTPUT = {
    "type": "object",
    "required": ["type", "call_id", "output"],
    "properties": {
        "type": {"const": "function_call_output"},
        "call_id": {"type": "string", "minLength": 1},
        "output": {"type": "string"},
    },
    "additionalProperties": False,
}
ANTHROPIC_TOOL_RESULT = {
    "type": "object",
    "required": ["type", "tool_use_id", "content"],
    "properties": {
        "type": {"const": "tool_result"},
        "tool_use_id": {"type": "string", "minLength": 1},
        "content": {"type": "string"},
        "is_error": {"type": "boolean"},
    },
    "additionalProperties": False,
}


@given(turns())
def test_the_adapters_give_each_api_its_documented_shape(
    turn: tuple[list[ToolCall], list[HeldResult]],
) -> None:
    calls, held = turn
    reconciled = reconcile(calls, held, unknown)
    response = pb.ReconcileResultsResponse(
        results=[
            pb.ReconciledResult(call_id=r.call_id, content=r.content, is_error=r.is_error)
            for r in reconciled.results
        ]
    )
    for adapter, schema, id_key in (
        (openai_chat_messages, OPENAI_CHAT_TOOL_MESSAGE, "tool_call_id"),
        (openai_responses_items, OPENAI_FUNCTION_CALL_OUTPUT, "call_id"),
        (anthropic_tool_results, ANTHROPIC_TOOL_RESULT, "tool_use_id"),
    ):
        shaped = adapter(response)
        for item in shaped:
            jsonschema.validate(item, schema)
        assert [item[id_key] for item in shaped] == [c.call_id for c in calls]
    errors = [block.get("is_error", False) for block in anthropic_tool_results(response)]
    assert errors == [r.is_error for r in reconciled.results]


@pytest.fixture
async def stub(daemon: InProcessDaemon) -> AsyncIterator[Any]:
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        yield errord_pb2_grpc.ErrorHandlerServiceStub(channel)


async def test_missing_results_are_synthesized_from_the_turn_s_trace(stub: Any) -> None:
    refused = await stub.ReportFailure(
        pb.ReportFailureRequest(
            turn_id="t",
            call_id="call_2",
            tool="book",
            attempt=1,
            error=pb.ToolError(http_status=401, message="invalid API key"),
        )
    )
    await stub.ReportOutcome(
        pb.ReportOutcomeRequest(
            turn_id="t", call_id="call_3", tool="search", attempt=1, outcome=pb.OUTCOME_SUCCESS
        )
    )
    calls = [
        pb.ToolCallRef(call_id=call_id, tool=tool)
        for call_id, tool in [("call_1", "search"), ("call_2", "book"), ("call_3", "search"),
                              ("call_4", "search")]
    ]  # fmt: skip
    held = [
        pb.HeldToolResult(call_id="call_1", content="3 flights"),
        pb.HeldToolResult(call_id="call_1", content="again"),
        pb.HeldToolResult(call_id="call_9", content="stray"),
    ]
    response = await stub.ReconcileResults(
        pb.ReconcileResultsRequest(turn_id="t", calls=calls, results=held)
    )
    results = response.results
    assert [r.call_id for r in results] == ["call_1", "call_2", "call_3", "call_4"]
    assert [pb.ResultOrigin.Name(r.origin) for r in results] == [
        "RESULT_ORIGIN_KEPT",
        *["RESULT_ORIGIN_SYNTHESIZED"] * 3,
    ]
    assert (results[0].content, results[0].is_error) == ("3 flights", False)
    assert results[1].content == refused.decision.llm_message
    assert results[1].note.startswith(
        f"the last decision on this call, {refused.decision.decision_id}"
    )
    assert results[2].content.startswith("search completed, but its result was not passed on")
    assert results[3].content == "No result: the search call did not complete."
    assert all(r.is_error for r in results[1:])
    assert [(d.index, d.call_id, pb.DropReason.Name(d.reason)) for d in response.dropped] == [
        (1, "call_1", "DROP_REASON_DUPLICATE"),
        (2, "call_9", "DROP_REASON_UNKNOWN_CALL"),
    ]


async def test_calls_must_have_distinct_ids(daemon: InProcessDaemon) -> None:
    request = pb.ReconcileResultsRequest(
        turn_id="t",
        calls=[
            pb.ToolCallRef(call_id="a", tool="search"),
            pb.ToolCallRef(call_id="b", tool=""),
            pb.ToolCallRef(call_id="a", tool="search"),
        ],
    )
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        found = await violations(channel, "ReconcileResults", request.SerializeToString())
    assert found == {
        "calls[1].tool": "required",
        "calls[2].call_id": "repeats calls[0].call_id",
    }


async def test_a_turn_needs_at_least_one_call(daemon: InProcessDaemon) -> None:
    request = pb.ReconcileResultsRequest(turn_id="t")
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        found = await violations(channel, "ReconcileResults", request.SerializeToString())
    assert found == {"calls": "must hold 1 to 1024 tool calls, got 0"}
