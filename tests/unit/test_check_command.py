"""`errord check` on a valid directory: the count of tools, and a warning for each alternative
that names a tool without a manifest (it would run with the defaults: often a typo); an
empty directory passes, as the daemon serves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from errord.cli.main import main


def manifest_dir(tmp_path: Path, text: str) -> Path:
    directory = tmp_path / "tools.d"
    directory.mkdir()
    (directory / "travel.yaml").write_text(text)
    return directory


def test_one_tool_is_counted_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = manifest_dir(tmp_path, "tools:\n  - name: flight_search\n")
    assert main(["check", str(directory)]) == 0
    assert capsys.readouterr().out == f"{directory}: 1 tool valid (flight_search)\n"


def test_an_alternative_without_a_manifest_is_warned_of_at_the_tool_listing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = manifest_dir(
        tmp_path,
        "tools:\n"
        "  - name: flight_search\n"
        "    alternatives: [flight_search_backup, train_search]\n"
        "  - name: flight_search_bakup\n",
    )
    assert main(["check", str(directory)]) == 0  # a warning, not a problem
    output = capsys.readouterr()
    defaults = "so it runs with the default timeout, retries and breaker"
    assert output.err.splitlines() == [
        f"{directory}/travel.yaml:2: flight_search: alternative 'flight_search_backup' has no "
        f"manifest, {defaults} (did you mean 'flight_search_bakup'?)",
        f"{directory}/travel.yaml:2: flight_search: alternative 'train_search' has no "
        f"manifest, {defaults}",
    ]
    assert output.out == f"{directory}: 2 tools valid (flight_search, flight_search_bakup)\n"


def test_alternatives_that_all_have_manifests_draw_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = manifest_dir(
        tmp_path,
        "tools:\n  - name: flight_search\n    alternatives: [flight_search_backup]\n"
        "  - name: flight_search_backup\n",
    )
    assert main(["check", str(directory)]) == 0
    assert capsys.readouterr().err == ""


def test_an_empty_directory_passes_with_a_warning_so_check_and_reload_reloads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The daemon serves an emptied manifest directory (every tool on the default policy),
    so `errord check DIR && systemctl reload errord` must not stop at the check."""
    directory = tmp_path / "tools.d"
    directory.mkdir()
    assert main(["check", str(directory)]) == 0
    output = capsys.readouterr()
    assert output.out == f"{directory}: no tools; each runs on the default policy\n"
    assert output.err == f"{directory}: no manifest files (*.yaml, *.yml) in it\n"


def test_a_directory_whose_only_manifests_are_not_read_still_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "tools.d"
    directory.mkdir()
    (directory / "Travel.YAML").write_text("tools:\n  - name: flights\n")
    assert main(["check", str(directory)]) == 1
    assert f"{directory / 'Travel.YAML'}: not read" in capsys.readouterr().err
