"""ValidateCall and model corrections over gRPC, against the real daemon with a manifest
directory, through the client package."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from errord_client import AsyncErrordClient, pb
from errord_client.errors import field_violations

from errord.config import Settings
from tests.helpers import START_TIMEOUT, start_in_process

MANIFEST = """\
tools:
  - name: weather
    parameters:
      type: object
      required: [city, days]
      properties:
        city: {type: string, minLength: 1, examples: [Paris]}
        days: {type: integer, minimum: 1, maximum: 14}
        unit: {type: string, enum: [celsius, fahrenheit]}
  - name: clock
  - name: document_search
    parameters:
      type: object
      required: [query]
      properties:
        query: {type: string}
        scope: {type: string, enum: ["", mine, shared]}
        note: {type: string}
"""


@pytest.fixture
async def errord(tmp_path: Path) -> AsyncIterator[AsyncErrordClient]:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "tools.yaml").write_text(textwrap.dedent(MANIFEST))
    settings = Settings(
        listen="127.0.0.1:0", db=tmp_path / "errord.db", manifests=tmp_path / "tools"
    )
    running = await start_in_process(settings)
    async with AsyncErrordClient(running.address, token=running.token) as client:
        yield client
    running.stop.set()
    await asyncio.wait_for(running.task, START_TIMEOUT)


async def test_a_valid_call_and_parameters_the_schema_does_not_name(
    errord: AsyncErrordClient,
) -> None:
    checked = await errord.validate_call("weather", {"city": "Oslo", "days": 3, "mood": "sunny"})
    assert (checked.valid, checked.checked, list(checked.problems)) == (True, True, [])
    unchecked = await errord.validate_call("clock", {"anything": 1})
    assert (unchecked.valid, unchecked.checked) == (True, False)


async def test_every_violation_comes_back_with_what_to_correct(errord: AsyncErrordClient) -> None:
    checked = await errord.validate_call("weather", {"days": 2.5, "unit": "kelvin"})
    assert not checked.valid
    assert [(p.type, p.parameter) for p in checked.problems] == [
        ("missing_parameter", "city"),
        ("invalid_type", "days"),
        ("invalid_value", "unit"),
    ]
    assert "celsius" in checked.problems[2].message
    assert "fahrenheit" in checked.problems[2].message
    correction = checked.correction
    assert (correction.type, correction.parameter) == ("missing_parameter", "city")
    assert list(correction.required_parameters) == ["city", "days"]
    example = json.loads(json.dumps(dict(correction.example)))
    assert example["city"] == "Paris"
    again = await errord.validate_call("weather", example)
    assert again.valid
    assert checked.llm_message.startswith(
        "Tool Execution Failed\nTool: weather\nError Type: missing_parameter\n"
    )


async def test_an_unknown_tool_or_a_bad_request_is_refused(errord: AsyncErrordClient) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await errord.validate_call("wheather", {})
    assert unknown.value.code() is grpc.StatusCode.NOT_FOUND
    assert unknown.value.details() == ("no manifest for tool 'wheather'; tools with one: weather")
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await errord.validate_call("", {})
    assert field_violations(bad.value) == [("tool", "required")]


async def test_a_report_with_invalid_arguments_is_validated_and_returned_to_the_model(
    errord: AsyncErrordClient,
) -> None:
    response = await errord.report_failure(
        turn_id="t",
        call_id="c",
        tool="weather",
        attempt=1,
        http_status=400,
        message="Bad Request",
        arguments={"city": "", "days": 30},
    )
    decision = response.decision
    assert decision.action == pb.RECOVERY_ACTION_RETURN_TO_MODEL
    assert [(p.type, p.parameter) for p in decision.correction.problems] == [
        ("invalid_value", "city"),
        ("out_of_range", "days"),
    ]
    assert decision.correction.corrections_left == 1
    assert "Parameter: 'city'" in decision.llm_message
    trace = await errord.get_turn_trace("t")
    recorded = trace[-1].failure.decision
    assert recorded.correction == decision.correction


async def test_a_blank_required_string_is_an_invalid_value_over_grpc(
    errord: AsyncErrordClient,
) -> None:
    """A model that has no query sends blanks: without minLength, a required string
    of whitespace is refused; an optional one, or one the enum admits, is not."""
    checked = await errord.validate_call("document_search", {"query": " \t", "note": ""})
    assert not checked.valid
    assert [(p.type, p.parameter, p.message) for p in checked.problems] == [
        ("invalid_value", "query", "Parameter 'query' cannot be empty or only whitespace."),
    ]
    assert (checked.correction.type, checked.correction.parameter) == ("invalid_value", "query")
    assert "Parameter: 'query'" in checked.llm_message
    admitted = await errord.validate_call("document_search", {"query": "q4 report", "scope": ""})
    assert admitted.valid


async def test_a_reported_call_with_a_blank_required_string_is_returned_to_the_model(
    errord: AsyncErrordClient,
) -> None:
    response = await errord.report_failure(
        turn_id="blank",
        call_id="c",
        tool="document_search",
        attempt=1,
        http_status=400,
        message="Bad Request",
        arguments={"query": ""},
    )
    decision = response.decision
    assert decision.action == pb.RECOVERY_ACTION_RETURN_TO_MODEL
    assert [(p.type, p.parameter, p.message) for p in decision.correction.problems] == [
        ("invalid_value", "query", "Parameter 'query' cannot be empty.")
    ]
    assert "Error Type: invalid_value\n" in decision.llm_message
    assert "Parameter: 'query'" in decision.llm_message
