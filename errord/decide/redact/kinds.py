"""The kinds of secret: the key names that name one (``api_key``, ``X-Auth-Token``,
``db_password``) and the kind each names, and the marker that stands where a secret of a
kind was, ``[REDACTED:<kind>]``: its kind says why."""

from __future__ import annotations

import re
from typing import Final

from errord.decide.model import JSONValue

_KEY_SUFFIXES: Final = (
    # The first suffix a normalized key ends with names its kind: the specific ones first.
    ("secretaccesskey", "aws_secret_key"),
    ("awskey", "aws_secret_key"),
    ("sharedaccesskey", "azure_shared_access_key"),
    ("accountkey", "azure_storage_key"),
    ("password", "password"),
    ("passwords", "password"),
    ("passwd", "password"),
    ("passphrase", "password"),
    ("pwd", "password"),
    ("token", "token"),
    ("apikey", "api_key"),
    ("apikeys", "api_key"),
    ("subscriptionkey", "api_key"),
    ("privatekey", "private_key"),
    ("secret", "secret_key"),
    ("secrets", "secret_key"),
    ("secretkey", "secret_key"),
    ("accesskey", "secret_key"),
    ("signingkey", "secret_key"),
    ("encryptionkey", "secret_key"),
    ("masterkey", "secret_key"),
    ("authorization", "authorization"),
    ("auth", "authorization"),
    ("cookie", "cookie"),
    ("cookies", "cookie"),
    ("sessionid", "session"),
    ("session", "session"),
    ("credential", "credentials"),
    ("credentials", "credentials"),
    ("signature", "signature"),
)
_ANY_KEY_SUFFIX: Final = tuple(suffix for suffix, _ in _KEY_SUFFIXES)
_KEY_EXACT: Final = {"pass": "password", "sig": "signature"}
"""Short names that name a secret only on their own (``bypass`` and ``design`` do not)."""
_KEY_PREFIXES: Final = ("password", "passwd")
"""``password_confirmation``, ``passwordHash``: kind password."""
_NOT_SECRET_KEYS: Final = frozenset(
    {
        "pagetoken",
        "nextpagetoken",
        "prevpagetoken",
        "previouspagetoken",
        "nexttoken",
        "continuationtoken",
        "paginationtoken",
    }
)
"""Pagination cursors: named tokens, yet opaque positions, not credentials."""
_NOT_ALPHANUMERIC: Final = re.compile(r"[^a-z0-9]+")

KEY_WORDS: Final = (
    # A key that names a secret (key_kind) has one of these in it.
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "cookie",
    "session",
    "credential",
    "sig",
)
LONGEST_KEY: Final = 64
"""Characters in the longest key read as a key: a longer text is not a name."""


def key_kind(key: str) -> str | None:
    """The kind of secret a key names, or None.

    The key is compared in lowercase letters and digits only, so ``X-Api-Key``, ``api_key``
    and ``apiKey`` are one name. A name that ends with a denied word names a secret
    (``db_password``, ``githubToken``); ``max_tokens``, ``author`` and ``session_count``
    do not.
    """
    name = _NOT_ALPHANUMERIC.sub("", key.lower())
    if name in _KEY_EXACT:
        return _KEY_EXACT[name]
    if name.endswith(_ANY_KEY_SUFFIX) and name not in _NOT_SECRET_KEYS:
        return next(kind for suffix, kind in _KEY_SUFFIXES if name.endswith(suffix))
    return "password" if name.startswith(_KEY_PREFIXES) else None


def is_secret_key(key: str) -> bool:
    """Whether a key names a secret: ``api_key``, ``X-Auth-Token``, ``password``..."""
    return key_kind(key) is not None


MARKER_PREFIX: Final = "[REDACTED:"


def marker(kind: str) -> str:
    """What replaces a secret of ``kind``: ``[REDACTED:api_key]``."""
    return f"{MARKER_PREFIX}{kind}]"


MANIFEST: Final = marker("manifest")
"""What replaces a value that a manifest's ``redact`` path names."""


def is_marker(item: JSONValue) -> bool:
    """Whether ``item`` is a marker as a whole: masked already, to be left as it is."""
    return isinstance(item, str) and item.startswith(MARKER_PREFIX) and item.endswith("]")
