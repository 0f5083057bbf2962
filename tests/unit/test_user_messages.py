"""What a user reads is plain: its own words per kind of trouble, and never the
error text, argument values, codes or stack traces, which stay in the technical message."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from errord.decide.engine import Engine
from errord.decide.manifest import ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import ErrorCode, FailureReport, ToolFailure
from errord.decide.policy import default_policy

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CANARY = "Traceback-xyzzy-1234"
MANIFESTS = ManifestSnapshot([ToolManifest(name="flight_search", alternatives=("flights_b",))])


def decided(code: ErrorCode, attempt: int, tool: str = "flight_search") -> tuple[str, str]:
    report = FailureReport(
        turn_id="t",
        call_id="c",
        tool=tool,
        attempt=attempt,
        error=ToolFailure(code=code, message=f"{CANARY} at line 12", exception_type="KeyError"),
        arguments={"origin": "SFO-secret-origin"},
    )
    decision = (
        Engine(default_policy(random.Random(1))).decide(report, MANIFESTS, None, None, NOW).decision
    )
    return decision.user_message, decision.technical_message


@pytest.mark.parametrize("code", list(ErrorCode))
@pytest.mark.parametrize("attempt", [1, 5])
@pytest.mark.parametrize("tool", ["flight_search", "hotel_search"])
def test_a_user_message_holds_no_internals(code: ErrorCode, attempt: int, tool: str) -> None:
    user, technical = decided(code, attempt, tool)
    assert CANARY in technical  # the detail is kept, for the logs and the trace
    for internal in (CANARY, "SFO-secret-origin", "KeyError", code.value, "_", "line 12"):
        assert internal not in user
    assert user[0].isupper()
    assert user.endswith(".")


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (ErrorCode.CONNECTION, "Couldn't reach"),
        (ErrorCode.TIMEOUT, "didn't respond in time"),
        (ErrorCode.RATE_LIMITED, "too many requests"),
        (ErrorCode.AUTH, "isn't authorized"),
        (ErrorCode.UNAVAILABLE, "temporarily unavailable"),
    ],
)
def test_each_kind_of_trouble_has_its_own_words(code: ErrorCode, words: str) -> None:
    user, _ = decided(code, attempt=5, tool="hotel_search")  # no retry left, no alternative
    assert words in user
