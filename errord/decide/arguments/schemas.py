"""A tool's JSON Schema as errord takes it: bounded in size, its ``$ref``s resolved within
it, checked against its draft's metaschema the same way in every run.

Everything built from a schema (the compiled validator, examples, violation messages)
costs time in proportion to its size, and checking it recurses once per level. Real tool
schemas have tens to hundreds of values and nest a dozen levels; the bounds
(MAX_SCHEMA_VALUES, MAX_SCHEMA_DEPTH) leave room for a hundred times that, and keep a
manifest from making a reload, or a check of a call's arguments, take minutes.

A ``$ref`` resolves within the schema and the metaschemas: nothing is fetched.

jsonschema's ``check_schema`` reports the "best match" of the metaschema's errors, the
first of equally relevant ones in the order they came; some keywords (the
``additionalProperties`` under ``$defs``) yield theirs in the order of a set, which
changes with PYTHONHASHSEED, so that ``errord check`` would name another problem from
one run to the next. Here the errors are put in a fixed order first. The message is
clipped: jsonschema quotes the offending value whole.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import jsonschema_specifications  # type: ignore[import-untyped]  # no stubs; jsonschema's own dep
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import relevance
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from errord.decide.arguments.display import PathPart, clip

MAX_SCHEMA_VALUES: Final = 10_000
"""Values (keys included) a tool's schema may hold, a value repeated by aliases counted
at each use."""
MAX_SCHEMA_DEPTH: Final = 32
"""Levels of objects and arrays a tool's schema may nest."""


def oversized(schema: Any) -> str | None:
    """Why ``schema`` is too large or too deep; None when it is not."""
    values, depth = measure(schema)
    if values > MAX_SCHEMA_VALUES:
        return f"more than {MAX_SCHEMA_VALUES:,} values (keys included)"
    if depth > MAX_SCHEMA_DEPTH:
        return f"nested more than {MAX_SCHEMA_DEPTH} levels deep"
    return None


def measure(schema: Any) -> tuple[int, int]:
    """How many values ``schema`` holds (keys included) and how deep it nests, counted
    no further than just past MAX_SCHEMA_VALUES and MAX_SCHEMA_DEPTH, however many
    its shared parts expand to."""
    count, deepest = 0, 0
    pending: list[tuple[Any, int]] = [(schema, 0)]
    while pending and count <= MAX_SCHEMA_VALUES and deepest <= MAX_SCHEMA_DEPTH:
        node, depth = pending.pop()
        count += 1 + (len(node) if isinstance(node, Mapping) else 0)
        deepest = max(deepest, depth)
        if isinstance(node, Mapping):
            pending.extend((value, depth + 1) for value in node.values())
        elif isinstance(node, list):
            pending.extend((item, depth + 1) for item in node)
    return count, deepest


if TYPE_CHECKING:
    from referencing._core import Resolver as _Resolver  # exported by no public module

Resolver: TypeAlias = "_Resolver[Any]"
LOCAL_ONLY: referencing.Registry[Any] = referencing.Registry()
"""References resolve within the schema (and the metaschemas): nothing is fetched."""
_DATA_KEYWORDS = frozenset({"enum", "const", "examples", "default"})


def _specification(schema: Mapping[str, Any]) -> referencing.Specification[Any]:
    dialect = schema.get("$schema")
    return referencing.jsonschema.specification_with(
        dialect if isinstance(dialect, str) else "", default=referencing.jsonschema.DRAFT202012
    )


def root_resolver(schema: Mapping[str, Any]) -> Resolver:
    """A resolver of references from ``schema``'s root (its draft from ``$schema``)."""
    resource = referencing.Resource.from_contents(schema, _specification(schema))
    registry: referencing.Registry[Any] = jsonschema_specifications.REGISTRY.combine(LOCAL_ONLY)
    return registry.resolver_with_root(resource)


def unresolved_reference(node: Any, resolver: Resolver) -> str | None:
    """The first ``$ref`` in ``node`` that does not resolve, if any."""
    if isinstance(node, list):
        return next(filter(None, (unresolved_reference(each, resolver) for each in node)), None)
    if not isinstance(node, Mapping):
        return None
    if isinstance(node.get("$id"), str):
        resource = referencing.Resource.from_contents(node, _specification(node))
        resolver = resolver.in_subresource(resource)
    ref = node.get("$ref")
    if isinstance(ref, str):
        try:
            resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            return ref
    subschemas = (value for key, value in node.items() if key not in _DATA_KEYWORDS)
    return next(filter(None, (unresolved_reference(each, resolver) for each in subschemas)), None)


PROBLEM_CHARS: Final = 200
"""Characters of jsonschema's message about an invalid schema that a problem quotes."""


def metaschema_problem(
    schema: Any, draft: type[Validator] = Draft202012Validator
) -> tuple[list[PathPart], str] | None:
    """Where in ``schema`` (a path) and why ``draft``'s metaschema refuses it; None
    when it accepts it."""
    meta_validator = validator_for(draft.META_SCHEMA, default=draft)
    checker = meta_validator(draft.META_SCHEMA, format_checker=draft.FORMAT_CHECKER)
    best = _best(checker.iter_errors(schema))
    if best is None:
        return None
    return list(best.absolute_path), clip(best.message, PROBLEM_CHARS)


def _best(errors: Iterable[ValidationError]) -> ValidationError | None:
    """jsonschema's ``best_match``, ties broken by a fixed order instead of arrival."""
    best = max(sorted(errors, key=_fixed_order), key=relevance, default=None)
    while best is not None and best.context:
        smallest = heapq.nsmallest(2, sorted(best.context, key=_fixed_order), key=relevance)
        if len(smallest) == 2 and relevance(smallest[0]) == relevance(smallest[1]):
            return best
        best = smallest[0]
    return best


def _fixed_order(error: ValidationError) -> tuple[Any, ...]:
    return (_parts(error.absolute_path), _parts(error.absolute_schema_path), error.message)


def _parts(path: Sequence[Any]) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, str(part)) for part in path)
