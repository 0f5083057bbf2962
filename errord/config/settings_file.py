"""The settings file: TOML decoded by msgspec into the settings' own types, every problem
located and listed at once.

msgspec reads the TOML and converts each setting to the type its field declares (a
path is a string, relative to the file's directory and with ``~`` expanded; a float
takes any number; a setting left out keeps its default), the ``[client]`` table's into
ClientSettings. A file with problems is refused as a whole: every unknown setting,
wrong type and invalid value, each as ``file:line: setting: problem``, in the order of
the file's lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path
from types import NoneType, UnionType
from typing import Annotated, Any, TypeVar, get_args, get_type_hints

import msgspec

from errord.client_config import TABLE, ClientSettings
from errord.errors import ConfigError, InvalidSettings

T = TypeVar("T")
Located = tuple[int, str]
"""A problem, and the line of the file it is on."""
FilePath = Annotated[str, msgspec.Meta(min_length=1)]
"""What the ``[client]`` table's settings take: a path that is not empty."""

TOML_NAMES: dict[object, str] = {
    str: "str",
    Path: "str",
    int: "int",
    float: "int or float",
    bool: "bool",
    NoneType: "",
}
"""What the TOML values a setting of each type takes are called: a path is a string, a
float any number, and None is the setting left out."""
Converter = Callable[[object, Any], Any]
"""A value of the file converted to a type (msgspec.convert), paths under the file's
directory."""
_HEADER = re.compile(r"^\s*\[\s*(?P<name>[^\[\]]+?)\s*\]")


def settings_from_file(path: Path, settings: Callable[..., T]) -> T:
    """``settings`` (the Settings record) made from the TOML file at ``path``. Raises
    ConfigError naming the file, and each problem's line and setting."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from error
    try:
        table = msgspec.toml.decode(text)
    except msgspec.DecodeError as error:
        raise ConfigError(f"{path}: {error}") from error
    types = {name: kind for name, kind in get_type_hints(settings).items() if name != TABLE}
    from_file = _converter(path.parent)
    values: dict[str, Any] = {}
    found: list[Located] = []
    for key, value in table.items():
        if key == TABLE:
            client, client_problems = _client(value, text, from_file)
            found += client_problems
            if client is not None:
                values[key] = client
        elif key not in types:
            known = ", ".join([*types, TABLE])
            found.append((line_of(text, key), f"unknown setting {key!r} (known: {known})"))
        else:
            try:
                values[key] = from_file(value, types[key])
            except msgspec.ValidationError:
                expected = _toml_names(types[key])
                found.append(
                    (line_of(text, key), f"{key}: expected {expected}, got {_kind(value)}")
                )
    try:  # what could not be read is left out: the rest is still checked
        made = settings(**values)
    except InvalidSettings as error:
        found += [(line_of(text, p.key, p.table), str(p)) for p in error.problems]
    if found:
        found.sort(key=lambda located: located[0])
        raise ConfigError("\n".join(f"{path}:{line}: {problem}" for line, problem in found))
    return made


def _client(
    value: object, text: str, from_file: Converter
) -> tuple[ClientSettings | None, list[Located]]:
    """The ``[client]`` table, and its problems."""
    if not isinstance(value, Mapping):
        problem = f"{TABLE}: expected a table, got {_kind(value)}"
        return None, [(line_of(text, "", TABLE), problem)]
    known = [setting.name for setting in fields(ClientSettings)]
    paths: dict[str, Path] = {}
    found: list[Located] = []
    for key, given in value.items():
        where = line_of(text, key, TABLE)
        if key not in known:
            found.append((where, f"{TABLE}.{key}: unknown setting (known: {', '.join(known)})"))
            continue
        try:
            paths[key] = from_file(from_file(given, FilePath), Path)
        except msgspec.ValidationError:
            found.append((where, f"{TABLE}.{key}: expected a file path, got {given!r}"))
    if found:
        return None, found
    try:
        return ClientSettings(**paths), []
    except InvalidSettings as error:
        return None, [(line_of(text, p.key, p.table), str(p)) for p in error.problems]


def _converter(directory: Path) -> Converter:
    def path_in_file(kind: type, value: object) -> object:
        if kind is Path and isinstance(value, str):
            return directory / Path(value).expanduser()
        raise TypeError(f"expected a {kind.__name__}")  # msgspec makes it a ValidationError

    def convert(value: object, kind: Any) -> Any:
        return msgspec.convert(value, kind, dec_hook=path_in_file)

    return convert


def _toml_names(annotation: object) -> str:
    """What the TOML values a setting of type ``annotation`` takes are called."""
    members = get_args(annotation) if isinstance(annotation, UnionType) else (annotation,)
    return " or ".join(name for member in members if (name := TOML_NAMES[member]))


def _kind(value: object) -> str:
    return type(value).__name__


def line_of(text: str, key: str, table: str = "") -> int:
    """The 1-based line where ``key`` of ``table`` (empty: the top level) is set in TOML
    ``text`` (under ``[table]``, or as ``table.key`` before any header), else the table's
    header, else 1. An empty key finds ``table = ...`` itself."""
    name = rf"[\"']?{re.escape(key)}[\"']?\s*"
    in_table = re.compile(rf"^\s*{name}=")
    dotted = rf"\.\s*{name}" if key else ""
    top_level = re.compile(rf"^\s*{re.escape(table)}\s*{dotted}=")
    current, header = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        match = _HEADER.match(line)
        if match:
            current = match["name"]
            header = header or (number if table and current == table else 0)
        elif (current == table and key and in_table.match(line)) or (
            table and not current and top_level.match(line)
        ):
            return number
    return header or 1
