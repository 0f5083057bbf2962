"""Tool manifests from YAML files, or every problem in them as ``file:line: field: message``.

One file holds one YAML document, a mapping whose ``tools`` list has one entry
per tool::

    tools:
      - name: flight_search
        timeout_ms: 30000
        retry_policy: {initial_delay_ms: 50, max_attempts: 3}
        circuit_breaker: {failure_threshold: 5, first_timeout_ms: 1000, timeout_ms: 30000}
        classification:
          - {http_status: 503, class: permanent}
        alternatives: [flight_search_backup]

An alternative form, one tool per file under ``tool:`` and named by ``id``,
is read into the same records::

    tool:
      id: flight_search
      timeout_ms: 30000
      retry_policy: {strategy: exponential_backoff, initial_delay_ms: 50}

This module is the schema: which keys a tool has; values.py their types, ranges and
units. yaml_reader.py walks the nodes, keeps every problem's line and reads on
after one, so that one ManifestError lists them all. Problems about a whole
file or directory are on line 0.

A manifest may be careless or hostile, and nothing in it may hang a load or a
decision, nor have errord read what is no manifest: root.py says which files may be
read (under the manifests' root, writable by their owner only), directory.py bounds
the files read (how many, how large in all), file_text.py each file (a regular file,
1 MiB, UTF-8), yaml_bounds.py each document before anything reads it (no
``!!python`` tags, a bounded depth and size once aliases are expanded), values.py a
``parameters`` schema and a ``default`` (bounded in values and depth) and every regular
expression (one RE2 can run in linear time).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from yaml.nodes import MappingNode, Node

from errord.decide.manifest import (
    BreakerPolicy,
    ClassificationRule,
    RetryPolicy,
    ToolManifest,
)
from errord.decide.manifest.snapshot import ManifestSnapshot, ToolDefaults
from errord.errors import ManifestError, Problem
from errord.manifests.directory import MANIFEST_SUFFIXES, manifest_paths, not_read, overlooked
from errord.manifests.root import ManifestRoot
from errord.manifests.values import (
    BREAKER_KEYS,
    RETRY_POLICY_KEYS,
    default_value,
    dotted_path,
    error_class,
    error_code,
    http_status,
    json_schema,
    non_empty_string,
    regex,
    timeout_seconds,
    tool_name,
)
from errord.manifests.yaml_bounds import within_bounds
from errord.manifests.yaml_reader import (
    FieldReads,
    Read,
    Reader,
    compose_all,
    describe,
    join_field,
    list_of,
    read_fields,
)

__all__ = [
    "MANIFEST_SUFFIXES",
    "load_manifest_dir",
    "load_manifest_file",
    "not_read",
    "overlooked",
]

P = TypeVar("P", RetryPolicy, BreakerPolicy)


def load_manifest_dir(
    directory: Path, defaults: ToolDefaults | None = None, root: ManifestRoot | None = None
) -> ManifestSnapshot:
    """Load every ``*.yaml`` and ``*.yml`` file in ``directory``, in name order.

    Not recursive; hidden files are skipped. ``defaults`` holds the retry policy
    that each tool's ``retry_policy`` overrides and the timeout of a tool without
    ``timeout_ms``, and the breaker policy ``circuit_breaker`` overrides. Files are
    read only under ``root`` (default: the directory's real parent), and only if no
    user but their owner may write them (root.py). Raises ManifestError with every
    problem of every file, a tool name defined twice across files included.
    """
    defaults = defaults or ToolDefaults()
    session = _Session(defaults, root or ManifestRoot.around(directory))
    manifests = [
        manifest
        for path in manifest_paths(directory, session.root)
        for manifest in session.read_file(path)
    ]
    session.raise_problems()
    return ManifestSnapshot(manifests, defaults)


def load_manifest_file(
    path: Path,
    defaults: RetryPolicy = RetryPolicy(),  # noqa: B008 (frozen, so one shared instance is safe)
    default_timeout: float = 30.0,
) -> list[ToolManifest]:
    """The tools of one manifest file, read as load_manifest_dir reads the files of its
    directory; ManifestError with every problem in it."""
    tool_defaults = ToolDefaults(timeout=default_timeout, retry_policy=defaults)
    session = _Session(tool_defaults, ManifestRoot.around(path.parent))
    manifests = session.read_file(path)
    session.raise_problems()
    return manifests


class _Session:
    """One load: the problems found so far and where each tool name was first defined."""

    def __init__(self, defaults: ToolDefaults, root: ManifestRoot) -> None:
        self.defaults = defaults
        self.root = root
        """Where files may be read from."""
        self.problems: list[Problem] = []
        self.first_definitions: dict[str, str] = {}
        """Tool name -> ``file:line`` of the tool that defined it first."""

    def read_file(self, path: Path) -> list[ToolManifest]:
        """The valid tools of one file; its problems go to ``self.problems``."""
        reader = _ManifestReader(str(path), self)
        first_problem = len(self.problems)
        document = _document(path, reader, self.root)
        tools = [] if document is None else _read_document(reader, document)
        self.problems[first_problem:] = sorted(
            self.problems[first_problem:], key=lambda problem: (problem.line, problem.field)
        )
        return [tool for tool in tools if tool is not None]

    def raise_problems(self) -> None:
        if self.problems:
            raise ManifestError(self.problems)


class _ManifestReader(Reader):
    """Reads one manifest file of a load, with the load's defaults and tool names."""

    def __init__(self, file: str, session: _Session) -> None:
        super().__init__(file, session.problems)
        self.session = session

    def claim_tool_name(self, name: str, name_node: Node, field: str, source: str) -> None:
        """Record where ``name`` is defined; report it if another tool already has it."""
        first = self.session.first_definitions.setdefault(name, source)
        if first != source:
            self.report(
                name_node, field, f"duplicate tool name {name!r} (first defined at {first})"
            )


def _document(path: Path, reader: Reader, root: ManifestRoot) -> Node | None:
    """The file's single YAML document as a node tree, or None after reporting why not."""
    documents = compose_all(path, reader, root)
    if documents is None:
        return None
    if not documents:
        reader.report_line(0, "", "empty manifest file: expected a mapping with 'tools'")
        return None
    for extra in documents[1:]:
        reader.report(extra, "", "a second YAML document; put every tool in one 'tools' list")
    return within_bounds(reader, documents[0])


# Field readers.


def _in_file_terms(message: str, table: Mapping[str, tuple[str | None, object]]) -> str:
    """``message`` with each record attribute named by its file key: ``max_delay_ms``."""
    file_keys = {attribute: key for key, (attribute, _) in table.items() if attribute}
    return re.sub(r"\w+", lambda word: file_keys.get(word[0], word[0]), message)


def _defaults_overridden(
    keys: FieldReads[Reader], default: Callable[[ToolDefaults], P]
) -> Read[_ManifestReader, P]:
    """A reader of a mapping of ``keys`` that replace those of the session's ``default``."""

    def read(reader: _ManifestReader, node: Node, field: str) -> P | None:
        pairs = reader.mapping(node, field, tuple(keys))
        if pairs is None:
            return None
        problems_before = reader.problem_count
        overrides = read_fields(reader, pairs, field, keys)
        if reader.problem_count > problems_before:
            return None
        try:
            return dataclasses.replace(default(reader.session.defaults), **overrides)
        except ValueError as exc:
            message = _in_file_terms(str(exc), keys)
            reader.report(
                node, field, f"{message} (keys not given take the default policy's value)"
            )
            return None

    return read


_retry_policy = _defaults_overridden(RETRY_POLICY_KEYS, lambda defaults: defaults.retry_policy)
_breaker_policy = _defaults_overridden(BREAKER_KEYS, lambda defaults: defaults.breaker)


_RULE_CONDITIONS: FieldReads[Reader] = {
    "code": ("code", error_code),
    "http_status": ("http_status", http_status),
    "exception_type": ("exception_type", non_empty_string),
    "message": ("message", regex),
}

_RULE_KEYS: FieldReads[Reader] = {
    **_RULE_CONDITIONS,
    "class": ("error_class", error_class),
}


def _rule(reader: Reader, node: Node, field: str) -> ClassificationRule | None:
    """One classification override: conditions that must all hold, and the class to give."""
    pairs = reader.mapping(node, field, tuple(_RULE_KEYS))
    if pairs is None:
        return None
    problems_before = reader.problem_count
    values = read_fields(reader, pairs, field, _RULE_KEYS)
    if "class" not in pairs:
        reader.report(node, join_field(field, "class"), "missing required key 'class'")
    if pairs.keys().isdisjoint(_RULE_CONDITIONS):
        conditions = ", ".join(_RULE_CONDITIONS)
        reader.report(node, field, f"a rule needs at least one condition: {conditions}")
    if reader.problem_count > problems_before:
        return None
    return reader.built(node, field, lambda: ClassificationRule(**values))


_TOOL_KEYS: FieldReads[_ManifestReader] = {
    "name": ("name", tool_name),
    "id": ("name", tool_name),  # the ``tool:`` layout's name for it
    "description": ("description", Reader.string),
    "timeout_ms": ("timeout", timeout_seconds),
    "idempotent": ("idempotent", Reader.boolean),
    "retry_policy": ("retry_policy", _retry_policy),
    "circuit_breaker": ("breaker", _breaker_policy),
    "classification": ("classification", list_of(_rule)),
    "alternatives": ("alternatives", list_of(tool_name)),
    "optional": ("optional", Reader.boolean),
    "accepts_partial_results": ("accepts_partial_results", Reader.boolean),
    "default": ("default", default_value),
    "parameters": ("parameters", json_schema),
    "redact": ("redact", list_of(dotted_path)),
}


def _tool(reader: _ManifestReader, node: Node, field: str) -> ToolManifest | None:
    """One entry of ``tools``; None when it has a problem (all of them reported)."""
    pairs = reader.mapping(node, field, tuple(_TOOL_KEYS))
    if pairs is None:
        return None
    problems_before = reader.problem_count
    source = reader.source(node)
    defaults = reader.session.defaults
    values = {
        "timeout": defaults.timeout,
        "retry_policy": defaults.retry_policy,
        "breaker": defaults.breaker,
        **read_fields(reader, pairs, field, _TOOL_KEYS),
        "source": source,
    }
    named_by = [key for key in ("name", "id") if key in pairs]
    if not named_by:
        missing = "missing required key 'name'"
        if field == "tool":  # the ``tool:`` layout, which names its tool by id
            missing += " (or 'id')"
        reader.report(node, join_field(field, "name"), missing)
    elif len(named_by) == 2:
        message = "give the tool's name once: 'name' or 'id', not both"
        reader.report(pairs["id"][0], join_field(field, "id"), message)
    elif "name" in values:
        key = named_by[0]
        reader.claim_tool_name(values["name"], pairs[key][1], join_field(field, key), source)
        _check_not_own_alternative(reader, values, pairs, field)
    if reader.problem_count > problems_before:
        return None
    return reader.built(node, field, lambda: ToolManifest(**values))


def _check_not_own_alternative(
    reader: Reader, values: Mapping[str, Any], pairs: Mapping[str, tuple[Node, Node]], field: str
) -> None:
    alternatives: tuple[str, ...] = values.get("alternatives", ())
    for index, alternative in enumerate(alternatives):
        if alternative == values["name"]:
            item = pairs["alternatives"][1].value[index]
            message = f"a tool must not list itself ({alternative!r}) as an alternative"
            reader.report(item, f"{field}.alternatives[{index}]", message)


def _read_document(reader: _ManifestReader, document: Node) -> list[ToolManifest | None]:
    """The tools of a file's document, None for each one with a problem."""
    if not isinstance(document, MappingNode):
        reader.report(document, "", f"expected a mapping with 'tools', got {describe(document)}")
        return []
    pairs = reader.mapping(document, "", ("tools", "tool"))
    if pairs is None:
        return []
    if "tool" in pairs and "tools" in pairs:
        message = "either 'tools' (a list) or 'tool' (one tool), not both"
        reader.report(pairs["tool"][0], "tool", message)
        return []
    if "tool" in pairs:
        return [_tool(reader, pairs["tool"][1], "tool")]
    if "tools" not in pairs:
        reader.report(document, "tools", "missing required key 'tools'")
        return []
    tool_nodes = reader.sequence(pairs["tools"][1], "tools")
    if tool_nodes is None:
        return []
    return [_tool(reader, node, f"tools[{index}]") for index, node in enumerate(tool_nodes)]
