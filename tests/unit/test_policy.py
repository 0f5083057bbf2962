"""The retry policy: backoff, jitter, attempts, total time, retry-after,
and the fallbacks when no retry is allowed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from msgspec.structs import replace

from errord.decide.classify import classify
from errord.decide.engine import Engine
from errord.decide.manifest import ClassificationRule, RetryPolicy, ToolManifest, ToolPart
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    Consequence,
    ErrorClass,
    ErrorCode,
    FailureReport,
    RateWindow,
    Refusal,
    RefusalKind,
    ToolFailure,
)
from errord.decide.policy import RecoveryPolicy, default_policy
from errord.decide.policy.context import BreakerPart, CallPart, DecisionContext, TurnPart
from errord.decide.policy.fallbacks import Escalate, Fallback, UseAlternative
from errord.decide.policy.gates import RetryGate
from errord.decide.policy.verdict import Verdict
from errord.decide.texts.messages import compose
from tests.fakes import FixedJitter

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="Connection timeout after 30s")
FLIGHT_SEARCH = ToolManifest(name="flight_search")
SEED = ToolManifest(
    name="flight_search", retry_policy=RetryPolicy(max_total_time=2.0, max_retry_after=0.8)
)
"""The seed's limits: 2 s of retry time, a Retry-After of 800 ms at most."""
FOR_NOW = (
    "flight_search is unavailable for now, which no one can act on: the call fails, and the "
    "turn goes on without it (it may call flight_search again later)."
)


def context(
    attempt: int = 1,
    failure: ToolFailure = TIMEOUT,
    manifest: ToolManifest = FLIGHT_SEARCH,
    spent: float = 0.0,
    failed: frozenset[str] = frozenset(),
) -> DecisionContext:
    report = FailureReport(
        turn_id="turn", call_id="call", tool=manifest.name, attempt=attempt, error=failure
    )
    return DecisionContext(
        report=report,
        classification=classify(failure, manifest.classification, manifest.name),
        tool=ToolPart(manifest, default_policy=False),
        call=CallPart(retry_time_spent=spent, failed_tools=failed | {manifest.name}),
        turn=TurnPart(),
        now=NOW,
    )


def reason_of(ctx: DecisionContext, verdict: Verdict) -> str:
    return compose(ctx, verdict).reason


def decide(jitter: float = 0.5, **kwargs: object) -> tuple[Action, float, str]:
    ctx = context(**kwargs)  # type: ignore[arg-type]
    verdict = default_policy(FixedJitter(jitter)).decide(ctx)
    return verdict.action, verdict.delay, reason_of(ctx, verdict)


def test_flight_search_timeout_is_retried_after_100_ms() -> None:
    action, delay, reason = decide(attempt=1)
    assert (action, delay) == (Action.RETRY, 0.1)
    assert reason == "Transient error (TIMEOUT); retrying in 100 ms, attempt 2 of 5."


@pytest.mark.parametrize(("attempt", "delay"), [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8)])
def test_backoff_doubles_from_100_ms_to_800_ms(attempt: int, delay: float) -> None:
    assert decide(attempt=attempt)[:2] == (Action.RETRY, delay)


@pytest.mark.parametrize(
    ("attempt", "low", "high"), [(1, 0.09, 0.11), (2, 0.18, 0.22), (3, 0.36, 0.44), (4, 0.72, 0.88)]
)
def test_jitter_spans_plus_minus_ten_percent(attempt: int, low: float, high: float) -> None:
    assert decide(jitter=0.0, attempt=attempt)[1] == low
    assert decide(jitter=1.0, attempt=attempt)[1] == high


def test_jitter_draws_from_the_whole_ten_percent_range() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.ranges: list[tuple[float, float]] = []

        def uniform(self, a: float, b: float) -> float:
            self.ranges.append((a, b))
            return 0.0

    recorder = Recorder()
    default_policy(recorder).decide(context(attempt=2))
    assert recorder.ranges == [(-0.1, 0.1)]


def test_four_jittered_delays_sum_to_1563_ms_within_the_2_s_budget() -> None:
    # 100, 200, 400 and 800 ms, jittered: 108 + 215 + 422 + 818 = 1563 ms of delays, all granted.
    spent = 0.0
    for attempt, jittered in [(1, 0.108), (2, 0.215), (3, 0.422), (4, 0.818)]:
        fraction = (jittered / (0.1 * 2 ** (attempt - 1)) - 0.9) / 0.2
        action, delay, _ = decide(jitter=fraction, attempt=attempt, spent=spent)
        assert (action, delay) == (Action.RETRY, jittered)
        spent += delay
    assert spent == pytest.approx(1.563)


def test_the_fifth_attempt_is_the_last_and_the_call_fails_for_now() -> None:
    """A transient failure out of retries is no one's to act on: FAIL, not ESCALATE."""
    action, _, reason = decide(attempt=5)
    assert action is Action.FAIL
    assert reason == f"No retry: attempt 5 reached the limit of 5 attempts; {FOR_NOW}"


def test_a_retry_that_would_exceed_the_retry_time_is_refused() -> None:
    assert decide(attempt=2, spent=1.8, manifest=SEED)[0] is Action.RETRY  # 1.8 + 0.2 = 2.0
    action, _, reason = decide(attempt=2, spent=1.81, manifest=SEED)
    assert action is Action.FAIL
    assert (
        "1810 ms of retry delay already granted plus a 200 ms delay would exceed the 2000 ms "
        "retry time limit"
    ) in reason
    assert decide(attempt=2, spent=29.8)[0] is Action.RETRY  # the default: 30 s in all
    assert decide(attempt=2, spent=29.81)[0] is Action.FAIL


def test_retry_after_replaces_the_computed_delay_without_jitter() -> None:
    failure = replace(TIMEOUT, code=ErrorCode.RATE_LIMITED, retry_after=0.3)
    assert decide(jitter=1.0, failure=failure)[:2] == (Action.RETRY, 0.3)


def test_a_retry_after_that_fits_the_retry_time_is_honoured_by_default() -> None:
    failure = replace(TIMEOUT, code=ErrorCode.RATE_LIMITED, retry_after=30.0)
    assert decide(failure=failure)[:2] == (Action.RETRY, 30.0)
    assert decide(failure=failure, spent=0.1)[0] is Action.FAIL  # 30.1 s: over the 30 s


def test_a_rate_limit_that_says_how_long_to_wait_is_waited_out_past_max_attempts() -> None:
    """The backend rations its callers: a call meeting its limit a sixth time waits as
    asked, and the reason says the retry time bounds it, not the attempts."""
    failure = replace(TIMEOUT, code=ErrorCode.RATE_LIMITED, retry_after=1.0)
    action, delay, reason = decide(attempt=5, failure=failure, spent=4.0)
    assert (action, delay) == (Action.RETRY, 1.0)
    assert reason == (
        "Transient error (RATE_LIMITED); retrying in 1000 ms as flight_search asked, attempt 6: "
        "a rate limit's waits count against the call's retry time, not its 5 attempts."
    )
    assert decide(attempt=4, failure=failure)[2].endswith("as flight_search asked, attempt 5 of 5.")
    assert decide(attempt=12, failure=failure, spent=11.0)[0] is Action.RETRY
    assert decide(attempt=30, failure=failure, spent=29.5)[0] is Action.FAIL  # 30.5 s: over


def test_a_call_held_by_the_window_past_max_attempts_waits_for_its_end() -> None:
    """errord's own refusal while the window holds (decided as a 429 of the call's own)
    after five attempts that met the limit: the call waits for the window's end."""
    failure = replace(TIMEOUT, code=ErrorCode.RATE_LIMITED)
    held = replace(
        context(attempt=7, failure=failure, spent=5.0),
        call=CallPart(
            retry_time_spent=5.0, failed_tools=frozenset({"flight_search"}), refused=1,
            was_refused=True,
        ),
        breaker=BreakerPart(
            window=RateWindow(opened_at=NOW, until=NOW + timedelta(seconds=0.5), asked=1.0)
        ),
    )  # fmt: skip
    verdict = default_policy(FixedJitter(0.5)).decide(held)
    assert (verdict.action, verdict.delay) == (Action.RETRY, 0.5)
    assert reason_of(held, verdict) == (
        "Transient error (RATE_LIMITED); the rate-limit window of flight_search holds its "
        "calls until 2026-01-01T00:00:00.500+00:00: retrying in 500 ms, when it ends, "
        "attempt 7: a rate limit's waits count against the call's retry time, not its 5 "
        "attempts."
    )


def test_past_max_attempts_only_a_rate_limit_that_says_how_long_is_retried() -> None:
    """A 429 without a Retry-After, and a 503 with one, are out of attempts at the fifth."""
    unsaid = replace(TIMEOUT, code=ErrorCode.RATE_LIMITED)
    assert decide(attempt=5, failure=unsaid)[0] is Action.FAIL
    unavailable = replace(TIMEOUT, code=ErrorCode.UNAVAILABLE, retry_after=1.0)
    action, _, reason = decide(attempt=5, failure=unavailable)
    assert action is Action.FAIL
    assert reason.startswith("No retry: attempt 5 reached the limit of 5 attempts")


def test_a_retry_is_never_sooner_than_the_tool_asked_so_a_long_wait_is_no_retry() -> None:
    failure = replace(TIMEOUT, code=ErrorCode.RATE_LIMITED, retry_after=1.0)
    action, _, reason = decide(failure=failure, manifest=SEED)
    assert action is Action.FAIL
    assert (
        "No retry: flight_search asked to wait 1000 ms before a retry, longer than the 800 ms "
        "its retry policy allows (max_retry_after_ms)"
    ) in reason


def test_a_manifest_can_allow_a_long_retry_after() -> None:
    patient = RetryPolicy(max_retry_after=60.0, max_total_time=120.0)
    manifest = ToolManifest(name="flight_search", retry_policy=patient)
    failure = replace(TIMEOUT, code=ErrorCode.RATE_LIMITED, retry_after=30.0)
    action, delay, reason = decide(failure=failure, manifest=manifest)
    assert (action, delay) == (Action.RETRY, 30.0)
    assert reason == (
        "Transient error (RATE_LIMITED); retrying in 30000 ms as flight_search asked, "
        "attempt 2 of 5."
    )


def test_a_long_retry_after_must_also_fit_the_total_retry_time() -> None:
    patient = RetryPolicy(max_retry_after=60.0, max_total_time=20.0)
    manifest = ToolManifest(name="flight_search", retry_policy=patient)
    failure = replace(TIMEOUT, code=ErrorCode.RATE_LIMITED, retry_after=30.0)
    action, _, reason = decide(failure=failure, manifest=manifest)
    assert action is Action.FAIL
    assert "plus a 30000 ms delay would exceed the 20000 ms retry time limit" in reason


def test_retry_at_a_timestamp_is_honoured() -> None:
    failure = replace(TIMEOUT, retry_at=NOW + timedelta(milliseconds=450))
    assert decide(failure=failure)[:2] == (Action.RETRY, 0.45)


def test_retry_after_counts_against_the_total_retry_time() -> None:
    failure = replace(TIMEOUT, retry_after=0.8)
    assert decide(failure=failure, attempt=2, spent=1.3, manifest=SEED)[0] is Action.FAIL


def test_invalid_airport_code_is_permanent_and_goes_back_to_the_model() -> None:
    failure = ToolFailure(code=ErrorCode.INVALID_INPUT, message="Invalid airport code: XYZ")
    action, _, reason = decide(failure=failure, attempt=1)
    assert action is Action.RETURN_TO_MODEL  # the model's own argument: no retry, no alternative
    assert "the error is permanent (INVALID_INPUT)" in reason


def test_manifest_override_503_permanent_is_not_retried() -> None:
    manifest = ToolManifest(
        name="flight_search",
        classification=(ClassificationRule(ErrorClass.PERMANENT, http_status=503),),
    )
    failure = ToolFailure(http_status=503)
    assert decide(failure=failure, manifest=manifest)[0] is Action.ESCALATE
    assert decide(failure=failure)[0] is Action.RETRY


def test_per_tool_overrides_change_delays_and_attempts() -> None:
    policy = RetryPolicy(
        initial_delay=0.05,
        max_delay=2.0,
        multiplier=3.0,
        jitter=0.15,
        max_attempts=3,
        max_total_time=5.0,
    )
    manifest = ToolManifest(name="flight_search", retry_policy=policy)
    assert decide(attempt=1, manifest=manifest)[:2] == (Action.RETRY, 0.05)
    assert decide(jitter=0.0, attempt=1, manifest=manifest)[:2] == (Action.RETRY, 0.043)
    assert decide(attempt=2, manifest=manifest)[:2] == (Action.RETRY, 0.15)
    assert decide(attempt=3, manifest=manifest)[0] is Action.FAIL


def test_no_retry_uses_the_first_alternative_when_there_is_one() -> None:
    manifest = ToolManifest(name="flight_search", alternatives=("flight_search_b", "flight_c"))
    verdict = default_policy(FixedJitter()).decide(context(attempt=5, manifest=manifest))
    assert (verdict.action, verdict.alternative_tool) == (Action.USE_ALTERNATIVE, "flight_search_b")


def test_a_non_idempotent_tool_is_not_retried() -> None:
    manifest = ToolManifest(name="book_flight", idempotent=False)
    action, _, reason = decide(manifest=manifest)
    assert action is Action.ESCALATE
    assert "not idempotent" in reason


def test_gates_compose_so_new_concerns_plug_in_without_rewriting() -> None:
    refusal = Refusal(kind=RefusalKind.ATTEMPTS_EXHAUSTED, limit=1, attempt=1)

    class OneAttempt(RetryGate):
        def __call__(self, context: DecisionContext, delay: float) -> Refusal | None:
            return refusal

    base = default_policy(FixedJitter())
    policy = RecoveryPolicy(base.backoff, base.gate | OneAttempt(), base.fallbacks)
    ctx = context()
    verdict = policy.decide(ctx)
    assert (verdict.action, verdict.refusal) == (Action.FAIL, refusal)
    assert reason_of(ctx, verdict) == (
        f"No retry: attempt 1 reached the limit of 1 attempts; {FOR_NOW}"
    )


def test_a_verdict_carries_its_consequences_for_other_calls_into_the_decision() -> None:
    """Cascades (a failed call's dependents are skipped) ride on the verdict."""
    skip = Consequence(call_id="call_2", action=Action.SKIP, reason="depends on call")

    class SkipDependents(Fallback):
        def __call__(self, context: DecisionContext, refusal: Refusal) -> Verdict:
            return Verdict(Action.ESCALATE, refusal, consequences=(skip,))

    base = default_policy(FixedJitter())
    policy = RecoveryPolicy(base.backoff, base.gate, (SkipDependents(), Escalate()))
    permanent = ToolFailure(code=ErrorCode.AUTH)
    report = context(failure=permanent).report
    decided = Engine(policy).decide(report, ManifestSnapshot([FLIGHT_SEARCH]), None, None, NOW)
    assert decided.decision.consequences == (skip,)
    assert decided.decision.refusal == Refusal(kind=RefusalKind.PERMANENT_ERROR)


def test_a_policy_must_end_with_escalation() -> None:
    base = default_policy(FixedJitter())
    with pytest.raises(ValueError, match="last fallback must be Escalate"):
        RecoveryPolicy(base.backoff, base.gate, (UseAlternative(),))
    assert isinstance(base.fallbacks[-1], Escalate)


def test_alternatives_that_already_failed_on_the_call_are_skipped() -> None:
    manifest = ToolManifest(name="flight_search", alternatives=("flight_b", "flight_c"))
    ctx = context(attempt=5, manifest=manifest, failed=frozenset({"flight_b"}))
    verdict = default_policy(FixedJitter()).decide(ctx)
    assert (verdict.action, verdict.alternative_tool) == (Action.USE_ALTERNATIVE, "flight_c")


def test_when_every_alternative_failed_the_call_fails_for_now_and_says_why() -> None:
    manifest = ToolManifest(name="flight_search", alternatives=("flight_b",))
    ctx = context(attempt=5, manifest=manifest, failed=frozenset({"flight_b"}))
    verdict = default_policy(FixedJitter()).decide(ctx)
    assert verdict.action is Action.FAIL
    assert reason_of(ctx, verdict).endswith(
        f"no alternative is usable (flight_b failed on this call); {FOR_NOW}"
    )


def test_an_attempt_number_in_the_thousands_is_out_of_attempts_not_an_overflow() -> None:
    action, _, reason = decide(attempt=10_000)
    assert action is Action.FAIL
    assert "attempt 10000 reached the limit of 5 attempts" in reason
    many = ToolManifest(name="flight_search", retry_policy=RetryPolicy(max_attempts=10_000))
    assert decide(attempt=5_000, manifest=many)[:2] == (Action.RETRY, 0.8)
