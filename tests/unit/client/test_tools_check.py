"""Tool.check and Tool.accept: a call's arguments against its tool's JSON Schema, with the
seed's error texts, taken as frameworks take them (2.0 is an integer, extras are ignored);
a framework validator's refusal (pydantic's) in the same words."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from errord_client.tools import InvalidArguments, Tool, mock_tool
from errord_client.tools.arguments import argument_problems
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError

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
        ("passengers", 2.5, "'passengers' must be an integer"),
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


def test_an_integer_valued_number_is_an_integer_and_the_tool_gets_an_int() -> None:
    """JSON Schema counts 2.0 as an integer, as frameworks (pydantic) take it: accepted,
    and passed on as 2, the type the function hinted."""
    accepted = FLIGHTS.accept({"origin": "CDG", "destination": "JFK", "passengers": 2.0})
    assert accepted.arguments == {"origin": "CDG", "destination": "JFK", "passengers": 2}
    assert type(accepted.arguments["passengers"]) is int
    assert accepted.ignored == ()


@pytest.mark.parametrize(
    ("declared", "given", "taken"),
    [
        ({"type": "integer"}, 3.0, 3),
        ({"type": ["integer", "null"]}, -1.0, -1),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, 7.0, 7),
        ({"type": "number"}, 2.0, 2.0),  # a number stays what it was
        ({"type": ["integer", "number"]}, 2.0, 2.0),
        ({"enum": [1, 2]}, 2.0, 2.0),  # no type said: left as given
    ],
)
def test_only_a_parameter_taking_integers_alone_gets_an_int(
    declared: dict[str, Any], given: float, taken: float
) -> None:
    schema = {"type": "object", "properties": {"n": declared}}
    value = mock_tool("t", parameters=schema).accept({"n": given}).arguments["n"]
    assert (value, type(value)) == (taken, type(taken))


def test_arguments_the_schema_does_not_take_are_ignored_and_named() -> None:
    """With additionalProperties false, an unknown argument is left out of what the tool
    gets (frameworks ignore extras) and named, in call order; an open schema passes it."""
    arguments = {"seat": "12A", "origin": "CDG", "destination": "JFK", "meal": "veg"}
    accepted = FLIGHTS.accept(arguments)
    assert accepted.arguments == {"origin": "CDG", "destination": "JFK"}
    assert accepted.ignored == ("seat", "meal")
    FLIGHTS.check(arguments)
    assert arguments == {"seat": "12A", "origin": "CDG", "destination": "JFK", "meal": "veg"}
    opened = OPEN.accept({"q": "hotels", "page": 2})
    assert (dict(opened.arguments), opened.ignored) == ({"q": "hotels", "page": 2}, ())


def test_arguments_taken_as_they_are_are_not_copied() -> None:
    arguments = {"origin": "CDG", "destination": "JFK", "passengers": 2}
    assert FLIGHTS.accept(arguments).arguments is arguments


def test_a_refused_call_names_the_parameter_and_lists_what_it_would_have_ignored() -> None:
    """``{"ticker": ...}`` for a tool taking ``symbol``: the missing one is the problem,
    named as the parameter; the unknown one is listed after it."""
    quote = mock_tool(
        "quote",
        parameters={
            "type": "object",
            "properties": {"symbol": {"type": "string"}},
            "required": ["symbol"],
            "additionalProperties": False,
        },
    )
    with pytest.raises(InvalidArguments) as raised:
        quote.accept({"ticker": "AAPL"})
    assert raised.value.problems == ("missing 'symbol'", "unexpected 'ticker'")
    assert raised.value.parameter == "symbol"
    assert str(raised.value) == "Invalid parameters: missing 'symbol'"


def test_the_parameter_of_a_refusal_is_its_first_problems() -> None:
    with pytest.raises(InvalidArguments) as raised:
        FLIGHTS.check({"origin": "CDG", "destination": "JFK", "budget": "x", "direct": 1})
    assert raised.value.parameter == "budget"
    with pytest.raises(InvalidArguments) as raised:
        FLIGHTS.check([])  # type: ignore[arg-type]
    assert raised.value.parameter == ""


@pytest.mark.parametrize("arguments", [None, [], "origin=CDG", 3])
def test_arguments_that_are_not_an_object_are_refused(arguments: Any) -> None:
    assert problems(OPEN, arguments)[0].startswith("arguments must be an object, not ")


def test_nested_values_are_not_checked() -> None:
    FLIGHTS.check({"origin": "a", "destination": "b", "legs": [1, "two"], "filters": {"x": []}})


def test_invalid_arguments_needs_a_problem() -> None:
    with pytest.raises(ValueError, match="at least one problem"):
        InvalidArguments([])


# A framework validator's refusal


class Room(BaseModel):
    beds: int


class Stay(BaseModel):
    city: str
    nights: int
    cabin: Literal["standard", "suite"] = "standard"
    rooms: list[Room] = []
    limit: int = Field(default=5, le=10)


def validation_error(arguments: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as raised:
        Stay.model_validate(arguments)
    return raised.value


@pytest.mark.parametrize(
    ("arguments", "problem", "parameter"),
    [
        ({"nights": 2}, "missing 'city'", "city"),
        ({"city": "Oslo", "nights": "two"}, "'nights' must be an integer", "nights"),
        ({"city": "Oslo", "nights": 2.5}, "'nights' must be an integer", "nights"),
        ({"city": 3, "nights": 1}, "'city' must be a string", "city"),
        (
            {"city": "Oslo", "nights": 1, "cabin": "deck"},
            "'cabin' must be 'standard' or 'suite'",
            "cabin",
        ),
        (
            {"city": "Oslo", "nights": 1, "rooms": [{"beds": "x"}]},
            "'rooms[0].beds' must be an integer",
            "rooms",
        ),
        (
            {"city": "Oslo", "nights": 1, "limit": 50},
            "'limit': Input should be less than or equal to 10",
            "limit",
        ),
    ],
)
def test_a_pydantic_refusal_is_said_in_the_executors_words_naming_the_argument(
    arguments: dict[str, Any], problem: str, parameter: str
) -> None:
    refused = InvalidArguments.from_validation_error(validation_error(arguments))
    assert refused.problems == (problem,)
    assert refused.parameter == parameter
    assert str(refused) == f"Invalid parameters: {problem}"


def test_every_pydantic_error_is_a_problem_and_values_are_never_quoted() -> None:
    refused = InvalidArguments.from_validation_error(validation_error({"nights": "secret-ish"}))
    assert refused.problems == ("missing 'city'", "'nights' must be an integer")
    assert "secret-ish" not in str(refused.problems)


def test_a_parameter_is_named_in_printable_characters_only() -> None:
    assert InvalidArguments(["unexpected"], parameter="to\x00ken\n").parameter == "token"


def test_an_error_without_pydantics_errors_is_its_own_text() -> None:
    refused = InvalidArguments.from_validation_error(ValueError("the tool said no"))
    assert (refused.problems, refused.parameter) == (("the tool said no",), "")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


@given(arguments=JSON | st.dictionaries(st.sampled_from(["origin", "passengers", "x"]), JSON))
def test_check_raises_invalid_arguments_exactly_when_there_is_a_problem(arguments: Any) -> None:
    """Any JSON value at all: check raises InvalidArguments listing the problems, or nothing;
    what accept takes is the call without the arguments it ignores, each fitting its
    property."""
    found = tuple(argument_problems(FLIGHTS.parameters, arguments))
    if not found:
        FLIGHTS.check(arguments)
        accepted = FLIGHTS.accept(arguments)
        assert set(accepted.arguments) == set(arguments) - set(accepted.ignored)
        assert set(accepted.ignored) <= {"x"}
        assert not tuple(argument_problems(FLIGHTS.parameters, accepted.arguments))
        return
    with pytest.raises(InvalidArguments) as raised:
        FLIGHTS.check(arguments)
    assert raised.value.problems == found
    assert str(raised.value) == f"Invalid parameters: {found[0]}"
