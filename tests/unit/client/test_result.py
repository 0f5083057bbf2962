"""ToolResult: which results are errors, what the model reads, and the shapes each model
API takes back, for a success, an error, a defaulted and a skipped result."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from anthropic.types import TextBlock
from errord_client.executor.result import (
    DecidedBy,
    ResultError,
    ResultStatus,
    ToolResult,
    json_text,
    json_value,
)
from hypothesis import given
from hypothesis import strategies as st

TIMEOUT = ResultError(
    code="TIMEOUT",
    error_class="transient",
    message="read timed out after 30s",
    user_message="The weather service is slow to answer right now.",
    retryable=True,
)

SUCCESS = ToolResult(
    call_id="call_1",
    tool="weather",
    status=ResultStatus.SUCCEEDED,
    output={"city": "Oslo", "temp_c": -3},
    execution_time_ms=12.5,
    attempts=1,
)
ERROR = ToolResult(
    call_id="call_2",
    tool="weather",
    status=ResultStatus.FAILED,
    error=TIMEOUT,
    execution_time_ms=30_100.0,
    attempts=3,
    decided_by=DecidedBy.ERRORD,
    decision_ids=("d1", "d2", "d3"),
    model_text="weather failed: the service timed out three times. Do not call it again.",
)
DEFAULTED = ToolResult(
    call_id="call_3",
    tool="forecast",
    status=ResultStatus.DEFAULTED,
    output=[],
    error=TIMEOUT,
    attempts=2,
    decided_by=DecidedBy.ERRORD,
    decision_ids=("d4",),
)
SKIPPED = ToolResult(
    call_id="call_4",
    tool="book_hotel",
    status=ResultStatus.SKIPPED,
    decided_by=DecidedBy.LOCAL,
)


# ok and is_error


@pytest.mark.parametrize(
    ("status", "ok"),
    [
        (ResultStatus.SUCCEEDED, True),
        (ResultStatus.DEFAULTED, True),
        (ResultStatus.PARTIAL, True),
        (ResultStatus.FAILED, False),
        (ResultStatus.TIMED_OUT, False),
        (ResultStatus.SKIPPED, False),
        (ResultStatus.RETURNED_TO_MODEL, False),
        (ResultStatus.ESCALATED, False),
    ],
)
def test_ok_when_the_model_gets_an_output_and_is_error_otherwise(
    status: ResultStatus, ok: bool
) -> None:
    result = ToolResult("c", "t", status)
    assert (result.ok, result.is_error) == (ok, not ok)


# content


def test_content_of_a_success_is_its_output_as_compact_json() -> None:
    assert SUCCESS.content() == '{"city":"Oslo","temp_c":-3}'


def test_content_of_a_string_output_is_the_string_as_is() -> None:
    result = ToolResult("c", "t", ResultStatus.SUCCEEDED, output='already "text"')
    assert result.content() == 'already "text"'


def test_content_of_an_error_is_its_model_text() -> None:
    assert ERROR.content() == ERROR.model_text


def test_content_of_an_error_without_model_text_says_what_failed_and_why() -> None:
    result = ToolResult("c", "weather", ResultStatus.TIMED_OUT, error=TIMEOUT)
    assert result.content() == "Error: weather timed out: read timed out after 30s"


def test_content_of_an_error_without_message_is_a_sentence() -> None:
    result = ToolResult("c", "weather", ResultStatus.ESCALATED)
    assert result.content() == "Error: weather failed; the user is being asked how to go on."


def test_content_of_a_skipped_call_says_it_was_not_run() -> None:
    assert SKIPPED.content() == "Not run: the book_hotel call was skipped."


def test_content_of_a_call_returned_to_the_model_is_the_correction() -> None:
    result = ToolResult(
        "c",
        "weather",
        ResultStatus.RETURNED_TO_MODEL,
        model_text="Argument 'city' is required; call weather again with it.",
    )
    assert result.content() == "Argument 'city' is required; call weather again with it."


def test_content_of_a_defaulted_result_is_the_default_output_not_the_error() -> None:
    assert DEFAULTED.content() == "[]"


def test_content_of_a_partial_result_is_the_partial_output() -> None:
    result = ToolResult("c", "search", ResultStatus.PARTIAL, output={"pages": [1, 2]})
    assert result.content() == '{"pages":[1,2]}'


# Converters


def test_to_openai_is_a_tool_message() -> None:
    assert SUCCESS.to_openai() == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"city":"Oslo","temp_c":-3}',
    }
    assert ERROR.to_openai() == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": ERROR.model_text,
    }
    assert DEFAULTED.to_openai() == {"role": "tool", "tool_call_id": "call_3", "content": "[]"}
    assert SKIPPED.to_openai() == {
        "role": "tool",
        "tool_call_id": "call_4",
        "content": "Not run: the book_hotel call was skipped.",
    }


def test_to_openai_responses_is_a_function_call_output_item() -> None:
    assert SUCCESS.to_openai_responses() == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": '{"city":"Oslo","temp_c":-3}',
    }
    assert ERROR.to_openai_responses() == {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": ERROR.model_text,
    }
    assert DEFAULTED.to_openai_responses()["output"] == "[]"
    assert SKIPPED.to_openai_responses()["output"] == "Not run: the book_hotel call was skipped."


def test_to_anthropic_is_a_tool_result_block_flagged_is_error_for_errors_only() -> None:
    assert SUCCESS.to_anthropic() == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": '{"city":"Oslo","temp_c":-3}',
    }
    assert ERROR.to_anthropic() == {
        "type": "tool_result",
        "tool_use_id": "call_2",
        "content": ERROR.model_text,
        "is_error": True,
    }
    assert DEFAULTED.to_anthropic() == {
        "type": "tool_result",
        "tool_use_id": "call_3",
        "content": "[]",
    }
    assert SKIPPED.to_anthropic() == {
        "type": "tool_result",
        "tool_use_id": "call_4",
        "content": "Not run: the book_hotel call was skipped.",
        "is_error": True,
    }


def test_to_dict_of_a_success() -> None:
    assert SUCCESS.to_dict() == {
        "call_id": "call_1",
        "tool": "weather",
        "status": "succeeded",
        "output": {"city": "Oslo", "temp_c": -3},
        "error": None,
        "execution_time_ms": 12.5,
        "attempts": 1,
        "fallback_used": False,
        "tool_used": "weather",
        "decided_by": "nobody",
        "decision_ids": [],
        "model_text": "",
        "ignored_arguments": [],
    }


def test_to_dict_holds_every_field_by_its_name() -> None:
    assert list(ERROR.to_dict()) == [field.name for field in dataclasses.fields(ToolResult)]
    assert ERROR.error is not None
    assert list(ERROR.error.to_dict()) == [field.name for field in dataclasses.fields(ResultError)]


def test_ignored_arguments_are_in_the_record_but_not_in_what_the_model_reads() -> None:
    result = dataclasses.replace(SUCCESS, ignored_arguments=("units", "verbose"))
    assert result.to_dict()["ignored_arguments"] == ["units", "verbose"]
    assert result.content() == SUCCESS.content()
    assert result.to_openai() == SUCCESS.to_openai()
    assert result.to_anthropic() == SUCCESS.to_anthropic()


def test_to_dict_of_an_error_has_the_error_fields() -> None:
    record = ERROR.to_dict()
    assert (record["status"], record["output"]) == ("failed", None)
    assert record["error"] == {
        "code": "TIMEOUT",
        "error_class": "transient",
        "message": "read timed out after 30s",
        "user_message": "The weather service is slow to answer right now.",
        "retryable": True,
        "fault": "",
        "parameter": "",
        "exception_type": "",
        "correction": None,
    }
    assert (record["decided_by"], record["decision_ids"]) == ("errord", ["d1", "d2", "d3"])


def test_to_dict_of_a_defaulted_result_has_its_default_and_the_error_it_stands_in_for() -> None:
    record = DEFAULTED.to_dict()
    assert (record["status"], record["output"]) == ("defaulted", [])
    assert (record["fallback_used"], record["error"]["code"]) == (False, "TIMEOUT")


def test_to_dict_of_a_skipped_result() -> None:
    record = SKIPPED.to_dict()
    assert (record["status"], record["error"]) == ("skipped", None)
    assert record["decided_by"] == "local"


def test_a_result_without_a_tool_used_is_the_called_tools() -> None:
    assert SKIPPED.tool_used == "book_hotel"
    assert SKIPPED.to_dict()["tool_used"] == "book_hotel"


def test_to_dict_names_the_alternative_whose_result_it_is() -> None:
    result = ToolResult(
        "c",
        "flights_a",
        ResultStatus.SUCCEEDED,
        output=1,
        fallback_used=True,
        tool_used="flights_b",
    )
    assert (result.to_dict()["tool"], result.to_dict()["tool_used"]) == (
        "flights_a",
        "flights_b",
    )


def test_every_converter_output_is_json() -> None:
    for result in (SUCCESS, ERROR, DEFAULTED, SKIPPED):
        for shape in (
            result.to_openai(),
            result.to_openai_responses(),
            result.to_anthropic(),
            result.to_dict(),
        ):
            assert json.loads(json.dumps(shape, allow_nan=False)) == shape


# Odd outputs


@dataclass
class Forecast:
    day: str
    at: datetime


def _cycle() -> list[object]:
    cycle: list[object] = []
    cycle.append(cycle)
    return cycle


WHEN = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("output", "text"),
    [
        (None, "null"),
        (3, "3"),
        (True, "true"),
        ({"city": "Zürich"}, '{"city":"Zürich"}'),
        ((1, 2), "[1,2]"),
        ({3, 1, 2}, "[1,2,3]"),
        (WHEN, '"2030-01-01 00:00:00+00:00"'),
        (b"\x00raw", "\"b'\\\\x00raw'\""),
        (Forecast("mon", WHEN), '{"day":"mon","at":"2030-01-01 00:00:00+00:00"}'),
        ({1: "a"}, '{"1":"a"}'),
        ({(1, 2): "a"}, "{(1, 2): 'a'}"),
        (_cycle(), "[[...]]"),
        (math.nan, "NaN"),
    ],
)
def test_content_of_odd_outputs(output: object, text: str) -> None:
    assert ToolResult("c", "t", ResultStatus.SUCCEEDED, output=output).content() == text


def test_content_of_a_pydantic_model_is_its_json_dump() -> None:
    block = TextBlock(type="text", text="hi")
    result = ToolResult("c", "t", ResultStatus.SUCCEEDED, output=block)
    assert json.loads(result.content()) == block.model_dump(mode="json")


def test_content_of_a_model_that_cannot_dump_itself_is_its_str() -> None:
    class Stubborn:
        def model_dump(self, mode: str) -> dict[str, Any]:
            raise ValueError(mode)

        def __str__(self) -> str:
            return "stubborn"

    assert json_text(Stubborn()) == '"stubborn"'


def test_json_value_makes_non_finite_numbers_null() -> None:
    assert json_value({"a": math.inf, "b": [math.nan, 1.5]}) == {"a": None, "b": [None, 1.5]}


def test_a_class_is_not_read_as_a_dataclass_or_model() -> None:
    assert json_value(Forecast) == str(Forecast)


_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.binary(max_size=8)
    | st.datetimes()
    | st.frozensets(st.integers(), max_size=3)
)
_outputs = st.recursive(
    _leaves,
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=5) | st.integers(), children, max_size=3)
    ),
    max_leaves=12,
)


@given(_outputs)
def test_any_output_gives_text_content_and_a_strict_json_dict(output: object) -> None:
    result = ToolResult("c", "t", ResultStatus.SUCCEEDED, output=output)
    assert isinstance(result.content(), str)
    json.dumps(result.to_dict(), allow_nan=False)


# Validation


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"attempts": -1}, "ToolResult.attempts"),
        ({"execution_time_ms": -0.5}, "ToolResult.execution_time_ms"),
        ({"execution_time_ms": math.nan}, "ToolResult.execution_time_ms"),
    ],
)
def test_invalid_counts_raise_naming_the_field(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        ToolResult("c", "t", ResultStatus.SUCCEEDED, **fields)
