"""clients/python/docs/langchain.md as a reader meets it: its example runs as written
against a real errord process started with the page's manifests and prints what the page
shows, and it names the versions it was tested with. (The ``langchain`` extra installing
on its own is tests/daemon/test_extras_install.py's.)"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from tests.helpers import ROOT
from tests.page_examples import run_example

PAGE = ROOT / "clients" / "python" / "docs" / "langchain.md"


def test_the_pages_example_runs_as_written_and_prints_what_the_page_shows(
    tmp_path: Path,
) -> None:
    """create_agent with the middleware (langchain/tools/tools.yaml, agent.py): the
    weather's timeout retried, the flight's refused key answered by the alternative the
    model is not shown, the hotel's missing ``nights`` handed to the model; the stream
    told the user of the retry and the switch."""
    run_example(PAGE, tmp_path)


def test_the_page_names_the_versions_installed_here() -> None:
    """The versions the page says were tested are those of the checkout's venv."""
    text = " ".join(PAGE.read_text().split())
    for package in ("langchain", "langgraph", "langchain-core"):
        assert f"{package} {version(package)}" in text, package
