"""Credentials masked in free text: every finder's spans replaced by markers.

A cheap pre-check keeps clean strings away from the finders' patterns. Masking is
deterministic and idempotent, and gives back the very string it was given when nothing is
masked, so that a clean text allocates nothing.
"""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Final

from errord.decide.redact.finders import (
    HIGH_ENTROPY,
    KEY_TAIL,
    SEPARATOR,
    Finder,
    Span,
    key_value_spans,
    part_spans,
    pem_spans,
    random_spans,
    scheme_spans,
    token_spans,
)
from errord.decide.redact.kinds import KEY_WORDS, MARKER_PREFIX, marker

_FINDERS: Final[tuple[Finder, ...]] = (
    # In order of preference where two find secrets at the same place.
    pem_spans,
    token_spans,
    part_spans,
    scheme_spans,
    key_value_spans,
    random_spans,
)

# Every finder's match implies a match of _HINT in the lowercased text or of _LONG_RUN:
# prefixed tokens and random runs are 20 characters or longer (but keys that their
# prefix alone names, ``sk-live-123``), the rest need a sign or a word of these.
_HINT: Final = re.compile(
    "|".join(
        (
            "=",
            "@",
            "-----begin",
            r"bearer\s",
            r"basic\s",
            r"k[-_](?:live|test)[-_]",
            *(word + KEY_TAIL + SEPARATOR for word in KEY_WORDS),
        )
    )
)
_LONG_RUN: Final = re.compile(r"[A-Za-z0-9+/_.~-]{20}")
_TOUCHING: Final = re.compile(r"\][\w+/=.~-]|[\w+/=.~-](?=\[REDACTED:)")
"""A marker with a character of a token, a key or a base64 run right before or after it."""
_MORE_PASSES: Final = 8
"""Each pass masks more of the text, and markers are never masked: a bound, not a limit."""
_SHORTEST: Final = 6
"""Characters in the shortest text a pattern masks (``pwd=ab``)."""
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def redact_text(text: str) -> str:
    """``text`` with every credential in it masked; ``text`` itself when there is none."""
    redacted = _redact_once(text)
    for _ in range(_MORE_PASSES):
        if redacted is text or _TOUCHING.search(redacted) is None:
            break
        # A marker next to a word can uncover a token that the secret beside it hid (a
        # token's start and end are checked against its neighbours): mask until stable.
        text, redacted = redacted, _redact_once(redacted)
    return redacted


def _redact_once(text: str) -> str:
    if len(text) < _SHORTEST:
        return text
    lowered = _lowered(text)
    if _HINT.search(lowered) is None and _LONG_RUN.search(text) is None:
        return text
    spans = [span for find in _FINDERS for span in find(text, lowered)]
    spans.sort(key=itemgetter(0))  # stable: at one place, the first finder's kind
    return _mask(text, spans) if spans else text


def _lowered(text: str) -> str:
    """``text`` in lowercase, character for character (str.lower can lengthen a text)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def _mask(text: str, spans: list[Span]) -> str:
    """``text`` with each span, or run of overlapping spans, replaced by one marker; spans
    already masked are left as they are."""
    pieces: list[str] = []
    done = 0
    for start, end, kind in spans:
        if end <= done or text.startswith(MARKER_PREFIX, start):
            continue
        if start < done:  # overlaps the last masked span: extend it, unless only random
            if kind == HIGH_ENTROPY:
                continue
        else:
            pieces.append(text[done:start])
            pieces.append(marker(kind))
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)
