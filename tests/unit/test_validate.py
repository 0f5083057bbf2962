"""Arguments checked against a tool's JSON Schema, each violation with its kind, and example
calls built from the schema that the schema accepts."""

from __future__ import annotations

import random
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from errord.decide.arguments.display import VALUE_CHARS
from errord.decide.arguments.examples import Examples
from errord.decide.arguments.validators import (
    CallValidator,
    Validators,
    Violation,
    ViolationKind,
    example_arguments,
    required_parameters,
)
from errord.decide.manifest import ManifestSnapshot, ToolManifest
from errord.decide.redact import redact

K = ViolationKind

SEARCH = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "count": {"type": "integer", "minimum": 1, "maximum": 50},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["query"],
}

BOOKING = {
    "type": "object",
    "$defs": {
        "passenger": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "age": {"type": "integer", "minimum": 0, "maximum": 130},
            },
            "required": ["name", "age"],
        }
    },
    "properties": {
        "flight": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{3,4}$"},
        "passengers": {"type": "array", "items": {"$ref": "#/$defs/passenger"}, "minItems": 1},
        "date": {"type": "string", "format": "date"},
    },
    "required": ["flight", "passengers"],
}


def check(schema: dict[str, Any], arguments: dict[str, Any]) -> tuple[Violation, ...]:
    return CallValidator.compile(schema).validate(arguments)


def kinds(violations: tuple[Violation, ...]) -> list[tuple[str, ViolationKind]]:
    return [(each.parameter, each.kind) for each in violations]


def assert_example_valid(schema: dict[str, Any]) -> dict[str, Any]:
    """The example the schema yields, checked by errord's validator and by plain jsonschema."""
    example = example_arguments(schema)
    assert CallValidator.compile(schema).validate(example) == ()
    assert Draft202012Validator(schema).is_valid(example)
    return example


# Required parameters.


def test_a_missing_required_parameter_is_named_in_its_message() -> None:
    assert check(SEARCH, {"count": 3}) == (
        Violation(K.MISSING_PARAMETER, "query", "Missing required parameter 'query'.", "string"),
    )


def test_a_missing_nested_required_property_has_its_own_path() -> None:
    violations = check(BOOKING, {"flight": "LH400", "passengers": [{"name": "Ada", "age": 36}, {}]})
    assert kinds(violations) == [
        ("passengers[1].age", K.MISSING_PARAMETER),
        ("passengers[1].name", K.MISSING_PARAMETER),
    ]
    assert violations[0].message == "Missing required parameter 'passengers[1].age'."


def test_a_call_with_every_required_parameter_is_valid() -> None:
    assert check(SEARCH, {"query": "weather in Paris"}) == ()


# Types: invalid_type.


def test_a_wrong_type_says_what_was_expected_and_what_came() -> None:
    """{"query": 123}: what was expected, and what came."""
    assert check(SEARCH, {"query": 123}) == (
        Violation(
            K.INVALID_TYPE, "query", "Parameter 'query' must be a string, got integer.", "string"
        ),
    )


@pytest.mark.parametrize("count", [3, 3.0, 50.0])
def test_an_integral_number_is_an_integer(count: float) -> None:
    """An integer is an integral number, as JavaScript's Number.isInteger(): 3.0 is one."""
    assert check(SEARCH, {"query": "q", "count": count}) == ()


@pytest.mark.parametrize(
    ("count", "got"), [(2.5, "number"), ("5", "string"), (True, "boolean"), (None, "null")]
)
def test_anything_else_is_not_an_integer(count: object, got: str) -> None:
    """A fraction, a numeric string, or a boolean is not an integer."""
    (violation,) = check(SEARCH, {"query": "q", "count": count})
    assert violation.kind is K.INVALID_TYPE
    assert violation.message == f"Parameter 'count' must be an integer, got {got}."
    assert violation.expected == "integer"


def test_a_boolean_is_not_a_number() -> None:
    (violation,) = check({"properties": {"x": {"type": "number"}}}, {"x": False})
    assert violation.message == "Parameter 'x' must be a number, got boolean."


@pytest.mark.parametrize("query", [["q"], {"q": 1}, 1.5, False])
def test_only_a_string_is_a_string(query: object) -> None:
    """type="string" admits a string and nothing else."""
    assert kinds(check(SEARCH, {"query": query})) == [("query", K.INVALID_TYPE)]


def test_a_type_list_reads_as_alternatives() -> None:
    (violation,) = check({"properties": {"x": {"type": ["string", "null"]}}}, {"x": 1})
    assert violation.message == "Parameter 'x' must be a string or null, got integer."
    assert violation.expected == "string or null"


# Enums.


def test_a_value_outside_the_enum_lists_the_valid_options() -> None:
    assert check(SEARCH, {"query": "q", "unit": "kelvin"}) == (
        Violation(
            K.INVALID_VALUE,
            "unit",
            "Parameter 'unit' must be one of 'celsius', 'fahrenheit'; got 'kelvin'.",
            "one of: celsius, fahrenheit",
        ),
    )


def test_a_const_mismatch_names_the_one_value() -> None:
    (violation,) = check({"properties": {"v": {"const": 2}}}, {"v": 3})
    assert (violation.kind, violation.message) == (
        K.INVALID_VALUE,
        "Parameter 'v' must be 2; got 3.",
    )


def test_a_long_enum_is_listed_in_part() -> None:
    options = [f"option{n}" for n in range(30)]
    (violation,) = check({"properties": {"v": {"enum": options}}}, {"v": "x"})
    assert "'option19', and 10 more; got 'x'." in violation.message


# Parameters the schema does not name are allowed.


def test_parameters_the_schema_does_not_name_are_ignored() -> None:
    assert check(SEARCH, {"query": "q", "verbose": True, "trace": {"id": 1}}) == ()


def test_extra_parameters_do_not_hide_a_defined_parameters_violation() -> None:
    assert kinds(check(SEARCH, {"query": "q", "extra": 1, "count": 0})) == [
        ("count", K.OUT_OF_RANGE)
    ]


def test_extra_parameters_are_unexpected_only_when_the_schema_says_so() -> None:
    closed = {**SEARCH, "additionalProperties": False}
    violations = check(closed, {"query": "q", "zeta": 1, "alpha": 2})
    assert kinds(violations) == [
        ("alpha", K.UNEXPECTED_PARAMETER),
        ("zeta", K.UNEXPECTED_PARAMETER),
    ]
    assert violations[0].message == (
        "Unexpected parameter 'alpha'; the parameters allowed here are: query, count, unit."
    )


def test_a_property_whose_schema_is_false_is_unexpected() -> None:
    schema = {"properties": {"legacy": False}}
    assert kinds(check(schema, {"legacy": 1})) == [("legacy", K.UNEXPECTED_PARAMETER)]


# invalid_value for an empty value.


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "Parameter 'query' cannot be empty."),
        ("   ", "Parameter 'query' cannot be empty or only whitespace."),
        ("\t\n", "Parameter 'query' cannot be empty or only whitespace."),
    ],
)
def test_a_blank_string_where_min_length_asks_for_one_is_an_invalid_value(
    query: str, message: str
) -> None:
    """{"query": "   "}: the parameter cannot be empty."""
    assert check(SEARCH, {"query": query}) == (
        Violation(K.INVALID_VALUE, "query", message, "a non-empty string"),
    )


# A required string left blank is an invalid_value unless its schema admits it.

QUERY = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
WHITESPACE = [chr(code) for code in range(0x110000) if chr(code).isspace()]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "Parameter 'query' cannot be empty."),
        ("   ", "Parameter 'query' cannot be empty or only whitespace."),
        ("\t\n", "Parameter 'query' cannot be empty or only whitespace."),
    ],
)
def test_a_blank_required_string_is_an_invalid_value(query: str, message: str) -> None:
    """A model with no query sends blanks: without minLength, required means non-blank."""
    assert check(QUERY, {"query": query}) == (
        Violation(K.INVALID_VALUE, "query", message, "a non-empty string"),
    )


@settings(max_examples=200)
@given(st.text(st.sampled_from(WHITESPACE), max_size=12))
def test_any_whitespace_only_required_string_is_an_invalid_value(query: str) -> None:
    assert kinds(check(QUERY, {"query": query})) == [("query", K.INVALID_VALUE)]


def beside_a_blank_query(
    schema: dict[str, Any], value: Any, *, required: bool = True
) -> tuple[Violation, ...]:
    """The violations of ``{"field": value, "query": ""}``, where ``field`` has ``schema``
    and ``query`` is a plain required string: the query's violation shows the rule ran,
    so what ``field`` gets is the rule's answer for it."""
    tool = {
        "properties": {"field": schema, "query": {"type": "string"}},
        "required": ["field", "query"] if required else ["query"],
    }
    return check(tool, {"field": value, "query": ""})


BLANK_QUERY = ("query", K.INVALID_VALUE)


@pytest.mark.parametrize(
    ("rules", "value"),
    [
        ({"minLength": 0}, ""),
        ({"minLength": 0}, " "),
        ({"pattern": r"^\s*$"}, "\t"),
        ({"pattern": "^$"}, ""),
        ({"enum": ["", "all"]}, ""),
        ({"enum": [" ", "all"]}, " "),
        ({"const": ""}, ""),
    ],
)
def test_a_blank_required_string_the_schema_admits_is_valid(
    rules: dict[str, Any], value: str
) -> None:
    """minLength: 0 stated, a pattern that matches, an enum or a const holding the value."""
    assert kinds(beside_a_blank_query({"type": "string", **rules}, value)) == [BLANK_QUERY]


def test_a_blank_string_a_pattern_rejects_is_blank_first_then_off_pattern() -> None:
    violations = beside_a_blank_query({"type": "string", "pattern": "^[A-Z]+$"}, " ")
    assert kinds(violations) == [
        ("field", K.INVALID_VALUE),
        ("field", K.INVALID_FORMAT),
        BLANK_QUERY,
    ]


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ({"enum": ["a", "b"]}, "Parameter 'field' must be one of 'a', 'b'; got ''."),
        ({"const": "a"}, "Parameter 'field' must be 'a'; got ''."),
        ({"minLength": 2}, "Parameter 'field' cannot be empty."),
    ],
)
def test_a_keyword_that_rejects_a_blank_value_says_so_alone(
    rules: dict[str, Any], message: str
) -> None:
    """enum, const and minLength judge a blank value themselves: one violation, theirs."""
    field, query = beside_a_blank_query({"type": "string", **rules}, "")
    assert (field.parameter, field.kind, field.message) == ("field", K.INVALID_VALUE, message)
    assert (query.parameter, query.kind) == BLANK_QUERY


@pytest.mark.parametrize("value", ["", "  ", "\n"])
def test_an_optional_blank_string_is_valid(value: str) -> None:
    assert kinds(beside_a_blank_query({"type": "string"}, value, required=False)) == [BLANK_QUERY]


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": "string"}, 0, [("field", K.INVALID_TYPE)]),
        ({"type": "string"}, None, [("field", K.INVALID_TYPE)]),
        ({"type": "integer"}, "", [("field", K.INVALID_TYPE)]),
        ({"type": "array", "items": {"type": "string"}}, ["", " "], []),
        ({"description": "no type"}, " ", []),
        ({"type": ["string", "null"]}, None, []),
    ],
)
def test_the_rule_leaves_other_types_and_untyped_parameters_alone(
    schema: dict[str, Any], value: Any, expected: list[tuple[str, ViolationKind]]
) -> None:
    assert kinds(beside_a_blank_query(schema, value)) == [*expected, BLANK_QUERY]


def test_a_required_string_typed_string_or_null_may_not_be_blank() -> None:
    assert kinds(beside_a_blank_query({"type": ["string", "null"]}, " ")) == [
        ("field", K.INVALID_VALUE),
        BLANK_QUERY,
    ]


def test_a_nested_required_string_is_checked_where_the_validator_goes() -> None:
    """Required properties of objects inside objects and arrays are checked, as a
    missing one is; an array's string items are not required parameters."""
    person = {"properties": {"name": {"type": "string"}}, "required": ["name"]}
    schema = {
        "properties": {
            "contact": person,
            "guests": {"type": "array", "items": person},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["contact", "tags"],
    }
    arguments = {"contact": {"name": ""}, "guests": [{"name": "Bo"}, {"name": "\n"}]}
    violations = check(schema, arguments | {"tags": ["", " "]})
    assert [(each.parameter, each.kind, each.message) for each in violations] == [
        ("contact.name", K.INVALID_VALUE, "Parameter 'contact.name' cannot be empty."),
        (
            "guests[1].name",
            K.INVALID_VALUE,
            "Parameter 'guests[1].name' cannot be empty or only whitespace.",
        ),
    ]


def test_the_property_schema_is_found_through_ref_and_all_of() -> None:
    text = {"type": "string"}
    through_ref = {
        "$defs": {"text": text},
        "properties": {"q": {"$ref": "#/$defs/text"}},
        "required": ["q"],
    }
    through_all_of = {"allOf": [{"properties": {"q": text}}], "required": ["q"]}
    admitted = {"allOf": [{"properties": {"q": text}}, {"properties": {"q": {"minLength": 0}}}]}
    assert kinds(check(through_ref, {"q": ""})) == [("q", K.INVALID_VALUE)]
    assert kinds(check(through_all_of, {"q": ""})) == [("q", K.INVALID_VALUE)]
    assert check(admitted | {"required": ["q"]}, {"q": ""}) == ()


def test_a_blank_required_string_in_a_draft_07_schema_is_an_invalid_value() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", **QUERY}
    assert kinds(check(schema, {"query": "  "})) == [("query", K.INVALID_VALUE)]


def test_the_example_of_a_required_string_whose_default_is_blank_is_not_blank() -> None:
    schema = {"properties": {"query": {"type": "string", "default": ""}}, "required": ["query"]}
    assert assert_example_valid(schema) == {"query": "example"}


def test_a_string_too_short_but_not_blank_is_an_invalid_length() -> None:
    schema = {"properties": {"code": {"type": "string", "minLength": 3}}}
    (violation,) = check(schema, {"code": "ab"})
    assert (violation.kind, violation.message, violation.expected) == (
        K.INVALID_LENGTH,
        "Parameter 'code' must have at least 3 characters, got 2.",
        "at least 3 characters",
    )


# Every other kind.


@pytest.mark.parametrize(
    ("schema", "value", "kind", "message"),
    [
        ({"minimum": 1}, 0, K.OUT_OF_RANGE, "must be at least 1, got 0."),
        ({"maximum": 9}, 10, K.OUT_OF_RANGE, "must be at most 9, got 10."),
        ({"exclusiveMinimum": 0}, 0, K.OUT_OF_RANGE, "must be greater than 0, got 0."),
        ({"exclusiveMaximum": 1.5}, 2, K.OUT_OF_RANGE, "must be less than 1.5, got 2."),
        ({"multipleOf": 5}, 7, K.OUT_OF_RANGE, "must be a multiple of 5, got 7."),
        ({"maxLength": 2}, "abc", K.INVALID_LENGTH, "must have at most 2 characters, got 3."),
        ({"minItems": 1}, [], K.INVALID_LENGTH, "must have at least 1 item, got 0."),
        ({"maxItems": 1}, [1, 2], K.INVALID_LENGTH, "must have at most 1 item, got 2."),
        ({"minProperties": 2}, {}, K.INVALID_LENGTH, "must have at least 2 properties, got 0."),
        ({"pattern": "^a+$"}, "b", K.INVALID_FORMAT, "must match the pattern '^a+$', got 'b'."),
        (
            {"format": "email"},
            "nobody",
            K.INVALID_FORMAT,
            "must be a valid email such as 'user@example.com', got 'nobody'.",
        ),
        (
            {"format": "date"},
            "2025-02-30",
            K.INVALID_FORMAT,
            "must be a valid date such as '2025-01-31', got '2025-02-30'.",
        ),
        ({"uniqueItems": True}, [1, 1], K.NOT_UNIQUE, "must not contain duplicate items."),
        ({"not": {"type": "null"}}, None, K.SCHEMA_MISMATCH, "must not be null; got null."),
        (
            {"contains": {"type": "integer"}},
            ["a"],
            K.SCHEMA_MISMATCH,
            "must contain an item that is an integer.",
        ),
    ],
)
def test_each_keyword_maps_to_its_kind_and_message(
    schema: dict[str, Any], value: object, kind: ViolationKind, message: str
) -> None:
    (violation,) = check({"properties": {"v": schema}}, {"v": value})
    assert (violation.kind, violation.parameter) == (kind, "v")
    assert violation.message == f"Parameter 'v' {message}"


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("2025-01-31T12:00:00Z", True),
        ("2025-01-31t12:00:00.5+02:00", True),
        ("2025-01-31", False),
        ("2025-01-31T25:00:00Z", False),
        ("tomorrow", False),
    ],
)
def test_date_time_is_checked_as_rfc_3339(value: str, valid: bool) -> None:
    violations = check({"properties": {"at": {"format": "date-time"}}}, {"at": value})
    assert (violations == ()) is valid


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("uri", "https://example.com/a?b=1", "example.com"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000"),
        ("ipv4", "192.0.2.1", "192.0.2.300"),
        ("ipv6", "2001:db8::1", "2001:db8:::1"),
        ("time", "23:59:60Z", "12:00:00"),
        ("regex", "^a+$", "("),
    ],
)
def test_errord_asserts_its_formats_whatever_packages_are_installed(
    fmt: str, good: str, bad: str
) -> None:
    schema = {"properties": {"v": {"type": "string", "format": fmt}}}
    assert check(schema, {"v": good}) == ()
    assert kinds(check(schema, {"v": bad})) == [("v", K.INVALID_FORMAT)]


def test_an_unknown_format_is_an_annotation_only() -> None:
    assert check({"properties": {"v": {"format": "hostname"}}}, {"v": "not a host!"}) == ()


def test_any_of_types_reads_as_one_type_violation() -> None:
    schema = {"properties": {"id": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}
    (violation,) = check(schema, {"id": True})
    assert (violation.kind, violation.message) == (
        K.INVALID_TYPE,
        "Parameter 'id' must be a string or an integer, got boolean.",
    )


def test_one_of_consts_reads_as_one_enum_violation() -> None:
    schema = {"properties": {"mode": {"oneOf": [{"const": "fast"}, {"const": "safe"}]}}}
    (violation,) = check(schema, {"mode": "slow"})
    assert (violation.kind, violation.expected) == (K.INVALID_VALUE, "one of: fast, safe")


def test_a_value_matching_two_one_of_branches_is_a_schema_mismatch() -> None:
    schema = {"properties": {"n": {"oneOf": [{"type": "integer"}, {"minimum": 0}]}}}
    (violation,) = check(schema, {"n": 3})
    assert violation.kind is K.SCHEMA_MISMATCH
    assert violation.message == (
        "Parameter 'n' matches more than one of: an integer; a value matching the schema; "
        "it must match exactly one."
    )


def test_a_dependent_required_parameter_is_missing_at_its_own_path() -> None:
    schema = {"dependentRequired": {"card": ["expiry"]}}
    (violation,) = check(schema, {"card": "4111"})
    assert (violation.kind, violation.parameter, violation.message) == (
        K.MISSING_PARAMETER,
        "expiry",
        "Missing parameter 'expiry', required when 'card' is given.",
    )


def test_a_draft_07_schema_is_checked_by_its_own_rules() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"pair": {"items": [{"type": "integer"}], "additionalItems": False}},
        "required": ["pair"],
    }
    assert check(schema, {"pair": [1]}) == ()
    assert kinds(check(schema, {"pair": [1, 2]})) == [("pair", K.INVALID_LENGTH)]
    assert kinds(check(schema, {})) == [("pair", K.MISSING_PARAMETER)]


def test_keywords_without_a_message_of_their_own_are_schema_mismatches() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "dependencies": {"card": ["expiry"]},
    }
    assert check(schema, {"card": 1}) == (
        Violation(
            K.SCHEMA_MISMATCH,
            "",
            "The schema's 'dependencies' rule rejects the arguments.",
            'dependencies: {"card": ["expiry"]}',
        ),
    )


def test_unevaluated_properties_false_names_the_unexpected_keys() -> None:
    schema = {"properties": {"o": {"properties": {"x": {}}, "unevaluatedProperties": False}}}
    (violation,) = check(schema, {"o": {"x": 1, "y": 2}})
    assert (violation.kind, violation.parameter) == (K.UNEXPECTED_PARAMETER, "o")
    assert "'y' was unexpected" in violation.message


def test_kinds_are_named_for_the_wire_in_snake_case() -> None:
    assert [kind.value for kind in ViolationKind] == [
        "missing_parameter",
        "invalid_type",
        "invalid_value",
        "out_of_range",
        "invalid_length",
        "invalid_format",
        "unexpected_parameter",
        "not_unique",
        "schema_mismatch",
    ]


def test_arguments_that_are_any_mapping_are_checked() -> None:
    assert kinds(check(SEARCH, MappingProxyType({"query": 1}))) == [("query", K.INVALID_TYPE)]  # type: ignore[arg-type]


# All at once, in a fixed order.


def test_every_violation_is_returned_at_once_sorted_by_path_then_kind() -> None:
    arguments = {
        "flight": "lh1",
        "date": "someday",
        "passengers": [
            {"name": "Ada", "age": 36},
            {"name": "", "age": -1},
            {"age": "ten"},
        ],
    }
    assert kinds(check(BOOKING, arguments)) == [
        ("date", K.INVALID_FORMAT),
        ("flight", K.INVALID_FORMAT),
        ("passengers[1].age", K.OUT_OF_RANGE),
        ("passengers[1].name", K.INVALID_VALUE),
        ("passengers[2].age", K.INVALID_TYPE),
        ("passengers[2].name", K.MISSING_PARAMETER),
    ]


def test_indices_sort_as_numbers_and_kinds_in_their_declared_order() -> None:
    schema = {"properties": {"xs": {"items": {"type": "integer", "minimum": 0}}}}
    violations = check(schema, {"xs": [*[0] * 10, -1, -2.5]})
    assert kinds(violations) == [
        ("xs[10]", K.OUT_OF_RANGE),
        ("xs[11]", K.INVALID_TYPE),
        ("xs[11]", K.OUT_OF_RANGE),
    ]


def test_the_order_does_not_depend_on_the_order_of_the_arguments() -> None:
    arguments = {"a": "x", "b": "y", "c": "z", "d": 1, "e": 2}
    schema = {"properties": {name: {"type": "boolean"} for name in arguments}}
    validator = CallValidator.compile(schema)
    expected = validator.validate(arguments)
    names = list(arguments)
    for seed in range(5):
        random.Random(seed).shuffle(names)
        assert validator.validate({name: arguments[name] for name in names}) == expected
    assert [each.parameter for each in expected] == sorted(arguments)


# What messages may echo.


def test_a_long_offending_value_is_clipped() -> None:
    (violation,) = check(SEARCH, {"query": "q", "unit": "k" * 10_000})
    assert "k" * VALUE_CHARS + "..." in violation.message
    assert len(violation.message) < 200


def test_a_value_under_a_secret_key_is_never_echoed() -> None:
    schema = {"properties": {"api_key": {"type": "string", "pattern": "^sk-"}}}
    (violation,) = check(schema, {"api_key": "hunter2-secret"})
    assert "hunter2" not in violation.message
    assert "[REDACTED:" in violation.message


def test_a_value_under_a_manifest_redact_path_is_never_echoed() -> None:
    schema = {"properties": {"passenger": {"properties": {"passport": {"enum": ["X1"]}}}}}
    validator = CallValidator.compile(schema, redact=["passenger.passport"])
    (violation,) = validator.validate({"passenger": {"passport": "C01X00T47"}})
    assert "C01X00T47" not in violation.message
    assert violation.parameter == "passenger.passport"


def test_a_key_that_is_not_a_plain_name_is_quoted_in_the_path() -> None:
    schema = {"properties": {"first name": {"type": "string"}}}
    (violation,) = check(schema, {"first name": 1})
    assert violation.parameter == '["first name"]'


# Arguments arrive redacted: a marker stands for a value errord cannot judge.

MASKED = "[REDACTED:manifest]"


def test_an_integer_masked_by_a_manifest_redact_path_is_not_an_invalid_type() -> None:
    validator = CallValidator.compile(SEARCH, redact=["count"])
    arguments = redact({"query": "q", "count": 5}, ["count"])
    assert arguments["count"] == MASKED
    assert validator.validate(arguments) == ()


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "minimum": 1},
        {"enum": ["celsius", "fahrenheit"]},
        {"const": 3},
        {"type": "string", "pattern": "^sk-"},
        {"type": "string", "maxLength": 4},
        {"type": "string", "format": "date"},
        {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        {"not": {"type": "string"}},
    ],
)
@pytest.mark.parametrize("masked", [MASKED, "[REDACTED:password]"])
def test_no_rule_judges_a_value_that_is_a_marker(schema: Any, masked: str) -> None:
    assert check({"properties": {"pin": schema}}, {"pin": masked}) == ()


def test_a_masked_item_of_an_array_is_skipped_and_the_others_are_checked() -> None:
    schema = {"properties": {"ids": {"type": "array", "items": {"type": "integer"}}}}
    violations = check(schema, {"ids": [1, MASKED, "two"]})
    assert kinds(violations) == [("ids[2]", K.INVALID_TYPE)]


def test_a_masked_property_of_an_object_is_skipped_and_the_others_are_checked() -> None:
    passenger = {"properties": {"passport": {"type": "integer"}, "age": {"type": "integer"}}}
    validator = CallValidator.compile(
        {"properties": {"passenger": passenger}}, redact=["passenger.passport"]
    )
    arguments = redact({"passenger": {"passport": 123, "age": "old"}}, ["passenger.passport"])
    assert kinds(validator.validate(arguments)) == [("passenger.age", K.INVALID_TYPE)]


def test_a_masked_parameter_is_present_so_a_missing_one_is_still_missing() -> None:
    """Presence is not hidden: a required masked parameter is given, a forbidden one is not
    allowed, and an absent one is missing."""
    schema = {
        "properties": {"api_key": {"type": "integer"}, "query": {"type": "string"}, "pin": False},
        "required": ["api_key", "query"],
    }
    arguments = redact({"api_key": 42, "pin": 1234}, ["pin"])
    assert arguments == {"api_key": "[REDACTED:api_key]", "pin": MASKED}
    assert kinds(check(schema, arguments)) == [
        ("pin", K.UNEXPECTED_PARAMETER),
        ("query", K.MISSING_PARAMETER),
    ]


def test_a_union_is_not_judged_when_a_branch_fails_only_at_a_marker() -> None:
    card = {"properties": {"kind": {"const": "card"}, "number": {"type": "integer"}}}
    iban = {"properties": {"kind": {"const": "iban"}, "iban": {"type": "string"}}}
    schema = {"properties": {"payment": {"anyOf": [card, iban]}}}
    assert check(schema, {"payment": {"kind": "card", "number": MASKED}}) == ()
    violations = check(schema, {"payment": {"kind": "cash", "number": MASKED}})
    assert kinds(violations) == [("payment", K.SCHEMA_MISMATCH)]


def test_values_holding_markers_are_not_compared_but_other_duplicates_are() -> None:
    schema = {"properties": {"tags": {"type": "array", "uniqueItems": True}}}
    assert check(schema, {"tags": [{"pin": MASKED}, {"pin": MASKED}, 1]}) == ()
    assert kinds(check(schema, {"tags": [1, 1, MASKED]})) == [("tags", K.NOT_UNIQUE)]
    assert check({"properties": {"p": {"const": {"pin": 1}}}}, {"p": {"pin": MASKED}}) == ()


def test_a_string_that_only_contains_a_marker_is_still_judged() -> None:
    schema = {"properties": {"port": {"type": "integer"}}}
    arguments = {"port": "postgres://app:[REDACTED:password]@db"}
    assert kinds(check(schema, arguments)) == [("port", K.INVALID_TYPE)]


def test_a_parameter_whose_name_redaction_hid_is_not_unexpected() -> None:
    schema = {"properties": {"query": {"type": "string"}}, "additionalProperties": False}
    assert check(schema, {"query": "q", "[REDACTED:github_token]": 1}) == ()


# Compiling, and a snapshot's validators.


def test_validators_compile_each_tool_and_report_invalid_schemas() -> None:
    validators = Validators.from_schemas(
        {
            "search": SEARCH,
            "broken": {"type": "strnig"},
            "remote": {"$ref": "https://example.com/schema.json"},
            "free": None,
        }
    )
    search = validators.for_tool("search")
    assert search is not None
    assert validators.for_tool("search") is search
    assert kinds(search.validate({})) == [("query", K.MISSING_PARAMETER)]
    assert validators.for_tool("broken") is None
    assert validators.for_tool("free") is None
    assert validators.for_tool("unknown") is None
    assert set(validators.invalid) == {"broken", "remote"}
    assert validators.invalid["broken"].startswith("invalid JSON Schema at type:")
    assert "does not resolve" in validators.invalid["remote"]


def test_a_snapshots_validators_take_its_manifests_parameters_and_redact_paths() -> None:
    manifest = ToolManifest(
        name="book",
        parameters={"properties": {"pin": {"pattern": "^[0-9]{4}$"}}},
        redact=("pin",),
    )
    validators = ManifestSnapshot([manifest, ToolManifest(name="plain")]).validators
    book = validators.for_tool("book")
    assert book is not None
    (violation,) = book.validate({"pin": "abcd"})
    assert "abcd" not in violation.message
    assert validators.for_tool("plain") is None


def test_compile_refuses_an_invalid_schema_with_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"invalid JSON Schema at properties\.n\.minimum"):
        CallValidator.compile({"properties": {"n": {"minimum": "one"}}})


def test_a_reference_to_a_metaschema_resolves_without_fetching() -> None:
    schema = {"properties": {"s": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}
    assert check(schema, {"s": {"type": "string"}}) == ()


# Required parameters.


def test_required_parameters_follow_ref_and_all_of() -> None:
    assert required_parameters(SEARCH) == ["query"]
    assert required_parameters(None) == []
    schema = {
        "$ref": "#/$defs/base",
        "allOf": [{"required": ["b"]}],
        "$defs": {"base": {"required": ["a"]}},
    }
    assert required_parameters(schema) == ["a", "b"]


# Examples.


def test_the_example_holds_the_required_parameters_only() -> None:
    assert assert_example_valid(SEARCH) == {"query": "example"}


def test_the_example_prefers_examples_then_default_then_const_then_enum() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "examples": ["python asyncio patterns"], "default": "d"},
            "b": {"type": "integer", "default": 7},
            "c": {"const": "fixed"},
            "d": {"enum": ["celsius", "fahrenheit"]},
            "e": {"type": "integer", "examples": ["not an integer", 4]},
        },
        "required": ["a", "b", "c", "d", "e"],
    }
    assert assert_example_valid(schema) == {
        "a": "python asyncio patterns",
        "b": 7,
        "c": "fixed",
        "d": "celsius",
        "e": 4,
    }


def test_the_example_of_nested_objects_and_arrays_through_a_ref() -> None:
    example = assert_example_valid(BOOKING)
    assert example == {"flight": "AA000", "passengers": [{"name": "example", "age": 0}]}


def test_the_example_meets_bounds_lengths_and_steps() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "exclusiveMinimum": 10, "multipleOf": 7},
            "x": {"type": "number", "minimum": 0.25, "multipleOf": 0.1},
            "y": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "s": {"type": "string", "minLength": 12, "maxLength": 12},
            "t": {"type": "string", "maxLength": 3},
            "u": {
                "type": "array",
                "items": {"type": "integer"},
                "minItems": 3,
                "uniqueItems": True,
            },
        },
        "required": ["n", "x", "y", "s", "t", "u"],
    }
    example = assert_example_valid(schema)
    assert example["n"] == 14
    assert len(example["s"]) == 12
    assert len(set(example["u"])) == 3


def test_the_example_fills_optional_properties_only_for_min_properties() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}, "c": {}},
        "required": ["a"],
        "minProperties": 2,
    }
    assert set(assert_example_valid(schema)) == {"a", "b"}


@pytest.mark.parametrize(
    "fmt", ["date", "date-time", "time", "email", "uri", "uuid", "ipv4", "ipv6", "regex"]
)
def test_the_example_of_a_format_is_valid(fmt: str) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    assert_example_valid({**schema, "required": ["v"]})


@pytest.mark.parametrize(
    "pattern",
    [
        r"^[A-Z]{3}-\d{4}$",
        r"^(foo|bar)_[a-z]+$",
        r"^\w+@\w+\.com$",
        r"^[^0-9\s]{2,}$",
        r"^(?:[01]\d|2[0-3]):[0-5]\d$",
        r"ab+c",
    ],
)
def test_the_example_of_a_pattern_matches_it(pattern: str) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    assert_example_valid({**schema, "required": ["v"]})


def test_the_example_takes_the_first_branch_that_yields_a_valid_value() -> None:
    schema = {
        "type": "object",
        "properties": {
            "id": {
                "anyOf": [{"type": "string", "maxLength": 0, "minLength": 1}, {"type": "integer"}]
            },
            "when": {"oneOf": [{"type": "string", "format": "date"}, {"type": "integer"}]},
        },
        "required": ["id", "when"],
    }
    assert assert_example_valid(schema) == {"id": 1, "when": "2025-01-31"}


def test_the_example_of_a_type_list_prefers_a_value_to_null() -> None:
    schema = {
        "type": "object",
        "properties": {"v": {"type": ["null", "string"]}},
        "required": ["v"],
    }
    assert assert_example_valid(schema) == {"v": "example"}


def test_the_example_of_a_recursive_schema_ends() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]},
                },
                "required": ["value", "next"],
            }
        },
        "properties": {"list": {"$ref": "#/$defs/node"}},
        "required": ["list"],
    }
    assert assert_example_valid(schema) == {"list": {"value": 1, "next": None}}


def test_the_example_of_an_all_of_merges_its_branches() -> None:
    schema = {
        "type": "object",
        "allOf": [
            {"$ref": "#/$defs/base"},
            {"properties": {"extra": {"type": "boolean"}}, "required": ["extra"]},
        ],
        "$defs": {"base": {"properties": {"name": {"type": "string"}}, "required": ["name"]}},
    }
    assert assert_example_valid(schema) == {"name": "example", "extra": True}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": False}, "required": ["x"]},
        {
            "type": "object",
            "$defs": {
                "n": {
                    "type": "object",
                    "required": ["n"],
                    "properties": {"n": {"$ref": "#/$defs/n"}},
                }
            },
            "$ref": "#/$defs/n",
        },
        {"type": "string"},
        {
            "type": "object",
            "properties": {"xs": {"type": "array", "minItems": 1000}},
            "required": ["xs"],
        },
    ],
)
def test_an_unsatisfiable_or_unbounded_schema_yields_an_empty_example(
    schema: dict[str, Any],
) -> None:
    assert example_arguments(schema) == {}


def test_an_invalid_schema_yields_an_empty_example() -> None:
    assert example_arguments({"type": 5}) == {}
    assert example_arguments(None) == {}


def test_a_validator_builds_its_example_once() -> None:
    validator = CallValidator.compile(SEARCH)
    first = validator.example()
    first["query"] = "changed"
    assert validator.example() == {"query": "example"}


# Random schemas: each example validates.

NAMES = st.sampled_from(["a", "b", "city", "count", "when", "tags"])
PATTERNS = st.sampled_from(
    [
        r"^[a-z]+$",
        r"^\d{3}-\d{2}$",
        r"^[A-Z][a-z]*$",
        "abc",
        r"^(foo|bar)[0-9]?$",
        r"^\w+@\w+\.com$",
    ]
)
FORMATS = st.sampled_from(["date", "date-time", "email", "uri", "uuid", "ipv4"])
SCALARS = st.one_of(st.text(max_size=8), st.integers(-1000, 1000), st.booleans(), st.none())


@st.composite
def strings(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    choice = draw(st.sampled_from(["lengths", "pattern", "format", "plain"]))
    if choice == "lengths":
        low = draw(st.integers(0, 6))
        schema["minLength"] = low
        if draw(st.booleans()):
            schema["maxLength"] = low + draw(st.integers(0, 6))
    elif choice == "pattern":
        schema["pattern"] = draw(PATTERNS)
    elif choice == "format":
        schema["format"] = draw(FORMATS)
    return schema


@st.composite
def numbers(draw: st.DrawFn) -> dict[str, Any]:
    integral = draw(st.booleans())
    schema: dict[str, Any] = {"type": "integer" if integral else "number"}
    low = draw(st.integers(-100, 100)) if integral else draw(st.sampled_from([-2.5, 0, 0.75, 10]))
    width = draw(st.integers(12, 50))
    if draw(st.booleans()):
        schema["exclusiveMinimum" if draw(st.booleans()) else "minimum"] = low
    if draw(st.booleans()):
        schema["exclusiveMaximum" if draw(st.booleans()) else "maximum"] = low + width
    if draw(st.booleans()):
        schema["multipleOf"] = draw(st.sampled_from([2, 3, 5] if integral else [0.5, 0.25, 2]))
    return schema


LEAVES = st.one_of(
    strings(),
    numbers(),
    st.just({"type": "boolean"}),
    st.just({"type": ["string", "null"]}),
    st.lists(SCALARS, min_size=1, max_size=4, unique_by=repr).map(lambda values: {"enum": values}),
)
UNIQUE_ITEMS = st.one_of(
    st.integers(0, 3).map(lambda low: {"type": "string", "minLength": low}),
    st.integers(-5, 5).map(lambda low: {"type": "integer", "minimum": low}),
)


@st.composite
def objects(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    properties = draw(st.dictionaries(NAMES, children, max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    schema["required"] = (
        draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    )
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    if draw(st.booleans()) and properties:
        schema["minProperties"] = draw(st.integers(0, len(properties)))
    return schema


@st.composite
def arrays(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    unique = draw(st.booleans())
    schema: dict[str, Any] = {"type": "array", "items": draw(UNIQUE_ITEMS if unique else children)}
    low = draw(st.integers(0, 3))
    schema["minItems"] = low
    if draw(st.booleans()):
        schema["maxItems"] = low + draw(st.integers(0, 2))
    if unique:
        schema["uniqueItems"] = True
    return schema


SCHEMAS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        objects(children),
        arrays(children),
        st.lists(children, min_size=1, max_size=3).map(lambda branches: {"anyOf": branches}),
    ),
    max_leaves=8,
)


@st.composite
def tool_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """An object schema; some of its properties are references to ``$defs``."""
    schema = draw(objects(SCHEMAS))
    definitions = {}
    for name in list(schema["properties"]):
        if draw(st.booleans()):
            definitions[f"d_{name}"] = schema["properties"][name]
            schema["properties"][name] = {"$ref": f"#/$defs/d_{name}"}
    if definitions:
        schema["$defs"] = definitions
    return schema


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_schemas())
def test_the_example_of_any_small_schema_validates_against_it(schema: dict[str, Any]) -> None:
    # A schema too large for the search's checks (MAX_CHECKED_VALUES) gets no example, as
    # example_arguments says; the property holds for the others.
    search = Examples(Draft202012Validator(schema))
    search.arguments()
    assume(not search.exhausted)
    example = assert_example_valid(schema)
    assert set(schema["required"]) <= set(example)


def test_a_schema_too_large_for_the_search_gets_no_example_and_says_it_ran_out() -> None:
    nested: dict[str, Any] = {"type": "string", "pattern": "^[a-z]+$"}
    for name in ("a", "b", "c", "d", "e", "f", "g"):
        nested = {
            "type": "object",
            "properties": {f"{name}{n}": nested for n in range(4)},
            "required": [f"{name}{n}" for n in range(4)],
            "additionalProperties": False,
        }
    search = Examples(Draft202012Validator(nested))
    assert search.arguments() == {}
    assert search.exhausted


def test_counts_sent_as_floats_still_bound_the_example() -> None:
    """A declaration sent over the wire is a protobuf Struct, whose numbers are floats:
    maxLength 4.0 and minItems 2.0 bound the example as 4 and 2 do."""
    schema = {
        "type": "object",
        "properties": {
            "expression": {"type": "string", "maxLength": 4.0, "minLength": 1.0},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2.0},
        },
        "required": ["expression", "tags"],
    }
    example = example_arguments(schema)
    assert len(example["expression"]) <= 4
    assert len(example["tags"]) == 2
