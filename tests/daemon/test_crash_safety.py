"""The crash-safety script in its short form: SIGKILLs under load lose nothing
acknowledged (the long form, 50 kills over 10,000 decisions, is
``python -m tests.reliability.crash``)."""

from __future__ import annotations

from pathlib import Path

from tests.reliability.crash import run


def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path: Path) -> None:
    results = run(kills=3, decisions=300, directory=tmp_path, seed=7)
    assert results.problems == []
    assert results.kills == 3
    assert results.decisions_acknowledged >= 300
    assert results.replays_checked > 0
    assert len(results.restart_seconds) == 4
