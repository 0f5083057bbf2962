"""Turns have a deadline (BeginTurn's, or 300 s) and a retry budget: no retry that could end
after the deadline, no alternative that could not finish before it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from functools import partial
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.config import Settings
from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import Action, ErrorCode, RetryBudget, ToolFailure
from errord.decide.model.events import TurnBegan
from errord.errors import ConfigError, InvalidRequest, ReportConflict
from tests.harness import Harness, failure_report
from tests.helpers import InProcessDaemon

CALM = BreakerPolicy(failure_threshold=1000)
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="lookup", timeout=30.0, breaker=CALM),
        ToolManifest(name="search", timeout=5.0, breaker=CALM, alternatives=("slow", "quick")),
        ToolManifest(name="slow", timeout=60.0),
        ToolManifest(name="quick", timeout=2.0),
    ]
)
TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT)


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


failure = partial(failure_report, tool="lookup", error=TIMEOUT)


async def test_a_retry_that_could_end_after_the_default_deadline_is_refused(
    harness: Harness,
) -> None:
    first, _ = await harness.handler.report_failure(failure("a"))
    assert first.action is Action.RETRY
    harness.clock.advance(270.0)  # 30 s left: 0.1 s of delay and a 30 s timeout do not fit
    late, _ = await harness.handler.report_failure(failure("b"))
    assert late.action is Action.SKIP  # the turn degrades: it goes on with what it has
    assert late.reason == (
        "No retry: a retry in 100 ms with lookup's 30000 ms timeout could end after the "
        "turn's deadline, 30000 ms away; the turn is out of time, so the call is skipped and "
        "the turn goes on with the results it has."
    )
    assert "could not finish before the turn's deadline" in late.llm_message
    assert late.user_message == "Lookup couldn't finish in time; continuing without it."
    harness.clock.advance(31.0)
    past, _ = await harness.handler.report_failure(failure("c"))
    assert past.reason.startswith("No retry: the turn's deadline has passed")


async def test_an_alternative_that_could_not_finish_in_time_is_passed_over(
    harness: Harness,
) -> None:
    await harness.handler.begin_turn("t", harness.clock.now() + timedelta(seconds=5), None)
    # 5 s left: no retry of search (5 s timeout), slow (60 s) cannot finish, quick (2 s) can.
    switched, _ = await harness.handler.report_failure(failure("a", tool="search"))
    assert (switched.action, switched.alternative_tool) == (Action.USE_ALTERNATIVE, "quick")
    harness.clock.advance(4.0)
    stuck, _ = await harness.handler.report_failure(failure("b", tool="search"))
    assert stuck.action is Action.SKIP
    assert "slow could not finish before the turn's deadline" in stuck.reason
    assert "quick could not finish before the turn's deadline" in stuck.reason


async def test_begin_turn_sets_the_deadline_and_its_own_retry_budget(harness: Harness) -> None:
    deadline = harness.clock.now() + timedelta(hours=1)
    event, replayed = await harness.handler.begin_turn("t", deadline, RetryBudget(max_retries=1))
    assert not replayed
    assert isinstance(event.detail, TurnBegan)
    assert (event.detail.implicit, event.detail.deadline) == (False, deadline)
    harness.clock.advance(600.0)  # past the default 300 s, within the turn's own hour
    first, _ = await harness.handler.report_failure(failure("a"))
    second, _ = await harness.handler.report_failure(failure("b"))
    assert (first.action, second.action) == (Action.RETRY, Action.FAIL)
    assert "retry budget is spent: its calls were granted 1 of the 1 retries" in second.reason


async def test_beginning_a_turn_again(harness: Harness) -> None:
    deadline = harness.clock.now() + timedelta(minutes=5)
    first, _ = await harness.handler.begin_turn("t", deadline, None)
    again, replayed = await harness.handler.begin_turn("t", deadline, None)
    assert replayed
    assert again == first
    with pytest.raises(ReportConflict, match="already began with other values"):
        await harness.handler.begin_turn("t", deadline + timedelta(seconds=1), None)
    await harness.handler.report_failure(failure("a", turn="u"))
    with pytest.raises(ReportConflict, match="already began with its first report"):
        await harness.handler.begin_turn("u", None, None)
    with pytest.raises(InvalidRequest, match="deadline: must be in the future"):
        await harness.handler.begin_turn("v", harness.clock.now(), None)


def test_the_default_deadline_is_a_setting() -> None:
    assert Settings().turn_deadline_seconds == 300.0
    with pytest.raises(ConfigError, match="turn_deadline_seconds: must be positive"):
        Settings(turn_deadline_seconds=0)


@pytest.fixture
async def stub(daemon: InProcessDaemon) -> AsyncIterator[Any]:
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        yield errord_pb2_grpc.ErrorHandlerServiceStub(channel)


@pytest.mark.slow
async def test_begin_turn_over_grpc(stub: Any) -> None:
    request = pb.BeginTurnRequest(
        turn_id="g", retry_budget=pb.RetryBudget(max_retries=3, max_share=0.5)
    )
    request.deadline.GetCurrentTime()
    request.deadline.seconds += 120
    response = await stub.BeginTurn(request)
    began = response.event.turn_began
    assert (began.implicit, began.deadline) == (False, request.deadline)
    assert (began.retry_budget.max_retries, began.retry_budget.max_share) == (3, 0.5)
    assert (await stub.BeginTurn(request)).replayed
    request.deadline.seconds += 1
    with pytest.raises(grpc.aio.AioRpcError) as conflict:
        await stub.BeginTurn(request)
    assert conflict.value.code() is grpc.StatusCode.ALREADY_EXISTS
    bad = pb.BeginTurnRequest(turn_id="h", retry_budget=pb.RetryBudget(max_share=-1))
    with pytest.raises(grpc.aio.AioRpcError) as invalid:
        await stub.BeginTurn(bad)
    assert invalid.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert (invalid.value.details() or "").startswith("retry_budget.max_share: must be from 0")
