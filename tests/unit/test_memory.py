"""Episodic memory's statistics: per tool and error signature, each recovery's bursts of
episodes opened, succeeded and failed (the episodes of one burst count once), decayed
with time, restored after a restart, and read back when memory dropped them for room."""

from __future__ import annotations

from pathlib import Path

import pytest

from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory import BURST_GAP, HALF_LIFE, MemoryKey, recall
from errord.decide.memory.signatures import signature
from errord.decide.model import (
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from tests.harness import Harness, failure_report

CALM = BreakerPolicy(failure_threshold=1000)
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="search", breaker=CALM, alternatives=("backup",)),
        ToolManifest(name="backup", breaker=CALM),
    ]
)
MESSAGE = "timeout after 30s on req 8812"
KEY = MemoryKey("search", signature(ErrorCode.TIMEOUT, MESSAGE).key)


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


def failure(
    call: str, attempt: int = 1, tool: str = "search", code: ErrorCode = ErrorCode.TIMEOUT
) -> FailureReport:
    # The request number differs on every call: one signature all the same.
    message = MESSAGE.replace("8812", f"{attempt}{call}")
    return failure_report(
        call, tool, attempt=attempt, error=ToolFailure(code=code, message=message)
    )


def success(call: str, attempt: int, tool: str = "search") -> OutcomeReport:
    return OutcomeReport(
        turn_id="t", call_id=call, tool=tool, attempt=attempt, outcome=Outcome.SUCCESS
    )


async def test_retries_that_never_fix_an_error_are_remembered(harness: Harness) -> None:
    for call in ("1", "2", "3"):
        await harness.handler.report_failure(failure(call, attempt=1))
        await harness.handler.report_failure(failure(call, attempt=2))  # the retry failed
        harness.clock.advance(BURST_GAP)
    evidence = recall(harness.state.memory.view(KEY), harness.clock.now())
    retry = evidence["RETRY"]
    assert retry.succeeded == 0.0
    assert retry.failed == pytest.approx(3.0, abs=0.1)  # three bursts, decayed a little
    assert retry.unknown == 0.0  # each burst was told
    assert retry.success_rate == 0.0


async def test_the_episodes_of_one_burst_count_once(harness: Harness) -> None:
    """Twenty calls caught in one outage are one piece of evidence, not twenty."""
    for number in range(20):
        call = str(100 + number)
        await harness.handler.report_failure(failure(call, attempt=1))
        await harness.handler.report_failure(failure(call, attempt=2))
        harness.clock.advance(1.0)
    retry = recall(harness.state.memory.view(KEY), harness.clock.now())["RETRY"]
    assert retry.failed == pytest.approx(1.0, abs=0.01)
    harness.clock.advance(BURST_GAP)  # a quiet minute: the next failure is another burst
    await harness.handler.report_failure(failure("7", attempt=1))
    await harness.handler.report_failure(failure("7", attempt=2))
    retry = recall(harness.state.memory.view(KEY), harness.clock.now())["RETRY"]
    assert retry.failed == pytest.approx(2.0, abs=0.05)
    assert retry.failed_at == harness.clock.now()


async def test_an_alternative_that_recovers_is_remembered_by_name(harness: Harness) -> None:
    for call in ("1", "2"):
        await harness.handler.report_failure(failure(call, code=ErrorCode.NOT_FOUND))
        await harness.handler.report_outcome(success(call, attempt=1, tool="backup"))
        harness.clock.advance(BURST_GAP)
    key = MemoryKey("search", signature(ErrorCode.NOT_FOUND, MESSAGE).key)
    evidence = recall(harness.state.memory.view(key), harness.clock.now())
    assert round(evidence["USE_ALTERNATIVE:backup"].succeeded) == 2
    assert evidence["USE_ALTERNATIVE:backup"].success_rate == 1.0


async def test_evidence_fades_by_half_every_half_life(harness: Harness) -> None:
    await harness.handler.report_failure(failure("1", attempt=1))
    await harness.handler.report_outcome(success("1", attempt=2))
    harness.clock.advance(HALF_LIFE)
    retry = recall(harness.state.memory.view(KEY), harness.clock.now())["RETRY"]
    assert retry.succeeded == pytest.approx(0.5)
    assert retry.unknown == pytest.approx(0.0)


async def test_memory_survives_a_restart_and_equals_a_rebuild(harness: Harness) -> None:
    await harness.handler.report_failure(failure("1", attempt=1))
    harness.clock.advance(60.0)
    await harness.handler.report_outcome(success("1", attempt=2))
    before = harness.state.memory.view(KEY)
    await harness.restart()
    assert harness.state.memory.view(KEY) == before
    [rebuilt] = [
        states
        for projection, states in zip(
            harness.state.all, await harness.store.fold_trace(harness.state.all), strict=True
        )
        if projection is harness.state.memory
    ]
    assert rebuilt[KEY] == before


async def test_a_dropped_memory_key_is_read_back_before_it_changes(tmp_path: Path) -> None:
    harness = Harness(tmp_path, MANIFESTS)
    harness.capacity = 2
    await harness.start()
    try:
        await harness.handler.report_failure(failure("1", attempt=1))
        for number in range(5):  # other errors push KEY out of memory
            error = ToolFailure(code=ErrorCode.TIMEOUT, message=f"error kind {number * 'x'}")
            other = failure_report(f"o{number}", f"tool{number}", turn="u", error=error)
            await harness.handler.report_failure(other)
        assert harness.state.memory.missing(KEY)
        await harness.handler.report_outcome(success("1", attempt=2))
        stats = harness.state.memory.view(KEY)
        assert stats is not None
        tally = stats.tallies["RETRY"]
        assert (tally.opened, tally.succeeded) == (1.0, 1.0)  # opened before, told after
    finally:
        await harness.close()


async def test_recall_by_message_finds_an_error_whose_message_held_a_secret(
    harness: Harness,
) -> None:
    secret = "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    error = ToolFailure(code=ErrorCode.TIMEOUT, message=f"timeout calling api ({secret})")
    report = failure_report("s", error=error)
    await harness.handler.report_failure(report)
    [(key, stats)] = await harness.actions.recall_episodes(
        "search", f"timeout calling api ({secret})", None
    )
    assert "ghp_" not in stats.fingerprint
    assert key.tool == "search"
