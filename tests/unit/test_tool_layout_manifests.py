"""A manifest in the ``tool:`` layout (``tool:``, ``id``, ``strategy: exponential_backoff``, a
breaker section) works as written: it loads into the records of the native layout and
drives the same decisions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from errord.decide.manifest import BreakerPolicy, RetryPolicy
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import Decision, ErrorCode, Outcome, OutcomeReport, ToolFailure
from errord.errors import ManifestError
from errord.manifests.files import load_manifest_dir
from tests.harness import Harness, failure_report

TOOL_LAYOUT = """\
tool:
  id: flight_search
  timeout_ms: 30000             # 30 second timeout
  retry_policy:
    strategy: exponential_backoff
    initial_delay_ms: 50        # Override default 100ms
    max_delay_ms: 2000          # Override default 800ms
    multiplier: 2.0             # Override default 2.0
    jitter_percent: 15          # Override default 10%
    max_attempts: 3             # Override default 5
    max_total_time_ms: 5000     # Override default 2000ms
  circuit_breaker:
    failure_threshold: 5        # Open after 5 consecutive failures
    success_threshold: 2        # Close after 2 consecutive successes
    timeout_ms: 30000           # Wait 30s before trying again
"""

NATIVE_LAYOUT = """\
tools:
  - name: flight_search
    timeout_ms: 30000
    retry_policy:
      initial_delay_ms: 50
      max_delay_ms: 2000
      multiplier: 2.0
      jitter_percent: 15
      max_attempts: 3
      max_total_time_ms: 5000
    circuit_breaker: {failure_threshold: 5, success_threshold: 2, timeout_ms: 30000}
"""

TIMED_OUT = ToolFailure(code=ErrorCode.TIMEOUT, message="Connection timeout")


def load(tmp_path: Path, name: str, text: str) -> ManifestSnapshot:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "flight_search.yaml").write_text(text)
    return load_manifest_dir(directory)


def test_the_tool_layout_loads_into_the_native_records(tmp_path: Path) -> None:
    alternative = load(tmp_path, "tool_layout", TOOL_LAYOUT).manifest_for("flight_search")[0]
    native = load(tmp_path, "native", NATIVE_LAYOUT).manifest_for("flight_search")[0]
    assert dataclasses.replace(alternative, source="") == dataclasses.replace(native, source="")
    assert alternative.timeout == 30.0
    assert alternative.retry_policy == RetryPolicy(
        initial_delay=0.05,
        max_delay=2.0,
        multiplier=2.0,
        jitter=0.15,
        max_attempts=3,
        max_total_time=5.0,
    )
    assert alternative.breaker == BreakerPolicy(
        failure_threshold=5, cooldown=30.0, success_threshold=2
    )
    assert alternative.source.endswith("tool_layout/flight_search.yaml:2")


async def test_the_tool_layout_drives_the_same_decisions(tmp_path: Path) -> None:
    histories = []
    for name, text in (("tool_layout", TOOL_LAYOUT), ("native", NATIVE_LAYOUT)):
        harness = Harness(tmp_path / name, load(tmp_path, name, text))
        handler = await harness.start()
        decisions: list[Decision] = []
        for call in range(4):
            for attempt in (1, 2, 3):
                report = failure_report(
                    f"call-{call}", "flight_search", attempt=attempt, turn="turn", error=TIMED_OUT
                )
                decisions.append((await handler.report_failure(report))[0])
            harness.clock.advance(10.0)
        await handler.report_outcome(
            OutcomeReport(
                turn_id="turn",
                call_id="call-3",
                tool="flight_search",
                attempt=4,
                outcome=Outcome.SUCCESS,
            )
        )
        histories.append(decisions)
        await harness.close()
    alternative, native = histories
    assert alternative == native
    assert {decision.action.value for decision in alternative} == {"RETRY", "FAIL"}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "tool:\n  id: a\n  name: a\n",
            "2: tool.id: give the tool's name once: 'name' or 'id', not both",
        ),
        ("tool:\n  timeout_ms: 5\n", "2: tool.name: missing required key 'name' (or 'id')"),
        (
            "tool:\n  id: a\n  circuit_breaker: {failure_threshold: 0}\n",
            "3: tool.circuit_breaker.failure_threshold: must be at least 1, got 0",
        ),
        (
            "tool:\n  id: a\n  circuit_breaker: {timeout: 5}\n",
            "3: tool.circuit_breaker.timeout: unknown key 'timeout' (did you mean "
            "'timeout_ms'?); allowed keys: failure_threshold, success_threshold, timeout_ms, "
            "first_timeout_ms, timeout_multiplier, failure_rate_percent, min_calls, window",
        ),
        (
            "tool:\n  id: a\n  retry_policy: {strategy: linear}\n",
            "3: tool.retry_policy.strategy: expected one of exponential_backoff, got 'linear'",
        ),
    ],
)
def test_tool_layout_problems_name_file_line_and_field(
    tmp_path: Path, text: str, problem: str
) -> None:
    directory = tmp_path / "tools"
    directory.mkdir()
    path = directory / "a.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError) as raised:
        load_manifest_dir(directory)
    assert [str(p) for p in raised.value.problems] == [f"{path}:{problem}"]
