"""A schema's regular expressions (``pattern`` values, ``patternProperties`` names), run
by RE2 in linear time, and the check at compile time that RE2 can run every one.

Models send the strings and the property names these patterns search, so Python's
backtracking ``re`` would let a pattern such as ``(a|aa)+$`` stall a request for
seconds on a value of a few dozen characters. keywords.py runs ``pattern``,
``patternProperties`` and ``additionalProperties`` with these; jsonschema's own
``unevaluatedProperties`` matches ``patternProperties`` with ``re``, so a schema may
not combine the two.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from errord.decide.arguments.regex import linear_search, unsupported

__all__ = ["matches", "unsupported_pattern"]

_DATA_KEYWORDS = frozenset({"enum", "const", "examples", "default"})
"""Keywords whose values are data, never schemas."""

matches = linear_search
"""``matches(pattern, text)``: whether ``pattern`` occurs in ``text``, in linear time."""

Path = list[str | int]


def unsupported_pattern(schema: Any) -> tuple[Path, str] | None:
    """The path in ``schema`` of the first regular expression errord cannot run, and
    why; None when it can run them all."""
    uses_unevaluated = False
    pattern_properties: Path | None = None
    for path, node in _schemas(schema, []):
        if isinstance(node.get("pattern"), str):
            reason = unsupported(node["pattern"])
            if reason is not None:
                return [*path, "pattern"], f"pattern {node['pattern']!r}: {reason}"
        names = node.get("patternProperties")
        for name in names if isinstance(names, Mapping) else ():
            reason = unsupported(name) if isinstance(name, str) else None
            if reason is not None:
                return [*path, "patternProperties"], f"patternProperties {name!r}: {reason}"
        if isinstance(names, Mapping) and pattern_properties is None:
            pattern_properties = [*path, "patternProperties"]
        uses_unevaluated = uses_unevaluated or "unevaluatedProperties" in node
    if uses_unevaluated and pattern_properties is not None:
        return pattern_properties, (
            "patternProperties cannot be used with unevaluatedProperties in the same schema:"
            " errord matches property names in linear time, and that combination would not"
        )
    return None


def _schemas(node: Any, path: Path) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """Every mapping in ``node`` that may be a schema, with its path."""
    if isinstance(node, list):
        for index, each in enumerate(node):
            yield from _schemas(each, [*path, index])
    elif isinstance(node, Mapping):
        yield path, node
        for key, value in node.items():
            if key not in _DATA_KEYWORDS:
                yield from _schemas(value, [*path, key])
