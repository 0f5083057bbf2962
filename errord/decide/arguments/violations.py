"""What a violation of a tool's argument schema is (its kind, path, message and
expectation), and jsonschema's errors worded as violations: a sentence per failing
keyword, and what it wants."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from jsonschema import ValidationError

from errord.decide.arguments.display import (
    ARTICLES,
    LISTED_OPTIONS,
    PathPart,
    clip,
    counted,
    describe,
    json_type,
    listed,
    literal,
    path_text,
    plain,
    type_names,
    types_phrase,
)
from errord.decide.arguments.formats import FORMAT_EXAMPLES
from errord.decide.arguments.keywords import BLANK, is_blank
from errord.decide.arguments.regexes import matches
from errord.decide.redact import redact_json


class ViolationKind(Enum):
    """What is wrong with an argument; the value is the wire's and the messages' name.

    The members' order is the order of violations at one parameter.
    """

    MISSING_PARAMETER = "missing_parameter"
    INVALID_TYPE = "invalid_type"
    INVALID_VALUE = "invalid_value"
    """Not one of the enum, not the const, or empty where it must not be."""
    OUT_OF_RANGE = "out_of_range"
    """minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf."""
    INVALID_LENGTH = "invalid_length"
    """min/maxLength, min/maxItems, min/maxProperties."""
    INVALID_FORMAT = "invalid_format"
    """pattern, format."""
    UNEXPECTED_PARAMETER = "unexpected_parameter"
    """A parameter the schema forbids: additionalProperties or a property schema false."""
    NOT_UNIQUE = "not_unique"
    SCHEMA_MISMATCH = "schema_mismatch"
    """anyOf, oneOf, not, contains, and any other keyword."""


KIND_RANK = {kind: rank for rank, kind in enumerate(ViolationKind)}
"""Each kind's place among the violations at one parameter."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One thing wrong with a call's arguments."""

    kind: ViolationKind
    parameter: str
    """Path of the parameter, such as ``passengers[0].name``; for a missing one, its
    own path; empty for the arguments as a whole."""
    message: str
    """One sentence the model can act on, such as
    ``Parameter 'count' must be an integer, got string.``"""
    expected: str
    """What the schema wants there, briefly: ``integer``, ``one of: a, b``."""


def _instance(error: ValidationError) -> Any:
    """The value that failed (jsonschema sets it on every error it yields)."""
    return error.instance


def _value(error: ValidationError) -> Any:
    """The failing keyword's value in the schema."""
    return error.validator_value


def _schema(error: ValidationError) -> Mapping[str, Any]:
    """The schema holding the failing keyword; ``{}`` for a ``false`` schema."""
    schema = error.schema
    return schema if isinstance(schema, Mapping) else {}


@dataclass(frozen=True, slots=True)
class Failure:
    """One jsonschema error, with what its message needs."""

    error: ValidationError
    parts: tuple[PathPart, ...]
    mask: str | None
    """What stands for the value when it is a secret."""

    @property
    def path(self) -> str:
        return path_text(self.parts)

    @property
    def subject(self) -> str:
        return f"Parameter '{self.path}'" if self.parts else "Arguments"

    @property
    def value(self) -> Any:
        return _value(self.error)

    @property
    def instance(self) -> Any:
        return _instance(self.error)

    @property
    def schema(self) -> Mapping[str, Any]:
        return _schema(self.error)

    @property
    def got(self) -> str:
        """The offending value, as a message may echo it."""
        instance = self.instance
        if self.mask is not None:
            return self.mask
        if isinstance(instance, Mapping | list):
            return ARTICLES[json_type(instance)]
        return literal(redact_json(instance) if isinstance(instance, str) else instance)

    def found(self, kind: ViolationKind, message: str, expected: str) -> Violation:
        return Violation(kind, self.path, message, expected)


def _type(failure: Failure) -> Violation:
    types = type_names(failure.value)
    message = f"{failure.subject} must be {types_phrase(types)}, got {json_type(failure.instance)}."
    return failure.found(ViolationKind.INVALID_TYPE, message, " or ".join(types))


def _enum(failure: Failure) -> Violation:
    options = list(failure.value)
    if len(options) == 1:
        return _must_be(failure, options[0])
    message = f"{failure.subject} must be one of {listed(options, literal)}; got {failure.got}."
    return failure.found(ViolationKind.INVALID_VALUE, message, f"one of: {listed(options, plain)}")


def _const(failure: Failure) -> Violation:
    return _must_be(failure, failure.value)


def _must_be(failure: Failure, value: object) -> Violation:
    message = f"{failure.subject} must be {literal(value)}; got {failure.got}."
    return failure.found(ViolationKind.INVALID_VALUE, message, plain(value))


_BOUNDS = {
    "minimum": ("at least", ">="),
    "maximum": ("at most", "<="),
    "exclusiveMinimum": ("greater than", ">"),
    "exclusiveMaximum": ("less than", "<"),
}


def _bound(failure: Failure) -> Violation:
    keyword, limit = str(failure.error.validator), failure.value
    if (
        keyword in ("minimum", "maximum")
        and failure.schema.get(f"exclusive{keyword.title()}") is True
    ):
        keyword = f"exclusive{keyword.title()}"  # Draft 4: a boolean beside the bound
    words, sign = _BOUNDS[keyword]
    message = f"{failure.subject} must be {words} {literal(limit)}, got {failure.got}."
    return failure.found(ViolationKind.OUT_OF_RANGE, message, f"{sign} {literal(limit)}")


def _multiple_of(failure: Failure) -> Violation:
    step = literal(failure.value)
    message = f"{failure.subject} must be a multiple of {step}, got {failure.got}."
    return failure.found(ViolationKind.OUT_OF_RANGE, message, f"a multiple of {step}")


_SIZES = {
    "minLength": ("at least", "character"),
    "maxLength": ("at most", "character"),
    "minItems": ("at least", "item"),
    "maxItems": ("at most", "item"),
    "minProperties": ("at least", "property"),
    "maxProperties": ("at most", "property"),
}


def _size(failure: Failure) -> Violation:
    instance = failure.instance
    if failure.error.validator == "minLength" and is_blank(instance):
        return _blank(failure)
    words, noun = _SIZES[str(failure.error.validator)]
    wanted = f"{words} {counted(failure.value, noun)}"
    message = f"{failure.subject} must have {wanted}, got {len(instance)}."
    return failure.found(ViolationKind.INVALID_LENGTH, message, wanted)


def _blank(failure: Failure) -> Violation:
    """A blank string where minLength, or a required parameter (keywords.py), wants text."""
    blank = "" if failure.instance == "" else " or only whitespace"
    return failure.found(
        ViolationKind.INVALID_VALUE,
        f"{failure.subject} cannot be empty{blank}.",
        "a non-empty string",
    )


def _pattern(failure: Failure) -> Violation:
    pattern = literal(failure.value)
    message = f"{failure.subject} must match the pattern {pattern}, got {failure.got}."
    return failure.found(ViolationKind.INVALID_FORMAT, message, f"pattern {plain(failure.value)}")


def _format(failure: Failure) -> Violation:
    name = str(failure.value)
    example = FORMAT_EXAMPLES.get(name)
    such_as = f" such as {literal(example)}" if example else ""
    message = f"{failure.subject} must be a valid {name}{such_as}, got {failure.got}."
    return failure.found(ViolationKind.INVALID_FORMAT, message, name)


def _unique(failure: Failure) -> Violation:
    return failure.found(
        ViolationKind.NOT_UNIQUE,
        f"{failure.subject} must not contain duplicate items.",
        "unique items",
    )


def _extra_items(failure: Failure) -> Violation:
    schema = failure.schema
    tuple_items = schema.get("prefixItems" if failure.error.validator == "items" else "items")
    limit = len(tuple_items) if isinstance(tuple_items, list) else 0
    wanted = f"at most {counted(limit, 'item')}"
    message = f"{failure.subject} must have {wanted}, got {len(failure.instance)}."
    return failure.found(ViolationKind.INVALID_LENGTH, message, wanted)


def _forbidden(failure: Failure) -> Violation:
    """A ``false`` schema: for a property (named by ``properties``), the schema forbids
    the parameter."""
    if failure.parts and isinstance(failure.parts[-1], str):
        return failure.found(
            ViolationKind.UNEXPECTED_PARAMETER, f"Unexpected parameter '{failure.path}'.", "absent"
        )
    return failure.found(
        ViolationKind.SCHEMA_MISMATCH, f"{failure.subject} is not allowed.", "absent"
    )


def _branches(failure: Failure) -> Violation:
    """anyOf and oneOf: a union of types or of values reads as one; else the forms."""
    error, branches = failure.error, list(failure.value)
    one = error.validator == "oneOf"
    context = error.context or []
    failed_all = {each.relative_schema_path[0] for each in context} == set(range(len(branches)))
    shallow = failed_all and all(not each.relative_path for each in context)
    if shallow and all(each.validator == "type" for each in context):
        types = list(
            dict.fromkeys(kind for each in context for kind in type_names(each.validator_value))
        )
        got = json_type(_instance(error))
        message = f"{failure.subject} must be {types_phrase(types)}, got {got}."
        return failure.found(ViolationKind.INVALID_TYPE, message, " or ".join(types))
    if shallow and all(each.validator in ("const", "enum") for each in context):
        options = [
            value
            for each in context
            for value in ([_value(each)] if each.validator == "const" else _value(each))
        ]
        message = f"{failure.subject} must be one of {listed(options, literal)}; got {failure.got}."
        return failure.found(
            ViolationKind.INVALID_VALUE, message, f"one of: {listed(options, plain)}"
        )
    forms = "; ".join(describe(each, article=True) for each in branches[:LISTED_OPTIONS])
    if one and not context:
        message = f"{failure.subject} matches more than one of: {forms}; it must match exactly one."
    else:
        how_many = "exactly one" if one else "at least one"
        message = f"{failure.subject} must match {how_many} of: {forms}; got {failure.got}."
    return failure.found(
        ViolationKind.SCHEMA_MISMATCH,
        message,
        f"{'exactly' if one else 'at least'} one of: {forms}",
    )


def _not(failure: Failure) -> Violation:
    described = describe(failure.value, article=True)
    message = f"{failure.subject} must not be {described}; got {failure.got}."
    return failure.found(ViolationKind.SCHEMA_MISMATCH, message, f"not {described}")


def _contains(failure: Failure) -> Violation:
    described = describe(failure.schema.get("contains"), article=True)
    wanted = f"an item that is {described}"
    if failure.error.validator == "maxContains":
        wanted = f"at most {counted(failure.value, 'item')} that are {described}"
    elif failure.error.validator == "minContains":
        wanted = f"at least {counted(failure.value, 'item')} that are {described}"
    return failure.found(
        ViolationKind.SCHEMA_MISMATCH, f"{failure.subject} must contain {wanted}.", wanted
    )


def _unevaluated(failure: Failure) -> Violation:
    where = f"parameter '{failure.path}'" if failure.parts else "the arguments"
    if failure.value is False:
        message = f"Unexpected parameters in {where}: {clip(failure.error.message)}."
        return failure.found(
            ViolationKind.UNEXPECTED_PARAMETER, message, "declared parameters only"
        )
    message = (
        f"Parameters in {where} that no rule names are invalid: {clip(failure.error.message)}."
    )
    return failure.found(ViolationKind.SCHEMA_MISMATCH, message, describe(failure.value))


def _other(failure: Failure) -> Violation:
    keyword = str(failure.error.validator)
    where = f"parameter '{failure.path}'" if failure.parts else "the arguments"
    message = f"The schema's '{keyword}' rule rejects {where}."
    return failure.found(
        ViolationKind.SCHEMA_MISMATCH,
        message,
        f"{keyword}: {clip(json.dumps(failure.value, default=str))}",
    )


DESCRIBERS: Final[dict[str, Callable[[Failure], Violation]]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    **dict.fromkeys(_BOUNDS, _bound),
    "multipleOf": _multiple_of,
    **dict.fromkeys(_SIZES, _size),
    BLANK: _blank,
    "pattern": _pattern,
    "format": _format,
    "uniqueItems": _unique,
    "items": _extra_items,
    "additionalItems": _extra_items,
    "anyOf": _branches,
    "oneOf": _branches,
    "not": _not,
    "contains": _contains,
    "minContains": _contains,
    "maxContains": _contains,
    "unevaluatedProperties": _unevaluated,
    "properties": _forbidden,
}
"""Violations by the failing keyword (or errord's ``BLANK`` rule); missing and
unexpected parameters are apart."""


def violation(failure: Failure) -> Violation:
    """The violation a failing keyword other than required and additionalProperties
    makes; a ``false`` schema (no keyword) forbids the value."""
    keyword = failure.error.validator
    return _forbidden(failure) if keyword is None else DESCRIBERS.get(str(keyword), _other)(failure)


def missing(error: ValidationError, parts: tuple[PathPart, ...]) -> Violation:
    """A required or dependentRequired property absent; ``parts`` is its own path."""
    path, name = path_text(parts), parts[-1]
    properties = _schema(error).get("properties")
    expected = (
        describe(properties.get(name, True)) if isinstance(properties, Mapping) else "any value"
    )
    if error.validator == "required":
        message = f"Missing required parameter '{path}'."
    else:
        triggers = [
            key
            for key, needed in _value(error).items()
            if key in _instance(error) and name in needed
        ]
        given = ", ".join(map(repr, triggers))
        message = f"Missing parameter '{path}', required when {given} is given."
    return Violation(ViolationKind.MISSING_PARAMETER, path, message, expected)


def unexpected(
    error: ValidationError, parts: tuple[PathPart, ...]
) -> Iterator[tuple[tuple[PathPart, ...], Violation]]:
    """Each parameter ``additionalProperties: false`` forbids, with its path."""
    schema = _schema(error)
    declared = list(schema.get("properties", {}))
    patterns = list(schema.get("patternProperties", {}))
    allowed = listed(declared, plain) if declared else "none"
    if patterns:
        allowed += f"; names matching {listed(patterns, literal)}"
    for name in sorted(_instance(error), key=str):
        if name in declared or any(matches(pattern, name) for pattern in patterns):
            continue
        path = path_text((*parts, name))
        message = f"Unexpected parameter '{path}'; the parameters allowed here are: {allowed}."
        yield (
            (*parts, name),
            Violation(ViolationKind.UNEXPECTED_PARAMETER, path, message, f"one of: {allowed}"),
        )
