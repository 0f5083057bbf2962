"""Spans, where a finder saw a secret in a text, and the finders that yield them.

Each finder yields the spans of the secrets one family of patterns finds, in the text or
in its lowercased copy (the same length: see ``text._lowered``); overlapping spans are
masked as one. One alternation of every pattern would be tried at every character
instead: thirty times slower.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, TypeAlias

Span: TypeAlias = tuple[int, int, str]
"""Where a secret is, and its kind."""


class Finder(Protocol):
    """One family of patterns that finds credentials in a text."""

    def __call__(self, text: str, lowered: str) -> Iterator[Span]:
        """The spans of the secrets in ``text``, whose lowercased copy is ``lowered``."""
        ...
