"""The TypeScript client's own tests (clients/typescript, Node's test runner), run against
errord processes they start with this interpreter (ERRORD_PYTHON).

Without Node.js on PATH the test is skipped, except in CI (CI set), where it fails
saying what to install: a machine that cannot run them must not pass silently.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.page_examples import untracked

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
NEEDS_NODE = (
    "Node.js 20+ is needed to test clients/typescript: install it or put `node` and `npm` "
    "on PATH (https://nodejs.org)"
)


def _node_or_skip() -> None:
    if shutil.which("node") and shutil.which("npm"):
        return
    if os.environ.get("CI"):
        pytest.fail(NEEDS_NODE)
    pytest.skip(NEEDS_NODE)


def _run(*command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _installed() -> bool:
    """True when node_modules holds what package-lock.json asks (npm writes its copy)."""
    copy = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    return copy.exists() and copy.stat().st_mtime >= lock.stat().st_mtime


def test_the_typescript_client_passes_its_node_tests() -> None:
    """`npm ci` (when node_modules is missing or older than the lock) then `npm test` in
    clients/typescript exit 0: the client, the executor's cases against errord processes,
    and the packed tarball installing into a fresh project."""
    _node_or_skip()
    env = dict(os.environ, ERRORD_PYTHON=sys.executable)
    if not _installed():
        installed = _run("npm", "ci", "--no-audit", "--no-fund", env=env)
        assert installed.returncode == 0, f"npm ci failed:\n{installed.stdout}\n{installed.stderr}"
    tested = _run("npm", "test", env=env)
    assert tested.returncode == 0, f"npm test failed:\n{tested.stdout}\n{tested.stderr}"


def test_the_readmes_example_leaves_nothing_git_does_not_ignore(tmp_path: Path) -> None:
    """The files the README says to save, and what its daemon makes beside its --db and
    its log, are all under names the package's .gitignore covers (the example itself
    runs in test/readme.test.ts)."""
    readme = (PACKAGE / "README.md").read_text()
    saved = re.findall(r"[Ss]ave this as `([^`]+)`", readme)
    serve = re.search(r"errord serve .*--db (\S+) 2>(\S+) &", readme)
    assert saved, "the README's example names the files it saves"
    assert serve, "the README's example starts its daemon with its own --db and log"
    database = serve[1]
    made = [*saved, database, f"{database}.lock", str(Path(database).parent / "operator.token")]
    for name in [*made, serve[2]]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    assert untracked(tmp_path, within="clients/typescript") == []
