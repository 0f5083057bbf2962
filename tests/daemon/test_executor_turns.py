"""The executor's turns against errord as a process: a call whose last attempt timed out
ends TIMED_OUT; a tool's own timeout bounds its attempts unless a manifest sets one; a
turn's deadline returns the batch with what finished; an agent's run is one turn however
its calls come; leaving the executor while errord is down does not wait for it, and says
what it could not deliver; on_progress hears each step.

Each test starts its own daemon; the executors wait for errord's answers longer than their
default (``DECISIONS``) so that a loaded machine cannot turn a decision into a local one.
"""

from __future__ import annotations

import dataclasses
import signal
import time
from pathlib import Path

import pytest
from errord_client.executor import (
    DecidedBy,
    Executor,
    Progress,
    ProgressKind,
    ResultStatus,
    ToolCall,
)
from errord_client.tools import Hang, Sleep, mock_tool
from errord_client.v1 import errord_pb2 as pb

from tests.executor_helpers import (
    Held,
    errord_process,
    failures,
    recorded_trace,
    seconds,
    sent_failures,
    wait_for,
)
from tests.helpers import Reachable

DECISIONS = 10.0
"""Seconds each executor gives errord to answer before its local policy would decide."""


def turn_ended(events: list[pb.TraceEvent]) -> pb.TurnSummary | None:
    """The summary of the turn's end, if the events hold it."""
    for event in events:
        if event.WhichOneof("event") == "turn_ended":
            summary: pb.TurnSummary = event.turn_ended.summary
            return summary
    return None


async def summary_of(daemon: Reachable, turn_id: str) -> pb.TurnSummary:
    """The recorded summary of ``turn_id``, once errord has it."""

    async def ended() -> pb.TurnSummary | None:
        return turn_ended(await recorded_trace(daemon, turn_id))

    return await wait_for(ended, f"the end of {turn_id} in the trace")


def statuses(summary: pb.TurnSummary) -> dict[str, str]:
    return {call.call_id: pb.CallStatus.Name(call.status) for call in summary.calls}


async def test_a_call_whose_every_attempt_timed_out_ends_timed_out(tmp_path: Path) -> None:
    """Two attempts past the manifest's 100 ms, and errord allows no third: the call ends
    TIMED_OUT (not ESCALATED), decided by errord, after its two attempts."""
    manifests = """\
        tools:
          - name: stuck
            timeout_ms: 100
            retry_policy: {initial_delay_ms: 10, max_attempts: 2}
        """
    stuck = mock_tool("stuck", "never", script=[Hang(60), Hang(60)])
    with errord_process(tmp_path, manifests) as daemon:
        async with Executor([stuck], target=daemon.address, decision_timeout=DECISIONS) as ex:
            [result] = await ex.run([{"id": "c1", "name": "stuck", "arguments": {}}])
    assert (result.status, result.attempts) == (ResultStatus.TIMED_OUT, 2)
    assert result.decided_by is DecidedBy.ERRORD
    assert result.error is not None
    assert result.error.code == "TIMEOUT"


async def test_a_tools_own_timeout_bounds_its_attempts_when_no_manifest_sets_one(
    tmp_path: Path,
) -> None:
    """A tool declaring 200 ms (as an Agents SDK tool's ``timeout``) and errord holding no
    manifest of it: its first attempt, which would answer after 5 s, times out at 200 ms
    (the report declares that timeout), and the retry answers."""
    slow = dataclasses.replace(mock_tool("slow", "quick", script=[Sleep(5, "late")]), timeout=0.2)
    with errord_process(tmp_path, "tools: []\n") as daemon:
        async with Executor(
            [slow], target=daemon.address, decision_timeout=DECISIONS, default_timeout=60
        ) as ex:
            sent = sent_failures(ex)
            [result] = await ex.run([{"id": "c1", "name": "slow", "arguments": {}}])
    assert (result.status, result.output, result.attempts) == (ResultStatus.SUCCEEDED, "quick", 2)
    [report] = sent
    assert report.error.code == pb.ERROR_CODE_TIMEOUT
    assert seconds(report.tool_declaration.timeout) == pytest.approx(0.2)


async def test_a_manifests_timeout_wins_over_the_tools_own(tmp_path: Path) -> None:
    """The same tool with a manifest's 10 s: its 500 ms answer is awaited, not cut at the
    tool's own 200 ms."""
    manifests = """\
        tools:
          - name: slow
            timeout_ms: 10000
        """
    slow = dataclasses.replace(mock_tool("slow", "quick", script=[Sleep(0.5, "late")]), timeout=0.2)
    with errord_process(tmp_path, manifests) as daemon:
        async with Executor([slow], target=daemon.address, decision_timeout=DECISIONS) as ex:
            [result] = await ex.run([{"id": "c1", "name": "slow", "arguments": {}}])
    assert (result.status, result.output, result.attempts) == (ResultStatus.SUCCEEDED, "late", 1)


async def test_a_turns_deadline_returns_what_finished_and_times_out_the_hung_call(
    tmp_path: Path,
) -> None:
    """A deadline of 1 s and a tool that never answers: ``run`` returns at the deadline
    (bounded here generously, against a loaded machine: the hung tool's own timeout is
    60 s), the hung call TIMED_OUT, the call retried once and the quick one succeeded, the
    call waiting on the hung one given its default; errord's summary of the turn says the
    same."""
    manifests = """\
        tools:
          - name: hung
            timeout_ms: 60000
          - name: flaky
            timeout_ms: 200   # a retry errord grants must fit in the turn's deadline
            retry_policy: {initial_delay_ms: 10}
        """
    hung = Held("hung")
    flaky = mock_tool("flaky", {"ok": 2}, script=[TimeoutError("upstream timed out")])
    quick = mock_tool("quick", {"ok": 1})
    after = mock_tool("after", "never asked")
    calls = [
        ToolCall(call_id="c-hung", name="hung", arguments={}),
        ToolCall(call_id="c-flaky", name="flaky", arguments={}),
        ToolCall(call_id="c-quick", name="quick", arguments={}),
        ToolCall(call_id="c-after", name="after", arguments={}, depends_on=("c-hung",), default=[]),
    ]
    tools = [hung.tool, flaky, quick, after]
    with errord_process(tmp_path, manifests) as daemon:
        async with Executor(tools, target=daemon.address, decision_timeout=DECISIONS) as ex:
            started = time.monotonic()
            results = await ex.run(calls, turn_id="turn-deadline", deadline=1.0)
            took = time.monotonic() - started
        summary = await summary_of(daemon, "turn-deadline")
    assert [result.status for result in results] == [
        ResultStatus.TIMED_OUT,
        ResultStatus.SUCCEEDED,
        ResultStatus.SUCCEEDED,
        ResultStatus.DEFAULTED,
    ]
    assert took < 10.0
    assert results[0].error is not None
    assert "deadline" in results[0].error.message
    assert "deadline" in results[0].content()
    assert (results[1].attempts, results[3].output, after.calls) == (2, [], 0)
    assert summary.deadline_passed
    assert statuses(summary)["c-hung"] == "CALL_STATUS_TIMED_OUT"
    assert statuses(summary)["c-flaky"] == "CALL_STATUS_SUCCEEDED"
    assert statuses(summary)["c-quick"] == "CALL_STATUS_SUCCEEDED"


async def test_an_agents_calls_one_by_one_inside_a_turn_are_one_errord_turn(
    tmp_path: Path,
) -> None:
    """Three calls run one at a time, as a framework runs them, inside ``executor.turn()``:
    one turn in errord, whose summary counts all three, ended when the block ends (not
    after the first call); progress tells each attempt, the retry and each result."""
    manifests = """\
        tools:
          - name: flaky
            retry_policy: {initial_delay_ms: 10}
        """
    flaky = mock_tool("flaky", {"ok": 2}, script=[TimeoutError("upstream timed out")])
    quick = mock_tool("quick", {"ok": 1})
    heard: list[Progress] = []
    with errord_process(tmp_path, manifests) as daemon:
        async with (
            Executor(
                [flaky, quick],
                target=daemon.address,
                decision_timeout=DECISIONS,
                on_progress=heard.append,
            ) as ex,
            ex.turn("turn-agent", user_id="ada") as turn,
        ):
            first = await ex.run_one({"id": "c1", "name": "quick", "arguments": {}})
            second = await ex.run_one({"id": "c2", "name": "flaky", "arguments": {}})
            third = await turn.run_one({"id": "c3", "name": "quick", "arguments": {}})
            middle = turn_ended(await recorded_trace(daemon, "turn-agent"))
        summary = await summary_of(daemon, "turn-agent")
    assert [r.status for r in (first, second, third)] == [ResultStatus.SUCCEEDED] * 3
    assert middle is None
    assert statuses(summary) == {
        "c1": "CALL_STATUS_SUCCEEDED",
        "c2": "CALL_STATUS_SUCCEEDED",
        "c3": "CALL_STATUS_SUCCEEDED",
    }
    kinds = [(step.call_id, step.kind) for step in heard]
    assert kinds == [
        ("c1", ProgressKind.ATTEMPT),
        ("c1", ProgressKind.DONE),
        ("c2", ProgressKind.ATTEMPT),
        ("c2", ProgressKind.RETRY),
        ("c2", ProgressKind.ATTEMPT),
        ("c2", ProgressKind.DONE),
        ("c3", ProgressKind.ATTEMPT),
        ("c3", ProgressKind.DONE),
    ]
    retry = heard[3]
    assert (retry.tool, retry.attempt, retry.turn_id) == ("flaky", 1, "turn-agent")
    assert retry.message
    assert heard[-1].status is ResultStatus.SUCCEEDED


async def test_leaving_the_executor_with_errord_stopped_is_quick_and_says_what_was_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """errord killed after the executor connected: the calls still get results (the local
    policy decides), and leaving the executor does not wait out its 5 s of patience for
    errord (measured: a few ms, under the issue's 0.5 s; the test bounds it loosely, so
    that a loaded machine cannot fail it), logging how many reports could not be
    delivered."""
    caplog.set_level("WARNING", logger="errord_client.executor")
    flaky = mock_tool("flaky", {"ok": 2}, script=[TimeoutError("upstream timed out")])
    quick = mock_tool("quick", {"ok": 1})
    calls = [
        {"id": f"c{n}", "name": name, "arguments": {}} for n, name in enumerate(["flaky", "quick"])
    ]
    with errord_process(tmp_path, "tools: []\n") as daemon:
        executor = Executor([flaky, quick], target=daemon.address, decision_timeout=2.0)
        await executor.start()
        daemon.terminate(signal.SIGKILL)
        results = await executor.run(calls)
        started = time.monotonic()
        await executor.close()
        took = time.monotonic() - started
    assert [r.status for r in results] == [ResultStatus.SUCCEEDED] * 2
    assert results[0].decided_by is DecidedBy.LOCAL
    assert took < 2.5  # half the patience close() would have waited
    [lost] = [r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()]
    assert "3 queued reports were not delivered" in lost, lost
    assert "outcomes of 2 attempts, 1 turn endings" in lost, lost


async def test_failures_report_the_executors_user_and_a_runs_own(tmp_path: Path) -> None:
    """The executor's user_id and session_id go with every report; a run's own replace
    them for that run."""
    flaky = mock_tool("flaky", {"ok": 2}, script=[TimeoutError("x"), {"ok": 1}, TimeoutError("y")])
    with errord_process(tmp_path, "tools: []\n") as daemon:
        async with Executor(
            [flaky],
            target=daemon.address,
            decision_timeout=DECISIONS,
            user_id="ada",
            session_id="s-1",
        ) as ex:
            sent = sent_failures(ex)
            await ex.run_one({"id": "c1", "name": "flaky", "arguments": {}})
            await ex.run_one({"id": "c2", "name": "flaky", "arguments": {}}, user_id="grace")
        events = await recorded_trace(daemon, sent[0].turn_id)
    assert [(r.user_id, r.session_id) for r in sent] == [("ada", "s-1"), ("grace", "s-1")]
    assert len(failures(events)) == 1
