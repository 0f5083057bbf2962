"""A schema flattened to one node: its ``$ref`` target and ``allOf`` branches merged in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

import referencing.exceptions

from errord.decide.arguments.display import type_names
from errord.decide.arguments.schemas import Resolver

MAX_DEPTH: Final = 8
"""Nesting of schemas (objects, arrays, references, branches) an example descends."""


def is_number(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is a JSON number (a boolean is not)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def merge(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """Both schemas' keywords in one, best effort: the stricter bound, the union of
    required and properties, the intersection of types; else ``second``'s."""
    merged = dict(first)
    for key, value in second.items():
        mine = merged.get(key)
        if key not in merged:
            merged[key] = value
        elif key == "properties" and isinstance(value, Mapping) and isinstance(mine, Mapping):
            merged[key] = {
                **mine,
                **{k: {"allOf": [mine[k], v]} if k in mine else v for k, v in value.items()},
            }
        elif key == "required" and isinstance(value, list) and isinstance(mine, list):
            merged[key] = list(dict.fromkeys([*mine, *value]))
        elif key == "type":
            theirs = type_names(value)
            merged[key] = [
                t
                for t in type_names(mine)
                if t in theirs or (t == "integer" and "number" in theirs)
            ]
            merged[key] += (
                ["integer"] if "number" in type_names(mine) and "integer" in theirs else []
            )
        elif key.startswith("min") or key == "exclusiveMinimum":
            merged[key] = max(mine, value) if is_number(mine) and is_number(value) else value
        elif key.startswith("max") or key == "exclusiveMaximum":
            merged[key] = min(mine, value) if is_number(mine) and is_number(value) else value
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True, slots=True)
class Where:
    """Where an example is being built: how references resolve, how deep, through
    which references (a branch that would follow one again is tried last)."""

    resolver: Resolver
    depth: int = 0
    refs: frozenset[str] = frozenset()

    def deeper(self) -> Where:
        return Where(self.resolver, self.depth + 1, self.refs)


def flatten(schema: Any, where: Where) -> tuple[dict[str, Any], Where]:
    """``schema`` with its ``$ref`` target and ``allOf`` branches merged in."""
    if schema is True or not isinstance(schema, Mapping):
        return ({"not": {}} if schema is False else {}), where
    node = dict(schema)
    ref = node.pop("$ref", None)
    if isinstance(ref, str) and where.depth < MAX_DEPTH:
        try:
            resolved = where.resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            return node, where
        followed = Where(resolved.resolver, where.depth + 1, where.refs | {ref})
        target, where = flatten(resolved.contents, followed)
        node = merge(target, node)
    branches = node.pop("allOf", None)
    for branch in branches if isinstance(branches, list) and where.depth < MAX_DEPTH else ():
        node = merge(node, flatten(branch, where.deeper())[0])
    return node, where
