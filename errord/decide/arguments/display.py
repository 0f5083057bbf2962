"""Paths, values, types and schemas as violation messages show them, clipped to a bound."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

VALUE_CHARS: Final = 80
"""Characters of an offending value, or of a schema's literal, a message may echo."""
LISTED_OPTIONS: Final = 20
"""Enum options, or allowed parameters, a message lists before "and N more"."""

PathPart = str | int
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


def path_text(parts: Iterable[PathPart]) -> str:
    """``passengers[0].name``; a key that is not a plain name is quoted: ``a["b c"]``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _NAME.match(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part, ensure_ascii=False)}]"
    return text


def path_key(parts: Sequence[PathPart]) -> tuple[tuple[int, int, str], ...]:
    """A sort key for paths: indexes before names, indexes by number."""
    return tuple((1, 0, part) if isinstance(part, str) else (0, part, "") for part in parts)


def clip(text: str, limit: int = VALUE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with ``...`` where it was cut."""
    return text if len(text) <= limit else text[:limit] + "..."


def json_type(value: object) -> str:
    """The JSON type name of a Python value: ``True`` is a boolean, ``1.0`` a number."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


ARTICLES = {"integer": "an integer", "array": "an array", "object": "an object", "null": "null"}
"""Type names with their article where it is not "a"."""


def type_names(value: object) -> list[str]:
    """The type names a ``type`` keyword's value lists (a name, or a list of them)."""
    if isinstance(value, str):
        return [value]
    return [each for each in value if isinstance(each, str)] if isinstance(value, list) else []


def types_phrase(types: Iterable[str]) -> str:
    """``a string or null``."""
    return " or ".join(ARTICLES.get(each, f"a {each}") for each in types)


def literal(value: object) -> str:
    """A value quoted as a message shows it: ``'celsius'``, ``3``, ``true``."""
    if isinstance(value, str):
        return f"'{clip(value)}'"
    return clip(json.dumps(value, ensure_ascii=False, default=str))


def plain(value: object) -> str:
    """A value as ``expected`` shows it: strings bare."""
    return clip(value) if isinstance(value, str) else literal(value)


def listed(values: Sequence[object], show: Callable[[object], str]) -> str:
    """The first LISTED_OPTIONS values, shown by ``show``, and how many more there are."""
    text = ", ".join(show(each) for each in values[:LISTED_OPTIONS])
    more = len(values) - LISTED_OPTIONS
    return f"{text}, and {more} more" if more > 0 else text


def counted(number: object, noun: str) -> str:
    """``1 item``, ``2 items``, ``0 properties``."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{number} {noun if number == 1 else plural}"


def describe(schema: object, article: bool = False) -> str:
    """What a (sub)schema asks for, in a few words: ``string``, ``one of: a, b``."""
    if schema is True or schema == {}:
        return "any value"
    if not isinstance(schema, Mapping):
        return "nothing" if schema is False else "a value"
    title = schema.get("title")
    types = type_names(schema.get("type"))
    enum = schema.get("enum")
    ref = schema.get("$ref")
    if isinstance(title, str) and title:
        return clip(title, 40)
    if "const" in schema:
        return literal(schema["const"]) if article else plain(schema["const"])
    if isinstance(enum, list) and enum:
        return f"one of: {listed(enum, plain)}"
    if types:
        return types_phrase(types) if article else " or ".join(types)
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    return "a value matching the schema"
