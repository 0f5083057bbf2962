"""The executor tells errord what it knows of a tool without a manifest, and takes a call's
arguments as frameworks do: against errord as a process, through the real Executor.

- Each failure report (ReportFailure, each item of ReportFailures) carries the tool's
  ToolDeclaration: the JSON Schema of its type hints and the timeout its attempt ran
  under; a success sends none (nor any failure report).
- Without any manifest, errord's correction of a wrong call lists the tool's required
  parameters and an example, and names a wrong parameter next to the right one.
- ``2.0`` for an integer parameter and an unknown extra argument both run the tool.
"""

from __future__ import annotations

from typing import Any

from errord_client.executor import DecidedBy, Executor, ResultStatus
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import json_format

from tests.executor_helpers import failures, outcomes, recorded_trace, sent_failures, wait_for
from tests.helpers import DaemonProcess

DECISIONS = 10.0
"""Seconds each executor gives errord to answer before its local policy would decide."""

QUOTE_SCHEMA = {
    "type": "object",
    "properties": {"symbol": {"type": "string"}, "exchange": {"type": "string"}},
    "required": ["symbol"],
    "additionalProperties": False,
}


def quote(symbol: str, exchange: str = "NYSE") -> dict[str, Any]:
    """The last price of a stock."""
    return {"symbol": symbol, "exchange": exchange, "price": 187.5}


def book(city: str, nights: int) -> str:
    """Book a hotel."""
    raise ConnectionError("the booking service reset the connection")


async def test_a_failure_report_carries_the_tools_schema_and_timeout(
    daemon_process: DaemonProcess,
) -> None:
    """A call of a type-hinted tool with no manifest is refused (``symbol`` is missing):
    the report tells errord the schema of the hints and the timeout the executor enforces
    (errord's default, 30 s), and errord decides."""
    async with Executor(
        [quote], target=daemon_process.address, decision_timeout=DECISIONS
    ) as executor:
        sent = sent_failures(executor)
        [result] = await executor.run(
            [{"id": "q1", "name": "quote", "arguments": {"ticker": "AAPL"}}], turn_id="turn-q"
        )
    assert (result.status, result.decided_by) == (
        ResultStatus.RETURNED_TO_MODEL,
        DecidedBy.ERRORD,
    )
    [report] = sent
    assert report.HasField("tool_declaration")
    assert json_format.MessageToDict(report.tool_declaration.parameters) == QUOTE_SCHEMA
    assert report.tool_declaration.timeout.ToTimedelta().total_seconds() == 30.0
    assert report.error.api_parameter == "symbol"
    assert json_format.MessageToDict(report.arguments) == {"ticker": "AAPL"}  # as the model wrote


async def test_each_item_of_a_batch_carries_its_own_tools_declaration(
    daemon_process: DaemonProcess,
) -> None:
    """Two calls failing together go in one ReportFailures; each item declares its tool."""
    async with Executor(
        [quote, book], target=daemon_process.address, decision_timeout=DECISIONS
    ) as executor:
        sent = sent_failures(executor)
        await executor.run(
            [
                {"id": "q1", "name": "quote", "arguments": {}},
                {"id": "b1", "name": "book", "arguments": {"city": "Oslo", "nights": 2}},
            ],
            turn_id="turn-batch",
        )
    first = {report.call_id: report for report in sent if report.attempt == 1}
    assert sorted(first) == ["b1", "q1"]
    declared = {
        call_id: json_format.MessageToDict(report.tool_declaration.parameters)
        for call_id, report in first.items()
    }
    assert declared["q1"] == QUOTE_SCHEMA
    assert declared["b1"]["required"] == ["city", "nights"]
    assert all(report.tool_declaration.HasField("timeout") for report in sent)


async def test_a_successful_call_sends_no_failure_report_and_so_no_declaration(
    daemon_process: DaemonProcess,
) -> None:
    """The success path stays what it was: an outcome in the background, nothing else;
    a call that fails once then succeeds sends one report, with the declaration."""
    attempts: list[int] = []

    def flaky_quote(symbol: str) -> float:
        """The last price of a stock, after one reset connection."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionResetError("reset by peer")
        return 187.5

    async with Executor(
        [quote, flaky_quote], target=daemon_process.address, decision_timeout=DECISIONS
    ) as executor:
        sent = sent_failures(executor)
        [fine] = await executor.run(
            [{"id": "s1", "name": "quote", "arguments": {"symbol": "AAPL"}}], turn_id="turn-ok"
        )
        assert (fine.status, sent) == (ResultStatus.SUCCEEDED, [])
        [recovered] = await executor.run(
            [{"id": "s2", "name": "flaky_quote", "arguments": {"symbol": "AAPL"}}],
            turn_id="turn-flaky",
        )
    assert (recovered.status, recovered.attempts) == (ResultStatus.SUCCEEDED, 2)
    [report] = sent
    assert (report.call_id, report.attempt) == ("s2", 1)
    assert report.tool_declaration.parameters.fields["required"].list_value.values[
        0
    ].string_value == ("symbol")


async def test_without_a_manifest_a_correction_lists_required_parameters_and_an_example(
    daemon_process: DaemonProcess,
) -> None:
    """errord, told the tool's schema, words the correction of ``{"ticker": ...}`` for a
    tool whose parameter is ``symbol`` as it would from a manifest: the required
    parameters, an example call, and both names. (errord's side of issue 29.)"""
    async with Executor(
        [quote], target=daemon_process.address, decision_timeout=DECISIONS
    ) as executor:
        [result] = await executor.run(
            [{"id": "q1", "name": "quote", "arguments": {"ticker": "AAPL"}}],
            turn_id="turn-correct",
        )
    assert result.status is ResultStatus.RETURNED_TO_MODEL
    text = result.model_text
    assert "Required Parameters: symbol" in text
    assert "Example Usage: {" in text
    assert "'ticker'" in text
    assert "'symbol'" in text
    events = await recorded_trace(daemon_process, "turn-correct")
    [failure] = failures(events, "q1")
    correction = failure.failure.decision.correction
    assert list(correction.required_parameters) == ["symbol"]
    assert correction.parameter == "symbol"


async def test_2_0_for_an_integer_and_an_unknown_extra_argument_both_run_the_tool(
    daemon_process: DaemonProcess,
) -> None:
    """As frameworks take a call: ``2.0`` is an integer (the function gets the int 2),
    ``breakfast`` is not a parameter and is ignored (the result names it); the tool runs
    at its first attempt and errord records its success, no failure."""
    received: list[tuple[str, Any]] = []

    def reserve(city: str, nights: int) -> str:
        """Reserve a hotel room."""
        received.append((city, nights))
        return f"{nights} nights in {city}"

    async with Executor(
        [reserve], target=daemon_process.address, decision_timeout=DECISIONS
    ) as executor:
        arguments = {"city": "Oslo", "nights": 2.0, "breakfast": True}
        [result] = await executor.run(
            [{"id": "r1", "name": "reserve", "arguments": arguments}], turn_id="turn-lenient"
        )

    assert (result.status, result.output, result.attempts) == (
        ResultStatus.SUCCEEDED,
        "2 nights in Oslo",
        1,
    )
    assert received == [("Oslo", 2)]
    assert type(received[0][1]) is int
    assert result.ignored_arguments == ("breakfast",)

    async def outcome_recorded() -> list[pb.TraceEvent] | None:
        events = await recorded_trace(daemon_process, "turn-lenient")
        return events if outcomes(events, "r1") else None

    events = await wait_for(outcome_recorded, "the call's outcome in the trace")
    assert failures(events) == []
