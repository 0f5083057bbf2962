"""errord's changes to jsonschema's keywords: required, dependentRequired, properties, minLength."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from jsonschema import Draft3Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend


def _required(
    validator: Validator, required: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """As jsonschema's, but each error's path names the missing property."""
    if validator.is_type(instance, "object"):
        for name in required:
            if name not in instance:
                yield ValidationError(f"{name!r} is a required property", path=(name,))


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
    """As jsonschema's, and a blank string fails ``minLength >= 1`` too (seed 003)."""
    if not validator.is_type(instance, "string"):
        return
    if limit >= 1 and not instance.strip():
        yield ValidationError(f"{instance!r} is empty")
    elif len(instance) < limit:
        yield ValidationError(f"{instance!r} is too short")


@cache
def extended(base: type[Validator]) -> type[Validator]:
    """``base`` with errord's keyword changes."""
    changes: dict[str, Callable[..., Iterator[ValidationError]]] = {"minLength": _min_length}
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
