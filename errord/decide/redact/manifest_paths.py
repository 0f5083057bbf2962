"""Values that a manifest's dotted ``redact`` path names, masked whole as ``manifest``.

A path names nested keys (``passenger.passport``); lists are traversed, so
``passengers.passport`` masks the key in every element.
"""

from __future__ import annotations

from collections.abc import Mapping

from errord.decide.model import JSONValue
from errord.decide.redact.markers import MANIFEST


def mask_path(value: JSONValue, keys: list[str]) -> JSONValue:
    """``value`` with what the path ``keys`` (a dotted path, split) names masked; ``value``
    itself when the path names nothing, or only what is masked already."""
    if isinstance(value, list):
        items = [mask_path(item, keys) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    if not isinstance(value, Mapping) or keys[0] not in value:
        return value
    current = value[keys[0]]
    if len(keys) > 1:
        new = mask_path(current, keys[1:])
    else:
        new = current if current == MANIFEST else MANIFEST
    return value if new is current else {**value, keys[0]: new}
