"""A tool's JSON Schema from its function's type hints, and decoded JSON read back into them."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict, Union

import pytest
from errord_client.tools import InvalidArguments, function_tool
from errord_client.tools.schema import parameters_schema


class Cabin(enum.Enum):
    ECONOMY = "economy"
    BUSINESS = "business"


class Stops(enum.IntEnum):
    DIRECT = 0
    ONE = 1


class Filters(TypedDict):
    max_price: int
    airline: NotRequired[str]


@dataclass
class Leg:
    origin: str
    destination: str
    cabin: Cabin = Cabin.ECONOMY
    notes: list[str] = field(default_factory=list)


@dataclass
class Node:
    children: list[Node]


def schema_of(hint: Any) -> dict[str, Any]:
    """The schema of a one-parameter function's only parameter, hinted ``hint``."""

    def function(value: Any) -> None: ...

    function.__annotations__ = {"value": hint, "return": None}
    properties: dict[str, Any] = parameters_schema(function)["properties"]
    return properties["value"]  # type: ignore[no-any-return]  # JSON: a dict


@pytest.mark.parametrize(
    ("hint", "schema"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (Any, {}),
        (list, {"type": "array"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (dict, {"type": "object"}),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (tuple, {"type": "array"}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (Literal["a", "b"], {"enum": ["a", "b"], "type": "string"}),
        (Literal[1, "a"], {"enum": [1, "a"]}),
        (Cabin, {"enum": ["economy", "business"], "type": "string"}),
        (Stops, {"enum": [0, 1], "type": "integer"}),
        (Optional[str], {"type": ["string", "null"]}),  # noqa: UP045 - Optional is what it tests
        (int | None, {"type": ["integer", "null"]}),
        (Union[int, str], {"type": ["integer", "string"]}),  # noqa: UP007 - Union is what it tests
        (
            list[int] | None,
            {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        ),
        (
            Annotated[str, "an IATA airport code"],
            {"type": "string", "description": "an IATA airport code"},
        ),
    ],
)
def test_each_supported_hint_has_its_json_schema(hint: Any, schema: dict[str, Any]) -> None:
    assert schema_of(hint) == schema


def test_a_typeddict_is_an_object_whose_not_required_keys_are_optional() -> None:
    assert schema_of(Filters) == {
        "type": "object",
        "properties": {"max_price": {"type": "integer"}, "airline": {"type": "string"}},
        "required": ["max_price"],
        "additionalProperties": False,
    }


def test_a_dataclass_is_an_object_whose_defaulted_fields_are_optional() -> None:
    assert schema_of(Leg) == {
        "type": "object",
        "properties": {
            "origin": {"type": "string"},
            "destination": {"type": "string"},
            "cabin": {"enum": ["economy", "business"], "type": "string"},
            "notes": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["origin", "destination"],
        "additionalProperties": False,
    }


def test_parameters_without_a_default_are_required_and_no_others_are_allowed() -> None:
    def search(origin: str, passengers: int = 1, cabin: str | None = None) -> None: ...

    assert parameters_schema(search) == {
        "type": "object",
        "properties": {
            "origin": {"type": "string"},
            "passengers": {"type": "integer"},
            "cabin": {"type": ["string", "null"]},
        },
        "required": ["origin"],
        "additionalProperties": False,
    }


def test_a_function_without_parameters_takes_an_empty_object() -> None:
    def now() -> None: ...

    assert parameters_schema(now) == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_keyword_arguments_allow_other_properties_and_star_args_are_left_out() -> None:
    def search(query: str, *extra: str, **options: Any) -> None: ...

    schema = parameters_schema(search)
    assert schema["properties"] == {"query": {"type": "string"}}
    assert "additionalProperties" not in schema


def test_a_partial_is_described_by_the_parameters_it_leaves() -> None:
    def search(api_key: str, query: str) -> None: ...

    schema = parameters_schema(functools.partial(search, "secret"))
    assert schema["properties"] == {"query": {"type": "string"}}


def test_an_unsupported_hint_raises_type_error_naming_the_parameter() -> None:
    def upload(name: str, data: bytes) -> None: ...

    with pytest.raises(TypeError, match=r"parameter 'data' of .*upload: bytes has no JSON Schema"):
        function_tool(upload)


@pytest.mark.parametrize(
    ("hint", "why"),
    [
        (dict[int, str], "dict keys must be str"),
        (Literal[b"x"], "not JSON scalars"),
        (Node, "Node contains itself"),
        (set[int], "has no JSON Schema"),
    ],
)
def test_hints_without_a_json_form_are_refused(hint: Any, why: str) -> None:
    with pytest.raises(TypeError, match=why):
        schema_of(hint)


def test_a_parameter_without_a_hint_is_refused() -> None:
    def search(query) -> None: ...  # type: ignore[no-untyped-def]  # the case tested

    with pytest.raises(TypeError, match=r"parameter 'query' .* has no type hint"):
        function_tool(search)


def test_a_positional_only_parameter_is_refused() -> None:
    def search(query: str, /) -> None: ...

    with pytest.raises(TypeError, match=r"parameter 'query' .* positional-only"):
        function_tool(search)


def test_parameters_given_skip_the_hints() -> None:
    def upload(data: bytes) -> None: ...

    schema = {"type": "object", "properties": {"data": {"type": "string"}}}
    assert function_tool(upload, parameters=schema).parameters == schema


async def test_enum_dataclass_and_tuple_arguments_arrive_in_their_hinted_types() -> None:
    def book(cabin: Cabin, leg: Leg, seats: tuple[int, int], legs: list[Leg] | None = None) -> Any:
        return cabin, leg, seats, legs

    arguments = {
        "cabin": "business",
        "leg": {"origin": "CDG", "destination": "JFK", "cabin": "business"},
        "seats": [12, 13],
        "legs": [{"origin": "JFK", "destination": "SFO"}],
    }
    cabin, leg, seats, legs = await function_tool(book).invoke(arguments)
    assert cabin is Cabin.BUSINESS
    assert leg == Leg("CDG", "JFK", Cabin.BUSINESS)
    assert seats == (12, 13)
    assert legs == [Leg("JFK", "SFO")]


async def test_a_coroutine_function_with_converted_arguments_stays_on_the_loop() -> None:
    async def pick(cabin: Cabin) -> Cabin:
        return cabin

    made = function_tool(pick)
    assert not made.blocking
    assert await made.invoke({"cabin": "economy"}) is Cabin.ECONOMY


async def test_an_argument_that_cannot_be_read_raises_invalid_arguments() -> None:
    def book(leg: Leg) -> None: ...

    with pytest.raises(InvalidArguments, match="'leg' could not be read: Leg has no field 'seat'"):
        await function_tool(book).invoke({"leg": {"origin": "a", "destination": "b", "seat": 1}})


def test_a_function_whose_hints_take_json_as_it_is_runs_unwrapped() -> None:
    def search(query: str, limit: int | None = None, tags: list[str] = []) -> None: ...  # noqa: B006

    assert function_tool(search).function is search
