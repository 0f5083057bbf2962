"""What the operator commands say of breakers, rate-limit windows and episodic memory: the
break in force and the next one, the evidence, the window, and what memory does to retries
now and until when, in words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, timestamp_pb2

from errord.cli.output import breaker_line, format_memory

NOW = datetime(2026, 11, 22, 11, 0, tzinfo=UTC)


def stamp(moment: datetime) -> timestamp_pb2.Timestamp:
    message = timestamp_pb2.Timestamp()
    message.FromDatetime(moment)
    return message


def seconds(value: float) -> duration_pb2.Duration:
    message = duration_pb2.Duration()
    message.FromTimedelta(timedelta(seconds=value))
    return message


def test_an_open_breaker_says_its_break_its_streak_and_the_next_one() -> None:
    breaker = pb.Breaker(
        tool="search",
        state=pb.BreakerState(
            phase=pb.BREAKER_PHASE_OPEN, opens=2, streak=2, break_length=seconds(1.5)
        ),
        effective_phase=pb.BREAKER_PHASE_OPEN,
        half_opens_in=seconds(1.2),
        first_cooldown=seconds(1.0),
        next_break=seconds(2.25),
    )
    assert breaker_line(breaker, lambda: NOW) == (
        "breaker OPEN (half-opens in 1.2 s of a 1.5 s break, opening 2 in a row), "
        "opened 2 times, next break 2.2 s"
    )


def test_a_closed_breaker_says_its_recent_failures_and_its_window() -> None:
    window = pb.RateLimitWindow(
        opened_at=stamp(NOW), until=stamp(NOW + timedelta(seconds=1)), retry_after=seconds(1)
    )
    breaker = pb.Breaker(
        tool="api",
        state=pb.BreakerState(
            phase=pb.BREAKER_PHASE_CLOSED,
            consecutive_failures=1,
            recent_attempts=40,
            recent_failures=3,
        ),
        effective_phase=pb.BREAKER_PHASE_CLOSED,
        first_cooldown=seconds(1.0),
        next_break=seconds(1.0),
        rate_limit=window,
    )
    assert breaker_line(breaker, lambda: NOW + timedelta(seconds=0.4)) == (
        "breaker CLOSED, 1 consecutive failures, 3 of the last 40 attempts failed, opened 0 "
        "times; rate-limited: calls held 0.6 s more, until 2026-11-22T11:00:01.000Z, "
        "Retry-After 1 s"
    )
    assert breaker_line(breaker, lambda: NOW + timedelta(minutes=5)).endswith(
        "; last rate-limited at 2026-11-22T11:00:00.000Z for 1.0 s, Retry-After 1 s"
    )


def memory(evidence: pb.RecoveryEvidence, succeeded_at: datetime | None = None) -> str:
    remembered = pb.RememberedError(
        signature="TIMEOUT:3f0c", fingerprint="timeout after <n>s", recoveries=[evidence]
    )
    response = pb.RecallEpisodesResponse(errors=[remembered], min_episodes=5, burst_gap=seconds(60))
    if succeeded_at is not None:
        response.tool_succeeded_at.CopyFrom(stamp(succeeded_at))
    return format_memory("search", response)


def test_memory_says_a_verdict_stops_retries_and_until_when() -> None:
    evidence = pb.RecoveryEvidence(
        recovery="RETRY",
        failed=4.8,
        last_failed=stamp(NOW),
        stops_retries=True,
        applies_until=stamp(NOW + timedelta(minutes=5)),
    )
    assert memory(evidence).splitlines()[:3] == [
        "search  timeout after <n>s  [TIMEOUT:3f0c]",
        "  retry: fixed it in 0 bursts, failed in 4.8 bursts, last failed at "
        "2026-11-22T11:00:00.000Z",
        "    Retries stopped: they fixed none of 5 bursts (5 are enough). It stops applying at "
        "2026-11-22T11:05:00.000Z as the evidence fades, or once search succeeds or its "
        "breaker is reset.",
    ]


def test_memory_says_what_lifted_a_verdict_and_what_one_still_needs() -> None:
    lifted = pb.RecoveryEvidence(recovery="RETRY", failed=5.0, lifted_by="succeeded")
    assert (
        "    Retries go on: they fixed none of 5 bursts, but search succeeded at "
        "2026-11-22T11:00:00.000Z, after the last failed one."
    ) in memory(lifted, succeeded_at=NOW).splitlines()
    young = pb.RecoveryEvidence(recovery="RETRY", failed=2.0, unknown=1.0)
    text = memory(young)
    assert (
        "  retry: fixed it in 0 bursts, failed in 2 bursts; no outcome was reported in 1 burst"
    ) in text.splitlines()
    assert "    Retries go on: 2 of the 5 bursts a verdict needs." in text.splitlines()
    assert text.endswith(
        "(a burst: the episodes of one outage or spell of an error, each within 60 s of the "
        "one before; it counts once. Counts halve every hour.)"
    )
