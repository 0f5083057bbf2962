"""Tool.check: a call's arguments against its tool's JSON Schema, with the seed's error texts."""

from __future__ import annotations

from typing import Any

import pytest
from errord_client.tools import InvalidArguments, Tool, mock_tool
from errord_client.tools.schema import argument_problems
from hypothesis import given
from hypothesis import strategies as st

FLIGHTS = mock_tool(
    "flight_search",
    parameters={
        "type": "object",
        "properties": {
            "origin": {"type": "string"},
            "destination": {"type": "string"},
            "passengers": {"type": "integer"},
            "budget": {"type": "number"},
            "direct": {"type": "boolean"},
            "cabin": {"type": "string", "enum": ["economy", "business"]},
            "stops": {"enum": [0, 1]},
            "airline": {"type": ["string", "null"]},
            "legs": {"type": "array"},
            "filters": {"type": "object"},
            "when": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["origin", "destination"],
        "additionalProperties": False,
    },
)
OPEN = mock_tool(
    "open_search",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


def problems(tool: Tool, arguments: Any) -> tuple[str, ...]:
    with pytest.raises(InvalidArguments) as raised:
        tool.check(arguments)
    return raised.value.problems


def test_arguments_that_fit_pass() -> None:
    FLIGHTS.check(
        {
            "origin": "CDG",
            "destination": "JFK",
            "passengers": 2,
            "budget": 350,
            "direct": True,
            "cabin": "economy",
            "stops": 0,
            "airline": None,
            "legs": [],
            "filters": {},
            "when": 1,
        }
    )


def test_a_missing_required_property_reads_as_the_seed_says() -> None:
    with pytest.raises(InvalidArguments) as raised:
        FLIGHTS.check({"destination": "JFK"})
    assert str(raised.value) == "Invalid parameters: missing 'origin'"
    assert raised.value.problems == ("missing 'origin'",)


def test_every_problem_is_listed_missing_ones_first_and_the_message_names_the_first() -> None:
    with pytest.raises(InvalidArguments) as raised:
        FLIGHTS.check({"passengers": "two", "seat": "12A"})
    assert raised.value.problems == (
        "missing 'origin'",
        "missing 'destination'",
        "'passengers' must be an integer",
        "unexpected 'seat'",
    )
    assert str(raised.value) == "Invalid parameters: missing 'origin'"


def test_a_wrong_type_is_named_in_the_message() -> None:
    with pytest.raises(InvalidArguments) as raised:
        FLIGHTS.check({"origin": "CDG", "destination": "JFK", "passengers": 1.5})
    assert str(raised.value) == "Invalid parameters: 'passengers' must be an integer"


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("passengers", True, "'passengers' must be an integer"),
        ("passengers", 2.0, "'passengers' must be an integer"),
        ("budget", "100", "'budget' must be a number"),
        ("budget", False, "'budget' must be a number"),
        ("direct", 1, "'direct' must be a boolean"),
        ("origin", None, "'origin' must be a string"),
        ("airline", 3, "'airline' must be a string or null"),
        ("legs", {}, "'legs' must be an array"),
        ("filters", [], "'filters' must be an object"),
        ("when", None, "'when' must be a string or an integer"),
    ],
)
def test_each_json_type_is_checked(name: str, value: Any, problem: str) -> None:
    arguments = {"origin": "CDG", "destination": "JFK", name: value}
    assert problems(FLIGHTS, arguments) == (problem,)


def test_an_integer_is_a_number() -> None:
    FLIGHTS.check({"origin": "CDG", "destination": "JFK", "budget": 300})


def test_a_value_outside_the_enum_lists_the_valid_options() -> None:
    arguments = {"origin": "CDG", "destination": "JFK", "cabin": "first", "stops": True}
    assert problems(FLIGHTS, arguments) == (
        "'cabin' must be one of 'economy', 'business'",
        "'stops' must be one of 0, 1",  # True is not 1 in JSON
    )


def test_extra_properties_pass_unless_additional_properties_is_false() -> None:
    OPEN.check({"q": "hotels", "page": 2})
    assert problems(FLIGHTS, {"origin": "a", "destination": "b", "page": 2}) == (
        "unexpected 'page'",
    )


@pytest.mark.parametrize("arguments", [None, [], "origin=CDG", 3])
def test_arguments_that_are_not_an_object_are_refused(arguments: Any) -> None:
    assert problems(OPEN, arguments)[0].startswith("arguments must be an object, not ")


def test_nested_values_are_not_checked() -> None:
    FLIGHTS.check({"origin": "a", "destination": "b", "legs": [1, "two"], "filters": {"x": []}})


def test_invalid_arguments_needs_a_problem() -> None:
    with pytest.raises(ValueError, match="at least one problem"):
        InvalidArguments([])


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


@given(arguments=JSON | st.dictionaries(st.sampled_from(["origin", "passengers", "x"]), JSON))
def test_check_raises_invalid_arguments_exactly_when_there_is_a_problem(arguments: Any) -> None:
    """Any JSON value at all: check raises InvalidArguments listing the problems, or nothing."""
    found = tuple(argument_problems(FLIGHTS.parameters, arguments))
    if not found:
        FLIGHTS.check(arguments)
        return
    with pytest.raises(InvalidArguments) as raised:
        FLIGHTS.check(arguments)
    assert raised.value.problems == found
    assert str(raised.value) == f"Invalid parameters: {found[0]}"
