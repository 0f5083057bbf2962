"""Failures the model caused go back to it to correct its call, a bounded number of times per
call, with the parameter, the required ones and an example call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from errord.decide.arguments.validators import CallValidator
from errord.decide.manifest import ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import Action, ErrorCode, FailureReport, ToolFailure
from errord.decide.texts.correction import named_parameter, stated_kind
from errord.decide.texts.layout import MessageFormat
from tests.harness import Harness, failure_report

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "what to look for"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "sort": {"type": "string", "enum": ["relevance", "date"]},
    },
    "required": ["query"],
}
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(
            name="document_search", parameters=SEARCH_SCHEMA, alternatives=("web_search",)
        ),
        ToolManifest(name="web_search"),
        ToolManifest(name="weather"),
    ]
)
PARAMETER_MESSAGES = (
    "No query provided",
    "The 'query' parameter is required",
    "Parameter 'query' must be str, got int",
    "Parameter 'query' cannot be empty",
)


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


def failure(
    message: str, call: str = "c1", attempt: int = 1, tool: str = "document_search"
) -> FailureReport:
    return failure_report(call, tool, attempt=attempt, error=ToolFailure(message=message))


@pytest.mark.parametrize(
    ("message", "kind"),
    list(
        zip(
            PARAMETER_MESSAGES,
            ("missing_parameter", "missing_parameter", "invalid_type", "invalid_value"),
            strict=True,
        )
    ),
)
async def test_parameter_errors_go_back_to_the_model_naming_the_parameter(
    harness: Harness, message: str, kind: str
) -> None:
    decision, _ = await harness.handler.report_failure(failure(message))
    assert decision.classification.code is ErrorCode.INVALID_INPUT
    assert decision.action is Action.RETURN_TO_MODEL  # not web_search: no fix for arguments
    correction = decision.correction
    assert correction is not None
    assert (correction.kind, correction.parameter) == (kind, "query")
    assert correction.required_parameters == ("query",)
    assert correction.example is not None
    assert CallValidator.compile(SEARCH_SCHEMA).validate(correction.example) == ()
    assert correction.corrections_left == 1
    assert "Parameter: 'query'" in decision.llm_message
    assert "Required Parameters: query" in decision.llm_message
    assert "Example Usage: {" in decision.llm_message
    assert "web_search" not in decision.llm_message
    assert decision.user_message == "Adjusting the request to document search and trying again."


async def test_the_corrections_of_a_call_are_bounded_then_it_escalates(harness: Harness) -> None:
    for number, message in enumerate(PARAMETER_MESSAGES, start=1):
        first, _ = await harness.handler.report_failure(failure(message, call=f"c{number}"))
        assert first.action is Action.RETURN_TO_MODEL
    second, _ = await harness.handler.report_failure(failure("No query provided", attempt=2))
    assert second.action is Action.RETURN_TO_MODEL
    assert second.correction is not None
    assert second.correction.corrections_left == 0
    assert "this is the last correction allowed for this call" in second.llm_message
    fifth, _ = await harness.handler.report_failure(failure("No query provided", attempt=3))
    assert fifth.action is Action.ESCALATE
    assert fifth.reason.startswith("No retry: the error is permanent (INVALID_INPUT)")
    assert "the model already had its 2 corrections of this call, escalating" in fifth.reason
    assert "may not be corrected any more" in fifth.llm_message
    assert fifth.user_message == (
        "The request to document search couldn't be completed as asked; some details may "
        "need correcting."
    )


async def test_invalid_arguments_are_validated_against_the_schema(harness: Harness) -> None:
    report = FailureReport(
        turn_id="t",
        call_id="c1",
        tool="document_search",
        attempt=1,
        error=ToolFailure(http_status=400, message="400 Bad Request"),
        arguments={"limit": 500, "sort": "stars"},
    )
    decision, _ = await harness.handler.report_failure(report)
    assert decision.action is Action.RETURN_TO_MODEL
    correction = decision.correction
    assert correction is not None
    assert [(p.kind, p.parameter) for p in correction.problems] == [
        ("out_of_range", "limit"),
        ("missing_parameter", "query"),
        ("invalid_value", "sort"),
    ]
    assert correction.parameter == "limit"


async def test_a_tool_that_does_not_exist_names_the_closest_known_ones(harness: Harness) -> None:
    decision, _ = await harness.handler.report_failure(
        failure("Tool 'document_serch' not found", tool="document_serch")
    )
    assert decision.classification.code is ErrorCode.TOOL_NOT_FOUND
    assert decision.action is Action.RETURN_TO_MODEL
    assert decision.correction is not None
    assert decision.correction.known_tools[0] == "document_search"
    assert "There is no tool named document_serch." in decision.llm_message
    assert "Available Tools: document_search" in decision.llm_message


async def test_the_json_format_carries_the_correction_fields(tmp_path: Path) -> None:
    harness = Harness(tmp_path, MANIFESTS, message_format=MessageFormat.JSON)
    await harness.start()
    try:
        decision, _ = await harness.handler.report_failure(failure("No query provided"))
    finally:
        await harness.close()
    body = json.loads(decision.llm_message)
    assert body["type"] == "missing_parameter"
    assert body["parameter"] == "query"
    assert body["required_parameters"] == ["query"]
    assert CallValidator.compile(SEARCH_SCHEMA).validate(body["example"]) == ()
    assert body["retry_hint"].startswith("Call document_search again with 'query' corrected")
    assert body["action"] == "RETURN_TO_MODEL"


async def test_transient_errors_are_not_handed_to_the_model(harness: Harness) -> None:
    decision, _ = await harness.handler.report_failure(
        failure("Connection timeout after 30s", tool="weather")
    )
    assert decision.action is Action.RETRY
    assert decision.correction is None
    assert decision.llm_message.startswith(
        "Tool Execution Failed\nTool: weather\nError Type: TIMEOUT (transient)\n"
        "Message: Connection timeout after 30s\n\nThe tool did not answer in time."
    )


@pytest.mark.parametrize(
    ("message", "known", "parameter", "kind"),
    [
        ("No query provided", (), "query", "missing_parameter"),
        ("The 'query' parameter is required", (), "query", "missing_parameter"),
        ("Parameter 'query' must be str, got int", (), "query", "invalid_type"),
        ("Parameter 'query' cannot be empty", (), "query", "invalid_value"),
        ("Invalid parameters: missing 'origin'", (), "origin", "missing_parameter"),
        ("'sort' is not one of ['date', 'relevance']", ("sort",), "sort", "invalid_value"),
        ("limit must be an integer", ("limit", "query"), "limit", "invalid_type"),
        ("Bad Request", ("query",), "", "invalid_arguments"),
    ],
)
def test_the_parameter_and_the_problem_are_read_from_the_message(
    message: str, known: tuple[str, ...], parameter: str, kind: str
) -> None:
    assert named_parameter(message, known) == parameter
    assert stated_kind(message) == kind
