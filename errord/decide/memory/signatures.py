"""An error's signature: what makes two failures "the same error" for episodic memory.

A signature is the normalized code plus a fingerprint of the message: the message
lowercased, with what differs between occurrences of one error replaced by a
placeholder (numbers and durations, ids, UUIDs, hex digests, URLs, e-mail
addresses, IP addresses, file paths, quoted values, timestamps), whitespace
collapsed, and cut to FINGERPRINT_CHARS. So "timeout after 30s on req 8812" and
"timeout after 31s on req 9120" share one signature, while "connection refused" and
"connection reset by peer" do not. Pure and deterministic: the same failure always
has the same signature, across restarts and machines.
"""

from __future__ import annotations

import functools
import hashlib
import re

from msgspec import Struct

from errord.decide.model import ErrorCode

FINGERPRINT_CHARS = 160
"""Characters of a fingerprint at most; an error's distinguishing words come first."""
SEARCHED_CHARS = 2_000
"""Characters of a message normalized at most."""

# Each alternative names one kind of varying detail; where two could match at one place,
# the earlier wins (a URL holds numbers and paths). Each starts only where a token does,
# so that no alternative rescans a long word from every position inside it.
VARYING: tuple[tuple[str, str], ...] = (
    ("url", r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s'\"<>]+"),
    ("email", r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    ("uuid", r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    (
        "time",
        r"\b\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?"
        r"|\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b",
    ),
    ("ip", r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"),
    ("path", r"(?<![\w.:])(?:[a-z]:)?(?:[\\/][\w.@-]+){2,}[\\/]?"),
    ("quoted", r"'[^']{0,200}'|\"[^\"]{0,200}\"|`[^`]{0,200}`"),
    ("id", r"\b(?=[a-z_-]*\d)(?=\w*[a-z])[\w-]{6,}\b"),
    ("hex", r"\b(?=[a-f]*\d)[0-9a-f]{8,}\b"),
    ("n", r"(?<![\w.,])[-+]?\d+(?:[.,]\d+)*(?:[a-z]{1,3}\b|%)?|\d+"),
)
DETAILS = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in VARYING))
CACHED_MESSAGES = 1_024
"""Fingerprints of the latest distinct messages kept: one error repeats its message."""
SPACES = re.compile(r"\s+")


class Signature(Struct, frozen=True, array_like=True, gc=False):
    """Which error a failure is, for episodic memory."""

    code: ErrorCode
    fingerprint: str
    """The message with its varying details replaced, such as "timeout after <n> on req
    <n>"."""

    @property
    def key(self) -> str:
        """A short stable key: the code and a digest of the fingerprint."""
        return f"{self.code.value}:{_digest(self.fingerprint)}"


def signature(code: ErrorCode, message: str) -> Signature:
    return Signature(code, fingerprint(message))


def fingerprint(message: str) -> str:
    """``message`` with what varies between occurrences of one error replaced."""
    return _fingerprint(message[:SEARCHED_CHARS])


@functools.lru_cache(maxsize=CACHED_MESSAGES)
def _fingerprint(message: str) -> str:
    text = DETAILS.sub(_placeholder, message.lower())
    return SPACES.sub(" ", text).strip()[:FINGERPRINT_CHARS].rstrip()


@functools.lru_cache(maxsize=CACHED_MESSAGES)
def _digest(fingerprint: str) -> str:
    return hashlib.blake2b(fingerprint.encode(), digest_size=8).hexdigest()


def _placeholder(found: re.Match[str]) -> str:
    return f"<{found.lastgroup}>"
