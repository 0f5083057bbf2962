"""Values redaction hid: the marker a message shows for a secret, and errors errord cannot judge.

The daemon validates arguments after errord.decide.redact has masked them, so a value may be a
marker (``[REDACTED:manifest]``) where the call held a number or a secret. A violation
whose offending value is a marker says nothing about the real value, and is dropped.
Presence is not hidden: a missing parameter is still missing (a masked one is given),
and a forbidden one is still unexpected. A string that only contains a marker
(``postgres://app:[REDACTED:password]@db``) is judged as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from errord.decide.arguments.display import PathPart
from errord.decide.redact import MANIFEST, MARKER_PREFIX, key_kind, marker

_MARKER = re.compile(re.escape(MARKER_PREFIX) + r"[^\]]+\]")
_UNIQUE = Draft202012Validator({"uniqueItems": True})
_BRANCHES = frozenset({"anyOf", "oneOf"})
_WHOLE_VALUE = frozenset({"enum", "const"})
"""Keywords that compare a whole value, so a marker anywhere inside it hides the answer."""


def is_marker(value: object) -> bool:
    """Whether ``value`` is exactly one of redaction's markers: ``[REDACTED:password]``."""
    return isinstance(value, str) and _MARKER.fullmatch(value) is not None


def holds_marker(value: object) -> bool:
    """Whether ``value`` is a marker or holds one, as a key or a value, at any depth."""
    if isinstance(value, dict):
        return any(holds_marker(key) or holds_marker(each) for key, each in value.items())
    if isinstance(value, list):
        return any(map(holds_marker, value))
    return is_marker(value)


def hides(error: ValidationError) -> bool:
    """Whether redaction may alone have caused ``error``: its value is a marker; it
    compares a value holding one; or it is an anyOf/oneOf of which some branch failed
    only at markers (``contains``: an item holding one; ``uniqueItems``: duplicates only
    among items holding one)."""
    keyword, instance = error.validator, error.instance
    if is_marker(instance):
        return True
    if keyword in _WHOLE_VALUE:
        return holds_marker(instance)
    if keyword in _BRANCHES and error.context:
        return any(all(map(hides, branch)) for branch in _by_branch(error.context))
    if keyword in ("contains", "minContains") and isinstance(instance, list):
        return any(map(holds_marker, instance))
    if keyword == "uniqueItems" and isinstance(instance, list):
        return _UNIQUE.is_valid([each for each in instance if not holds_marker(each)])
    return False


def hidden_name(parts: Iterable[PathPart]) -> bool:
    """Whether a key on the path is a marker: redaction hid the parameter's very name."""
    return any(map(is_marker, parts))


def _by_branch(context: Iterable[ValidationError]) -> list[list[ValidationError]]:
    """An anyOf's or oneOf's errors, by the branch each comes from."""
    branches: dict[Any, list[ValidationError]] = {}
    for each in context:
        branches.setdefault(each.relative_schema_path[0], []).append(each)
    return list(branches.values())


def mask(parts: Iterable[PathPart], redact: frozenset[str]) -> str | None:
    """The marker that stands for a value under a secret key or a ``redact`` path."""
    names = [part for part in parts if isinstance(part, str)]
    kind = next(filter(None, map(key_kind, names)), None)
    if kind is not None:
        return marker(kind)
    paths = (".".join(names[:end]) for end in range(1, len(names) + 1))
    return MANIFEST if any(path in redact for path in paths) else None
