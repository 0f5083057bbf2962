"""Escalate or fail: ESCALATE when a person can act (credentials,
permissions, an exhausted quota, a trouble to try again later, information only the user
has); FAIL, gracefully, when nothing anyone can do now would recover the call. FAIL cascades
like SKIP, and the user is told what could not be done and that the rest goes on."""

from __future__ import annotations

from datetime import UTC, datetime

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.decide.manifest import BreakerPolicy, ToolManifest, ToolPart
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    CallStatus,
    Classification,
    ErrorClass,
    ErrorCode,
    PlannedCall,
    RetryBudget,
    ToolFailure,
)
from errord.decide.policy import default_policy
from errord.decide.policy.context import CallPart, DecisionContext, PlanPart, TurnPart
from errord.decide.policy.plan import Waiting
from errord.decide.policy.verdict import Verdict
from errord.decide.texts.messages import compose
from tests.fakes import FixedJitter
from tests.harness import Harness, failure_report
from tests.helpers import DaemonProcess

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PERMANENT, TRANSIENT = ErrorClass.PERMANENT, ErrorClass.TRANSIENT


def context(
    error_class: ErrorClass,
    code: ErrorCode,
    *,
    attempt: int = 1,
    manifest: ToolManifest | None = None,
    corrections: int = 0,
    told: int = 0,
    plan: PlanPart | None = None,
    turn: TurnPart | None = None,
) -> DecisionContext:
    """A failure of ``hotel_search`` classified so, whatever its text."""
    manifest = manifest or ToolManifest(name="hotel_search")
    report = failure_report(tool=manifest.name, attempt=attempt, error=ToolFailure())
    return DecisionContext(
        report=report,
        classification=Classification(error_class, code, "test"),
        tool=ToolPart(manifest, default_policy=False),
        call=CallPart(failed_tools=frozenset({manifest.name}), corrections=corrections),
        turn=turn or TurnPart(told=told),
        now=NOW,
        plan=plan or PlanPart(optional=manifest.optional),
    )


def verdict_on(ctx: DecisionContext, budget: RetryBudget | None = None) -> Verdict:
    return default_policy(FixedJitter(), budget).decide(ctx)


OPTIONAL = ToolManifest(name="hotel_search", optional=True)
NOT_IDEMPOTENT = ToolManifest(name="hotel_search", idempotent=False)


@pytest.mark.parametrize(
    "ctx",
    [
        context(PERMANENT, ErrorCode.AUTH),  # credentials, permissions: an administrator
        context(PERMANENT, ErrorCode.RATE_LIMITED),  # an exhausted quota: someone pays
        context(TRANSIENT, ErrorCode.UNAVAILABLE, manifest=NOT_IDEMPOTENT),  # did it happen?
        context(PERMANENT, ErrorCode.INVALID_INPUT, corrections=2),  # what only the user knows
        context(PERMANENT, ErrorCode.INVALID_INPUT, told=2),  # the same, under fresh ids
    ],
    ids=lambda ctx: f"{ctx.classification.code.value}-{ctx.report.attempt}",
)
def test_a_failure_a_person_can_act_on_escalates(ctx: DecisionContext) -> None:
    assert verdict_on(ctx).action is Action.ESCALATE


@pytest.mark.parametrize(
    "ctx",
    [
        context(TRANSIENT, ErrorCode.TIMEOUT, attempt=5),  # out of attempts: try later
        context(TRANSIENT, ErrorCode.NOT_FOUND, attempt=5),  # not there yet, says a manifest
        context(TRANSIENT, ErrorCode.RATE_LIMITED, attempt=5),  # busy: later
    ],
    ids=lambda ctx: f"{ctx.classification.code.value}-{ctx.report.attempt}",
)
def test_a_transient_failure_out_of_retries_fails_for_now(ctx: DecisionContext) -> None:
    """No one can act on an outage: the model goes on without the tool, or tries later."""
    verdict = verdict_on(ctx)
    assert verdict.action is Action.FAIL
    messages = compose(ctx, verdict)
    assert "is unavailable for now, which no one can act on" in messages.reason
    assert "call hotel_search again later, not right away" in messages.llm


@pytest.mark.parametrize(
    "ctx",
    [
        context(PERMANENT, ErrorCode.NOT_FOUND),  # what it asked for does not exist
        context(PERMANENT, ErrorCode.UNSUPPORTED),  # the tool cannot do it
        context(PERMANENT, ErrorCode.INTERNAL),  # the tool's own code: nobody in the turn
        context(PERMANENT, ErrorCode.SCHEMA_VIOLATION),  # the tool broke its own contract
        context(PERMANENT, ErrorCode.INVALID_INPUT, corrections=2, manifest=OPTIONAL),
        context(PERMANENT, ErrorCode.TOOL_NOT_FOUND, told=2, manifest=OPTIONAL),
    ],
    ids=lambda ctx: f"{ctx.classification.code.value}-{ctx.manifest.optional}",
)
def test_a_failure_nothing_can_recover_fails(ctx: DecisionContext) -> None:
    assert verdict_on(ctx).action is Action.FAIL


def test_an_optional_call_is_skipped_rather_than_failed() -> None:
    assert verdict_on(context(PERMANENT, ErrorCode.NOT_FOUND, manifest=OPTIONAL)).action is (
        Action.SKIP
    )


def test_an_optional_call_out_of_budget_for_corrections_fails() -> None:
    spent = TurnPart(calls=2, retries=1, corrections=1)
    ctx = context(PERMANENT, ErrorCode.INVALID_INPUT, manifest=OPTIONAL, turn=spent)
    verdict = verdict_on(ctx, RetryBudget(max_retries=2))
    assert verdict.action is Action.FAIL
    assert compose(ctx, verdict).reason.startswith(
        "No retry: the turn's retry budget is spent: its calls were granted 2 of the 2 retries "
        "it allows (1 of them a correction of the model's call); a correction would spend it "
        "as a retry does, so the model may not correct the call, which is optional: it fails"
    )


def test_an_optional_call_a_required_one_waits_on_escalates_instead_of_failing() -> None:
    """On the critical path, the turn cannot do without it: the user must hear of it."""
    required = Waiting(PlannedCall(call_id="d", tool="t", depends_on=("c",)), False, None, True)
    plan = PlanPart(optional=True, waiting=(required,))
    ctx = context(PERMANENT, ErrorCode.INVALID_INPUT, corrections=2, plan=plan)
    verdict = verdict_on(ctx)
    assert (verdict.action, verdict.escalated_for) == (Action.ESCALATE, "d")


def test_a_fail_says_what_could_not_be_done_and_that_the_rest_goes_on() -> None:
    ctx = context(PERMANENT, ErrorCode.NOT_FOUND)
    messages = compose(ctx, verdict_on(ctx))
    assert messages.reason == (
        "No retry: the error is permanent (NOT_FOUND), so retrying the same call cannot help; "
        "what the call asked for does not exist, and nothing anyone can do now would change "
        "that: the call fails, and the turn goes on without it."
    )
    assert messages.user == (
        "Hotel search couldn't find what was asked for; continuing with the rest of the request."
    )
    assert "Nothing can recover this call: do not call hotel_search again in this turn." in (
        messages.llm
    )
    unsupported = context(PERMANENT, ErrorCode.UNSUPPORTED)
    assert compose(unsupported, verdict_on(unsupported)).user == (
        "Hotel search can't do what was asked; continuing with the rest of the request."
    )


# FAIL cascades like SKIP, through the handler and its store.

CALM = BreakerPolicy(failure_threshold=1000)
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name=name, breaker=CALM)
        for name in ("geocode", "weather", "advice", "news", "flights")
    ]
)
NO_SUCH_CITY = ToolFailure(http_status=404, message="no such city")


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


def planned(call_id: str, tool: str, *needs: str, optional: bool | None = None) -> PlannedCall:
    return PlannedCall(call_id=call_id, tool=tool, depends_on=needs, optional=optional)


async def test_a_failed_call_takes_its_dependents_along_and_the_turn_goes_on(
    harness: Harness,
) -> None:
    plan = (
        planned("A", "geocode"),
        planned("B", "weather", "A", optional=True),
        planned("C", "flights"),
    )
    await harness.handler.begin_turn("t", None, None, plan)
    report = failure_report("A", "geocode", error=NO_SUCH_CITY)
    decision, _ = await harness.handler.report_failure(report)
    assert decision.action is Action.FAIL
    assert [(c.call_id, c.action) for c in decision.consequences] == [("B", Action.SKIP)]
    assert decision.reason.endswith("Calls waiting on it: B skipped.")
    assert decision.user_message == (
        "Geocode couldn't find what was asked for; continuing with the rest of the request."
    )
    summary, _ = await harness.handler.end_turn("t")
    assert [(c.call_id, c.status) for c in summary.calls] == [
        ("A", CallStatus.FAILED),
        ("B", CallStatus.SKIPPED),
        ("C", CallStatus.SKIPPED),
    ]


async def test_a_failed_call_a_required_one_waits_on_says_so(harness: Harness) -> None:
    plan = (planned("A", "geocode"), planned("D", "advice", "A"))
    await harness.handler.begin_turn("t", None, None, plan)
    report = failure_report("A", "geocode", error=NO_SUCH_CITY)
    decision, _ = await harness.handler.report_failure(report)
    assert decision.action is Action.FAIL
    assert [(c.call_id, c.action) for c in decision.consequences] == [("D", Action.ESCALATE)]
    assert decision.user_message == (
        "Geocode couldn't find what was asked for, and other steps of this request can't go "
        "on without it."
    )


# Against the daemon.


@pytest.mark.slow
async def test_the_daemon_fails_what_nothing_can_recover_and_escalates_the_rest(
    daemon_process: DaemonProcess,
) -> None:
    async with grpc.aio.insecure_channel(daemon_process.address) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        await stub.BeginTurn(
            pb.BeginTurnRequest(
                turn_id="trip",
                plan=[
                    pb.PlannedCall(call_id="city", tool="geocode"),
                    pb.PlannedCall(
                        call_id="reviews", tool="hotel_reviews", depends_on=["city"], optional=True
                    ),
                ],
            )
        )
        missing = await stub.ReportFailure(
            pb.ReportFailureRequest(
                turn_id="trip",
                call_id="city",
                tool="geocode",
                attempt=1,
                error=pb.ToolError(http_status=404, message="no such city"),
            )
        )
        refused = await stub.ReportFailure(
            pb.ReportFailureRequest(
                turn_id="trip",
                call_id="hotel",
                tool="hotel_search",
                attempt=1,
                error=pb.ToolError(http_status=401, message="401 Unauthorized"),
            )
        )
        ended = await stub.EndTurn(pb.EndTurnRequest(turn_id="trip"))
    assert missing.decision.action == pb.RECOVERY_ACTION_FAIL
    assert [(c.call_id, c.action) for c in missing.decision.consequences] == [
        ("reviews", pb.RECOVERY_ACTION_SKIP)
    ]
    assert missing.decision.user_message == (
        "Geocode couldn't find what was asked for; continuing with the rest of the request."
    )
    assert refused.decision.action == pb.RECOVERY_ACTION_ESCALATE
    statuses = {c.call_id: c.status for c in ended.summary.calls}
    assert statuses == {
        "city": pb.CALL_STATUS_FAILED,
        "reviews": pb.CALL_STATUS_SKIPPED,
        "hotel": pb.CALL_STATUS_FAILED,
    }
    assert ended.summary.user_notice == (
        "Could not complete the request: geocode and hotel search failed and hotel reviews "
        "was skipped."
    )
