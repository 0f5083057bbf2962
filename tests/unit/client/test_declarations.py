"""Declarations: what a failure report tells errord of its tool, the parameters' JSON Schema
and the timeout, the schema left out where errord would refuse it (or it says nothing), and
converted once per tool."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from errord_client.executor.declarations import (
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_VALUES,
    Declarations,
    fits,
    schema_struct,
)
from errord_client.tools import ANY_ARGUMENTS, Tool, function_tool, mock_tool
from google.protobuf import json_format
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.arguments.schemas import oversized


def quote(symbol: str, exchange: str = "NYSE") -> float:
    """The last price of a stock."""
    return 1.0


def test_a_function_tools_schema_and_timeout_are_declared() -> None:
    tool = function_tool(quote)
    declaration = Declarations().of(tool, 2.5)
    assert json_format.MessageToDict(declaration.parameters) == {
        "type": "object",
        "properties": {"symbol": {"type": "string"}, "exchange": {"type": "string"}},
        "required": ["symbol"],
        "additionalProperties": False,
    }
    assert declaration.timeout.ToNanoseconds() == 2_500_000_000


def test_a_schema_saying_nothing_is_left_out_and_the_timeout_goes_alone() -> None:
    declarations = Declarations()
    for tool in (
        mock_tool("any", "ok"),
        mock_tool("bare", "ok", parameters={"type": "object"}),
        mock_tool("empty", "ok", parameters={"type": "object", "properties": {}}),
    ):
        declaration = declarations.of(tool, 30.0)
        assert not declaration.HasField("parameters"), tool.name
        assert declaration.timeout.seconds == 30
    assert mock_tool("any", "ok").parameters is ANY_ARGUMENTS


def test_a_tool_taking_no_arguments_declares_so() -> None:
    """A function without parameters refuses any: that is something errord does not know."""

    def now() -> str:
        return "12:00"

    declaration = Declarations().of(function_tool(now), 1.0)
    assert json_format.MessageToDict(declaration.parameters) == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_read_only_mappings_and_tuples_are_declared_as_json() -> None:
    schema = MappingProxyType(
        {"type": "object", "properties": MappingProxyType({"mode": {"enum": ("a", "b")}})}
    )
    struct = schema_struct(schema)
    assert struct is not None
    assert json_format.MessageToDict(struct) == {
        "type": "object",
        "properties": {"mode": {"enum": ["a", "b"]}},
    }


def test_a_schema_with_a_value_json_cannot_hold_is_left_out() -> None:
    assert schema_struct({"type": "object", "properties": {"x": {"default": {1, 2}}}}) is None


def wide(values: int) -> dict[str, Any]:
    """An object schema holding ``values`` values, keys included."""
    properties: dict[str, Any] = {f"p{n}": {} for n in range((values - 5) // 2)}
    return {"type": "object", "properties": properties}


def deep(levels: int) -> dict[str, Any]:
    """A schema whose innermost value is ``levels`` levels down (errord's count)."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels - 1):
        schema = {"type": "array", "items": schema}
    return schema


def test_a_schema_errord_would_refuse_is_left_out() -> None:
    """Past MAX_SCHEMA_VALUES values or MAX_SCHEMA_DEPTH levels, as errord's manifests, or
    past MAX_SCHEMA_BYTES serialized: errord would refuse the whole report."""
    assert schema_struct(wide(MAX_SCHEMA_VALUES)) is not None
    assert schema_struct(wide(MAX_SCHEMA_VALUES + 2)) is None
    assert schema_struct(deep(MAX_SCHEMA_DEPTH)) is not None
    assert schema_struct(deep(MAX_SCHEMA_DEPTH + 1)) is None
    long = {"type": "object", "properties": {"q": {"description": "x" * MAX_SCHEMA_BYTES}}}
    assert schema_struct(long) is None


def test_a_schema_containing_itself_is_left_out_without_walking_forever() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    assert schema_struct(schema) is None


SCHEMAS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=3), inner, max_size=6)
    ),
    max_leaves=200,
)


@given(schema=SCHEMAS)
def test_fits_is_errords_own_bound_on_a_manifests_schema(schema: Any) -> None:
    assert fits(schema) == (oversized(schema) is None)


def test_each_tools_schema_is_converted_once_and_again_when_the_tool_changes() -> None:
    declarations = Declarations()
    first = mock_tool("search", "ok", parameters={"type": "object", "required": ["q"]})
    a = declarations.of(first, 1.0)
    b = declarations.of(first, 2.0)
    assert a.parameters == b.parameters
    assert b.timeout.seconds == 2
    again = Tool("search", {"type": "object", "required": ["query"]}, function=lambda: None)
    declared = json_format.MessageToDict(declarations.of(again, 1.0).parameters)
    assert declared == {"type": "object", "required": ["query"]}
