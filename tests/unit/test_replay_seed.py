"""The jitter of a retry's delay is drawn from its decision's id, so that deciding the same
report again with the same id, state and time gives the same decision (what replay needs)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from errord.decide.engine import Engine
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import Action, ErrorCode, FailureReport, ToolFailure
from errord.decide.policy import default_policy
from errord.decide.policy.backoff import seeded_fraction

NOW = datetime(2026, 1, 1, tzinfo=UTC)
REPORT = FailureReport(
    turn_id="t", call_id="c", tool="search", attempt=2, error=ToolFailure(code=ErrorCode.TIMEOUT)
)


@given(st.text())
def test_the_seeded_fraction_is_a_function_of_the_id_within_0_and_1(decision_id: str) -> None:
    fraction = seeded_fraction(decision_id)
    assert 0 <= fraction < 1
    assert seeded_fraction(decision_id) == fraction


def test_a_report_decided_again_with_its_decision_id_gets_the_same_delay() -> None:
    engine = Engine(default_policy())
    first = engine.decide(REPORT, ManifestSnapshot(), None, None, NOW).decision
    again = engine.decide(
        REPORT, ManifestSnapshot(), None, None, NOW, decision_id=first.decision_id
    ).decision
    assert first.action is Action.RETRY
    assert again.decision_id == first.decision_id
    assert again.delay == first.delay


def test_delays_of_different_decision_ids_spread_over_the_jitter_range() -> None:
    """Attempt 2 waits 200 ms +-10 % by default: the seeded delays cover that range."""
    engine = Engine(default_policy())
    delays = {
        engine.decide(
            REPORT, ManifestSnapshot(), None, None, NOW, decision_id=f"{n:032x}"
        ).decision.delay
        for n in range(0, 2**32, 2**32 // 200)
    }
    assert min(delays) < 0.185
    assert max(delays) > 0.215
    assert all(0.18 <= delay <= 0.22 for delay in delays)
