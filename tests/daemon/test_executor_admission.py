"""AdmitCall and WatchTools, the two RPCs the executor relies on, called directly on
errord as a process: what a closed and an open breaker answer, what a malformed request
and an ended turn get, and the stream of tool policies.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import grpc.aio
import pytest
from errord_client.v1 import errord_pb2 as pb

from tests.executor_helpers import PATIENCE, Errord, errord_process, failures, seconds
from tests.helpers import operator_channel, violations

MANIFESTS = """\
    tools:
      - name: search
        timeout_ms: 1500
        alternatives: [search_backup]
      - name: search_backup
        timeout_ms: 4000
    """


def attempt(turn_id: str, call_id: str) -> pb.AdmitCallRequest:
    """Attempt 1 of ``call_id``, a call of the tool search."""
    return pb.AdmitCallRequest(turn_id=turn_id, call_id=call_id, tool="search", attempt=1)


async def test_a_closed_breaker_admits_and_records_nothing(tmp_path: Path) -> None:
    """AdmitCall for a tool whose breaker is closed admits the attempt, not as a probe,
    with no decision, and the turn has no trace event at all."""
    with errord_process(tmp_path, MANIFESTS) as daemon:
        async with operator_channel(daemon.address, daemon.token) as channel:
            errord = Errord(channel)
            response = await errord.errors.AdmitCall(attempt("turn-closed", "c1"), timeout=10)
            with pytest.raises(grpc.aio.AioRpcError) as unknown:
                await errord.trace("turn-closed")

    assert (response.admitted, response.probe) == (True, False)
    assert not response.HasField("decision")
    assert response.breaker.phase == pb.BREAKER_PHASE_CLOSED
    assert unknown.value.code() is grpc.StatusCode.NOT_FOUND


async def test_a_first_admission_by_a_closed_breaker_is_not_replayed(tmp_path: Path) -> None:
    """AdmitCallResponse.replayed is True only when the attempt was asked about before:
    the first AdmitCall of an attempt of a closed breaker's tool is not replayed."""
    with errord_process(tmp_path, MANIFESTS) as daemon:
        async with operator_channel(daemon.address, daemon.token) as channel:
            errors = Errord(channel).errors
            response = await errors.AdmitCall(attempt("turn-first", "c1"), timeout=10)

    assert response.admitted
    assert not response.replayed


async def test_a_malformed_admission_is_invalid_argument_naming_its_fields(
    tmp_path: Path,
) -> None:
    """An AdmitCallRequest without a turn and with attempt 0 is INVALID_ARGUMENT, and its
    field violations name turn_id and attempt."""
    malformed = pb.AdmitCallRequest(call_id="c1", tool="search", attempt=0)
    with errord_process(tmp_path, MANIFESTS) as daemon:
        async with operator_channel(daemon.address, daemon.token) as channel:
            found = await violations(channel, "AdmitCall", malformed.SerializeToString())

    assert {"turn_id", "attempt"} <= set(found)


async def test_a_refused_attempt_asked_again_replays_its_decision_until_the_turn_ends(
    tmp_path: Path,
) -> None:
    """With the breaker forced open, AdmitCall refuses attempt 1 with errord's decision
    (the alternative), recorded as a CIRCUIT_OPEN failure; asking again for the same
    attempt returns the same decision, replayed, and records nothing more. Once the turn
    has ended, asking about another call of it is FAILED_PRECONDITION."""
    with errord_process(tmp_path, MANIFESTS) as daemon:
        async with operator_channel(daemon.address, daemon.token) as channel:
            errord = Errord(channel)
            await errord.force_open("search")
            first = await errord.errors.AdmitCall(attempt("turn-open", "c1"), timeout=10)
            again = await errord.errors.AdmitCall(attempt("turn-open", "c1"), timeout=10)
            events = await errord.trace("turn-open")
            await errord.errors.EndTurn(pb.EndTurnRequest(turn_id="turn-open"), timeout=10)
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                await errord.errors.AdmitCall(attempt("turn-open", "c2"), timeout=10)

    assert (first.admitted, first.replayed) == (False, False)
    assert first.breaker.phase == pb.BREAKER_PHASE_OPEN
    assert first.decision.action == pb.RECOVERY_ACTION_USE_ALTERNATIVE
    assert first.decision.alternative_tool == "search_backup"
    assert (again.admitted, again.replayed) == (False, True)
    assert again.decision == first.decision
    [refusal] = failures(events)
    assert (refusal.call_id, refusal.tool, refusal.attempt) == ("c1", "search", 1)
    assert refusal.failure.error.code == pb.ERROR_CODE_CIRCUIT_OPEN
    assert refusal.failure.decision.decision_id == first.decision.decision_id
    assert ended.value.code() is grpc.StatusCode.FAILED_PRECONDITION


async def test_watch_tools_sends_a_snapshot_then_the_breaker_a_force_open_changed(
    tmp_path: Path,
) -> None:
    """WatchTools answers first with a snapshot of every manifest tool and its timeout,
    breakers closed; ForceOpenBreaker then makes a response arrive with that tool's phase
    OPEN."""
    with errord_process(tmp_path, MANIFESTS) as daemon:
        async with operator_channel(daemon.address, daemon.token) as channel:
            errord = Errord(channel)
            stream = errord.errors.WatchTools(pb.WatchToolsRequest())
            responses: AsyncIterator[pb.WatchToolsResponse] = aiter(stream)
            snapshot = await asyncio.wait_for(anext(responses), PATIENCE)
            await errord.force_open("search")

            async def search_opened() -> pb.ToolPolicy:
                while True:
                    response = await anext(responses)
                    for policy in response.tools:
                        if policy.tool == "search" and policy.breaker.phase != (
                            pb.BREAKER_PHASE_CLOSED
                        ):
                            return policy

            opened = await asyncio.wait_for(search_opened(), PATIENCE)
            stream.cancel()

    assert snapshot.snapshot
    timeouts = {policy.tool: seconds(policy.timeout) for policy in snapshot.tools}
    assert timeouts == {"search": 1.5, "search_backup": 4.0}
    assert all(policy.has_manifest for policy in snapshot.tools)
    assert all(policy.breaker.phase == pb.BREAKER_PHASE_CLOSED for policy in snapshot.tools)
    assert opened.breaker.phase == pb.BREAKER_PHASE_OPEN
    assert seconds(opened.timeout) == 1.5
