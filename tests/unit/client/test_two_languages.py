"""The Python and the TypeScript clients name the executor's concepts the same way, each in
its own case: the executor's methods, and a result's fields, statuses and deciders (the
TypeScript side read from its sources)."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

from errord_client import DecidedBy, Executor, ResultError, ResultStatus, ToolResult

from tests.helpers import ROOT

TYPESCRIPT = ROOT / "clients" / "typescript" / "src"


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def block(source: Path, opening: str) -> str:
    """The body of the declaration that begins with ``opening``, to its closing brace at
    the start of a line."""
    text = source.read_text()
    start = text.index(opening)
    return text[start : text.index("\n}", start)]


def interface_fields(source: Path, name: str) -> list[str]:
    return re.findall(r"^  readonly (\w+)\??:", block(source, f"export interface {name} {{"), re.M)


def union_values(source: Path, name: str) -> list[str]:
    """The string literals of a union type, its comments left out."""
    text = source.read_text()
    start = text.index(f"export type {name} =")
    declaration = re.sub(r"/\*.*?\*/", "", text[start:], flags=re.S)
    return re.findall(r'"(\w+)"', declaration[: declaration.index(";")])


def test_a_results_fields_are_the_same_in_both_languages() -> None:
    result = TYPESCRIPT / "executor" / "result.ts"
    python = [camel(field.name) for field in dataclasses.fields(ToolResult)]
    assert interface_fields(result, "ToolResult") == python
    python_error = [camel(field.name) for field in dataclasses.fields(ResultError)]
    assert interface_fields(result, "ResultError") == python_error


def test_a_results_statuses_and_deciders_are_the_same_in_both_languages() -> None:
    result = TYPESCRIPT / "executor" / "result.ts"
    assert union_values(result, "ResultStatus") == [status.value for status in ResultStatus]
    assert union_values(result, "DecidedBy") == [decider.value for decider in DecidedBy]


def test_the_executors_methods_are_the_same_in_both_languages() -> None:
    executor = block(TYPESCRIPT / "executor" / "executor.ts", "export class Executor {")
    typescript = set(re.findall(r"^  (?:async )?(\w+)\(", executor, re.M)) - {"constructor"}
    python = {
        camel(name)
        for name, member in inspect.getmembers(Executor, inspect.isfunction)
        if not name.startswith("_")
    }
    assert typescript == python == {"start", "close", "run", "runOne", "turn"}
