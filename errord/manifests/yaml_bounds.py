"""What a composed YAML document may be, checked before anything reads it: its tags,
its depth, and its size once aliases are expanded.

An alias (``*name``) stands for the whole value its anchor (``&name``) marks. PyYAML
composes it as a second reference to one node, so composing costs nothing, but
everything that later walks the value as JSON (schema checks, examples, the wire,
the trace) meets it once per use: nine aliases of nine aliases... ("billion laughs")
are a few lines that expand to gigabytes. ``extents`` measures every node as it
would be written out, without writing it out (each node once, in linear time), and
the document may expand to no more than a file could hold written out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from errord.manifests.file_text import MAX_FILE_BYTES
from errord.manifests.yaml_reader import MAX_DEPTH, Reader

MAX_EXPANDED: Final = 2 * MAX_FILE_BYTES
"""Characters and values a document may hold once its aliases are expanded: twice what
a file may have, since a value such as ``{a, b}`` counts more than it takes to write."""

_PYTHON_TAG: Final = "tag:yaml.org,2002:python/"
_COLLECTION_TAGS: Final = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})


@dataclass(frozen=True, slots=True)
class Extent:
    """A node as it would be written out, every alias expanded."""

    size: int
    """What it holds: the weight of each scalar (see ``extents``) and 1 per collection."""
    height: int
    """Levels of nodes below it: 0 for a scalar or an empty collection."""


Weigh = Callable[[ScalarNode], int]
"""The size a scalar counts for."""


def characters(node: ScalarNode) -> int:
    """A scalar counts its characters, at least 1."""
    return max(1, len(node.value))


def one(node: ScalarNode) -> int:
    """A scalar counts 1: extents then count values."""
    return 1


def extents(root: Node, weigh: Weigh = characters) -> dict[int, Extent]:
    """The Extent of every node reachable from ``root``, by ``id``; each node is
    visited once, however many aliases name it. An alias inside its own value
    counts as one scalar (reading it reports the loop)."""
    done: dict[int, Extent] = {}
    open_: set[int] = set()
    pending: list[tuple[Node, bool]] = [(root, False)]
    while pending:
        node, children_done = pending.pop()
        key = id(node)
        if children_done:
            open_.discard(key)
            done[key] = _extent(node, done, weigh)
        elif key not in done and key not in open_:
            open_.add(key)
            pending.append((node, True))
            pending.extend((child, False) for child in children(node))
    return done


def _extent(node: Node, done: dict[int, Extent], weigh: Weigh) -> Extent:
    if isinstance(node, ScalarNode):
        return Extent(weigh(node), 0)
    parts = [done.get(id(child), Extent(1, 0)) for child in children(node)]
    height = 1 + max(part.height for part in parts) if parts else 0
    return Extent(1 + sum(part.size for part in parts), height)


def children(node: Node) -> Iterator[Node]:
    """A collection's nodes in document order (a mapping's keys and values alike)."""
    if isinstance(node, SequenceNode):
        yield from node.value
    elif isinstance(node, MappingNode):
        for key, value in node.value:
            yield key
            yield value


def within_bounds(reader: Reader, root: Node) -> Node | None:
    """``root``, or None after reporting why nothing may read it: a ``!!python`` tag
    or another tag on a collection, nesting deeper than MAX_DEPTH, or more than
    MAX_EXPANDED once aliases are expanded."""
    measured = extents(root)
    if _report_tags(reader, root):
        return None
    if measured[id(root)].height > MAX_DEPTH:
        too_deep = _tallest_path(root, measured, MAX_DEPTH + 1)
        reader.report(too_deep, "", f"nested more than {MAX_DEPTH} levels deep")
        return None
    if measured[id(root)].size > MAX_EXPANDED:
        reader.report(_largest(root, measured, MAX_EXPANDED), "", _expanded_message())
        return None
    return root


def too_large(root: Node, max_values: int, max_depth: int) -> tuple[Node, str] | None:
    """Where and why the value at ``root`` holds more than ``max_values`` values or
    nests more than ``max_depth`` levels, aliases expanded; None when it does not."""
    measured = extents(root, one)
    extent = measured[id(root)]
    if extent.height > max_depth:
        node = _tallest_path(root, measured, max_depth + 1)
        return node, f"nested more than {max_depth} levels deep"
    if extent.size > max_values:
        return root, (
            f"{extent.size:,} values (keys included, aliases counted at each use),"
            f" more than {max_values:,}"
        )
    return None


def _report_tags(reader: Reader, root: Node) -> bool:
    """Report each node whose tag nothing may read; whether there was one."""
    refused = False
    for node in _distinct(root):
        tag = node.tag or ""
        if tag.startswith(_PYTHON_TAG):
            shown = "!!" + tag.removeprefix("tag:yaml.org,2002:")
            message = f"YAML tag {shown!r} refused: a manifest is plain data, errord runs no code"
            reader.report(node, "", message)
            refused = True
        elif not isinstance(node, ScalarNode) and tag not in _COLLECTION_TAGS:
            reader.report(node, "", f"unsupported YAML tag {tag!r}")
            refused = True
    return refused


def _distinct(root: Node) -> Iterator[Node]:
    """Every node reachable from ``root`` once, in document order."""
    seen: set[int] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if id(node) not in seen:
            seen.add(id(node))
            yield node
            pending.extend(reversed(list(children(node))))


def _tallest_path(root: Node, measured: dict[int, Extent], levels: int) -> Node:
    """The node ``levels`` levels below ``root`` on its deepest path."""
    node = root
    for _ in range(levels):
        node = max(children(node), key=lambda child: measured[id(child)].height)
    return node


def _largest(root: Node, measured: dict[int, Extent], limit: int) -> Node:
    """The node where the document grows past ``limit``: the innermost, first in
    document order, that is larger than ``limit`` while none of its parts is."""
    node = root
    while True:
        size = measured[id(node)].size
        larger = (c for c in children(node) if limit < measured[id(c)].size < size)
        part = next(larger, None)  # strictly smaller: an alias loop is not followed
        if part is None:
            return node
        node = part


def _expanded_message() -> str:
    return (
        f"this value holds more than {MAX_EXPANDED:,} characters and values once its"
        f" aliases are expanded; a manifest may hold no more than a {MAX_FILE_BYTES:,}-byte"
        " file can write out"
    )
