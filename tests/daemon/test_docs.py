"""Every command the README and docs/ show runs as shown, in order, and answers as shown
(how a page is walked through, and what matching what it shows means, is in
tests/page_examples.py); the pages' links lead somewhere, and their commands use the venv."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.page_examples import (
    PageDaemon,
    broken_links,
    errord_serve,
    prints_as_shown,
    walk_through,
)

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.fixture
def page_daemon(tmp_path: Path) -> Iterator[PageDaemon]:
    """The port of the daemon the README's first set-up command starts, in a directory of
    the test's own."""
    with errord_serve(tmp_path / "daemon") as daemon:
        yield daemon


def test_the_readme_five_minute_path_runs_as_shown(tmp_path: Path, page_daemon: PageDaemon) -> None:
    walk_through(ROOT / "README.md", tmp_path, daemon=page_daemon)


def test_the_grpc_walkthrough_runs_as_shown(tmp_path: Path, page_daemon: PageDaemon) -> None:
    walk_through(ROOT / "docs" / "grpc.md", tmp_path, daemon=page_daemon)


def test_the_operations_commands_run_as_shown(tmp_path: Path) -> None:
    walk_through(ROOT / "docs" / "operations.md", tmp_path)


def test_the_readme_shows_the_test_command_ci_runs_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    command = ci[ci.index("# The README's test command, verbatim.") + 1]
    assert f"    {command}" in (ROOT / "README.md").read_text().splitlines()


def test_every_python_command_of_the_docs_is_the_venvs() -> None:
    bare = re.compile(r"(?<![\w/.-])python3? -m (?!venv\b)")
    found = [
        f"{page.name}:{number}: {line.strip()}"
        for page in PAGES
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        if bare.search(line)
    ]
    assert not found


def test_every_link_between_the_pages_leads_to_a_file_and_heading_that_exist() -> None:
    assert not [link for page in PAGES for link in broken_links(page)]


def test_an_examples_output_matches_line_by_line_a_dots_line_standing_for_any_lines() -> None:
    """A line ``...`` stands for any lines (none included), ``...`` inside a line for
    anything in it; nothing else may differ."""
    assert prints_as_shown("a\n...\nd\n", "a\nb\nc\nd\n")
    assert prints_as_shown("a\n...\nd\n", "a\nd\n")
    assert prints_as_shown("took ... ms\n", "took 12 ms\n")
    assert not prints_as_shown("a\n...\nd\n", "a\nb\nd\ne\n")
    assert not prints_as_shown("a (b)\n", "a b\n")
    assert not prints_as_shown("took ... ms\n", "took 12\nms\n")
