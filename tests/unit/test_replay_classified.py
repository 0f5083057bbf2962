"""Replay classifies an error of a tool once: later reports of it read the classification
and signature worked out the first time, which are what classifying it again gives."""

from __future__ import annotations

import pytest

from errord.decide.engine.views import Reads
from errord.decide.manifest import ClassificationRule, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import ErrorClass, ErrorCode, FailureReport, ToolFailure
from errord.replay import classified as module
from errord.replay.classified import Classified

UNAVAILABLE = ToolFailure(http_status=503, message="HTTP 503 Service Unavailable")
TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="read timed out after 30s")


def report(tool: str, error: ToolFailure, attempt: int = 1) -> FailureReport:
    return FailureReport(turn_id="t", call_id="c", tool=tool, attempt=attempt, error=error)


MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(
            name="weather",
            classification=(ClassificationRule(ErrorClass.PERMANENT, http_status=503),),
        ),
        ToolManifest(name="search"),
    ]
)


def test_an_error_met_again_reads_what_classifying_it_gave_the_first_time() -> None:
    replay = Classified(MANIFESTS)
    first = replay.reads(report("weather", UNAVAILABLE))
    again = replay.reads(report("weather", UNAVAILABLE, attempt=2))
    fresh = Reads(report("weather", UNAVAILABLE, attempt=2), MANIFESTS)
    assert again.classified is first.classified
    assert again.classified == fresh.classified
    assert again.manifests is MANIFESTS


def test_the_same_error_of_tools_with_other_rules_is_classified_for_each() -> None:
    replay = Classified(MANIFESTS)
    weather = replay.reads(report("weather", UNAVAILABLE)).classification
    search = replay.reads(report("search", UNAVAILABLE)).classification
    assert (weather.error_class, search.error_class) == (ErrorClass.PERMANENT, ErrorClass.TRANSIENT)


def test_other_errors_of_a_tool_are_classified_on_their_own() -> None:
    replay = Classified(MANIFESTS)
    replay.reads(report("search", UNAVAILABLE))
    timeout = replay.reads(report("search", TIMEOUT))
    assert timeout.classified == Reads(report("search", TIMEOUT), MANIFESTS).classified
    assert timeout.classification.code is ErrorCode.TIMEOUT


def test_a_replay_that_met_many_errors_starts_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "REMEMBERED", 1)
    replay = Classified(MANIFESTS)
    first = replay.reads(report("search", UNAVAILABLE)).classified
    replay.reads(report("search", TIMEOUT))
    again = replay.reads(report("search", UNAVAILABLE)).classified
    assert again is not first
    assert again == first
