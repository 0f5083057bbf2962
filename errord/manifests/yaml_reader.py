"""Reading a YAML file into typed values, every problem located as ``file:line: field``.

The file is composed into PyYAML's node tree and walked by hand: the nodes keep
the line of every key and value, show the duplicate keys that ``safe_load``
silently drops, and let reading go on after a problem, so that one pass finds
them all. Scalars still get YAML's types (``true`` is a boolean, not an
integer).

A Reader reads the nodes of one file and appends each problem it finds to a
list of Problem. A Read is a function ``(reader, node, field) -> value or
None``, None meaning the value was invalid and reported; the combinators build
the Read of a field from smaller ones (``list_of(checked(Reader.integer, ...))``).
Nothing here knows what the file describes.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias, TypeGuard, TypeVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from errord.decide.model import JSONValue
from errord.errors import Problem
from errord.manifests.file_text import UnreadableFile, read_text
from errord.manifests.root import ManifestRoot

T = TypeVar("T")
U = TypeVar("U")
R = TypeVar("R", bound="Reader")

MAX_DEPTH = 100
"""Deepest nesting of YAML collections read; deeper would exhaust Python's stack."""

MISSING = object()
"""What a reader returns for a value it reported as invalid, where None is valid."""


# Composing a file.


def compose_all(path: Path, reader: Reader, root: ManifestRoot) -> list[Node] | None:
    """Every YAML document in the file as a node tree, or None after reporting why not
    (the file is read under ``root`` and within file_text.py's bounds; yaml_bounds.py
    checks the trees)."""
    text = _read_text(path, reader, root)
    return None if text is None else _compose_text(text, reader)


def _read_text(path: Path, reader: Reader, root: ManifestRoot) -> str | None:
    try:
        return read_text(path, root)
    except UnreadableFile as exc:
        reader.report_line(exc.line, "", exc.message)
    return None


def _compose_text(text: str, reader: Reader) -> list[Node] | None:
    try:
        return list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        reader.report_line(_error_line(exc), "", f"invalid YAML: {_yaml_error_message(exc)}")
    except yaml.YAMLError as exc:  # a ReaderError: a character YAML does not allow
        line = text.count("\n", 0, getattr(exc, "position", 0)) + 1
        reader.report_line(line, "", f"invalid YAML: {str(exc).splitlines()[0]}")
    except RecursionError:
        reader.report_line(0, "", f"nested more than {MAX_DEPTH} levels deep")
    return None


def _error_line(error: yaml.MarkedYAMLError) -> int:
    mark = error.problem_mark or error.context_mark
    return 0 if mark is None else mark.line + 1


def _yaml_error_message(error: yaml.MarkedYAMLError) -> str:
    """PyYAML's problem, then its context (``while scanning a quoted scalar at line 3``)."""
    message = error.problem or "syntax error"
    if error.context and error.context_mark:
        return f"{message} ({error.context} at line {error.context_mark.line + 1})"
    if error.context:
        return f"{message} ({error.context})"
    return message


# Reading nodes.


class Reader:
    """Reads one file's nodes into Python values, reporting each problem with its line."""

    def __init__(self, file: str, problems: list[Problem]) -> None:
        self.file = file
        self.problems = problems
        """Where each problem found goes, after those already there."""
        self._loader = yaml.SafeLoader("")
        self._expanding: set[int] = set()
        """ids of the nodes being converted, to catch an alias that contains itself."""
        self._converted: dict[int, JSONValue] = {}
        """Node id -> its JSON value: an alias is converted once, as PyYAML does."""

    @property
    def problem_count(self) -> int:
        return len(self.problems)

    def report(self, node: Node, field: str, message: str) -> None:
        self.report_line(node.start_mark.line + 1, field, message)

    def report_line(self, line: int, field: str, message: str) -> None:
        self.problems.append(Problem(self.file, line, field, message))

    def source(self, node: Node) -> str:
        """``file:line`` of ``node``."""
        return f"{self.file}:{node.start_mark.line + 1}"

    def mapping(
        self, node: Node, field: str, allowed: Sequence[str] | None = None
    ) -> dict[str, tuple[Node, Node]] | None:
        """Key -> (key node, value node); reports duplicate keys, and keys not in ``allowed``."""
        if not isinstance(node, MappingNode):
            self.report(node, field, f"expected a mapping, got {describe(node)}")
            return None
        pairs: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, field)
            if key is None:
                continue
            if key in pairs:
                first_line = pairs[key][0].start_mark.line + 1
                message = f"duplicate key {key!r} (first at line {first_line})"
                self.report(key_node, join_field(field, key), message)
            elif allowed is not None and key not in allowed:
                self.report(key_node, join_field(field, key), _unknown_key_message(key, allowed))
            else:
                pairs[key] = (key_node, value_node)
        return pairs

    def _key(self, node: Node, field: str) -> str | None:
        if node.tag == "tag:yaml.org,2002:merge":
            self.report(node, field, "merge keys ('<<') are not supported")
            return None
        key = self._scalar(node, field, "a string key")
        if isinstance(key, str):
            return key
        if key is not MISSING:
            self.report(node, field, f"expected a string key, got {_describe_typed(node, key)}")
        return None

    def sequence(self, node: Node, field: str) -> list[Node] | None:
        if isinstance(node, SequenceNode):
            return list(node.value)
        self.report(node, field, f"expected a list, got {describe(node)}")
        return None

    def string(self, node: Node, field: str) -> str | None:
        return self._typed(node, field, "a string", _is_string)

    def integer(self, node: Node, field: str) -> int | None:
        return self._typed(node, field, "an integer", _is_integer)

    def number(self, node: Node, field: str) -> float | None:
        return self._typed(node, field, "a number", _is_number)

    def boolean(self, node: Node, field: str) -> bool | None:
        return self._typed(node, field, "a boolean", _is_boolean)

    def _typed(
        self, node: Node, field: str, expected: str, accept: Callable[[object], TypeGuard[T]]
    ) -> T | None:
        value = self._scalar(node, field, expected)
        if accept(value):
            return value
        if value is not MISSING:
            self.report(node, field, f"expected {expected}, got {describe(node)}")
        return None

    def _scalar(self, node: Node, field: str, expected: str) -> object:
        """The scalar's value as YAML types it; MISSING, reported, when there is none."""
        if not isinstance(node, ScalarNode):
            self.report(node, field, f"expected {expected}, got {describe(node)}")
            return MISSING
        construct = self._loader.yaml_constructors.get(node.tag)
        if construct is None:
            self.report(node, field, f"unsupported YAML tag {node.tag!r}")
            return MISSING
        # PyYAML's scalar constructors raise assorted errors on a bad explicit
        # tag (``!!int abc``: ValueError, ``!!timestamp abc``: AttributeError).
        try:
            return construct(self._loader, node)
        except Exception:
            self.report(node, field, f"cannot read {node.value!r} as {node.tag!r}")
            return MISSING

    def json_value(self, node: Node, field: str) -> JSONValue:
        """The node as a JSON value (dict, list, str, number, bool, None); MISSING if invalid."""
        if id(node) in self._converted:
            return self._converted[id(node)]
        if id(node) in self._expanding:
            self.report(node, field, "an alias that contains itself is not a JSON value")
            return MISSING
        self._expanding.add(id(node))
        try:
            value = self._converted[id(node)] = self._json_value(node, field)
        finally:
            self._expanding.discard(id(node))
        return value

    def _json_value(self, node: Node, field: str) -> JSONValue:
        problems_before = self.problem_count
        value: JSONValue
        if isinstance(node, MappingNode):
            pairs = self.mapping(node, field) or {}
            value = {
                key: self.json_value(v, join_field(field, key)) for key, (_, v) in pairs.items()
            }
        elif isinstance(node, SequenceNode):
            value = [self.json_value(item, f"{field}[{i}]") for i, item in enumerate(node.value)]
        else:
            value = self._scalar(node, field, "a JSON value")
            if value is not MISSING and not _is_json_scalar(value):
                message = f"expected a JSON value, got {_describe_typed(node, value)}"
                self.report(node, field, message)
        return MISSING if self.problem_count > problems_before else value

    def built(self, node: Node, field: str, build: Callable[[], T]) -> T | None:
        """``build()``, or None after reporting the ValueError a record raised on construction."""
        try:
            return build()
        except ValueError as exc:
            self.report(node, field, str(exc))
            return None


Read: TypeAlias = Callable[[R, Node, str], T | None]
"""Reads one field's value node with a Reader ``R``; None when it reported the value as invalid."""

FieldReads: TypeAlias = Mapping[str, tuple[str | None, Read[R, object]]]
"""File key -> the record attribute its value sets (None: checked only) and its Read."""


def _is_string(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def _is_integer(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[float]:
    """An int or a finite float; not a bool, though bool is an int in Python."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_boolean(value: object) -> TypeGuard[bool]:
    return isinstance(value, bool)


def _is_json_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | bool) or _is_number(value)


# Messages and field names.


def describe(node: Node) -> str:
    """How a value reads in a message: ``'five'``, ``true``, ``null``, ``a mapping``."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if node.tag == "tag:yaml.org,2002:null":
        return "null"
    text = str(node.value)
    if len(text) > 60:
        text = text[:57] + "..."
    return repr(text) if node.tag == "tag:yaml.org,2002:str" else text


def _describe_typed(node: Node, value: object) -> str:
    """``on (YAML reads it as a bool; quote it to make it a string)``."""
    kind = type(value).__name__
    return f"{describe(node)} (YAML reads it as a {kind}; quote it to make it a string)"


def join_field(field: str, key: str) -> str:
    """The field of ``key`` inside ``field``: ``tools[0].name``, or ``key`` at the top."""
    return f"{field}.{key}" if field else key


def _unknown_key_message(key: str, allowed: Sequence[str]) -> str:
    return f"unknown key {key!r}{_did_you_mean(key, allowed)}; allowed keys: {', '.join(allowed)}"


def _did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'retry_policy'?)``, or nothing when no candidate is close."""
    suggestion = _closest(word, candidates)
    return f" (did you mean {suggestion!r}?)" if suggestion else ""


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` most likely misspells, matching whole names and their
    ``_``-separated parts (``retries`` -> ``retry_policy``); None when nothing is close."""
    owners: dict[str, set[str]] = {}
    for candidate in candidates:
        for alias in {candidate.lower(), *candidate.lower().split("_")}:
            owners.setdefault(alias, set()).add(candidate)
    unambiguous = {alias: names.pop() for alias, names in owners.items() if len(names) == 1}
    matches = difflib.get_close_matches(word.lower(), unambiguous, n=1)
    return unambiguous[matches[0]] if matches else None


# Reads built from smaller reads.


def checked(read: Read[R, T], accept: Callable[[T], bool], requirement: str) -> Read[R, T]:
    """``read``, then reports ``must be <requirement>, got <value>`` unless ``accept(value)``."""

    def read_checked(reader: R, node: Node, field: str) -> T | None:
        value = read(reader, node, field)
        if value is None or accept(value):
            return value
        reader.report(node, field, f"must be {requirement}, got {describe(node)}")
        return None

    return read_checked


def converted(read: Read[R, T], convert: Callable[[T], U]) -> Read[R, U]:
    """``read``, then ``convert`` on a valid value."""

    def read_converted(reader: R, node: Node, field: str) -> U | None:
        value = read(reader, node, field)
        return None if value is None else convert(value)

    return read_converted


def list_of(read_item: Read[R, T]) -> Read[R, tuple[T, ...]]:
    """A YAML list read item by item; every item's problems are reported."""

    def read_list(reader: R, node: Node, field: str) -> tuple[T, ...] | None:
        items = reader.sequence(node, field)
        if items is None:
            return None
        values = [read_item(reader, item, f"{field}[{i}]") for i, item in enumerate(items)]
        valid = [value for value in values if value is not None]
        return tuple(valid) if len(valid) == len(values) else None

    return read_list


def one_of(choices: Mapping[str, T]) -> Read[Reader, T]:
    """A string naming one of ``choices``, case-insensitive."""
    by_upper_name = {name.upper(): value for name, value in choices.items()}

    def read_choice(reader: Reader, node: Node, field: str) -> T | None:
        name = reader.string(node, field)
        if name is None:
            return None
        if name.upper() in by_upper_name:
            return by_upper_name[name.upper()]
        expected = ", ".join(choices)
        message = f"expected one of {expected}, got {name!r}{_did_you_mean(name, choices)}"
        reader.report(node, field, message)
        return None

    return read_choice


def read_fields(
    reader: R, pairs: Mapping[str, tuple[Node, Node]], field: str, reads: FieldReads[R]
) -> dict[str, Any]:
    """Record attribute -> value of every valid field in ``pairs``, read as ``reads`` says."""
    values: dict[str, Any] = {}
    for key, (_, value_node) in pairs.items():
        attribute, read = reads[key]
        value = read(reader, value_node, join_field(field, key))
        if attribute is not None and value is not None:
            values[attribute] = value
    return values


# Finding a node again.


def node_at(node: Node, field: str, path: Iterable[str | int]) -> tuple[Node, str]:
    """The node at ``path`` below ``node`` and its field, or the deepest one that exists."""
    for step in path:
        child = _child(node, step)
        if child is None:
            break
        node = child
        field = f"{field}[{step}]" if isinstance(step, int) else join_field(field, step)
    return node, field


def _child(node: Node, step: str | int) -> Node | None:
    if isinstance(node, MappingNode):
        return next((value for key, value in node.value if key.value == step), None)
    if isinstance(node, SequenceNode) and isinstance(step, int) and step < len(node.value):
        child: Node = node.value[step]
        return child
    return None
