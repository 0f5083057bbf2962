"""errord's packages import one way: each imports only the layers below it, no two packages
import each other, and the engine (errord.decide) imports no gRPC, SQLite, YAML or asyncio.
The client package's top level is small: what a first program needs."""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import errord

ROOT = Path(errord.__file__).parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errord", "errors", "clock", "pem"),  # the root: version, the exception tree, time, TLS files
    ("limits", "client_config"),
    ("decide",),  # the pure engine: records, manifests' records, classification, policy
    ("state", "manifests", "config"),  # projections and the store; the YAML loader; settings
    ("handler", "fleet"),  # the unit of work; the fleet's view and its link to Redis
    ("reload", "operator_actions", "replay"),  # beside the handler: reloads, operator actions,
    # and the trace replayed with other manifests
    ("wire", "ops"),  # the gRPC edge; systemd, logs, metrics
    ("app",),  # the lifecycle
    ("cli",),  # the errord command, which starts the app
    ("__main__",),  # python -m errord
)
"""Lowest first. A package (or a module of the root) imports only from layers below its own."""

ENGINE_NEVER_IMPORTS = frozenset(
    {"grpc", "grpc_health", "errord_client", "google", "sqlite3", "aiosqlite", "yaml", "asyncio"}
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    path = ROOT.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported(tree: ast.Module, package: str) -> Iterator[str]:
    """Every module a module imports, at any depth of its code (``from P import m`` is P.m)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                yield submodule if is_module(submodule) else module


def import_graph() -> dict[str, set[str]]:
    """Each module of errord and the modules it imports."""
    graph: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = set(imported(ast.parse(path.read_text(), str(path)), package))
    return graph


def unit(module: str) -> str:
    """The package of errord (or the module of its root) a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def errord_edges() -> Iterator[tuple[str, str]]:
    """(importer, imported) for every import between two of errord's units."""
    for module, targets in import_graph().items():
        for target in sorted(targets):
            if target.split(".")[0] == "errord" and unit(target) != unit(module):
                yield module, target


def test_every_package_has_a_layer() -> None:
    placed = {name for layer in LAYERS for name in layer}
    assert {unit(module) for module in import_graph()} - placed == set()


def test_no_two_packages_import_each_other() -> None:
    graph: dict[str, set[str]] = {}
    for module, target in errord_edges():
        graph.setdefault(unit(module), set()).add(unit(target))
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as cycle:
        pytest.fail(f"packages import each other: {' imports '.join(reversed(cycle.args[1]))}")


def test_no_layer_imports_one_above_it() -> None:
    layer_of = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}
    # A unit without a layer is test_every_package_has_a_layer's failure, not this one's.
    upward = [
        f"{module} imports {target}"
        for module, target in errord_edges()
        if layer_of.get(unit(target), 0) >= layer_of.get(unit(module), len(LAYERS))
    ]
    assert upward == []


def test_the_engine_imports_no_grpc_sql_yaml_or_asyncio() -> None:
    engine = {
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        if unit(module) == "decide"
        for target in targets
        if target.split(".")[0] in ENGINE_NEVER_IMPORTS
    }
    assert engine == set()


MAX_CLIENT_NAMES = 12
"""What ``from errord_client import *`` may bring (stamina's top level has six)."""


def test_the_clients_top_level_brings_at_most_twelve_names() -> None:
    names: dict[str, object] = {}
    exec("from errord_client import *", names)
    names.pop("__builtins__")
    assert len(names) <= MAX_CLIENT_NAMES, sorted(names)
    assert {"Executor", "ToolResult", "ErrordClient", "AsyncErrordClient", "tool"} <= names.keys()
