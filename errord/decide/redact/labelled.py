"""Credentials known by what labels them: an HTTP authorization scheme (``Bearer <token>``)
or a key that names a secret (``password=<value>``, ``"api_key": "<value>"``).

Both are read in the lowercased text; the value's span is masked in the text itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from errord.decide.redact.kinds import KEY_WORDS, LONGEST_KEY, key_kind
from errord.decide.redact.spans import Span

_SCHEME: Final = re.compile(
    r"b(?<![a-z0-9]b)(?:(?P<bearer>earer)|asic)\s+(?P<s>[a-z0-9._~+/-]{8,}=*)"
)
"""An HTTP authorization scheme and its credential, in the lowercased text."""


def _not_a_word(text: str) -> bool:
    """Anything but lowercase letters: ``Bearer authentication`` names no token."""
    return not (text.isalpha() and text.islower())


def scheme_spans(text: str, lowered: str) -> Iterator[Span]:
    """The credential after ``Bearer`` or ``Basic`` (a finder)."""
    for match in _SCHEME.finditer(lowered):
        start, end = match.span("s")
        if _not_a_word(text[start:end]):
            yield start, end, "bearer_token" if match.group("bearer") else "basic_auth"


KEY_TAIL: Final = r"[\w-]{0,24}"
"""What may follow a key word in a key (``token_v2``)."""
SEPARATOR: Final = r"(?:\\?[\"'])?\s*[:=]"
"""Between a key and its value: ``=``, ``:``, ``": `` or ``\\": ``."""
_KEY: Final = "(?:" + "|".join(KEY_WORDS) + ")" + KEY_TAIL
_KEY_SEPARATOR: Final = re.compile(rf"(?P<key>{_KEY}){SEPARATOR}\s*")
"""A key with a key word in it and its separator, in the lowercased text: found from
the key word, so that the whole key is read back from before it (_whole_key)."""
_VALUE: Final = re.compile(
    # Atomic: a scheme is never taken for the value (``Bearer [REDACTED:...]``).
    r"(?>(?:(?P<scheme>bearer|basic|token|bot|digest|apikey|ssws)\s+)?)"
    r"(?:\"(?P<dq>(?:[^\"\\]|\\.)*)\""
    r"|'(?P<sq>(?:[^'\\]|\\.)*)'"
    r"|\\\"(?P<edq>[^\"\\]*)\\\""
    r"|(?P<bare>[^\s\"'&;,<>()\[\]{}\\]+))"
)
"""The value after a separator: quoted (JSON, Python reprs, escaped JSON) or bare, up to
the end of a query parameter, header, connection string field or word."""
_VALUES: Final = ("dq", "sq", "edq", "bare")
_SCHEME_KINDS: Final = {"bearer": "bearer_token", "basic": "basic_auth"}
_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def key_value_spans(text: str, lowered: str) -> Iterator[Span]:
    """``key=value`` and ``key: value`` (query strings, headers, connection strings, JSON):
    the value of a key that names a secret (a finder). Only those values are read, so that
    each character is looked at a bounded number of times."""
    position = 0
    while (key := _KEY_SEPARATOR.search(lowered, position)) is not None:
        position = key.end()
        kind = key_kind(_whole_key(lowered, key))
        value = _VALUE.match(lowered, position) if kind is not None else None
        if kind is None or value is None:
            continue
        group = next(name for name in _VALUES if value.start(name) >= 0)
        start, end = value.span(group)
        if start < end:
            yield start, end, _SCHEME_KINDS.get(value.group("scheme") or "", kind)
        position = value.end()


def _whole_key(lowered: str, match: re.Match[str]) -> str:
    """The key of a ``key=value`` match, which begins at a key word inside the key."""
    start = match.start()
    end = match.end("key")
    while start > 0 and end - start < LONGEST_KEY and lowered[start - 1] in _KEY_CHARS:
        start -= 1
    return lowered[start:end]
