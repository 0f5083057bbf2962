"""Scopes: a tool's breaker, statistics, rate-limit window and memory belong to the tool
and the scope its executor names (errord.decide.model.scope); no scope means the tool alone."""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.health.admission import refusal
from errord.decide.manifest import BreakerPolicy, RetryPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory import MemoryKey
from errord.decide.model import (
    Action,
    BreakerPhase,
    ErrorCode,
    Outcome,
    OutcomeReport,
    ReportKey,
    ToolFailure,
)
from errord.decide.model.events import BreakerChanged, FailureEvent, RateLimited
from errord.decide.model.scope import SEPARATOR, tool_and_scope, tool_key
from errord.errors import LimitExceeded, ReportConflict, ToolNotFound
from errord.state.health import ToolHealthBoard
from tests.harness import Harness, failure_report

TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="timed out")
LIMITED = ToolFailure(http_status=429, message="Too Many Requests", retry_after=5.0)
POLICY = BreakerPolicy(failure_threshold=3, cooldown=30.0, first_cooldown=30.0)
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(
            name="search",
            breaker=POLICY,
            alternatives=("backup",),
            retry_policy=RetryPolicy(max_total_time=2.0),
        ),
        ToolManifest(name="backup", breaker=POLICY),
    ]
)

failure = partial(failure_report, error=TIMEOUT)


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


async def trip(harness: Harness, tool: str = "search", scope: str = "") -> None:
    """Open the breaker of ``tool`` in ``scope``: three calls failing once each."""
    for number in range(3):
        await harness.handler.report_failure(
            failure(f"trip-{tool}-{scope}-{number}", tool, scope=scope)
        )


@given(
    tool=st.text(min_size=1).filter(lambda text: SEPARATOR not in text),
    scope=st.text().filter(lambda text: SEPARATOR not in text),
)
def test_a_key_gives_back_its_tool_and_scope_and_no_scope_is_the_tool_alone(
    tool: str, scope: str
) -> None:
    assert tool_and_scope(tool_key(tool, scope)) == (tool, scope)
    assert (tool_key(tool, scope) == tool) is (scope == "")


async def test_a_breaker_opened_in_one_scope_leaves_the_others_and_the_tool_alone_closed(
    harness: Harness,
) -> None:
    await trip(harness, scope="eu")
    breakers = harness.state.breakers
    eu = breakers.view(tool_key("search", "eu"))
    assert eu is not None
    assert eu.phase is BreakerPhase.OPEN
    assert breakers.view("search") is None
    refused, _ = await harness.handler.report_failure(failure("later", scope="eu"))
    assert refused.action is not Action.RETRY
    assert "circuit breaker of search is open" in refused.reason
    for scope in ("us", ""):
        decision, _ = await harness.handler.report_failure(failure(f"other-{scope}", scope=scope))
        assert decision.action is Action.RETRY
    opened = [
        event.detail
        async for event in harness.handler.trace_after(0)
        if isinstance(event.detail, BreakerChanged)
    ]
    assert [(change.tool, change.scope) for change in opened] == [("search", "eu")]


async def test_an_alternative_is_read_in_the_failed_calls_scope(harness: Harness) -> None:
    await trip(harness, "backup", scope="eu")
    await trip(harness, scope="eu")
    decision, _ = await harness.handler.report_failure(failure("eu-call", scope="eu"))
    assert not decision.alternative_tool  # backup is open in eu
    await trip(harness, scope="us")
    decision, _ = await harness.handler.report_failure(failure("us-call", scope="us"))
    assert decision.action is Action.USE_ALTERNATIVE
    assert decision.alternative_tool == "backup"  # closed in us


async def test_a_success_closes_the_breaker_of_its_own_scope(harness: Harness) -> None:
    await harness.handler.report_failure(failure("a", scope="eu"))
    await harness.handler.report_failure(failure("b", scope="eu"))
    success = OutcomeReport(
        turn_id="t", call_id="b", tool="search", attempt=2, outcome=Outcome.SUCCESS, scope="us"
    )
    await harness.handler.report_outcome(success)
    eu = harness.state.breakers.view(tool_key("search", "eu"))
    assert eu is not None
    assert eu.failures == 2  # a success elsewhere is no evidence this backend is well
    us, eu_stats = (harness.state.tool_stats.view(tool_key("search", s)) for s in ("us", "eu"))
    assert us is not None
    assert us.successes == 1
    assert eu_stats is not None
    assert eu_stats.successes == 0


async def test_a_rate_limit_holds_its_scope_only(harness: Harness) -> None:
    await harness.handler.report_failure(failure("a", error=LIMITED, scope="key-1"))
    windows = harness.state.windows
    held = windows.view(tool_key("search", "key-1"))
    assert held is not None
    assert held.holds(harness.clock.now())
    assert windows.view("search") is None
    assert windows.view(tool_key("search", "key-2")) is None
    recorded = [
        event.detail
        async for event in harness.handler.trace_after(0)
        if isinstance(event.detail, RateLimited)
    ]
    assert [(window.tool, window.scope) for window in recorded] == [("search", "key-1")]


async def test_memory_is_kept_per_scope(harness: Harness) -> None:
    for scope in ("eu", "eu", "us"):
        await harness.handler.report_failure(
            failure(f"m-{scope}-{harness.clock.now()}", scope=scope)
        )
        harness.clock.advance(1.0)
    keys = {key.tool for key in harness.state.memory.snapshot()}
    assert keys == {tool_key("search", "eu"), tool_key("search", "us")}
    episodes = await harness.actions.recall_episodes("search", None, None, scope="eu")
    assert [key for key, _ in episodes] == [
        MemoryKey(tool_key("search", "eu"), key.signature) for key, _ in episodes
    ]
    with pytest.raises(ToolNotFound, match="in scope 'asia'"):
        await harness.actions.recall_episodes("unlisted", None, None, scope="asia")


async def test_an_attempt_is_admitted_by_the_breaker_of_its_scope(harness: Harness) -> None:
    await trip(harness, scope="eu")
    key = ReportKey("t-admit", "c1", "search", 1)
    refused, decision, _ = await harness.handler.admit_call(key, {}, "eu")
    assert not refused.admitted
    assert decision is not None
    assert decision.classification.code is ErrorCode.CIRCUIT_OPEN
    admitted, none, _ = await harness.handler.admit_call(
        ReportKey("t-admit", "c2", "search", 1), {}, "us"
    )
    assert admitted.admitted
    assert none is None
    recorded = [
        event.detail
        async for event in harness.handler.trace_after(0)
        if isinstance(event.detail, FailureEvent) and event.detail.report.turn_id == "t-admit"
    ]
    assert [failure.report.scope for failure in recorded] == ["eu"]
    assert recorded[0].report == harness.handler.redacted(refusal(key, {}, scope="eu"))


async def test_an_operator_resets_and_forces_open_one_scope(harness: Harness) -> None:
    await trip(harness, scope="eu")
    await harness.actions.force_open_breaker("search", duration=None, scope="us")
    await harness.handler.report_failure(failure("own"))
    board = ToolHealthBoard(harness.state, lambda: harness.handler.manifests)
    now = harness.clock.now()
    phases = {
        key: board.breaker(key, now).phase for key in board.tools() if key.startswith("search")
    }
    assert phases == {
        "search": BreakerPhase.CLOSED,
        tool_key("search", "eu"): BreakerPhase.OPEN,
        tool_key("search", "us"): BreakerPhase.OPEN,
    }
    await harness.actions.reset_breaker("search", scope="eu")
    assert board.breaker(tool_key("search", "eu"), now).phase is BreakerPhase.CLOSED
    assert board.breaker(tool_key("search", "us"), now).phase is BreakerPhase.OPEN
    with pytest.raises(ToolNotFound, match="no tool 'unlisted' in scope 'asia'"):
        await harness.actions.reset_breaker("unlisted", scope="asia")


async def test_a_repeated_report_in_another_scope_is_a_conflict(harness: Harness) -> None:
    await harness.handler.report_failure(failure("c", scope="eu"))
    with pytest.raises(ReportConflict, match="already recorded in scope 'eu', not 'us'"):
        await harness.handler.report_failure(failure("c", scope="us"))


async def test_each_scope_counts_towards_max_tools_even_of_a_tool_with_a_manifest(
    harness: Harness,
) -> None:
    handler = harness.handler
    handler.room.max_tools = 2
    await handler.report_failure(failure("a", scope="one"))
    await handler.report_failure(failure("b", scope="two"))
    await handler.report_failure(failure("c", scope="one"))  # known: still taken
    with pytest.raises(LimitExceeded, match="tool 'search' in scope 'three' is refused"):
        await handler.report_failure(failure("d", scope="three"))
