"""tool_call reads one tool call from each model API's shape, dict or SDK object; arguments
it cannot read make a malformed call instead of an exception; a call without an id or a
name raises ValueError naming the key."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import ToolUseBlock
from errord_client.executor.calls import NO_DEFAULT, ToolCall, tool_call
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.responses import ResponseFunctionToolCall

WEATHER = ToolCall("call_1", "weather", {"city": "Oslo"})


# Each shape


def test_a_tool_call_is_returned_as_it_is() -> None:
    assert tool_call(WEATHER) is WEATHER


def test_openai_chat_completions_dict() -> None:
    raw = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
    }
    assert tool_call(raw) == WEATHER


def test_openai_chat_completions_sdk_object() -> None:
    raw = ChatCompletionMessageFunctionToolCall(
        id="call_1",
        type="function",
        function=Function(name="weather", arguments='{"city": "Oslo"}'),
    )
    assert tool_call(raw) == WEATHER


def test_openai_responses_function_call_uses_call_id_not_the_item_id() -> None:
    raw = {
        "type": "function_call",
        "id": "fc_9",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city":"Oslo"}',
    }
    assert tool_call(raw) == WEATHER


def test_openai_responses_sdk_object() -> None:
    raw = ResponseFunctionToolCall(
        type="function_call",
        id="fc_9",
        call_id="call_1",
        name="weather",
        arguments='{"city":"Oslo"}',
    )
    assert tool_call(raw) == WEATHER


def test_anthropic_tool_use_dict() -> None:
    raw = {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}}
    assert tool_call(raw) == WEATHER


def test_anthropic_tool_use_sdk_object() -> None:
    raw = ToolUseBlock(type="tool_use", id="call_1", name="weather", input={"city": "Oslo"})
    assert tool_call(raw) == WEATHER


@pytest.mark.parametrize(
    "raw",
    [
        {"id": "call_1", "name": "weather", "arguments": {"city": "Oslo"}},
        {"call_id": "call_1", "name": "weather", "arguments": '{"city": "Oslo"}'},
        {"id": "call_1", "name": "weather", "input": {"city": "Oslo"}},
        {"id": "call_1", "name": "weather", "arguments": b'{"city": "Oslo"}'},
    ],
)
def test_plain_mapping_with_id_or_call_id_and_arguments_or_input(raw: dict[str, Any]) -> None:
    assert tool_call(raw) == WEATHER


def test_read_call_has_no_plan_of_its_own() -> None:
    call = tool_call({"id": "c", "name": "t", "arguments": {}})
    assert (call.depends_on, call.optional, call.default, call.malformed) == (
        (),
        None,
        NO_DEFAULT,
        "",
    )


def test_arguments_are_copied_from_the_raw_call() -> None:
    arguments = {"city": "Oslo"}
    call = tool_call({"id": "c", "name": "weather", "input": arguments})
    arguments["city"] = "Bergen"
    assert call.arguments == {"city": "Oslo"}


# Arguments that are absent or cannot be read


@pytest.mark.parametrize("arguments", ["", "  ", None])
def test_empty_or_absent_arguments_are_an_empty_object(arguments: str | None) -> None:
    call = tool_call({"id": "c", "name": "list_cities", "arguments": arguments})
    assert (call.arguments, call.malformed) == ({}, "")


def test_call_without_arguments_key_has_empty_arguments() -> None:
    assert tool_call({"id": "c", "name": "now"}).arguments == {}


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ('{"city": "Oslo"', "not valid JSON"),
        ("{'city': 'Oslo'}", "not valid JSON"),
        (b"\xff\xfe{", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
        ('["Oslo"]', """should be a JSON object, got an array: '["Oslo"]'"""),
        ("42", "should be a JSON object, got a number: '42'"),
        ("true", "should be a JSON object, got a boolean: 'true'"),
        ('"Oslo"', """should be a JSON object, got a string: '"Oslo"'"""),
        ("null", "should be a JSON object, got null: 'null'"),
        (["Oslo"], "should be a JSON object, got an array: ['Oslo']"),
        (("Oslo",), "should be a JSON object, got tuple"),
    ],
)
def test_unreadable_arguments_make_a_malformed_call_with_empty_arguments(
    arguments: object, says: str
) -> None:
    call = tool_call({"id": "call_7", "name": "weather", "arguments": arguments})
    assert (call.call_id, call.name, call.arguments) == ("call_7", "weather", {})
    assert says in call.malformed


def test_malformed_says_where_the_json_breaks() -> None:
    raw = {"id": "c", "type": "function", "function": {"name": "w", "arguments": '{"a": 1,}'}}
    assert tool_call(raw).malformed == (
        "the arguments are not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 9 (char 8)"
    )


def test_malformed_openai_sdk_arguments_do_not_raise() -> None:
    raw = ChatCompletionMessageFunctionToolCall(
        id="call_1", type="function", function=Function(name="weather", arguments="{city: Oslo}")
    )
    call = tool_call(raw)
    assert (call.arguments, call.malformed.startswith("the arguments are not valid JSON")) == (
        {},
        True,
    )


@given(st.text())
def test_any_argument_text_gives_a_call_or_a_malformed_one(text: str) -> None:
    call = tool_call({"id": "c", "name": "t", "arguments": text})
    assert bool(call.malformed) != isinstance(_parsed(text), dict)
    assert call.arguments == (_parsed(text) if not call.malformed else {})


def _parsed(text: str) -> object:
    """What the text says as JSON; {} for blank text, a list for text that is not JSON."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return []


# Calls without an id or a name


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"name": "weather", "arguments": "{}"}, "'id'"),
        ({"id": "", "name": "weather"}, "'id'"),
        ({"type": "function", "function": {"name": "weather", "arguments": "{}"}}, "'id'"),
        ({"type": "text", "text": "hello"}, "'id'"),
        ({"id": "call_1", "arguments": "{}"}, "'name'"),
        ({"id": "call_1", "type": "function", "function": {"arguments": "{}"}}, "'function.name'"),
        ("weather", "'id'"),
        (None, "'id'"),
    ],
)
def test_call_without_id_or_name_raises_naming_the_key(raw: object, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        tool_call(raw)


def test_non_string_id_raises_naming_the_key() -> None:
    with pytest.raises(ValueError, match="'id' should be a string, got int"):
        tool_call({"id": 7, "name": "weather"})


# ToolCall


@pytest.mark.parametrize(
    ("call_id", "name", "named"),
    [("", "weather", "ToolCall.call_id"), ("c", "", "ToolCall.name")],
)
def test_tool_call_without_id_or_name_raises_naming_the_field(
    call_id: str, name: str, named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        ToolCall(call_id, name, {})


def test_no_default_is_distinct_from_a_none_default() -> None:
    with_none = ToolCall("c", "t", {}, default=None)
    assert with_none.default is None
    assert ToolCall("c", "t", {}).default is NO_DEFAULT
    assert repr(NO_DEFAULT) == "NO_DEFAULT"
