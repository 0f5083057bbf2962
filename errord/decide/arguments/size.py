"""How large a tool's JSON Schema may be: everything built from it (the compiled
validator, examples, violation messages) costs time in proportion to its size, and
checking it recurses once per level.

Real tool schemas have tens to hundreds of values and nest a dozen levels; the bounds
leave room for a hundred times that, and keep a manifest from making a reload, or a
check of a call's arguments, take minutes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

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
