"""Credentials known by their randomness alone: a long run of base64 characters spread as
evenly as in a generated secret. The last resort, after every known format."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Final

from errord.decide.redact.spans import Span

HIGH_ENTROPY: Final = "high_entropy"
"""The kind of a secret found by its randomness: a guess, which never widens the span of a
secret found otherwise (``text._mask``)."""
_RUN: Final = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{32,}=*")
"""32 or more characters of base64 (or base64url), the last resort."""
_HEX_ID: Final = re.compile(r"[0-9a-fA-F_-]+")
"""UUIDs, digests, commit and trace ids: hexadecimal is left alone."""
_ID_PREFIX: Final = re.compile(
    r"(?:call|toolu|srvtoolu|msg|chatcmpl|cmpl|resp|req|run|thread|asst|file|batch|fc|step)[_-]"
)
"""Ids that model APIs and executors hand out, random after their prefix."""
_RANDOM_BITS: Final = 0.85
"""A random string of n characters has close to log2(n) bits of entropy per character;
words, paths and identifiers have fewer."""
_RANDOM_BITS_CAP: Final = 4.8


def looks_generated(text: str) -> bool:
    """Upper and lower case letters and a digit: a generated value, not a word."""
    return text.lower() != text != text.upper() and any(c.isdigit() for c in text)


def looks_random(text: str) -> bool:
    """Whether a long run of base64 characters is a generated secret: mixed case and digits,
    not hexadecimal, not an id of a known kind, its entropy close to a random string's."""
    if _HEX_ID.fullmatch(text) or _ID_PREFIX.match(text) or not looks_generated(text):
        return False
    size = len(text)
    entropy = -sum(n / size * math.log2(n / size) for n in Counter(text).values())
    return entropy >= min(_RANDOM_BITS * math.log2(size), _RANDOM_BITS_CAP)


def random_spans(text: str, lowered: str) -> Iterator[Span]:
    """Runs of base64 that look random (a finder)."""
    for match in _RUN.finditer(text):
        if looks_random(match.group()):
            yield *match.span(), HIGH_ENTROPY
