"""The MCP adapter's page (clients/python/docs/mcp.md) runs as written: its example, run
as the page says (``.venv/bin/python mcp/weather.py``) against errord as a process
serving ``mcp/tools.d`` as the page starts it, prints the ```text block after it,
and ``errord check`` then says of the written manifests what the page shows. (The ``mcp``
extra installing on its own is tests/daemon/test_extras_install.py's.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import ROOT, errord_command, subprocess_env
from tests.page_examples import COMMAND_TIMEOUT, fenced_blocks, run_example

PAGE = ROOT / "clients" / "python" / "docs" / "mcp.md"


def test_the_pages_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    """The example writes the server's manifests, reloads errord, and prints a retried
    success and a correction naming ``days``, as shown; ``errord check`` then says of the
    written directory what the page shows."""
    run_example(PAGE, tmp_path)

    [check] = [block.text for block in fenced_blocks(PAGE) if block.kind == "console"]
    command, shown_check = check.split("\n", 1)
    assert command == "$ .venv/bin/errord check mcp/tools.d"
    checked = subprocess.run(
        errord_command("check", "mcp/tools.d"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        env=subprocess_env(),
        check=False,
    )
    assert (checked.returncode, checked.stdout) == (0, shown_check)
