"""Tool inputs are redacted before anything is stored or logged."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from errord.decide.model import JSONValue

REDACTED = "[REDACTED]"
SECRET_WORDS = re.compile(
    r"passw(or)?d|passphrase|secret|token|apikey|authorization|credential|privatekey|"
    r"accesskey|cookie|sessionid"
)


def redact(arguments: Mapping[str, JSONValue], paths: Iterable[str] = ()) -> dict[str, JSONValue]:
    """A copy of ``arguments`` with secret-looking keys and the dotted ``paths`` masked.

    A path names nested keys (``passenger.passport``); lists are traversed, so
    ``passengers.passport`` masks the key in every element.
    """
    masked = _mask_secrets(arguments)
    assert isinstance(masked, dict)
    for path in paths:
        _mask_path(masked, path.split("."))
    return masked


def is_secret_key(key: str) -> bool:
    """Whether a key names a secret: ``api_key``, ``X-Auth-Token``, ``password``..."""
    return SECRET_WORDS.search(re.sub(r"[^a-z0-9]", "", key.lower())) is not None


def _mask_secrets(value: JSONValue) -> JSONValue:
    if isinstance(value, Mapping):
        return {
            key: REDACTED if is_secret_key(str(key)) else _mask_secrets(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_mask_secrets(item) for item in value]
    return value


def _mask_path(value: JSONValue, keys: list[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _mask_path(item, keys)
    elif isinstance(value, dict) and keys[0] in value:
        if len(keys) == 1:
            value[keys[0]] = REDACTED
        else:
            _mask_path(value[keys[0]], keys[1:])
