"""clients/python/docs/openai_agents.md as a reader meets it: its example runs as written
against a real errord process started with the page's manifests and prints what the page
shows. (The ``openai-agents`` extra installing on its own is
tests/daemon/test_extras_install.py's.)"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ROOT
from tests.page_examples import run_example

PAGE = ROOT / "clients" / "python" / "docs" / "openai_agents.md"


def test_the_pages_example_runs_as_written_and_prints_what_the_page_shows(
    tmp_path: Path,
) -> None:
    """The agent (tools/tools.yaml, agent.py) gets its flight after errord retries the
    search's timeout, and the model reads errord's text for the booking's revoked key."""
    run_example(PAGE, tmp_path)
