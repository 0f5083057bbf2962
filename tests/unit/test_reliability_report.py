"""The reliability report writes where it is told: stdout, or the file --output names, and
never the report kept in the repository unless that is the file named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.reliability.report import arguments, publish

KEPT = ROOT / "tests" / "reliability" / "REPORT.md"


def test_without_output_the_report_goes_to_stdout_and_the_kept_one_is_untouched(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kept = KEPT.read_bytes()
    publish("# errord reliability report\n\nall ok.", arguments(["--short"]).output)
    assert capsys.readouterr().out == "# errord reliability report\n\nall ok.\n"
    assert KEPT.read_bytes() == kept


def test_output_names_the_file_the_report_is_written_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = KEPT.read_bytes()
    output = tmp_path / "report.md"
    publish("# errord reliability report", arguments(["--output", str(output)]).output)
    assert output.read_text() == "# errord reliability report"
    assert str(output) in capsys.readouterr().out
    assert KEPT.read_bytes() == kept
