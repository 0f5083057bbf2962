"""Rate limits are not outages: a 429 opens the tool's rate-limit window instead of counting
towards its breaker; while the window holds, no retry of the tool is sooner than its end,
an attempt asking to run is held (a RATE_LIMITED refusal, decided as its own 429 would
be, and not one of the call's attempts), and executors hear of it; the window survives a
restart."""

from __future__ import annotations

from datetime import timedelta

import pytest

from errord.decide.manifest import BreakerPolicy, RetryPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    BreakerPhase,
    ErrorCode,
    ReportKey,
    ToolFailure,
)
from errord.decide.model.events import RateLimited
from errord.wire.tool_policies import tool_policies_to_proto
from tests.harness import Harness, failure_report

LIMITED = ToolFailure(http_status=429, message="429 Too Many Requests", retry_after=1.0)
TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="timed out")
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="api", breaker=BreakerPolicy(failure_threshold=2)),
        ToolManifest(
            name="strict", retry_policy=RetryPolicy(max_total_time=2.0, max_retry_after=0.8)
        ),
    ]
)


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


async def test_429s_open_a_window_and_never_the_breaker(harness: Harness) -> None:
    decisions = []
    for n in range(6):
        decision, _ = await harness.handler.report_failure(
            failure_report(f"c{n}", "api", error=LIMITED)
        )
        decisions.append(decision)
    assert all(d.action is Action.RETRY for d in decisions)
    breaker = harness.state.breakers.view("api")
    assert breaker is None or breaker.phase is BreakerPhase.CLOSED
    window = harness.state.windows.view("api")
    assert window is not None
    assert window.until == harness.clock.now() + timedelta(seconds=1.0)
    assert window.asked == 1.0
    events = [event async for event in harness.handler.trace_after(0)]
    assert sum(isinstance(e.detail, RateLimited) for e in events) == 1  # the others no later


async def test_while_the_window_holds_no_retry_of_the_tool_is_sooner(harness: Harness) -> None:
    await harness.handler.report_failure(failure_report("a", "api", error=LIMITED))
    harness.clock.advance(0.25)
    other, _ = await harness.handler.report_failure(failure_report("b", "api", error=TIMEOUT))
    assert other.action is Action.RETRY
    assert other.delay == pytest.approx(0.75)
    assert "the rate-limit window of api holds its calls until" in other.reason
    harness.clock.advance(1.0)
    after, _ = await harness.handler.report_failure(failure_report("c", "api", error=TIMEOUT))
    assert "rate-limit window" not in after.reason  # over: the window holds nothing more


async def test_an_attempt_asking_to_run_is_held_as_a_429_of_its_own(harness: Harness) -> None:
    await harness.handler.report_failure(failure_report("a", "api", error=LIMITED))
    harness.clock.advance(0.4)
    key = ReportKey("t", "b", "api", 1)
    admission, decision, replayed = await harness.handler.admit_call(key, {})
    assert not admission.admitted
    assert not replayed
    assert decision is not None
    assert decision.classification.code is ErrorCode.RATE_LIMITED
    assert decision.action is Action.RETRY
    assert decision.delay == pytest.approx(0.6)
    assert decision.attempts_left == 5  # a held attempt never ran: not one of the call's
    assert decision.user_message == "Api is busy; trying again shortly."
    again = await harness.handler.admit_call(key, {})
    assert (again[1], again[2]) == (decision, True)
    harness.clock.advance(0.6)
    admitted, _, _ = await harness.handler.admit_call(ReportKey("t", "b", "api", 2), {})
    assert admitted.admitted  # the window is over
    stats = harness.state.tool_stats.view("api")
    assert stats is not None
    assert stats.executions == 1


async def test_a_wait_longer_than_the_call_may_wait_fails_for_now(harness: Harness) -> None:
    """The seed's limits (a Retry-After of 800 ms at most): a held call is not retried, and
    no one can act on a rate limit: it fails for now."""
    long = ToolFailure(http_status=429, message="429 Too Many Requests", retry_after=5.0)
    first, _ = await harness.handler.report_failure(failure_report("a", "strict", error=long))
    assert first.action is Action.FAIL
    assert "asked to wait 5000 ms before a retry, longer than the 800 ms" in first.reason
    assert first.user_message == (
        "Strict is getting too many requests right now; continuing with the rest of the request."
    )
    admission, held, _ = await harness.handler.admit_call(ReportKey("t", "b", "strict", 1), {})
    assert not admission.admitted
    assert held is not None
    assert held.action is Action.FAIL


async def test_the_window_survives_a_restart_and_reaches_executors(harness: Harness) -> None:
    await harness.handler.report_failure(failure_report("a", "api", error=LIMITED))
    window = harness.state.windows.view("api")
    handler = await harness.restart()
    assert harness.state.windows.view("api") == window
    policies = tool_policies_to_proto(
        ["api"],
        MANIFESTS,
        handler.breaker,
        harness.clock.now(),
        snapshot=True,
        window_of=handler.window,
    )
    [policy] = policies.tools
    assert policy.HasField("rate_limit")
    assert policy.rate_limit.retry_after.ToTimedelta() == timedelta(seconds=1)
    harness.clock.advance(1.0)
    over = tool_policies_to_proto(
        ["api"], MANIFESTS, handler.breaker, harness.clock.now(), snapshot=True,
        window_of=handler.window,
    )  # fmt: skip
    assert not over.tools[0].HasField("rate_limit")  # sent only while it holds
