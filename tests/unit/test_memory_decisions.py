"""Episodic memory changes decisions: an error that retries never
fix is not retried, the alternative that recovers it is preferred, and when the evidence
fades (injected clock) retries are tried again. The reason states the evidence, and the
decision records what it read. Each call here fails in a burst of its own (the clock
moves BURST_GAP between them): the episodes of one burst count once."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from errord.config import Settings
from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory import BURST_GAP, HALF_LIFE
from errord.decide.model import (
    Action,
    ErrorClass,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    RefusalKind,
    ToolFailure,
)
from errord.errors import ConfigError
from errord.manifests.files import load_manifest_file
from errord.state.health import ToolHealthBoard
from errord.wire.operator_responses import tool_health_to_proto
from tests.harness import Harness

CALM = BreakerPolicy(failure_threshold=1_000_000)
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="search", breaker=CALM, alternatives=("mirror", "backup")),
        ToolManifest(name="mirror", breaker=CALM),
        ToolManifest(name="backup", breaker=CALM),
    ]
)


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


def failure(call: str, attempt: int = 1, tool: str = "search", turn: str = "") -> FailureReport:
    """A timeout of ``call``, in a turn of its own unless ``turn`` says (the clock moves
    a minute between calls: a turn would pass its deadline)."""
    request = sum(map(ord, call)) * 7 + attempt  # differs per call: one signature still
    message = f"upstream timeout after {attempt}0s on req {request}"
    return FailureReport(
        turn_id=turn or f"turn-{call}",
        call_id=call,
        tool=tool,
        attempt=attempt,
        error=ToolFailure(code=ErrorCode.TIMEOUT, message=message),
    )


def outcome(call: str, attempt: int, tool: str, success: bool, turn: str = "") -> OutcomeReport:
    return OutcomeReport(
        turn_id=turn or f"turn-{call}",
        call_id=call,
        tool=tool,
        attempt=attempt,
        outcome=Outcome.SUCCESS if success else Outcome.FAILURE,
    )


async def hopeless_retries(harness: Harness, count: int, prefix: str = "h") -> None:
    """``count`` calls whose retry failed too."""
    for number in range(count):
        call = f"{prefix}{number}"
        await harness.handler.report_failure(failure(call, attempt=1))
        await harness.handler.report_outcome(outcome(call, 2, "search", success=False))
        harness.clock.advance(BURST_GAP)


async def test_an_error_retries_never_fix_goes_straight_to_the_alternative(
    harness: Harness,
) -> None:
    await hopeless_retries(harness, 4)
    still, _ = await harness.handler.report_failure(failure("x"))
    assert still.action is Action.RETRY  # 4 bursts: not enough evidence yet
    assert still.reason.endswith(
        "Retries fixed 0 of 4 bursts of this error of search recently (the failures of one "
        "outage or spell count once)."
    )
    await harness.handler.report_outcome(outcome("x", 2, "search", success=False))
    last_failed = harness.clock.now().isoformat(timespec="seconds")
    harness.clock.advance(BURST_GAP)
    decision, _ = await harness.handler.report_failure(failure("y"))
    assert (decision.action, decision.alternative_tool) == (Action.USE_ALTERNATIVE, "mirror")
    assert decision.refusal is not None
    assert decision.refusal.kind is RefusalKind.RETRIES_NEVER_FIX
    assert decision.reason == (
        "No retry: retries fixed 0 of 5 bursts of this error of search recently (the "
        f"failures of one outage or spell count once); the last failed at {last_failed}, and "
        "search has not succeeded nor had its breaker reset since; using the alternative "
        "tool mirror."
    )
    [recalled] = decision.recalled
    assert (recalled.recovery, recalled.succeeded) == ("RETRY", 0.0)
    assert round(recalled.failed) == 5


async def test_the_alternative_that_recovers_this_error_is_preferred(harness: Harness) -> None:
    await hopeless_retries(harness, 5)
    for number in range(6):  # mirror (listed first) fails this error, backup recovers it
        call = f"a{number}"
        first, _ = await harness.handler.report_failure(failure(call))
        tool = first.alternative_tool
        assert tool is not None
        await harness.handler.report_outcome(outcome(call, 1, tool, success=tool == "backup"))
        if tool == "mirror":
            await harness.handler.report_failure(failure(call, tool="mirror"))
            await harness.handler.report_outcome(outcome(call, 1, "backup", success=True))
        harness.clock.advance(BURST_GAP)
    decision, _ = await harness.handler.report_failure(failure("z"))
    assert decision.alternative_tool == "backup"
    assert "using the alternative tool backup, which recovered" in decision.reason
    recalled = {r.recovery: r for r in decision.recalled}
    assert recalled["USE_ALTERNATIVE:mirror"].succeeded == 0.0
    assert recalled["USE_ALTERNATIVE:backup"].failed == 0.0


async def test_retries_are_tried_again_once_the_evidence_fades(harness: Harness) -> None:
    await hopeless_retries(harness, 6)
    refused, _ = await harness.handler.report_failure(failure("r1"))
    assert refused.action is Action.USE_ALTERNATIVE
    harness.clock.advance(HALF_LIFE)  # 6 told bursts count as 3: below the 5 needed
    retried, _ = await harness.handler.report_failure(failure("r2", turn="later"))
    assert retried.action is Action.RETRY
    await harness.handler.report_outcome(outcome("r2", 2, "search", True, turn="later"))
    for number in range(5):  # the error recovers again on retry
        call = f"ok{number}"
        again, _ = await harness.handler.report_failure(failure(call, turn="later"))
        assert again.action is Action.RETRY
        await harness.handler.report_outcome(outcome(call, 2, "search", True, turn="later"))


def test_how_much_evidence_steers_a_decision_is_a_setting() -> None:
    assert Settings().memory_min_episodes == 5
    with pytest.raises(ConfigError, match="memory_min_episodes: must be from 1 to 10000"):
        Settings(memory_min_episodes=0)


async def test_an_error_retries_never_fix_is_suggested_for_a_manifest_override(
    harness: Harness, tmp_path: Path
) -> None:
    await hopeless_retries(harness, 5)
    board = ToolHealthBoard(harness.state, lambda: MANIFESTS)
    [candidate] = board.health("search", harness.clock.now()).override_candidates
    assert candidate.fingerprint == "upstream timeout after <n> on req <n>"
    assert (round(candidate.retried), candidate.recovered) == (5, 0.0)
    assert not board.health("mirror", harness.clock.now()).override_candidates
    [wired] = tool_health_to_proto(board.health("search", harness.clock.now())).override_candidates
    assert (wired.signature, wired.suggested_rule) == (
        candidate.signature,
        "- message: '(?i)upstream timeout after .+? on req .+?'\n  class: permanent",
    )
    manifest = tmp_path / "search.yaml"
    rule = textwrap.indent(candidate.suggested_rule, "      ")
    manifest.write_text(f"tools:\n  - name: search\n    classification:\n{rule}\n")
    [loaded] = load_manifest_file(manifest)
    harness.manifests = ManifestSnapshot([loaded])
    handler = await harness.restart()
    decision, _ = await handler.report_failure(failure("new", turn="v"))
    assert decision.classification.error_class is ErrorClass.PERMANENT
    assert decision.classification.rule == "manifest:search:classification[0]"


async def retries_recovering(harness: Harness, count: int, recovered: int, prefix: str) -> None:
    """``count`` calls retried once, of which the first ``recovered`` recovered."""
    for number in range(count):
        call = f"{prefix}{number}"
        await harness.handler.report_failure(failure(call, attempt=1))
        await harness.handler.report_outcome(outcome(call, 2, "search", number < recovered))
        harness.clock.advance(BURST_GAP)


async def test_the_backoff_is_halved_for_an_error_retries_recover(harness: Harness) -> None:
    plain, _ = await harness.handler.report_failure(failure("before", attempt=2))
    assert plain.delay == pytest.approx(0.2)  # 0.1 * 2, no evidence yet
    assert "backoff" not in plain.reason
    await retries_recovering(harness, 6, recovered=6, prefix="ok")
    paced, _ = await harness.handler.report_failure(failure("after", attempt=2))
    assert paced.action is Action.RETRY
    assert paced.delay == pytest.approx(0.1)
    assert paced.reason.endswith(
        "Retries fixed 6 of 6 bursts of this error of search recently, so the backoff is halved."
    )
    first, _ = await harness.handler.report_failure(failure("first", attempt=1))
    assert first.delay == pytest.approx(0.1)  # never below the policy's initial delay
    assert "backoff" not in first.reason


async def test_the_backoff_is_doubled_for_an_error_retries_rarely_recover(
    harness: Harness,
) -> None:
    await retries_recovering(harness, 10, recovered=3, prefix="few")
    paced, _ = await harness.handler.report_failure(failure("after", attempt=2))
    assert paced.action is Action.RETRY
    assert paced.delay == pytest.approx(0.4)
    assert paced.reason.endswith(
        "Retries fixed 3 of 9 bursts of this error of search recently, so the backoff is "
        "doubled."  # ten bursts, a minute apart, decayed to 9.4
    )
    capped, _ = await harness.handler.report_failure(failure("capped", attempt=4))
    assert capped.delay == pytest.approx(0.8)  # 0.8 doubled: never beyond max_delay
    assert "backoff" not in capped.reason


async def test_a_retry_after_the_tool_asked_for_is_never_paced(harness: Harness) -> None:
    await retries_recovering(harness, 6, recovered=6, prefix="ok")
    report = failure("asked", attempt=2)
    asked = FailureReport(
        turn_id=report.turn_id,
        call_id=report.call_id,
        tool=report.tool,
        attempt=2,
        error=ToolFailure(code=ErrorCode.TIMEOUT, message=report.error.message, retry_after=0.5),
    )
    decision, _ = await harness.handler.report_failure(asked)
    assert decision.delay == pytest.approx(0.5)
    assert "backoff" not in decision.reason


async def test_a_success_of_the_tool_after_the_failures_lifts_the_verdict(
    harness: Harness,
) -> None:
    """Memory never stops retries of an error while the tool succeeds for other calls: a
    success after the last failed retry lifts the verdict, until a retry fails again."""
    await hopeless_retries(harness, 5)
    refused, _ = await harness.handler.report_failure(failure("before"))
    assert refused.refusal is not None
    assert refused.refusal.kind is RefusalKind.RETRIES_NEVER_FIX
    await harness.handler.report_outcome(outcome("other", 1, "search", success=True))
    retried, _ = await harness.handler.report_failure(failure("after"))
    assert retried.action is Action.RETRY
    assert "but search succeeded at " in retried.reason
    assert retried.reason.endswith(
        "after the last of them: that evidence stops no retry; the backoff is doubled."
    )
    await harness.handler.report_outcome(outcome("after", 2, "search", success=False))
    again, _ = await harness.handler.report_failure(failure("again"))
    assert again.refusal is not None
    assert again.refusal.kind is RefusalKind.RETRIES_NEVER_FIX  # it failed again since


async def test_an_operators_reset_lifts_the_verdict(harness: Harness) -> None:
    await hopeless_retries(harness, 5)
    await harness.actions.reset_breaker("search", by="alice: the backend was redeployed")
    retried, _ = await harness.handler.report_failure(failure("after"))
    assert retried.action is Action.RETRY
    assert "but an operator reset the breaker of search at " in retried.reason
