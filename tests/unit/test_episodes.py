"""Episodes for episodic memory: a recovery errord decides on (a RETRY, an alternative tool)
opens one, and the report of the attempt that tells how it went closes it, in the same
unit of work as the trace events, and across restarts."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest

from errord.decide.manifest import ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory.signatures import signature
from errord.decide.model import (
    Action,
    EpisodeOutcome,
    ErrorCode,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.decide.model.events import FailureEvent, OutcomeEvent
from tests.harness import Harness, failure_report

MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="search", timeout=10.0, alternatives=("backup",)),
        ToolManifest(name="backup", timeout=4.0),
    ]
)
TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="timeout after 30s on req 8812")
GONE = ToolFailure(code=ErrorCode.NOT_FOUND, message="index 7 does not exist")


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


failure = partial(failure_report, "c", error=TIMEOUT)


def outcome(attempt: int, tool: str = "search", success: bool = True) -> OutcomeReport:
    return OutcomeReport(
        turn_id="t",
        call_id="c",
        tool=tool,
        attempt=attempt,
        outcome=Outcome.SUCCESS if success else Outcome.FAILURE,
    )


async def recorded(harness: Harness) -> list[FailureEvent | OutcomeEvent]:
    events = await harness.handler.turn_trace("t")
    return [e.detail for e in events if isinstance(e.detail, FailureEvent | OutcomeEvent)]


async def test_a_retry_opens_an_episode_its_next_attempt_closes(harness: Harness) -> None:
    decision, _ = await harness.handler.report_failure(failure())
    assert decision.action is Action.RETRY
    await harness.handler.report_outcome(outcome(attempt=2))
    opened, closed = await recorded(harness)
    assert isinstance(opened, FailureEvent)
    assert isinstance(closed, OutcomeEvent)
    episode = opened.opens
    assert episode is not None
    assert (episode.tool, episode.action, episode.via, episode.attempt) == (
        "search",
        Action.RETRY,
        "search",
        2,
    )
    assert episode.signature == signature(ErrorCode.TIMEOUT, "timeout after 31s on req 9").key
    assert episode.decision_id == decision.decision_id
    assert episode.until == decision.decided_at + timedelta(seconds=decision.delay + 10.0)
    assert closed.closes is not None
    assert (closed.closes.episode, closed.closes.outcome) == (episode, EpisodeOutcome.SUCCEEDED)


async def test_a_failed_retry_closes_its_episode_and_opens_the_next(harness: Harness) -> None:
    await harness.handler.report_failure(failure(attempt=1))
    await harness.handler.report_failure(failure(attempt=2))
    await harness.handler.report_outcome(outcome(attempt=2, success=False))  # told already
    first, second, repeat = await recorded(harness)
    assert isinstance(second, FailureEvent)
    assert second.closes is not None
    assert isinstance(first, FailureEvent)
    assert (second.closes.episode, second.closes.outcome) == (first.opens, EpisodeOutcome.FAILED)
    assert second.opens is not None
    assert second.opens.attempt == 3
    assert isinstance(repeat, OutcomeEvent)
    assert repeat.closes is None


async def test_an_alternative_is_told_by_its_own_first_attempt(harness: Harness) -> None:
    decision, _ = await harness.handler.report_failure(failure(error=GONE))
    assert (decision.action, decision.alternative_tool) == (Action.USE_ALTERNATIVE, "backup")
    await harness.handler.report_outcome(outcome(attempt=1, tool="backup"))
    opened, closed = await recorded(harness)
    assert isinstance(opened, FailureEvent)
    assert opened.opens is not None
    assert (opened.opens.via, opened.opens.attempt, opened.opens.action) == (
        "backup",
        1,
        Action.USE_ALTERNATIVE,
    )
    assert opened.opens.until == decision.decided_at + timedelta(seconds=4.0)
    assert isinstance(closed, OutcomeEvent)
    assert closed.closes is not None
    assert closed.closes.outcome is EpisodeOutcome.SUCCEEDED


async def test_a_decision_that_recovers_nothing_opens_no_episode(harness: Harness) -> None:
    await harness.handler.report_failure(failure(tool="backup", error=GONE))
    [failed] = await recorded(harness)
    assert isinstance(failed, FailureEvent)
    assert failed.decision.action is Action.FAIL  # an index that does not exist
    assert failed.opens is None
    assert failed.closes is None


async def test_an_open_episode_is_closed_after_a_restart(harness: Harness) -> None:
    await harness.handler.report_failure(failure())
    handler = await harness.restart()
    await handler.report_outcome(outcome(attempt=2))
    _, closed = await recorded(harness)
    assert isinstance(closed, OutcomeEvent)
    assert closed.closes is not None
    assert closed.closes.outcome is EpisodeOutcome.SUCCEEDED
    call = harness.state.calls.view(failure().key.call)
    assert call is not None
    assert call.awaiting == {}
