"""Strings that match a regex ``pattern``, sampled from the pattern's parse tree."""

from __future__ import annotations

import importlib
import re
import string
from collections.abc import Callable, Iterator
from typing import Any

# re's own parser (sre_parse before Python 3.11), the one hypothesis's ``from_regex``
# also builds its strings from: it has no stub, is private, and sre_parse warns that it
# is deprecated, so it is loaded by name here and used nowhere else in errord.
_parser: Any = importlib.import_module("re._parser")

MAX_SAMPLE_CHARS = 1_000
"""Characters of a sample; a pattern that asks for more gets none."""
_PRINTABLE = string.ascii_lowercase + string.digits + string.ascii_uppercase + "_-. @:/+,"


def pattern_samples(pattern: str) -> Iterator[str]:
    """A few strings that match ``pattern``, when its syntax is simple enough."""
    try:
        parsed = _parser.parse(pattern)
    except (re.error, ValueError, RecursionError):
        return
    for variant in range(4):
        sample = _sample(list(parsed), variant)
        if sample is not None:
            yield sample


def _sample(items: list[Any], variant: int) -> str | None:
    out: list[str] = []
    length = 0
    for op, arg in items:
        part = _sample_one(op, arg, variant)
        if part is None:
            return None
        length += len(part)
        if length > MAX_SAMPLE_CHARS:
            return None
        out.append(part)
    return "".join(out)


def _sample_one(op: Any, arg: Any, variant: int) -> str | None:
    if op is _parser.LITERAL:
        return chr(arg)
    if op is _parser.NOT_LITERAL:
        return "b" if chr(arg) == "a" else "a"
    if op is _parser.ANY:
        return "a"
    if op is _parser.IN:
        chars = _class_chars(arg)
        return chars[variant % len(chars)] if chars else None
    if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT, getattr(_parser, "POSSESSIVE_REPEAT", None)):
        low, high, sub = arg
        count: int = low if variant == 0 else min(high, low + variant)
        piece = _sample(list(sub), variant)
        if piece is None or count * len(piece) > MAX_SAMPLE_CHARS:
            return None
        return piece * count
    if op is _parser.SUBPATTERN:
        return _sample(list(arg[-1]), variant)
    if op is getattr(_parser, "ATOMIC_GROUP", None):
        return _sample(list(arg), variant)
    if op is _parser.BRANCH:
        branches = arg[1]
        return _sample(list(branches[variant % len(branches)]), variant)
    if op in (_parser.AT, _parser.ASSERT, _parser.ASSERT_NOT):
        return ""  # anchors and lookarounds: the whole sample is checked afterwards
    return None


_CATEGORIES: dict[Any, Callable[[str], bool]] = {
    _parser.CATEGORY_DIGIT: str.isdigit,
    _parser.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
    _parser.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    _parser.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
    _parser.CATEGORY_SPACE: str.isspace,
    _parser.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
}


def _class_chars(items: list[Any]) -> list[str]:
    """Characters a ``[...]`` class matches: printable ones first, then its literals."""
    negate = bool(items) and items[0][0] is _parser.NEGATE
    members = items[1:] if negate else items

    def member(char: str) -> bool:
        return any(_is_member(op, arg, char) for op, arg in members)

    if negate:
        return [char for char in _PRINTABLE if not member(char)]
    chars = [char for char in _PRINTABLE + " " if member(char)]
    extra = [
        chr(arg if op is _parser.LITERAL else arg[0])
        for op, arg in members
        if op in (_parser.LITERAL, _parser.RANGE)
    ]
    return chars + [char for char in extra if char not in chars]


def _is_member(op: Any, arg: Any, char: str) -> bool:
    if op is _parser.LITERAL:
        return bool(ord(char) == arg)
    if op is _parser.RANGE:
        return bool(arg[0] <= ord(char) <= arg[1])
    if op is _parser.CATEGORY:
        return arg in _CATEGORIES and _CATEGORIES[arg](char)
    return False
