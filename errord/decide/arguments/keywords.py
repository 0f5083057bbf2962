"""errord's changes to jsonschema's keywords: required (and a required string left
blank), dependentRequired, properties, minLength; and pattern, patternProperties,
additionalProperties run by RE2 in linear time (regexes.py).

A required string left blank is an ``invalid_value`` unless its schema admits it. A model
leaves a required string empty (``""``) or only whitespace (``"   "``) when it has
nothing to put there, as a tool that answers "No query provided". A required property
whose schema says ``type: string`` (alone or in a list) is blank where it must not be,
unless the schema speaks to that value itself:

- ``minLength`` stated: 0 admits a blank value; 1 or more rejects it with minLength's
  own violation, the same one;
- ``enum`` or ``const``: each admits the value or rejects it with its own
  ``invalid_value``;
- a ``pattern`` that matches the value admits it (one that does not is a second
  violation, beside this one).

The property's schema is the one beside ``required`` (``properties``, through ``$ref``
and ``allOf``), at any depth the validator reaches, so an object nested in another, or
in an array, has its required strings checked too; the items of an array of strings
are not required parameters and are not. A ``required`` whose properties sit in a
sibling branch (an ``allOf`` branch holding only ``required``) finds no property
schema and is not checked; nor is Draft 3, whose ``required`` is a boolean. Within
``not`` and ``if``, a blank required string counts as not given, as everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any, Final, TypeGuard

from jsonschema import Draft3Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend

from errord.decide.arguments.display import type_names
from errord.decide.arguments.flatten import Where, flatten
from errord.decide.arguments.regexes import matches
from errord.decide.arguments.schemas import Resolver

BLANK: Final = "blank"
"""The ``validator`` of the error a required string left blank makes: errord's rule,
named by no JSON Schema keyword."""
_DECIDING: Final = ("minLength", "enum", "const")
"""Keywords that judge a blank value themselves, admitting or rejecting it."""


def is_blank(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a string that is empty or only whitespace."""
    return isinstance(value, str) and not value.strip()


def left_blank(value: object, name: str, schema: Any, resolver: Resolver) -> bool:
    """Whether ``value``, given for the property ``name`` that ``schema`` requires, is a
    blank string that the property's schema does not admit."""
    if not is_blank(value):
        return False
    node, where = flatten(schema, Where(resolver))
    properties = node.get("properties")
    if not isinstance(properties, Mapping) or name not in properties:
        return False
    prop, _ = flatten(properties[name], where)
    if "string" not in type_names(prop.get("type")) or any(key in prop for key in _DECIDING):
        return False
    pattern = prop.get("pattern")
    return not (isinstance(pattern, str) and matches(pattern, value))


def _required(
    validator: Any,  # a Validator; its stub lacks _resolver
    required: Any,
    instance: Any,
    schema: Any,
) -> Iterator[ValidationError]:
    """As jsonschema's, but each error's path names the missing property; and a
    required string left blank where its schema does not admit it (``left_blank``) is an
    error at the property."""
    if validator.is_type(instance, "object"):
        for name in required:
            if name not in instance:
                yield ValidationError(f"{name!r} is a required property", path=(name,))
            elif left_blank(instance[name], name, schema, validator._resolver):
                yield ValidationError(
                    f"{instance[name]!r} is blank",
                    validator=BLANK,
                    path=(name,),
                    instance=instance[name],
                )


def _dependent_required(
    validator: Validator, dependencies: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """As jsonschema's, but each error's path names the missing property."""
    if validator.is_type(instance, "object"):
        for name, needed in dependencies.items():
            for each in needed if name in instance else ():
                if each not in instance:
                    yield ValidationError(f"{each!r} is a dependency of {name!r}", path=(each,))


def _properties(
    validator: Any,  # a Validator; its stub lacks descend
    properties: Any,
    instance: Any,
    schema: Any,
) -> Iterator[ValidationError]:
    """As jsonschema's, but a property whose schema is ``false`` is named in the
    error's path (jsonschema's descend drops the path of a ``false`` schema)."""
    if not validator.is_type(instance, "object"):
        return
    for name, subschema in properties.items():
        if name in instance and subschema is False:
            yield ValidationError(f"{name!r} is not allowed", path=(name,))
        elif name in instance:
            yield from validator.descend(instance[name], subschema, path=name, schema_path=name)


def _min_length(
    validator: Validator, limit: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """As jsonschema's, and a blank string fails ``minLength >= 1`` too (``"   "`` is empty)."""
    if not validator.is_type(instance, "string"):
        return
    if limit >= 1 and not instance.strip():
        yield ValidationError(f"{instance!r} is empty")
    elif len(instance) < limit:
        yield ValidationError(f"{instance!r} is too short")


def _pattern(
    validator: Validator, pattern: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """As jsonschema's, in linear time."""
    if validator.is_type(instance, "string") and not matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any,  # a Validator; its stub lacks descend
    patterns: Any,
    instance: Any,
    schema: Any,
) -> Iterator[ValidationError]:
    """As jsonschema's, in linear time."""
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if matches(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(
    validator: Any,  # a Validator; its stub lacks descend
    additional: Any,
    instance: Any,
    schema: Any,
) -> Iterator[ValidationError]:
    """As jsonschema's (its messages too), patterns matched in linear time."""
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = sorted(
        (
            name
            for name in instance
            if name not in declared and not any(matches(pattern, name) for pattern in patterns)
        ),
        key=str,
    )
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            names = ", ".join(map(repr, extras))
            listed = ", ".join(map(repr, sorted(patterns)))
            yield ValidationError(f"{names} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            names = ", ".join(map(repr, extras))
            yield ValidationError(
                f"Additional properties are not allowed ({names} {verb} unexpected)"
            )


@cache
def extended(base: type[Validator]) -> type[Validator]:
    """``base`` with errord's keyword changes."""
    changes: dict[str, Callable[..., Iterator[ValidationError]]] = {
        "minLength": _min_length,
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    }
    if base is not Draft3Validator:  # Draft 3: required is a boolean inside properties
        changes |= {
            "required": _required,
            "dependentRequired": _dependent_required,
            "properties": _properties,
        }
    keywords = {name: check for name, check in changes.items() if name in base.VALIDATORS}
    # types-jsonschema leaves extend unannotated.
    extended: type[Validator] = extend(base, keywords)  # type: ignore[no-untyped-call]
    return extended
