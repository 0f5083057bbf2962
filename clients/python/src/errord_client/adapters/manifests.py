"""errord tool manifests as YAML, written without a YAML library.

An adapter that knows a framework's tools (their names, descriptions and JSON Schemas) can
write the manifests errord reads from its manifest directory (docs/manifests.md), so that
errord validates calls and words corrections from the tools' own schemas. The client
package depends on no YAML library, and a manifest holds JSON values only, so this module
writes them itself: mappings in block style, lists of scalars in flow style, every string
that could read as anything else double-quoted, and floats in the form YAML 1.1 (which
errord's PyYAML reads) takes for a float. ``yaml.safe_load`` of the text gives the values
back.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

MANIFEST_SUFFIXES: Final = (".yaml", ".yml")
"""The files of a manifest directory errord reads."""

_PLAIN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
"""A string written without quotes, unless it is one of YAML 1.1's words."""
_WORDS: Final = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
"""Plain strings YAML 1.1 reads as booleans or null."""
_UNQUOTED: Final = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
"""Characters json.dumps leaves as they are that a YAML double-quoted scalar must escape:
those PyYAML refuses in a file, and those YAML reads as line breaks or a byte order mark."""


def manifests_yaml(manifests: Iterable[Mapping[str, Any]], *, comment: str = "") -> str:
    """A manifest file holding ``manifests`` (each a tool's keys, as docs/manifests.md has
    them) as its ``tools`` list, after ``comment`` as ``#`` lines. Raises ValueError for a
    value JSON cannot hold (keys that are not strings, a cycle)."""
    header = [f"# {line}".rstrip() for line in comment.splitlines()]
    document = {"tools": [_json(dict(manifest)) for manifest in manifests]}
    return "\n".join([*header, *_block(document)]) + "\n"


def write_manifest_file(text: str, directory: str | os.PathLike[str], file_name: str) -> Path:
    """Write ``text`` as ``directory/file_name`` (directory made if missing) and return the
    path. The file is replaced whole: errord, reloading meanwhile, reads the old file or the
    new one. Raises ValueError unless the name ends in .yaml or .yml, which errord reads."""
    if not file_name.endswith(MANIFEST_SUFFIXES) or Path(file_name).name != file_name:
        raise ValueError(f"{file_name!r}: errord reads manifests named *.yaml or *.yml")
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name
    hidden = folder / f".{file_name}.tmp"  # errord skips hidden files
    hidden.write_text(text, encoding="utf-8")
    os.replace(hidden, path)
    return path


def _json(value: Any) -> Any:
    """``value`` as plain JSON values: tuples as lists, and ValueError for what JSON
    cannot hold."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError, RecursionError) as error:
        raise ValueError(f"a manifest holds JSON values only: {error}") from None


def _block(value: dict[str, Any] | list[Any]) -> list[str]:
    """The lines of a non-empty mapping or list in block style, at indent 0."""
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if _nested(item):
                lines.append(f"{_string(key)}:")
                lines.extend(f"  {line}" for line in _block(item))
            else:
                lines.append(f"{_string(key)}: {_flow(item)}")
        return lines
    for item in value:
        if _nested(item):
            first, *rest = _block(item)
            lines.append(f"- {first}")
            lines.extend(f"  {line}" for line in rest)
        else:
            lines.append(f"- {_flow(item)}")
    return lines


def _nested(value: Any) -> bool:
    """Whether ``value`` is written in block style: a non-empty mapping, or a list
    holding a mapping or a list."""
    if isinstance(value, dict):
        return bool(value)
    return isinstance(value, list) and any(isinstance(item, dict | list) for item in value)


def _flow(value: Any) -> str:
    """A scalar, an empty mapping, or a list of scalars, on one line."""
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    return _string(value)


def _float(value: float) -> str:
    """YAML 1.1 reads a float only with a point in it, and its exponent signed (as
    ``repr`` writes it): 1e+16 is written 1.0e+16."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    return text if "." in mantissa else f"{mantissa}.0{e}{exponent}"


def _string(text: str) -> str:
    """``text`` plain when it reads as that string and nothing else, else double-quoted:
    JSON's escapes are YAML's, with the characters YAML adds escaped as ``\\uXXXX``."""
    if _PLAIN.match(text) and text.lower() not in _WORDS:
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    return _UNQUOTED.sub(lambda found: f"\\u{ord(found[0]):04x}", quoted)
