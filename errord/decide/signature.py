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

import hashlib
import re

from msgspec import Struct

from errord.decide.model import ErrorCode

FINGERPRINT_CHARS = 160
"""Characters of a fingerprint at most; an error's distinguishing words come first."""
SEARCHED_CHARS = 2_000
"""Characters of a message normalized at most."""

# Each pattern replaces one kind of varying detail, in this order: the wide ones (a URL
# holds numbers and paths) before the narrow ones.
VARYING: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"<>]+"), "<url>"),
    (re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"), "<email>"),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
        "<uuid>",
    ),
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?"
        ),
        "<time>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b"), "<time>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"(?<![\w.:])(?:[a-z]:)?(?:[\\/][\w.@-]+){2,}[\\/]?"), "<path>"),
    (re.compile(r"'[^']{0,200}'|\"[^\"]{0,200}\"|`[^`]{0,200}`"), "<quoted>"),
    (re.compile(r"\b(?=[a-z_-]*\d)(?=\w*[a-z])[\w-]{6,}\b"), "<id>"),
    (re.compile(r"\b(?=[a-f]*\d)[0-9a-f]{8,}\b"), "<hex>"),
    (re.compile(r"[-+]?\d+(?:[.,]\d+)*(?:[a-z]{1,3}\b|%)?"), "<n>"),
)
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
        digest = hashlib.blake2b(self.fingerprint.encode(), digest_size=8).hexdigest()
        return f"{self.code.value}:{digest}"


def signature(code: ErrorCode, message: str) -> Signature:
    return Signature(code, fingerprint(message))


def fingerprint(message: str) -> str:
    """``message`` with what varies between occurrences of one error replaced."""
    text = message[:SEARCHED_CHARS].lower()
    for pattern, placeholder in VARYING:
        text = pattern.sub(placeholder, text)
    return SPACES.sub(" ", text).strip()[:FINGERPRINT_CHARS].rstrip()
