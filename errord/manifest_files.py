"""Tool manifests from YAML files, or every problem in them as ``file:line: field: message``.

One file holds one YAML document, a mapping whose ``tools`` list has one entry
per tool::

    tools:
      - name: flight_search
        timeout_ms: 30000
        retry_policy: {initial_delay_ms: 50, max_attempts: 3}
        classification:
          - {http_status: 503, class: permanent}
        alternatives: [flight_search_backup]

Each file is composed into PyYAML's node tree and walked by hand: the nodes keep
the line of every key and value, show the duplicate keys that ``safe_load``
silently drops, and let reading go on after a problem, so that one
ManifestError lists them all. Scalars still get YAML's types (``true`` is a
boolean, not an integer). Problems about a whole file or directory are on line 0.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias, TypeGuard, TypeVar

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from errord.errors import ManifestError, Problem
from errord.manifest import (
    ClassificationRule,
    DefaultValue,
    ManifestSet,
    RetryPolicy,
    ToolManifest,
)
from errord.model import ErrorClass, ErrorCode, JSONValue

T = TypeVar("T")
U = TypeVar("U")

MANIFEST_SUFFIXES = (".yaml", ".yml")
MAX_DEPTH = 100
"""Deepest nesting of YAML collections read; deeper would exhaust Python's stack."""


def load_manifest_dir(
    directory: Path,
    defaults: RetryPolicy = RetryPolicy(),  # noqa: B008 (frozen, so one shared instance is safe)
    default_timeout: float = 30.0,
) -> ManifestSet:
    """Load every ``*.yaml`` and ``*.yml`` file in ``directory``, in name order.

    Not recursive; hidden files are skipped. ``defaults`` is the retry policy
    that each tool's ``retry_policy`` overrides, ``default_timeout`` the timeout
    in seconds of a tool without ``timeout_ms``. Raises ManifestError with every
    problem of every file, a tool name defined twice across files included.
    """
    session = _Session(defaults, default_timeout)
    manifests = [
        manifest for path in _manifest_paths(directory) for manifest in session.read_file(path)
    ]
    session.raise_problems()
    return ManifestSet(manifests)


def load_manifest_file(
    path: Path,
    defaults: RetryPolicy = RetryPolicy(),  # noqa: B008 (frozen, so one shared instance is safe)
    default_timeout: float = 30.0,
) -> list[ToolManifest]:
    """The tools of one manifest file; ManifestError with every problem in it."""
    session = _Session(defaults, default_timeout)
    manifests = session.read_file(path)
    session.raise_problems()
    return manifests


def _manifest_paths(directory: Path) -> list[Path]:
    """The manifest files in ``directory`` by name; ManifestError when it cannot be listed."""
    try:
        entries = list(directory.iterdir())
    except FileNotFoundError:
        raise _directory_error(directory, "manifest directory does not exist") from None
    except NotADirectoryError:
        raise _directory_error(directory, "not a directory") from None
    except OSError as exc:
        raise _directory_error(directory, f"cannot list directory: {exc.strerror}") from None
    return sorted(
        (entry for entry in entries if _is_manifest_file(entry)), key=lambda entry: entry.name
    )


def _is_manifest_file(path: Path) -> bool:
    return path.suffix in MANIFEST_SUFFIXES and not path.name.startswith(".") and path.is_file()


def _directory_error(directory: Path, message: str) -> ManifestError:
    return ManifestError([Problem(str(directory), 0, "", message)])


class _Session:
    """One load: the problems found so far and where each tool name was first defined."""

    def __init__(self, defaults: RetryPolicy, default_timeout: float) -> None:
        self.defaults = defaults
        self.default_timeout = default_timeout
        self.problems: list[Problem] = []
        self.first_definitions: dict[str, str] = {}
        """Tool name -> ``file:line`` of the tool that defined it first."""

    def read_file(self, path: Path) -> list[ToolManifest]:
        """The valid tools of one file; its problems go to ``self.problems``."""
        reader = _Reader(str(path), self)
        first_problem = len(self.problems)
        document = _compose(path, reader)
        tools = [] if document is None else _read_document(reader, document)
        self.problems[first_problem:] = sorted(
            self.problems[first_problem:], key=lambda problem: (problem.line, problem.field)
        )
        return [tool for tool in tools if tool is not None]

    def raise_problems(self) -> None:
        if self.problems:
            raise ManifestError(self.problems)


def _compose(path: Path, reader: _Reader) -> Node | None:
    """The file's single YAML document as a node tree, or None after reporting why not."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        reader.report_line(0, "", f"cannot read file: {exc.strerror}")
        return None
    except UnicodeDecodeError as exc:
        reader.report_line(0, "", f"not UTF-8 text: {exc.reason} at byte {exc.start}")
        return None
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        reader.report_line(_error_line(exc), "", f"invalid YAML: {_yaml_error_message(exc)}")
        return None
    except yaml.YAMLError as exc:  # a ReaderError: a character YAML does not allow
        line = text.count("\n", 0, getattr(exc, "position", 0)) + 1
        reader.report_line(line, "", f"invalid YAML: {str(exc).splitlines()[0]}")
        return None
    except RecursionError:
        reader.report_line(0, "", f"nested more than {MAX_DEPTH} levels deep")
        return None
    if not documents:
        reader.report_line(0, "", "empty manifest file: expected a mapping with 'tools'")
        return None
    for extra in documents[1:]:
        reader.report(extra, "", "a second YAML document; put every tool in one 'tools' list")
    too_deep = _node_below(documents[0], MAX_DEPTH)
    if too_deep is not None:
        reader.report(too_deep, "", f"nested more than {MAX_DEPTH} levels deep")
        return None
    return documents[0]


def _node_below(root: Node, depth: int) -> Node | None:
    """A node more than ``depth`` levels below ``root``, if there is one."""
    pending, seen = [(root, 0)], set()
    while pending:
        node, level = pending.pop()
        if level > depth:
            return node
        if id(node) not in seen and isinstance(node, MappingNode | SequenceNode):
            seen.add(id(node))
            children = node.value if isinstance(node, SequenceNode) else _flatten(node.value)
            pending.extend((child, level + 1) for child in children)
    return None


def _flatten(pairs: Iterable[tuple[Node, Node]]) -> list[Node]:
    return [node for pair in pairs for node in pair]


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


_MISSING = object()
"""What a reader returns for a value it reported as invalid, where None is valid."""


class _Reader:
    """Reads one file's nodes into Python values, reporting each problem with its line."""

    def __init__(self, file: str, session: _Session) -> None:
        self.file = file
        self.session = session
        self._loader = yaml.SafeLoader("")
        self._expanding: set[int] = set()
        """ids of the nodes being converted, to catch an alias that contains itself."""
        self._converted: dict[int, JSONValue] = {}
        """Node id -> its JSON value: an alias is converted once, as PyYAML does."""

    @property
    def problem_count(self) -> int:
        return len(self.session.problems)

    def report(self, node: Node, field: str, message: str) -> None:
        self.report_line(node.start_mark.line + 1, field, message)

    def report_line(self, line: int, field: str, message: str) -> None:
        self.session.problems.append(Problem(self.file, line, field, message))

    def source(self, node: Node) -> str:
        """``file:line`` of ``node``."""
        return f"{self.file}:{node.start_mark.line + 1}"

    def mapping(
        self, node: Node, field: str, allowed: Sequence[str] | None = None
    ) -> dict[str, tuple[Node, Node]] | None:
        """Key -> (key node, value node); reports duplicate keys, and keys not in ``allowed``."""
        if not isinstance(node, MappingNode):
            self.report(node, field, f"expected a mapping, got {_describe(node)}")
            return None
        pairs: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, field)
            if key is None:
                continue
            if key in pairs:
                first_line = pairs[key][0].start_mark.line + 1
                message = f"duplicate key {key!r} (first at line {first_line})"
                self.report(key_node, _join(field, key), message)
            elif allowed is not None and key not in allowed:
                self.report(key_node, _join(field, key), _unknown_key_message(key, allowed))
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
        if key is not _MISSING:
            self.report(node, field, f"expected a string key, got {_describe_typed(node, key)}")
        return None

    def sequence(self, node: Node, field: str) -> list[Node] | None:
        if isinstance(node, SequenceNode):
            return list(node.value)
        self.report(node, field, f"expected a list, got {_describe(node)}")
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
        if value is not _MISSING:
            self.report(node, field, f"expected {expected}, got {_describe(node)}")
        return None

    def _scalar(self, node: Node, field: str, expected: str) -> object:
        """The scalar's value as YAML types it; _MISSING, reported, when there is none."""
        if not isinstance(node, ScalarNode):
            self.report(node, field, f"expected {expected}, got {_describe(node)}")
            return _MISSING
        construct = self._loader.yaml_constructors.get(node.tag)
        if construct is None:
            self.report(node, field, f"unsupported YAML tag {node.tag!r}")
            return _MISSING
        # PyYAML's scalar constructors raise assorted errors on a bad explicit
        # tag (``!!int abc``: ValueError, ``!!timestamp abc``: AttributeError).
        try:
            return construct(self._loader, node)
        except Exception:
            self.report(node, field, f"cannot read {node.value!r} as {node.tag!r}")
            return _MISSING

    def json_value(self, node: Node, field: str) -> JSONValue:
        """The node as a JSON value (dict, list, str, number, bool, None); _MISSING if invalid."""
        if id(node) in self._converted:
            return self._converted[id(node)]
        if id(node) in self._expanding:
            self.report(node, field, "an alias that contains itself is not a JSON value")
            return _MISSING
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
            value = {key: self.json_value(v, _join(field, key)) for key, (_, v) in pairs.items()}
        elif isinstance(node, SequenceNode):
            value = [self.json_value(item, f"{field}[{i}]") for i, item in enumerate(node.value)]
        else:
            value = self._scalar(node, field, "a JSON value")
            if value is not _MISSING and not _is_json_scalar(value):
                message = f"expected a JSON value, got {_describe_typed(node, value)}"
                self.report(node, field, message)
        return _MISSING if self.problem_count > problems_before else value

    def built(self, node: Node, field: str, build: Callable[[], T]) -> T | None:
        """``build()``, or None after reporting the ValueError a record raised on construction."""
        try:
            return build()
        except ValueError as exc:
            self.report(node, field, str(exc))
            return None

    def claim_tool_name(self, name: str, name_node: Node, field: str, source: str) -> None:
        """Record where ``name`` is defined; report it if another tool already has it."""
        first = self.session.first_definitions.setdefault(name, source)
        if first != source:
            self.report(
                name_node, field, f"duplicate tool name {name!r} (first defined at {first})"
            )


_Read: TypeAlias = Callable[[_Reader, Node, str], T | None]
"""Reads one field's value node; None when it reported the value as invalid."""


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


def _describe(node: Node) -> str:
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
    return f"{_describe(node)} (YAML reads it as a {kind}; quote it to make it a string)"


def _join(field: str, key: str) -> str:
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


# Readers built from smaller readers.


def _checked(read: _Read[T], accept: Callable[[T], bool], requirement: str) -> _Read[T]:
    """``read``, then reports ``must be <requirement>, got <value>`` unless ``accept(value)``."""

    def read_checked(reader: _Reader, node: Node, field: str) -> T | None:
        value = read(reader, node, field)
        if value is None or accept(value):
            return value
        reader.report(node, field, f"must be {requirement}, got {_describe(node)}")
        return None

    return read_checked


def _converted(read: _Read[T], convert: Callable[[T], U]) -> _Read[U]:
    """``read``, then ``convert`` on a valid value."""

    def read_converted(reader: _Reader, node: Node, field: str) -> U | None:
        value = read(reader, node, field)
        return None if value is None else convert(value)

    return read_converted


def _list_of(read_item: _Read[T]) -> _Read[tuple[T, ...]]:
    """A YAML list read item by item; every item's problems are reported."""

    def read_list(reader: _Reader, node: Node, field: str) -> tuple[T, ...] | None:
        items = reader.sequence(node, field)
        if items is None:
            return None
        values = [read_item(reader, item, f"{field}[{i}]") for i, item in enumerate(items)]
        valid = [value for value in values if value is not None]
        return tuple(valid) if len(valid) == len(values) else None

    return read_list


def _one_of(choices: Mapping[str, T]) -> _Read[T]:
    """A string naming one of ``choices``, case-insensitive."""
    by_upper_name = {name.upper(): value for name, value in choices.items()}

    def read_choice(reader: _Reader, node: Node, field: str) -> T | None:
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


def _fields(
    reader: _Reader,
    pairs: Mapping[str, tuple[Node, Node]],
    field: str,
    table: Mapping[str, tuple[str | None, _Read[object]]],
) -> dict[str, Any]:
    """Record attribute -> value of every valid field in ``pairs``, read as ``table`` says.

    ``table`` maps a file key to the record attribute it sets (None: checked
    only) and the reader of its value.
    """
    values: dict[str, Any] = {}
    for key, (_, value_node) in pairs.items():
        attribute, read = table[key]
        value = read(reader, value_node, _join(field, key))
        if attribute is not None and value is not None:
            values[attribute] = value
    return values


# Field readers.


def _seconds(milliseconds: float) -> float:
    return milliseconds / 1000


def _is_tool_name(name: str) -> bool:
    return bool(name) and not any(character.isspace() for character in name)


def _is_dotted_path(path: str) -> bool:
    return _is_tool_name(path) and all(path.split("."))


def _regex(reader: _Reader, node: Node, field: str) -> re.Pattern[str] | None:
    pattern = reader.string(node, field)
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        reader.report(node, field, f"invalid regular expression: {exc}")
        return None


def _default(reader: _Reader, node: Node, field: str) -> DefaultValue | None:
    value = reader.json_value(node, field)
    return None if value is _MISSING else DefaultValue(value)


def _json_schema(reader: _Reader, node: Node, field: str) -> dict[str, JSONValue] | None:
    """A JSON Schema (a mapping) that Draft 2020-12's metaschema accepts."""
    if not isinstance(node, MappingNode):
        reader.report(node, field, f"expected a mapping (a JSON Schema), got {_describe(node)}")
        return None
    schema = reader.json_value(node, field)
    if schema is _MISSING:
        return None
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        bad_node, bad_field = _node_at(node, field, exc.absolute_path)
        reader.report(bad_node, bad_field, f"invalid JSON Schema: {exc.message}")
        return None
    return dict(schema)


def _node_at(node: Node, field: str, path: Iterable[str | int]) -> tuple[Node, str]:
    """The node at ``path`` below ``node`` and its field, or the deepest one that exists."""
    for step in path:
        child = _child(node, step)
        if child is None:
            break
        node = child
        field = f"{field}[{step}]" if isinstance(step, int) else _join(field, step)
    return node, field


def _child(node: Node, step: str | int) -> Node | None:
    if isinstance(node, MappingNode):
        return next((value for key, value in node.value if key.value == step), None)
    if isinstance(node, SequenceNode) and isinstance(step, int) and step < len(node.value):
        child: Node = node.value[step]
        return child
    return None


# Scalar fields: a type, a range, a unit.

_tool_name = _checked(_Reader.string, _is_tool_name, "a non-empty name without whitespace")
_non_empty_string = _checked(_Reader.string, bool, "a non-empty string")
_dotted_path = _checked(
    _Reader.string, _is_dotted_path, "a dotted path such as 'passenger.passport_number'"
)
_positive_integer = _checked(_Reader.integer, lambda n: n > 0, "positive")
_at_least_one = _checked(_Reader.integer, lambda n: n >= 1, "at least 1")
_http_status = _checked(_Reader.integer, lambda status: 100 <= status <= 599, "between 100 and 599")
_non_negative = _checked(_Reader.number, lambda x: x >= 0, "at least 0")
_multiplier = _checked(_Reader.number, lambda x: x >= 1, "at least 1")
_percent = _checked(_Reader.number, lambda x: 0 <= x < 100, "at least 0 and below 100")
_timeout_seconds = _converted(_positive_integer, _seconds)
_delay_seconds = _converted(_non_negative, _seconds)
_jitter_fraction = _converted(_percent, lambda percent: percent / 100)
_strategy = _one_of({"exponential_backoff": "exponential_backoff"})
_error_code = _one_of({code.name: code for code in ErrorCode})
_error_class = _one_of({cls.name.lower(): cls for cls in ErrorClass})


_RETRY_POLICY_KEYS: Mapping[str, tuple[str | None, _Read[object]]] = {
    "strategy": (None, _strategy),
    "initial_delay_ms": ("initial_delay", _delay_seconds),
    "max_delay_ms": ("max_delay", _delay_seconds),
    "multiplier": ("multiplier", _multiplier),
    "jitter_percent": ("jitter", _jitter_fraction),
    "max_attempts": ("max_attempts", _at_least_one),
    "max_total_time_ms": ("max_total_time", _delay_seconds),
}


def _retry_policy(reader: _Reader, node: Node, field: str) -> RetryPolicy | None:
    """The session's default policy with the mapping's keys replaced."""
    pairs = reader.mapping(node, field, tuple(_RETRY_POLICY_KEYS))
    if pairs is None:
        return None
    problems_before = reader.problem_count
    overrides = _fields(reader, pairs, field, _RETRY_POLICY_KEYS)
    if reader.problem_count > problems_before:
        return None
    try:
        return dataclasses.replace(reader.session.defaults, **overrides)
    except ValueError as exc:
        message = _in_file_terms(str(exc), _RETRY_POLICY_KEYS)
        reader.report(node, field, f"{message} (keys not given take the default policy's value)")
        return None


def _in_file_terms(message: str, table: Mapping[str, tuple[str | None, object]]) -> str:
    """``message`` with each record attribute named by its file key: ``max_delay_ms``."""
    file_keys = {attribute: key for key, (attribute, _) in table.items() if attribute}
    return re.sub(r"\w+", lambda word: file_keys.get(word[0], word[0]), message)


_RULE_CONDITIONS: Mapping[str, tuple[str | None, _Read[object]]] = {
    "code": ("code", _error_code),
    "http_status": ("http_status", _http_status),
    "exception_type": ("exception_type", _non_empty_string),
    "message": ("message", _regex),
}

_RULE_KEYS: Mapping[str, tuple[str | None, _Read[object]]] = {
    **_RULE_CONDITIONS,
    "class": ("error_class", _error_class),
}


def _rule(reader: _Reader, node: Node, field: str) -> ClassificationRule | None:
    """One classification override: conditions that must all hold, and the class to give."""
    pairs = reader.mapping(node, field, tuple(_RULE_KEYS))
    if pairs is None:
        return None
    problems_before = reader.problem_count
    values = _fields(reader, pairs, field, _RULE_KEYS)
    if "class" not in pairs:
        reader.report(node, _join(field, "class"), "missing required key 'class'")
    if pairs.keys().isdisjoint(_RULE_CONDITIONS):
        conditions = ", ".join(_RULE_CONDITIONS)
        reader.report(node, field, f"a rule needs at least one condition: {conditions}")
    if reader.problem_count > problems_before:
        return None
    return reader.built(node, field, lambda: ClassificationRule(**values))


_TOOL_KEYS: Mapping[str, tuple[str | None, _Read[object]]] = {
    "name": ("name", _tool_name),
    "description": ("description", _Reader.string),
    "timeout_ms": ("timeout", _timeout_seconds),
    "idempotent": ("idempotent", _Reader.boolean),
    "retry_policy": ("retry_policy", _retry_policy),
    "classification": ("classification", _list_of(_rule)),
    "alternatives": ("alternatives", _list_of(_tool_name)),
    "optional": ("optional", _Reader.boolean),
    "default": ("default", _default),
    "parameters": ("parameters", _json_schema),
    "redact": ("redact", _list_of(_dotted_path)),
}


def _tool(reader: _Reader, node: Node, field: str) -> ToolManifest | None:
    """One entry of ``tools``; None when it has a problem (all of them reported)."""
    pairs = reader.mapping(node, field, tuple(_TOOL_KEYS))
    if pairs is None:
        return None
    problems_before = reader.problem_count
    source = reader.source(node)
    values = {
        "timeout": reader.session.default_timeout,
        "retry_policy": reader.session.defaults,
        **_fields(reader, pairs, field, _TOOL_KEYS),
        "source": source,
    }
    if "name" not in pairs:
        reader.report(node, _join(field, "name"), "missing required key 'name'")
    elif "name" in values:
        reader.claim_tool_name(values["name"], pairs["name"][1], _join(field, "name"), source)
        _check_not_own_alternative(reader, values, pairs, field)
    if reader.problem_count > problems_before:
        return None
    return reader.built(node, field, lambda: ToolManifest(**values))


def _check_not_own_alternative(
    reader: _Reader, values: Mapping[str, Any], pairs: Mapping[str, tuple[Node, Node]], field: str
) -> None:
    alternatives: tuple[str, ...] = values.get("alternatives", ())
    for index, alternative in enumerate(alternatives):
        if alternative == values["name"]:
            item = pairs["alternatives"][1].value[index]
            message = f"a tool must not list itself ({alternative!r}) as an alternative"
            reader.report(item, f"{field}.alternatives[{index}]", message)


def _read_document(reader: _Reader, document: Node) -> list[ToolManifest | None]:
    """The tools of a file's document, None for each one with a problem."""
    if not isinstance(document, MappingNode):
        reader.report(document, "", f"expected a mapping with 'tools', got {_describe(document)}")
        return []
    pairs = reader.mapping(document, "", ("tools",))
    if pairs is None:
        return []
    if "tools" not in pairs:
        reader.report(document, "tools", "missing required key 'tools'")
        return []
    tool_nodes = reader.sequence(pairs["tools"][1], "tools")
    if tool_nodes is None:
        return []
    return [_tool(reader, node, f"tools[{index}]") for index, node in enumerate(tool_nodes)]
