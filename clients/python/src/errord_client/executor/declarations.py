"""What the executor tells errord of a tool with each failure: its ToolDeclaration.

errord reads a tool's manifest to word a correction: the required parameters, an example
call, the right name beside a wrong one. A tool without a manifest is still known to the
executor: its parameters' JSON Schema (from its type hints, its framework's tool, or an MCP
server's ``inputSchema``) and the timeout each attempt runs under. Every failure report
(ReportFailure, and each item of ReportFailures) carries them as ``tool_declaration``;
a manifest, when errord has one, wins. A success sends nothing: its path stays as cheap
as it was.

A schema errord would refuse for a manifest (errord/decide/arguments/schemas.py: more than
MAX_SCHEMA_VALUES values or MAX_SCHEMA_DEPTH levels), or larger than MAX_SCHEMA_BYTES on
the wire, is left out, and so is one that declares nothing (a mock's ``ANY_ARGUMENTS``):
the timeout goes alone. Each tool's schema is converted once, at its first failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from google.protobuf import json_format, struct_pb2

from errord_client.requests import as_duration
from errord_client.tools import Tool
from errord_client.v1 import errord_pb2 as pb

MAX_SCHEMA_VALUES: Final = 10_000
"""Values (keys included) of a schema errord takes, as for a manifest's parameters."""

MAX_SCHEMA_DEPTH: Final = 32
"""Levels of objects and arrays of a schema errord takes, as for a manifest's parameters."""

MAX_SCHEMA_BYTES: Final = 262_144
"""Serialized bytes of a JSON value errord takes in a request."""

_SAYS_NOTHING: Final = ({"type": "object"}, {"type": "object", "properties": {}})
"""Schemas that declare no parameter and refuse none: what errord knows already."""


class Declarations:
    """The declarations of the executor's tools, each tool's schema converted once."""

    def __init__(self) -> None:
        self._parameters: dict[str, tuple[Tool, struct_pb2.Struct | None]] = {}

    def of(self, tool: Tool, timeout: float) -> pb.ToolDeclaration:
        """``tool``'s declaration: its parameters (unless left out, as the module's
        docstring says) and ``timeout``, the seconds its attempt ran under."""
        declaration = pb.ToolDeclaration(timeout=as_duration(timeout))
        parameters = self._schema(tool)
        if parameters is not None:
            declaration.parameters.CopyFrom(parameters)
        return declaration

    def _schema(self, tool: Tool) -> struct_pb2.Struct | None:
        known = self._parameters.get(tool.name)
        if known is None or known[0] is not tool:  # a tool registered again under its name
            known = self._parameters[tool.name] = (tool, schema_struct(tool.parameters))
        return known[1]


def schema_struct(schema: Mapping[str, Any]) -> struct_pb2.Struct | None:
    """``schema`` as the Struct a ToolDeclaration holds; None when it is to be left out."""
    if not fits(schema):
        return None
    plain = _plain(schema)
    if plain in _SAYS_NOTHING:
        return None
    struct = struct_pb2.Struct()
    try:
        json_format.ParseDict(plain, struct)
    except (json_format.ParseError, TypeError, ValueError, OverflowError):
        return None  # a value JSON cannot hold: errord could not read it either
    return struct if struct.ByteSize() <= MAX_SCHEMA_BYTES else None


def fits(schema: Any) -> bool:
    """Whether ``schema`` holds at most MAX_SCHEMA_VALUES values (keys included) and nests
    at most MAX_SCHEMA_DEPTH levels, counted as errord counts them."""
    count = 0
    pending: list[tuple[Any, int]] = [(schema, 0)]
    while pending:
        node, depth = pending.pop()
        count += 1 + (len(node) if isinstance(node, Mapping) else 0)
        if count > MAX_SCHEMA_VALUES or depth > MAX_SCHEMA_DEPTH:
            return False
        if isinstance(node, Mapping):
            pending.extend((value, depth + 1) for value in node.values())
        elif isinstance(node, list | tuple):
            pending.extend((item, depth + 1) for item in node)
    return True


def _plain(value: Any) -> Any:
    """A copy made of dicts and lists: a tool's schema may hold read-only mappings and
    tuples (``fits`` has bounded its depth)."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
