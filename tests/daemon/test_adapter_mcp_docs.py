"""The MCP adapter's page (clients/python/docs/mcp.md) runs as written, and the ``mcp``
extra installs on its own.

The page's example is its one ```python block, run as the page says (``.venv/bin/python
weather.py`` in a directory holding ``tools.d``) against errord as a process serving that
directory; the port the page names becomes the daemon's. What it prints must be the
```text block after it, where a line ``...`` stands for any lines.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT, DaemonProcess, errord_command, start_process, subprocess_env

PAGE = ROOT / "clients" / "python" / "docs" / "mcp.md"
PAGE_PORT = "50051"
TIMEOUT = 120.0
"""Seconds a command may take: a bound on a hang, never a measure."""
FENCED = re.compile(r"^```(\w+)\n(.*?)^```\n", flags=re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    """The page's fenced blocks in ``language``, in order."""
    return [body for kind, body in FENCED.findall(PAGE.read_text()) if kind == language]


def printed_by_example() -> str:
    """The block right after the page's ```python block: what the example prints."""
    found = FENCED.findall(PAGE.read_text())
    [position] = [index for index, (kind, _) in enumerate(found) if kind == "python"]
    kind, body = found[position + 1]
    assert kind == "text"
    return str(body)


def matches(shown: str, printed: str) -> bool:
    """Whether ``printed`` is ``shown``, a ``...`` line standing for any lines."""
    pattern = "".join(
        r"(?:.*\n)*?" if line == "..." else re.escape(line) + r"\n" for line in shown.splitlines()
    )
    return re.fullmatch(pattern, printed) is not None


@pytest.fixture
def errord_for_page(tmp_path: Path) -> Iterator[DaemonProcess]:
    """errord serving ``tmp_path/tools.d`` (empty), as the page starts it."""
    (tmp_path / "tools.d").mkdir()
    running = start_process(
        "--listen",
        "127.0.0.1:0",
        "--db",
        str(tmp_path / "errord.db"),
        "--manifests",
        str(tmp_path / "tools.d"),
    )
    yield running
    running.terminate(signal.SIGKILL)


def test_the_pages_example_prints_what_the_page_shows(
    tmp_path: Path, errord_for_page: DaemonProcess
) -> None:
    """The example writes the server's manifests, reloads errord, and prints a retried
    success and a correction naming ``days``, as shown; ``errord check`` then says of the
    written directory what the page shows."""
    [example] = blocks("python")
    port = errord_for_page.address.rsplit(":", 1)[1]
    (tmp_path / "weather.py").write_text(example.replace(PAGE_PORT, port))
    ran = subprocess.run(
        [sys.executable, "weather.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=subprocess_env(),
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    shown = printed_by_example()
    assert matches(shown, ran.stdout), f"printed:\n{ran.stdout}\nshown:\n{shown}"

    [check] = blocks("console")
    command, shown_check = check.split("\n", 1)
    assert command == "$ .venv/bin/errord check tools.d"
    checked = subprocess.run(
        errord_command("check", "tools.d"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=subprocess_env(),
        check=False,
    )
    assert (checked.returncode, checked.stdout) == (0, shown_check)


def test_a_dots_line_stands_for_any_lines_and_nothing_else_differs() -> None:
    assert matches("a\n...\nd\n", "a\nb\nc\nd\n")
    assert matches("a\n...\nd\n", "a\nd\n")
    assert not matches("a\n...\nd\n", "a\nb\nd\ne\n")
    assert not matches("a (b)\n", "a b\n")


@pytest.mark.slow
def test_the_extra_installs_on_its_own_into_a_fresh_virtualenv(tmp_path: Path) -> None:
    """``pip install './clients/python[mcp]'`` into a new virtualenv brings what the
    adapter imports: the client package and mcp, nothing of the daemon's."""
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "./clients/python[mcp]"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    imported = subprocess.run(
        [
            str(python),
            "-c",
            "import errord_client.adapters.mcp, importlib.util; "
            "print(importlib.util.find_spec('errord') is None)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert (imported.returncode, imported.stdout) == (0, "True\n"), imported.stderr
