"""errord's changes to jsonschema's keywords: required (and a required string left
blank, blank.py), dependentRequired, properties, minLength; and pattern,
patternProperties, additionalProperties run by RE2 in linear time (regexes.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from jsonschema import Draft3Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend

from errord.decide.arguments.blank import BLANK, left_blank
from errord.decide.arguments.regexes import matches


def _required(
    validator: Any,  # a Validator; its stub lacks _resolver
    required: Any,
    instance: Any,
    schema: Any,
) -> Iterator[ValidationError]:
    """As jsonschema's, but each error's path names the missing property; and a
    required string left blank where its schema does not admit it (blank.py) is an
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
