"""Secrets masked in values: JSON values at any depth, the values a manifest's ``redact``
paths name, and tool inputs and failure reports as they may be stored, logged or answered.

In a JSON value, the values of secret-named keys and the credentials in strings (keys
among them) are masked. A manifest's dotted ``redact`` path names nested keys
(``passenger.passport``), masked whole as ``manifest``; lists are traversed, so
``passengers.passport`` masks the key in every element. A mapping or list is copied only
from its first masked item on, and comes back itself when nothing in it is masked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Final

from msgspec import structs

from errord.decide.model import FailureReport, JSONValue, ToolFailure
from errord.decide.redact.kinds import LONGEST_KEY, MANIFEST, is_marker, key_kind, marker
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


def redact(arguments: Mapping[str, JSONValue], paths: Iterable[str] = ()) -> dict[str, JSONValue]:
    """``arguments`` with secret-named keys, credentials and the dotted ``paths`` masked;
    ``arguments`` itself when nothing is (and it is a dict).

    A path names nested keys (``passenger.passport``); lists are traversed, so
    ``passengers.passport`` masks the key in every element.
    """
    masked = redact_json(arguments)
    for path in paths:
        masked = mask_path(masked, path.split("."))
    return masked if isinstance(masked, dict) else dict(masked)


def redact_report(report: FailureReport, paths: Iterable[str] = ()) -> FailureReport:
    """``report`` as it may be stored: its arguments (and the manifest's ``paths`` in them),
    error message, exception type and partial result masked; ``report`` itself when
    nothing is."""
    arguments = redact(report.arguments, paths)
    error = _redact_failure(report.error)
    if arguments is report.arguments and error is report.error:
        return report
    return structs.replace(report, arguments=arguments, error=error)


def _redact_failure(error: ToolFailure) -> ToolFailure:
    message = redact_text(error.message)
    exception_type = redact_text(error.exception_type)
    partial_result = redact_json(error.partial_result)
    if (
        message is error.message
        and exception_type is error.exception_type
        and partial_result is error.partial_result
    ):
        return error
    return structs.replace(
        error, message=message, exception_type=exception_type, partial_result=partial_result
    )
