"""Secrets masked in JSON values at any depth: the values of secret-named keys, and
credentials in strings, keys among them.

A mapping or list is copied only from its first masked item on, and comes back itself
when nothing in it is masked.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from typing import Final

from errord.decide.model import JSONValue
from errord.decide.redact.kinds import LONGEST_KEY, key_kind
from errord.decide.redact.markers import is_marker, marker
from errord.decide.redact.text import redact_text

_KEY_CACHE_SIZE: Final = 4096
_key_kinds: dict[str, str] = {}
"""The kind of secret each clean key names ("" for none): tool inputs use few keys, again
and again. Keys with a credential in them are never kept."""


def redact_json(value: JSONValue) -> JSONValue:
    """``value`` with secret-named keys' values and credentials in strings masked, at any
    depth; ``value`` itself when nothing is."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return _redact_mapping(value)
    if isinstance(value, list):
        return _redact_list(value)
    return value


def _redact_mapping(mapping: Mapping[str, JSONValue]) -> JSONValue:
    copy: dict[str, JSONValue] | None = None
    for position, (key, item) in enumerate(mapping.items()):
        new_key, new_item = _redact_entry(key, item)
        if copy is None:
            if new_key is key and new_item is item:
                continue
            copy = dict(islice(mapping.items(), position))
        copy[new_key] = new_item
    return mapping if copy is None else copy


def _redact_list(items: list[JSONValue]) -> JSONValue:
    copy: list[JSONValue] | None = None
    for position, item in enumerate(items):
        new_item = redact_json(item)
        if copy is None:
            if new_item is item:
                continue
            copy = items[:position]
        copy.append(new_item)
    return items if copy is None else copy


def _redact_entry(key: str, item: JSONValue) -> tuple[str, JSONValue]:
    new_key, kind = _key_facts(key)
    if kind and _holds_value(item):
        return new_key, item if is_marker(item) else marker(kind)
    return new_key, redact_json(item)


def _key_facts(key: str) -> tuple[str, str]:
    """The key with any credential in it masked, and the kind of secret it names ("": none)."""
    kind = _key_kinds.get(key)
    if kind is not None:
        return key, kind
    new_key = redact_text(key)
    kind = key_kind(new_key) or ""  # as the next redaction will see it: idempotent
    if new_key is key and len(key) <= LONGEST_KEY:
        if len(_key_kinds) >= _KEY_CACHE_SIZE:
            _key_kinds.clear()
        _key_kinds[key] = kind
    return new_key, kind


def _holds_value(item: JSONValue) -> bool:
    """Whether a secret-named key's value can be a secret: not null, a flag or empty."""
    return item is not None and not isinstance(item, bool) and item not in ("", {}, [])
