"""The engine says what deciding on a failure reads (breakers, the error's memory key), and
the handler holds exactly that before deciding, classifying each report once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import errord.decide.classify.classification as classify_module
from errord.decide.engine import Engine
from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory import MemoryKey
from errord.decide.memory.signatures import signature
from errord.decide.model import Classification, ErrorCode, FailureReport, ToolFailure
from errord.decide.policy import default_policy
from tests.fakes import FixedJitter
from tests.harness import Harness, failure_report

CALM = BreakerPolicy(failure_threshold=1000)
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="search", alternatives=("backup",), breaker=CALM),
        ToolManifest(name="backup", breaker=CALM),
    ]
)


def failure(call: str, message: str = "Connection timeout after 30s") -> FailureReport:
    return failure_report(call, error=ToolFailure(code=ErrorCode.TIMEOUT, message=message))


def test_the_engine_names_the_breakers_and_the_memory_key_a_decision_reads() -> None:
    report = failure("c")
    reads = Engine(default_policy(FixedJitter())).reads(report, MANIFESTS)
    assert reads.breakers == ("search", "backup")
    assert reads.classification.code is ErrorCode.TIMEOUT
    expected = signature(ErrorCode.TIMEOUT, report.error.message).key
    assert reads.memory_key == MemoryKey("search", expected)


@pytest.fixture
async def small_harness(tmp_path: Path) -> AsyncIterator[Harness]:
    """A handler whose projections hold one key each: memory drops all errors but one."""
    harness = Harness(tmp_path, MANIFESTS)
    harness.capacity = 1
    await harness.start()
    yield harness
    await harness.close()


async def test_a_report_is_classified_once_even_when_memory_dropped_errors(
    small_harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = small_harness.handler
    await handler.report_failure(failure("a", "Connection timeout after 30s"))
    await handler.report_failure(failure("b", "Connection refused by the upstream host"))
    assert not small_harness.state.memory.complete
    classified: list[ToolFailure] = []
    real = classify_module.normalize

    def counting(error: ToolFailure) -> Classification:
        classified.append(error)
        return real(error)

    monkeypatch.setattr(classify_module, "normalize", counting)
    await handler.report_failure(failure("c", "Connection timeout after 31s"))
    assert len(classified) == 1
