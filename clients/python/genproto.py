"""Generate the client package's generated code: the one command that writes it.

    python clients/python/genproto.py          # regenerate
    python clients/python/genproto.py --check  # exit 1 if the committed code is stale

Two packages, never edited by hand:

- ``errord_client.v1``, from protos/. protoc names Python modules after the proto's path,
  so the stubs it writes for protos/errord/v1/errord.proto import ``errord.v1`` — the
  daemon's package name. They are placed in ``errord_client.v1`` instead, and that one
  import is rewritten (temporalio's gen_protos does the same).
- ``errord_client._classify``, from errord/decide/classify: errord's own classification,
  copied so that the executor's local policy classifies exactly as the daemon does when
  the daemon does not answer (one source for both). Its imports of the daemon's records
  become imports of their twins in errord_client.classify_model.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.resources
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[2]
PROTOS = ROOT / "protos"
SOURCES = ("errord/v1/errord.proto",)
TARGET = ROOT / "clients/python/src/errord_client/v1"
GENERATED_IMPORT = "from errord.v1 import"
PACKAGE_IMPORT = "from errord_client.v1 import"
INIT = '"""Generated from protos/errord/v1 by clients/python/genproto.py; never edit."""\n'

CLASSIFY_SOURCE = ROOT / "errord/decide/classify"
CLASSIFY_TARGET = ROOT / "clients/python/src/errord_client/_classify"
CLASSIFY_HEADER = (
    "# Generated from errord/decide/classify by clients/python/genproto.py; never edit.\n"
)
CLASSIFY_IMPORTS = (
    ("from errord.decide.classify.", "from errord_client._classify."),
    ("from errord.decide.model import", "from errord_client.classify_model import"),
)
"""Each rewritten import: the daemon's package, its records."""


def generate() -> dict[str, str]:
    """Run protoc and return the generated files by name."""
    well_known = importlib.resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as out:
        argv = [
            "grpc_tools.protoc",
            f"--proto_path={PROTOS}",
            f"--proto_path={well_known}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            *SOURCES,
        ]
        if protoc.main(argv) != 0:
            raise SystemExit("protoc failed")
        produced = Path(out) / "errord/v1"
        files = {
            path.name: path.read_text().replace(GENERATED_IMPORT, PACKAGE_IMPORT)
            for path in sorted(produced.iterdir())
        }
    files["__init__.py"] = INIT
    return files


def classify_copy() -> dict[str, str]:
    """errord/decide/classify's modules, their imports rewritten for the client."""
    files = {}
    for path in sorted(CLASSIFY_SOURCE.glob("*.py")):
        text = path.read_text()
        for daemon, client in CLASSIFY_IMPORTS:
            text = text.replace(daemon, client)
        files[path.name] = CLASSIFY_HEADER + text
    return files


GENERATORS: tuple[tuple[Path, Callable[[], dict[str, str]]], ...] = (
    (TARGET, generate),
    (CLASSIFY_TARGET, classify_copy),
)
"""Each generated package, and what makes its files."""


def stale(target: Path, files: dict[str, str]) -> list[str]:
    """Describe every difference between the generated files and ``target``."""
    problems = []
    present = {path.name for path in target.glob("*.py*")}
    for name in sorted(present - files.keys()):
        problems.append(f"{target / name}: not generated any more")
    for name, text in files.items():
        path = target / name
        current = path.read_text() if path.exists() else ""
        if current != text:
            diff = difflib.unified_diff(
                current.splitlines(), text.splitlines(), str(path), "generated", lineterm="", n=1
            )
            problems.append("\n".join(list(diff)[:20]))
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed code is stale")
    args = parser.parse_args()
    generated = [(target, make()) for target, make in GENERATORS]
    if args.check:
        problems = [problem for target, files in generated for problem in stale(target, files)]
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("generated code is stale: run python clients/python/genproto.py", file=sys.stderr)
        return 1 if problems else 0
    for target, files in generated:
        target.mkdir(parents=True, exist_ok=True)
        for path in target.glob("*.py*"):
            if path.name not in files:
                path.unlink()
        for name, text in files.items():
            (target / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
