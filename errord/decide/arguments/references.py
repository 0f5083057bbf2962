"""How a schema's ``$ref`` resolves: within the schema and the metaschemas, nothing fetched."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import jsonschema_specifications  # type: ignore[import-untyped]  # no stubs; jsonschema's own dep
import referencing
import referencing.exceptions
import referencing.jsonschema

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
