"""The marker that stands where a secret was, ``[REDACTED:<kind>]``: its kind says why."""

from __future__ import annotations

from typing import Final

from errord.decide.model import JSONValue

MARKER_PREFIX: Final = "[REDACTED:"


def marker(kind: str) -> str:
    """What replaces a secret of ``kind``: ``[REDACTED:api_key]``."""
    return f"{MARKER_PREFIX}{kind}]"


MANIFEST: Final = marker("manifest")
"""What replaces a value that a manifest's ``redact`` path names."""


def is_marker(item: JSONValue) -> bool:
    """Whether ``item`` is a marker as a whole: masked already, to be left as it is."""
    return isinstance(item, str) and item.startswith(MARKER_PREFIX) and item.endswith("]")
