"""Regular expressions from manifests, run by RE2 in time linear in the text searched.

A manifest's patterns (a classification rule's ``message``, a JSON Schema's ``pattern``
and ``patternProperties``) are searched in what executors and models send, so a
backtracking engine would let one pattern such as ``(a|aa)+$`` stall every request on a
message of a few dozen characters. RE2 never backtracks: it has no backreferences and no
lookarounds, and writes the end of the text ``\\z`` where Python writes ``\\Z``. A
pattern RE2 cannot compile is a manifest problem: ``unsupported_pattern`` finds a
schema's first one when the schema is compiled.

keywords.py runs a schema's ``pattern``, ``patternProperties`` and
``additionalProperties`` with these (``matches``); jsonschema's own
``unevaluatedProperties`` matches ``patternProperties`` with ``re``, so a schema may
not combine the two.

This is the one module that imports ``re2`` (google-re2).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

MAX_PROGRAM_MEMORY: Final = 2 << 20
"""Bytes RE2 may use for one compiled pattern; a pattern needing more is refused."""
CACHED: Final = 1024
"""Patterns of JSON Schemas kept compiled for reuse (rules keep their own)."""

_INLINE_FLAGS: Final = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
"""Python flags RE2 also has, as the inline flag it writes them with."""
_IGNORED_FLAGS: Final = re.UNICODE | re.ASCII
"""Python flags with no RE2 counterpart that change nothing a manifest relies on."""
_INLINE_BITS: Final = re.IGNORECASE | re.MULTILINE | re.DOTALL
_HINTS: Final = (
    (re.compile(r"escape sequence: \\Z"), "RE2 writes the end of the text \\z"),
    (re.compile(r"escape sequence: \\\d"), "RE2 has no backreferences"),
    (re.compile(r"operator: \(\?<?[=!]"), "RE2 has no lookarounds"),
)
"""What RE2's complaint about a pattern written for Python means."""


class LinearPattern:
    """A compiled pattern whose search takes time linear in the text."""

    __slots__ = ("_regexp", "pattern")

    def __init__(self, pattern: str, regexp: Any) -> None:
        self.pattern = pattern
        """The pattern as written."""
        self._regexp = regexp

    def search(self, text: str) -> bool:
        """Whether the pattern occurs anywhere in ``text``."""
        return self._regexp.search(text) is not None

    def __repr__(self) -> str:
        return f"LinearPattern({self.pattern!r})"


def compile_linear(pattern: str, flags: int = 0) -> LinearPattern:
    """``pattern`` compiled by RE2 with Python's ``flags`` (IGNORECASE, MULTILINE,
    DOTALL); ValueError saying why when RE2 cannot run it."""
    unsupported = flags & ~_IGNORED_FLAGS & ~_INLINE_BITS
    if unsupported:
        raise ValueError(f"RE2 does not support the flag {re.RegexFlag(unsupported)!r}")
    inline = "".join(letter for flag, letter in _INLINE_FLAGS if flags & flag)
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PROGRAM_MEMORY
    try:
        regexp = re2.compile(f"(?{inline}){pattern}" if inline else pattern, options)
    except re2.error as exc:
        raise ValueError(_reason(exc)) from None
    return LinearPattern(pattern, regexp)


@functools.lru_cache(maxsize=CACHED)
def linear(pattern: str) -> LinearPattern:
    """``pattern`` (no flags) compiled by RE2 once; ValueError when RE2 cannot run it."""
    return compile_linear(pattern)


def linear_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` occurs in ``text``; a pattern RE2 cannot compile never does
    (compiling a schema refuses such patterns, see ``unsupported``)."""
    try:
        return linear(pattern).search(text)
    except ValueError:
        return False


def unsupported(pattern: str) -> str | None:
    """Why RE2 cannot run ``pattern``; None when it can."""
    try:
        linear(pattern)
    except ValueError as exc:
        return str(exc)
    return None


def _reason(error: Exception) -> str:
    """RE2's complaint (it comes as bytes), with a hint where Python syntax caused it."""
    detail = error.args[0] if error.args else ""
    text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
    hint = next((hint for marker, hint in _HINTS if marker.search(text)), "")
    linear_note = "errord runs manifest patterns with RE2, in linear time"
    return f"{text} ({hint}; {linear_note})" if hint else f"{text} ({linear_note})"


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
