"""clients/python/docs/langgraph.md as a reader meets it: its example runs as written
against a real errord process started with the page's manifests and prints what the page
shows, and the ``langgraph`` extra installs on its own into a fresh virtualenv.

The page's output matches when it has as many lines as the page shows and each matches its
line, ``...`` standing for anything.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.helpers import CLIENT_SOURCE, ROOT, start_process

PAGE = ROOT / "clients" / "python" / "docs" / "langgraph.md"
COMMAND_TIMEOUT = 120.0
"""How long the example may run: only a bound on a hang, never a measure."""
INSTALL_TIMEOUT = 600.0


def block(kind: str) -> str:
    """The page's one fenced block of ``kind`` (``python``, ``yaml``, ``text``)."""
    found = re.findall(rf"^```{kind}\n(.*?)^```$", PAGE.read_text(), flags=re.M | re.S)
    assert len(found) == 1, f"{PAGE.name} should have one {kind} block, has {len(found)}"
    text: str = found[0]
    return text


def mismatches(shown: str, printed: str) -> list[str]:
    """The lines the page shows that the output does not have, in place."""
    wanted, got = shown.splitlines(), printed.splitlines()
    problems = [
        f"line {number}: page {line!r}, printed {actual!r}"
        for number, (line, actual) in enumerate(zip(wanted, got, strict=False), start=1)
        if not re.fullmatch(".*".join(map(re.escape, line.split("..."))), actual)
    ]
    if len(wanted) != len(got):
        problems.append(f"the page shows {len(wanted)} lines, the example printed {len(got)}")
    return problems


def test_the_pages_example_runs_as_written_and_prints_what_the_page_shows(
    tmp_path: Path,
) -> None:
    """The page's manifest goes to tools/tools.yaml, its agent to agent.py, run with the
    checkout's client against errord on a port of the test's own (ERRORD_ADDRESS)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "tools.yaml").write_text(block("yaml"))
    (tmp_path / "agent.py").write_text(block("python"))
    daemon = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"), "--manifests", str(tools)
    )
    try:
        env = {**os.environ, "ERRORD_ADDRESS": daemon.address, "PYTHONPATH": str(CLIENT_SOURCE)}
        ran = subprocess.run(
            [ROOT / ".venv" / "bin" / "python", "agent.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    finally:
        daemon.terminate(signal.SIGTERM)
    assert ran.returncode == 0, ran.stderr
    assert not mismatches(block("text"), ran.stdout), ran.stdout + ran.stderr


def test_the_page_names_the_versions_installed_here() -> None:
    """The versions the page says were tested are those of the checkout's venv."""
    text = " ".join(PAGE.read_text().split())
    for package in ("langgraph", "langgraph-prebuilt", "langchain-core"):
        assert f"{package} {version(package)}" in text, package


@pytest.mark.slow
def test_the_extra_installs_on_its_own_into_a_fresh_virtualenv(tmp_path: Path) -> None:
    """``pip install './clients/python[langgraph]'`` brings everything the adapter imports:
    nothing of the checkout's venv is visible to the new one."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=INSTALL_TIMEOUT)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    install = subprocess.run(
        [venv / "bin" / "pip", "install", "--quiet", "./clients/python[langgraph]"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    imported = subprocess.run(
        [venv / "bin" / "python", "-c", "import errord_client.adapters.langgraph"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
