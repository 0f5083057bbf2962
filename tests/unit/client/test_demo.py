"""The executor demo's parts: its tools fail as its scenarios say, its manifests give errord
what the scenarios need, and it shows decisions and results as the README does.
A whole run against a daemon is in tests/daemon/test_client_readme.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from errord_client.demo import manifests_directory, run_demo
from errord_client.demo.__main__ import main
from errord_client.demo.narration import event_lines, result_lines
from errord_client.demo.scenarios import (
    SCENARIOS,
    HTTPStatusError,
    demo_tools,
    rate_limited,
    unauthorized,
)
from errord_client.executor import DecidedBy, ResultStatus, ToolResult, failure_from_exception
from errord_client.tools import InvalidArguments, Tool
from errord_client.v1 import errord_pb2 as pb

from errord.manifests.files import load_manifest_dir


def tools_by_name() -> dict[str, Tool]:
    return {tool.name: tool for tool in demo_tools()}


async def test_flight_search_never_answers_its_first_two_attempts_then_answers() -> None:
    flight_search = tools_by_name()["flight_search"]
    for _ in range(2):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(flight_search.invoke({}), 0.01)
    assert await flight_search.invoke({}) == {"flights": [{"number": "AF83", "price": 612}]}


async def test_hotel_search_fails_once_with_a_429_whose_retry_after_the_executor_reads() -> None:
    hotel_search = tools_by_name()["hotel_search"]
    with pytest.raises(HTTPStatusError) as raised:
        await hotel_search.invoke({"city": "Paris"})
    failure = failure_from_exception(raised.value)
    assert (failure.http_status, failure.retry_after) == (429, 1.0)
    assert await hotel_search.invoke({"city": "Paris"}) == {"hotels": ["Hotel du Marais"]}


def test_the_demos_http_errors_read_as_httpx_errors_do() -> None:
    assert failure_from_exception(rate_limited(3)).retry_after == 3.0
    unauthorized_failure = failure_from_exception(unauthorized())
    assert unauthorized_failure.http_status == 401
    assert unauthorized_failure.retry_after is None
    assert unauthorized_failure.exception_type.endswith("HTTPStatusError")


async def test_weather_is_refused_every_time_and_its_backup_answers() -> None:
    tools = tools_by_name()
    for _ in range(2):
        with pytest.raises(HTTPStatusError, match="401 Unauthorized"):
            await tools["weather"].invoke({"city": "Paris"})
    assert await tools["weather_backup"].invoke({"city": "Paris"}) == {
        "city": "Paris",
        "forecast": "sunny, 24 C",
    }


async def test_car_rental_refuses_days_as_text_before_running_and_runs_with_a_number() -> None:
    car_rental = tools_by_name()["car_rental"]
    with pytest.raises(InvalidArguments, match="'days' must be an integer"):
        car_rental.check({"city": "Paris", "days": "three"})
    assert await car_rental.invoke({"city": "Paris", "days": 3}) == {
        "city": "Paris",
        "days": 3,
        "car": "Renault Clio",
        "price": 123,
    }


def test_every_call_of_the_scenarios_names_a_demo_tool_and_ids_are_not_reused() -> None:
    calls = [call for scenario in SCENARIOS for message in scenario.messages for call in message]
    assert {call["name"] for call in calls} <= set(tools_by_name())
    assert len({call["id"] for call in calls}) == len(calls)


def test_the_manifests_errord_reads_name_every_demo_tool_with_what_the_scenarios_need() -> None:
    manifests = load_manifest_dir(manifests_directory())
    assert manifests.names == set(tools_by_name())
    assert manifests.manifest_for("flight_search")[0].timeout == 0.2
    assert manifests.manifest_for("weather")[0].alternatives == ("weather_backup",)
    schema = manifests.manifest_for("car_rental")[0].parameters
    assert schema is not None
    assert schema["required"] == tools_by_name()["car_rental"].parameters["required"]


def test_dash_dash_manifests_prints_the_directory_to_start_errord_with(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--manifests"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == manifests_directory()
    assert (printed / "demo.yaml").is_file()


async def test_without_a_daemon_the_demo_says_how_to_start_one_and_fails() -> None:
    said: list[str] = []
    assert await run_demo("127.0.0.1:1", say=said.append) == 1
    [line] = said
    assert line.startswith("errord at 127.0.0.1:1 did not answer (UNAVAILABLE")
    assert '--manifests "$(python -m errord_client.demo --manifests)"' in line


def failure_event(action: pb.RecoveryAction, delay_ms: int, reason: str) -> pb.TraceEvent:
    event = pb.TraceEvent(tool="flight_search", attempt=2)
    event.failure.error.message = "flight_search did not answer within 0.2 s"
    decision = event.failure.decision
    decision.action = action
    decision.classification.code = pb.ERROR_CODE_TIMEOUT
    decision.reason = reason
    decision.delay.FromMilliseconds(delay_ms)
    return event


def test_a_failure_shows_tool_attempt_code_message_then_errords_action_delay_reason() -> None:
    event = failure_event(pb.RECOVERY_ACTION_RETRY, 214, "Transient error (TIMEOUT); retrying.")
    assert event_lines(event) == [
        "   flight_search attempt 2 failed (TIMEOUT): flight_search did not answer within 0.2 s",
        "     errord decides RETRY after 214 ms. Transient error (TIMEOUT); retrying.",
    ]


def test_a_decision_without_a_delay_shows_none() -> None:
    event = failure_event(pb.RECOVERY_ACTION_ESCALATE, 0, "No retry.")
    assert event_lines(event)[1] == "     errord decides ESCALATE. No retry."


def test_a_success_shows_one_line_and_other_events_none() -> None:
    success = pb.TraceEvent(tool="weather_backup", attempt=1)
    success.outcome.outcome = pb.OUTCOME_SUCCESS
    failure = pb.TraceEvent(tool="weather", attempt=1)
    failure.outcome.outcome = pb.OUTCOME_FAILURE
    began = pb.TraceEvent()
    began.turn_began.implicit = True
    assert event_lines(success) == ["   weather_backup attempt 1 succeeded"]
    assert event_lines(failure) == event_lines(began) == []


def test_a_result_shows_its_status_attempts_fallback_and_who_decided() -> None:
    result = ToolResult(
        call_id="call_3",
        tool="weather",
        status=ResultStatus.SUCCEEDED,
        output={"forecast": "sunny"},
        attempts=2,
        fallback_used=True,
        tool_used="weather_backup",
        decided_by=DecidedBy.ERRORD,
    )
    assert result_lines(result) == [
        "   result of call_3 (weather): SUCCEEDED, 2 attempts, answered by weather_backup, "
        "decided by errord",
        "   the model gets:",
        '     {"forecast":"sunny"}',
    ]


def test_a_call_never_run_shows_not_run_and_the_models_text_line_by_line_unpadded() -> None:
    result = ToolResult(
        call_id="call_4",
        tool="car_rental",
        status=ResultStatus.RETURNED_TO_MODEL,
        decided_by=DecidedBy.ERRORD,
        model_text="Tool Execution Failed\n\nParameter: 'days'",
    )
    assert result_lines(result) == [
        "   result of call_4 (car_rental): RETURNED_TO_MODEL, not run, decided by errord",
        "   the model gets:",
        "     Tool Execution Failed",
        "",
        "     Parameter: 'days'",
    ]


def test_a_first_attempt_success_says_nobody_decided_by_saying_nothing() -> None:
    result = ToolResult("call_5", "car_rental", ResultStatus.SUCCEEDED, output="ok", attempts=1)
    assert result_lines(result)[0] == "   result of call_5 (car_rental): SUCCEEDED, 1 attempt"
