"""errord's packages import one way: each imports only the layers below it, no two packages
import each other, and the engine (errord.decide) imports no gRPC, SQLite, YAML or asyncio.
Within the engine, each stage of a decision is a package that imports only the stages
before it, through their packages, and says in its docstring what each of its modules
holds; and no module of errord is longer than 450 lines.
The client package's top level is small: what a first program needs."""

from __future__ import annotations

import ast
import graphlib
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import errord
import errord.decide

ROOT = Path(errord.__file__).parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errord", "errors", "clock", "pem"),  # the root: version, the exception tree, time, TLS files
    ("limits", "client_config"),
    ("decide",),  # the pure engine: records, manifests' records, classification, policy
    ("state", "manifests", "config"),  # projections and the store; the YAML loader; settings
    ("assembly",),  # a daemon's engine and manifests, from its settings (serve's and replay's)
    ("handler", "fleet"),  # the unit of work; the fleet's view and its link to Redis
    ("reload", "operator_actions", "replay"),  # beside the handler: reloads, operator actions,
    # and the trace replayed with other manifests
    ("wire", "ops"),  # the gRPC edge; systemd, logs, metrics
    ("app",),  # the lifecycle
    ("cli",),  # the errord command, which starts the app
    ("__main__",),  # python -m errord
)
"""Lowest first. A package (or a module of the root) imports only from layers below its own."""

DECIDE_STAGES: tuple[str, ...] = (
    "model",
    "redact",
    "arguments",
    "classify",
    "manifest",
    "health",
    "memory",
    "policy",
    "texts",
    "engine",
)
"""errord.decide's stage packages, in the order they import each other: a stage imports only
the stages before it, and only through their packages (what their ``__init__`` exports)."""

MAX_MODULE_LINES = 450
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


def stage(module: str) -> str | None:
    """The stage of errord.decide a module belongs to (``policy`` for
    errord.decide.policy.gates); None outside the stages."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["errord", "decide"] else None


def stage_api(name: str) -> set[str]:
    """What other stages may import of stage ``name``: its package, and the modules its
    ``__init__`` exports as modules (health's ``breaker``)."""
    package = f"errord.decide.{name}"
    init = ROOT / "decide" / name / "__init__.py"
    exported: list[str] = []
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            exported = list(ast.literal_eval(node.value))
    return {package} | {f"{package}.{name}" for name in exported if is_module(f"{package}.{name}")}


def stage_edges() -> Iterator[tuple[str, str]]:
    """(importer, imported) for every import of a module of one stage by another's."""
    for module, targets in import_graph().items():
        for target in sorted(targets):
            if stage(module) and stage(target) and stage(target) != stage(module):
                yield module, target


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


def test_every_module_of_the_engine_belongs_to_a_stage() -> None:
    loose = sorted(
        module
        for module in import_graph()
        if unit(module) == "decide" and module != "errord.decide"
        if stage(module) not in DECIDE_STAGES
    )
    assert loose == []
    assert all((ROOT / "decide" / name / "__init__.py").is_file() for name in DECIDE_STAGES)


def test_stages_import_each_other_only_through_their_packages() -> None:
    api = {name: stage_api(name) for name in DECIDE_STAGES}
    deep = [
        f"{module} imports {target}"
        for module, target in stage_edges()
        if target not in api[stage(target) or ""]
    ]
    assert deep == []


def test_stages_import_only_the_stages_before_them() -> None:
    rank = {name: index for index, name in enumerate(DECIDE_STAGES)}
    backward = [
        f"{module} imports {target}"
        for module, target in stage_edges()
        if rank[stage(target) or ""] > rank[stage(module) or ""]
    ]
    assert backward == []


def test_a_stage_module_imports_its_own_stage_by_its_modules() -> None:
    """A module that imported its own stage's package would run that package's
    ``__init__``, which imports the module: a cycle."""
    circular = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if stage(module) and target == f"errord.decide.{stage(module)}"
        if module != target
    ]
    assert circular == []


def test_each_stages_docstring_names_each_of_its_modules() -> None:
    """A newcomer finds every module of a stage said in the stage's docstring."""
    unsaid = []
    for name in DECIDE_STAGES:
        said = importlib.import_module(f"errord.decide.{name}").__doc__ or ""
        unsaid += [
            f"errord.decide.{name}.{path.stem}"
            for path in sorted((ROOT / "decide" / name).glob("*.py"))
            if path.stem != "__init__" and f"``{path.stem}``" not in said
        ]
    assert unsaid == []


def test_the_engines_docstring_draws_its_stages_in_order() -> None:
    assert ", ".join(DECIDE_STAGES) in (errord.decide.__doc__ or "")


def test_no_module_is_longer_than_450_lines() -> None:
    long = {
        str(path.relative_to(ROOT.parent)): lines
        for path in ROOT.rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
