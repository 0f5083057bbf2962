"""Example values a schema accepts: candidates built from its keywords, each checked by jsonschema.

Candidates come best first (the schema's own examples, default, const and enum; then
values built from its type and constraints), and the first the schema accepts wins, so
keywords no candidate is built from still hold.
"""

from __future__ import annotations

import itertools
import json
import math
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import Enum
from typing import Any, Final

import referencing.exceptions
from jsonschema.protocols import Validator

from errord.decide.arguments.display import type_names
from errord.decide.arguments.flatten import MAX_DEPTH, Where, flatten, is_number, merge
from errord.decide.arguments.formats import FORMAT_EXAMPLES
from errord.decide.arguments.patterns import pattern_samples
from errord.decide.arguments.regexes import matches
from errord.decide.arguments.schemas import measure, root_resolver

MAX_ITEMS: Final = 64
"""Items of one array in an example; a schema asking for more gets none."""
MAX_CHECKS: Final = 2_000
"""Candidate values checked against a schema while building one example."""
MAX_CHECKED_VALUES: Final = 200_000
"""Checks times the values of the schema: a check costs up to one step per value, so a
schema of more than a hundred values gets fewer than MAX_CHECKS (one of 10,000, 20)."""
MAX_CHARS: Final = 10 * MAX_ITEMS
"""Characters of a string in an example; a schema asking for more gets none built."""


class _Absent(Enum):
    ABSENT = "absent"


ABSENT: Final = _Absent.ABSENT
"""No value found."""


class Examples:
    """Builds example values, checking each candidate against its (sub)schema.

    Candidates come lazily, best first; each is checked with the tool's compiled
    validator evolved to the subschema, at most MAX_CHECKS times in all, and fewer
    for a large schema (MAX_CHECKED_VALUES).
    """

    def __init__(self, validator: Validator) -> None:
        self._root = validator
        self._checks = 0
        values, _ = measure(validator.schema)
        self._max_checks = min(MAX_CHECKS, MAX_CHECKED_VALUES // max(1, values))

    @property
    def exhausted(self) -> bool:
        """True once the checks allowed ran out: a value not found may still exist."""
        return self._checks > self._max_checks

    def arguments(self) -> dict[str, Any]:
        """The first object the whole schema accepts; ``{}`` if none is found."""
        schema = self._root.schema
        if not isinstance(schema, Mapping):
            return {}
        root = Where(root_resolver(schema))
        node, where = flatten(schema, root)
        for candidate in self._candidates(merge(node, {"type": "object"}), where):
            if isinstance(candidate, dict) and self._accepts(schema, root, candidate):
                return candidate
        return {}

    def values(self, schema: Any, where: Where) -> Iterator[Any]:
        """Distinct values ``schema`` accepts, best first."""
        seen: set[str] = set()
        for candidate in self._candidates(schema, where):
            key = json.dumps(candidate, sort_keys=True, default=repr)
            if key not in seen:
                seen.add(key)
                if self._accepts(schema, where, candidate):
                    yield candidate

    def nth(self, schema: Any, where: Where, variant: int = 0) -> Any:
        """The ``variant``-th value ``schema`` accepts, or its last; ABSENT if none."""
        found = list(itertools.islice(self.values(schema, where), variant + 1))
        return found[-1] if found else ABSENT

    def _accepts(self, schema: Any, where: Where, value: Any) -> bool:
        self._checks += 1
        if self._checks > self._max_checks:
            return False
        try:
            # evolve keeps the validator's draft, format checks and keyword changes;
            # _resolver is how jsonschema's own descend says where references resolve.
            return self._root.evolve(schema=schema, _resolver=where.resolver).is_valid(value)
        except referencing.exceptions.Unresolvable:
            return False

    def _candidates(self, schema: Any, where: Where) -> Iterator[Any]:
        if where.depth > MAX_DEPTH or schema is False or self._checks > self._max_checks:
            return
        node, where = flatten(schema, where)
        for key in ("examples", "default", "const", "enum"):
            listed = node.get(key) if key in ("examples", "enum") else [node.get(key, ABSENT)]
            yield from (each for each in listed or () if each is not ABSENT)
        rest = {key: value for key, value in node.items() if key not in _BRANCHING}
        branches = [*node.get("anyOf", ()), *node.get("oneOf", ())]
        if "if" in node:
            branches += [node[key] for key in ("then", "else") if key in node]
        for branch in sorted(branches, key=lambda branch: _recurs(branch, where)):
            merged = merge(rest, flatten(branch, where.deeper())[0])
            yield from self._candidates(merged, where.deeper())
        for kind in _candidate_types(node):
            yield from _BUILDERS[kind](self, node, where)

    def strings(self, node: Mapping[str, Any], where: Where) -> Iterator[Any]:
        low, high = _whole(node.get("minLength")) or 0, _whole(node.get("maxLength"))
        fmt, pattern = node.get("format"), node.get("pattern")
        if isinstance(fmt, str) and fmt in FORMAT_EXAMPLES:
            yield FORMAT_EXAMPLES[fmt]
        for sample in pattern_samples(pattern) if isinstance(pattern, str) else ():
            yield sample
            if low <= MAX_CHARS:
                yield _fit(sample, low, high)
        if low <= MAX_CHARS:
            yield from (_fit(word, low, high) for word in _WORDS)

    def numbers(self, node: Mapping[str, Any], where: Where) -> Iterator[Any]:
        return _number_candidates(node, integral=False)

    def integers(self, node: Mapping[str, Any], where: Where) -> Iterator[Any]:
        return _number_candidates(node, integral=True)

    def booleans(self, node: Mapping[str, Any], where: Where) -> Iterator[Any]:
        return iter((True, False))

    def nulls(self, node: Mapping[str, Any], where: Where) -> Iterator[Any]:
        return iter((None,))

    def objects(self, node: Mapping[str, Any], where: Where) -> Iterator[Any]:
        """The required properties; then enough optional ones for minProperties; then
        all; then variants of each (other values) for arrays of unique items."""
        properties = node.get("properties")
        declared = list(properties) if isinstance(properties, Mapping) else []
        required = [name for name in node.get("required", ()) if isinstance(name, str)]
        optional = [name for name in declared if name not in required]
        wanted = node.get("minProperties", 0)
        fill = optional[: max(0, int(wanted) - len(required))] if is_number(wanted) else []
        name_sets = list(dict.fromkeys(map(tuple, (required, [*required, *fill], declared))))
        for variant in range(MAX_ITEMS):
            made = [self._object(node, names, where, variant) for names in name_sets]
            if all(each is ABSENT for each in made):
                return
            yield from (each for each in made if each is not ABSENT)

    def _object(
        self, node: Mapping[str, Any], names: Iterable[str], where: Where, variant: int
    ) -> Any:
        made: dict[str, Any] = {}
        for name in names:
            value = self.nth(_property_schema(node, name), where.deeper(), variant)
            if value is ABSENT:
                return ABSENT
            made[name] = value
        return made

    def arrays(self, node: Mapping[str, Any], where: Where) -> Iterator[Any]:
        """``minItems`` items, or one; distinct ones when ``uniqueItems``; then ``[]``."""
        items, prefix = node.get("items", True), node.get("prefixItems", [])
        if isinstance(items, list):  # Drafts 4 to 2019-09: items as a tuple
            items, prefix = node.get("additionalItems", True), items
        low, most = _whole(node.get("minItems")) or 0, _whole(node.get("maxItems"))
        high = MAX_ITEMS if most is None else most
        size = min(max(low, len(prefix), 0 if items is False else 1), high)
        unique = node.get("uniqueItems") is True
        made = self._array(prefix, items, size, unique, where) if size <= MAX_ITEMS else ABSENT
        if made is not ABSENT:
            yield made
            contained = self.nth(node.get("contains", True), where.deeper())
            if "contains" in node and contained is not ABSENT:
                yield [contained, *made][: max(1, size)]
        if low == 0:
            yield []

    def _array(self, prefix: list[Any], items: Any, size: int, unique: bool, where: Where) -> Any:
        made: list[Any] = []
        for index in range(size):
            schema = prefix[index] if index < len(prefix) else items
            value = self.nth(schema, where.deeper(), index if unique else 0)
            if value is ABSENT:
                return ABSENT
            made.append(value)
        return made


def _recurs(branch: Any, where: Where) -> bool:
    """Whether ``branch`` follows a reference the example is already inside."""
    return isinstance(branch, Mapping) and branch.get("$ref") in where.refs


Builder = Callable[[Examples, Mapping[str, Any], Where], Iterator[Any]]
_BUILDERS: Final[dict[str, Builder]] = {
    "string": Examples.strings,
    "number": Examples.numbers,
    "integer": Examples.integers,
    "boolean": Examples.booleans,
    "null": Examples.nulls,
    "object": Examples.objects,
    "array": Examples.arrays,
}
"""Candidate values of each JSON type."""
_BRANCHING = frozenset({"anyOf", "oneOf", "if", "then", "else"})
_WORDS = ("example", *(f"example{n}" for n in range(2, MAX_ITEMS + 1)), *string.ascii_lowercase)
"""Strings an example tries, fitted to the length bounds; more than one for unique items."""
_TYPE_HINTS = {
    "object": (
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "minProperties",
    ),
    "array": ("items", "prefixItems", "minItems", "maxItems", "contains", "uniqueItems"),
    "string": ("minLength", "maxLength", "pattern", "format"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
}
_ANY_TYPE = ("string", "integer", "boolean", "object", "array", "null")


def _candidate_types(node: Mapping[str, Any]) -> list[str]:
    """The node's types, null last; inferred from its keywords when it names none."""
    if "type" in node:
        kinds = type_names(node["type"])
    else:
        hinted = (
            kind for kind, hints in _TYPE_HINTS.items() if any(each in node for each in hints)
        )
        kinds = list(hinted) or list(_ANY_TYPE)
    return sorted((kind for kind in kinds if kind in _BUILDERS), key=lambda kind: kind == "null")


def _property_schema(node: Mapping[str, Any], name: str) -> Any:
    properties = node.get("properties")
    if isinstance(properties, Mapping) and name in properties:
        return properties[name]
    patterns = node.get("patternProperties")
    for pattern, schema in patterns.items() if isinstance(patterns, Mapping) else ():
        if matches(pattern, name):
            return schema
    return node.get("additionalProperties", True)


def _whole(value: object) -> int | None:
    """A count of the schema (``maxLength``, ``minItems``...) as an int: a schema sent
    over the wire as a protobuf Struct has every number a float (``3.0``); None when it
    states none, or not as a finite number."""
    return int(value) if is_number(value) and math.isfinite(value) else None


def _fit(word: str, low: int, high: int | None) -> str:
    """``word`` padded with x to ``low`` characters and cut to ``high``."""
    text = word + "x" * max(0, low - len(word))
    return text if high is None else text[:high]


def _number_candidates(node: Mapping[str, Any], integral: bool) -> Iterator[int | float]:
    """Numbers near 1, 0, the bounds and their middle, on the node's step; then
    further ones, for arrays of unique items. The validator picks those that fit."""
    low = _bound_value(node, "minimum", "exclusiveMinimum")
    high = _bound_value(node, "maximum", "exclusiveMaximum")
    multiple = node.get("multipleOf")
    step = multiple if is_number(multiple) and multiple > 0 else None
    anchors: list[float] = [1, 0]
    if low is not None:
        anchors = [low, low + (step or 1), *anchors]
    if high is not None:
        anchors += [high, high - (step or 1)]
    if low is not None and high is not None:
        anchors.append((low + high) / 2)
    for shift in range(MAX_ITEMS):
        for anchor in anchors:
            for sign in (1, -1) if shift else (1,):
                yield from _near(anchor + sign * shift * (step or 1), step, integral)


def _near(value: float, step: float | None, integral: bool) -> Iterator[int | float]:
    """``value`` itself unless a step or integrality forbids it; then the multiples of
    ``step`` (or integers) on either side of it."""
    if step is None and not integral:
        yield int(value) if float(value).is_integer() else value
    try:
        multiples = (math.ceil(value / (step or 1)), math.floor(value / (step or 1)))
    except (OverflowError, ValueError):
        return
    for multiple in multiples:
        for number in (multiple * (step or 1), round(multiple * (step or 1), 12)):
            if float(number).is_integer():
                yield int(number)
            elif not integral:
                yield number


def _bound_value(node: Mapping[str, Any], inclusive: str, exclusive: str) -> float | None:
    """The tighter of a node's inclusive and exclusive bound."""
    closed, open_ = node.get(inclusive), node.get(exclusive)
    bounds = [value for value in (closed, open_) if is_number(value)]
    if not bounds:
        return None
    return max(bounds) if inclusive == "minimum" else min(bounds)
