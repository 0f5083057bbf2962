"""Generate errord_client.v1 from protos/: the one command that writes generated code.

    python clients/python/genproto.py          # regenerate
    python clients/python/genproto.py --check  # exit 1 if the committed code is stale

protoc names Python modules after the proto's path, so the stubs it writes for
protos/errord/v1/errord.proto import ``errord.v1`` — the daemon's package name.
They are placed in ``errord_client.v1`` instead, and that one import is rewritten
(temporalio's gen_protos does the same).
"""

from __future__ import annotations

import argparse
import difflib
import importlib.resources
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[2]
PROTOS = ROOT / "protos"
SOURCES = ("errord/v1/errord.proto",)
TARGET = ROOT / "clients/python/src/errord_client/v1"
GENERATED_IMPORT = "from errord.v1 import"
PACKAGE_IMPORT = "from errord_client.v1 import"
INIT = '"""Generated from protos/errord/v1 by clients/python/genproto.py; never edit."""\n'


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


def stale(files: dict[str, str]) -> list[str]:
    """Describe every difference between the generated files and TARGET."""
    problems = []
    present = {path.name for path in TARGET.glob("*.py*")}
    for name in sorted(present - files.keys()):
        problems.append(f"{TARGET / name}: not produced by protoc any more")
    for name, text in files.items():
        path = TARGET / name
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
    files = generate()
    if args.check:
        problems = stale(files)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("generated code is stale: run python clients/python/genproto.py", file=sys.stderr)
        return 1 if problems else 0
    TARGET.mkdir(parents=True, exist_ok=True)
    for path in TARGET.glob("*.py*"):
        if path.name not in files:
            path.unlink()
    for name, text in files.items():
        (TARGET / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
