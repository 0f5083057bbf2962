"""The executor and errord's circuit breakers, against errord as a process: an open
breaker refuses a call before its tool runs, and a half-open one lets exactly one
executor across the host run the probe while the others take the alternative.

The executors learn the breakers from WatchTools and ask AdmitCall before running a tool
whose breaker is not closed; errord records each refusal as a CIRCUIT_OPEN failure and
answers it with its decision.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from errord_client.executor import DecidedBy, Executor, ResultStatus, ToolResult
from errord_client.tools import mock_tool
from errord_client.v1 import errord_pb2 as pb

from tests.executor_helpers import (
    Errord,
    Held,
    breaker_changes,
    errord_process,
    failures,
    wait_for,
)
from tests.helpers import operator_channel

DECISIONS = 10.0
"""Seconds each executor gives errord to answer (admissions included): a refusal errord
is slow to give on a loaded machine must not let the tool run unasked."""

EXECUTORS = 50

STATUS_OF = {
    pb.RECOVERY_ACTION_ESCALATE: ResultStatus.ESCALATED,
    pb.RECOVERY_ACTION_FAIL: ResultStatus.FAILED,
    pb.RECOVERY_ACTION_SKIP: ResultStatus.SKIPPED,
    pb.RECOVERY_ACTION_USE_DEFAULT: ResultStatus.DEFAULTED,
}
"""The result of a refused call whose decision names no alternative."""


async def until_watched_open(executors: list[Executor], tool: str) -> None:
    """Wait until every executor's WatchTools picture says ``tool``'s breaker is not closed."""

    async def all_see_it() -> bool:
        return not any(executor.board.closed(tool) for executor in executors)

    await wait_for(all_see_it, f"every executor to see {tool}'s breaker open")


async def test_an_open_breaker_refuses_attempt_one_without_running_the_tool(
    tmp_path: Path,
) -> None:
    """With the breaker forced open, neither tool runs: errord's decision on the refusal
    (recorded as a CIRCUIT_OPEN failure of attempt 1) is followed: the alternative where
    the manifest names one, else the decision's ending (escalate, fail, skip)."""
    manifests = """\
        tools:
          - name: ledger
            alternatives: [ledger_backup]
          - name: ledger_backup
          - name: vault
        """
    ledger = mock_tool("ledger", {"from": "ledger"})
    backup = mock_tool("ledger_backup", {"from": "backup"})
    vault = mock_tool("vault", {"from": "vault"})
    with errord_process(tmp_path, manifests) as daemon:
        async with operator_channel(daemon.address, daemon.token) as channel:
            errord = Errord(channel)
            await errord.force_open("ledger")
            await errord.force_open("vault")
            async with Executor(
                [ledger, backup, vault], target=daemon.address, decision_timeout=DECISIONS
            ) as executor:
                await executor.start()
                await until_watched_open([executor], "ledger")
                await until_watched_open([executor], "vault")
                results = await executor.run(
                    [
                        {"id": "c-ledger", "name": "ledger", "arguments": {"day": 1}},
                        {"id": "c-vault", "name": "vault", "arguments": {}},
                    ],
                    turn_id="turn-open",
                )
            events = await errord.trace("turn-open")

    assert (ledger.calls, vault.calls, backup.calls) == (0, 0, 1)
    refused = {event.call_id: event for event in failures(events)}
    assert set(refused) == {"c-ledger", "c-vault"}
    for call_id, tool in [("c-ledger", "ledger"), ("c-vault", "vault")]:
        assert (refused[call_id].tool, refused[call_id].attempt) == (tool, 1)
        assert refused[call_id].failure.error.code == pb.ERROR_CODE_CIRCUIT_OPEN
    by_id = {result.call_id: result for result in results}
    for result in results:
        assert result.decided_by is DecidedBy.ERRORD
        assert result.decision_ids == (refused[result.call_id].failure.decision.decision_id,)

    assert refused["c-ledger"].failure.decision.action == pb.RECOVERY_ACTION_USE_ALTERNATIVE
    ledger_result = by_id["c-ledger"]
    assert ledger_result.status is ResultStatus.SUCCEEDED
    assert (ledger_result.output, ledger_result.fallback_used, ledger_result.tool_used) == (
        {"from": "backup"},
        True,
        "ledger_backup",
    )
    vault_action = refused["c-vault"].failure.decision.action
    assert vault_action in STATUS_OF, pb.RecoveryAction.Name(vault_action)
    assert by_id["c-vault"].status is STATUS_OF[vault_action]
    assert by_id["c-vault"].output is None
    refusal = by_id["c-vault"].error
    assert refusal is not None
    assert refusal.code == "CIRCUIT_OPEN"
    assert not refusal.retryable  # errord refuses it again until the breaker half-opens


async def test_fifty_executors_on_a_half_open_breaker_run_one_probe_and_49_alternatives(
    tmp_path: Path,
) -> None:
    """50 executors, each with its own channel, call a tool whose breaker is half-open at
    once: one of them claims the probe and runs the tool (held until the others are
    done, so the probe cannot end early); the 49 others are refused and run the manifest's
    alternative without running the tool. The trace holds one PROBE_CLAIMED."""
    manifests = """\
        tools:
          - name: quotes
            timeout_ms: 60000
            alternatives: [quotes_backup]
          - name: quotes_backup
        """
    quotes = Held("quotes", {"from": "quotes"})
    backup = mock_tool("quotes_backup", {"from": "backup"})
    turns = [f"turn-{n}" for n in range(EXECUTORS)]
    with errord_process(tmp_path, manifests) as daemon:
        async with operator_channel(daemon.address, daemon.token) as channel:
            errord = Errord(channel)
            await errord.force_open("quotes", seconds=0.2)

            async def half_open() -> bool:
                breaker = await errord.breaker("quotes")
                return breaker.effective_phase == pb.BREAKER_PHASE_HALF_OPEN

            await wait_for(half_open, "the forced-open breaker to half-open")
            executors = [
                Executor([quotes.tool, backup], target=daemon.address, decision_timeout=DECISIONS)
                for _ in range(EXECUTORS)
            ]
            try:
                await asyncio.gather(*(executor.start() for executor in executors))
                await until_watched_open(executors, "quotes")
                runs = [
                    asyncio.create_task(
                        executor.run_one(
                            {"id": f"c-{n}", "name": "quotes", "arguments": {}}, turn_id=turn
                        )
                    )
                    for n, (executor, turn) in enumerate(zip(executors, turns, strict=True))
                ]

                async def all_but_the_probe_done() -> bool:
                    return sum(run.done() for run in runs) == EXECUTORS - 1

                await wait_for(all_but_the_probe_done, "49 executors to have their results")
                calls_while_held = quotes.calls
                quotes.gate.set()
                results: list[ToolResult] = await asyncio.gather(*runs)
            finally:
                await asyncio.gather(*(executor.close() for executor in executors))
            traces = [await errord.trace(turn) for turn in turns]

    assert calls_while_held == 1
    assert (quotes.calls, backup.calls) == (1, EXECUTORS - 1)
    [probe] = [result for result in results if result.tool_used == "quotes"]
    assert (probe.status, probe.output, probe.fallback_used) == (
        ResultStatus.SUCCEEDED,
        {"from": "quotes"},
        False,
    )
    others = [result for result in results if result is not probe]
    assert len(others) == EXECUTORS - 1
    for result in others:
        assert result.status is ResultStatus.SUCCEEDED
        assert (result.output, result.fallback_used, result.tool_used, result.attempts) == (
            {"from": "backup"},
            True,
            "quotes_backup",
            1,
        )
    claims = [breaker_changes(trace).count("BREAKER_CHANGE_PROBE_CLAIMED") for trace in traces]
    assert sum(claims) == 1
    probe_turn = turns[results.index(probe)]
    assert claims[turns.index(probe_turn)] == 1
    for trace, result in zip(traces, results, strict=True):
        if result is probe:
            assert failures(trace) == []
            continue
        [refusal] = failures(trace)
        assert refusal.failure.error.code == pb.ERROR_CODE_CIRCUIT_OPEN
        assert refusal.failure.decision.action == pb.RECOVERY_ACTION_USE_ALTERNATIVE
