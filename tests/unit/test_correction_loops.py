"""No correction loops: a model that makes the same mistake again under
fresh tool-call ids is told of it a bounded number of times per turn, each correction spends
the turn's retry budget as a retry does, and the count is a projection of the trace."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    Decision,
    ErrorCode,
    FailureReport,
    RefusalKind,
    RetryBudget,
    ToolFailure,
)
from errord.errors import StoreError
from tests.harness import Harness, failure_report
from tests.helpers import DaemonProcess, start_process

CALM = BreakerPolicy(failure_threshold=1000)
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["query"],
}
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="document_search", parameters=SEARCH_SCHEMA, breaker=CALM),
        ToolManifest(name="notes", optional=True, breaker=CALM),
        ToolManifest(name="lookup", breaker=CALM),
    ]
)
NO_QUERY = "No query provided"


@pytest.fixture
def manifests() -> ManifestSnapshot:
    return MANIFESTS


def failure(
    call: str,
    message: str = NO_QUERY,
    tool: str = "document_search",
    turn: str = "t",
    attempt: int = 1,
    code: ErrorCode | None = None,
) -> FailureReport:
    error = ToolFailure(code=code, message=message)
    return failure_report(call, tool, attempt=attempt, turn=turn, error=error)


async def decide(harness: Harness, *reports: FailureReport) -> list[Decision]:
    return [(await harness.handler.report_failure(report))[0] for report in reports]


async def test_the_same_mistake_under_fresh_call_ids_is_told_twice_then_escalates(
    harness: Harness,
) -> None:
    first, second, third = await decide(harness, failure("c1"), failure("c2"), failure("c3"))
    assert [first.action, second.action] == [Action.RETURN_TO_MODEL] * 2
    assert second.reason.endswith("to correct its call (2 of 2).")
    assert second.correction is not None
    assert second.correction.corrections_left == 0
    assert third.action is Action.ESCALATE  # document_search is required
    assert third.reason == (
        "No retry: the error is permanent (INVALID_INPUT), so retrying the same call cannot "
        "help; the model was already told 2 times in this turn how to correct this mistake "
        "in its calls to document_search, escalating."
    )
    assert (
        "You were already told 2 times in this turn how to correct this mistake in calls to "
        "document_search, and made it again. Do not call document_search again in this turn"
    ) in third.llm_message
    assert third.correction is not None
    assert third.correction.parameter == "query"
    assert "Retry Hint" not in third.llm_message  # calling again is over


async def test_a_mistake_is_the_tool_the_error_and_the_parameter(harness: Harness) -> None:
    """Two corrections of 'query' leave 'limit' (same message but for the name), another
    tool and another turn their own two."""
    told = await decide(
        harness,
        failure("c1", "The 'query' parameter is required"),
        failure("c2", "The 'query' parameter is required"),
        failure("c3", "The 'limit' parameter is required"),
        failure("n1", "The 'query' parameter is required", tool="notes"),
        failure("c1", "The 'query' parameter is required", turn="u"),
    )
    assert [d.action for d in told] == [Action.RETURN_TO_MODEL] * 5
    again = await decide(harness, failure("c4", "The 'query' parameter is required"))
    assert again[0].action is Action.ESCALATE


async def test_an_optional_call_told_of_its_mistake_too_often_fails(harness: Harness) -> None:
    reports = [
        failure(f"n{n}", "The 'title' parameter is required", tool="notes") for n in (1, 2, 3)
    ]
    *told, failed = await decide(harness, *reports)
    assert [d.action for d in told] == [Action.RETURN_TO_MODEL] * 2
    assert failed.action is Action.FAIL
    assert failed.reason.endswith(
        "the model was already told 2 times in this turn how to correct this mistake in its "
        "calls to notes, and this call is optional: it fails, and the turn goes on without it."
    )
    assert "it is optional, so continue without its result." in failed.llm_message
    assert failed.user_message == (
        "The request to notes couldn't be completed as asked; continuing with the rest of the "
        "request."
    )


async def test_corrections_spend_the_turn_s_retry_budget(tmp_path: Path) -> None:
    harness = Harness(tmp_path, MANIFESTS)
    harness.budget = RetryBudget(max_retries=2)
    await harness.start()
    try:
        corrected, retried, refused = await decide(
            harness,
            failure("c1"),
            failure("l1", "timed out", tool="lookup", code=ErrorCode.TIMEOUT),
            failure("l2", "timed out", tool="lookup", code=ErrorCode.TIMEOUT),
        )
        assert [corrected.action, retried.action] == [Action.RETURN_TO_MODEL, Action.RETRY]
        assert refused.action is Action.FAIL  # a transient failure: unavailable for now
        assert refused.reason.startswith(
            "No retry: the turn's retry budget is spent: its calls were granted 2 of the 2 "
            "retries it allows (1 of them a correction of the model's call)"
        )
        [uncorrected] = await decide(harness, failure("c2", "The 'limit' parameter is required"))
    finally:
        await harness.close()
    assert uncorrected.action is Action.ESCALATE
    assert uncorrected.refusal is not None
    assert uncorrected.refusal.kind is RefusalKind.RETRY_BUDGET_SPENT
    assert uncorrected.reason.endswith(
        "a correction would spend it as a retry does, so the model may not correct the call: "
        "escalating."
    )


async def test_the_count_is_the_fold_of_the_trace_and_survives_a_restart(
    harness: Harness,
) -> None:
    await decide(harness, failure("c1"), failure("c2", "The 'limit' parameter is required"))
    await decide(harness, failure("c3"))
    folded = await harness.store.fold_trace(harness.state.all)
    turns = harness.state.all.index(harness.state.turns)
    assert harness.state.turns.snapshot() == folded[turns]
    await harness.restart()
    assert harness.state.turns.snapshot() == folded[turns]
    [after] = await decide(harness, failure("c4"))
    assert after.action is Action.ESCALATE


async def test_a_correction_whose_commit_fails_is_not_counted(harness: Harness) -> None:
    """Reserved before the commit, as retries are; released when the commit fails."""
    with contextlib.closing(sqlite3.connect(harness.db)) as db, db:
        db.execute(
            "CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.turn_id = 'poisoned' "
            "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
        )
    refused = await asyncio.gather(
        harness.handler.report_failure(failure("c1", turn="poisoned")),
        harness.handler.report_failure(failure("c2", turn="poisoned")),
        return_exceptions=True,
    )
    assert [type(each) for each in refused] == [StoreError, StoreError]
    assert harness.state.turns.view("poisoned") is None  # no reservation is left behind
    with contextlib.closing(sqlite3.connect(harness.db)) as db, db:
        db.execute("DROP TRIGGER poison")
    told = await decide(harness, *(failure(f"d{n}", turn="poisoned") for n in range(3)))
    assert [d.action for d in told] == [Action.RETURN_TO_MODEL] * 2 + [Action.ESCALATE]


# Against the daemon: many clients at once, each re-issuing the bad call under a fresh id.

CLIENTS = 16


@pytest.fixture
def errord(tmp_path: Path) -> Iterator[DaemonProcess]:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "tools.yaml").write_text(
        textwrap.dedent(
            """\
            tools:
              - name: search
                circuit_breaker: {failure_threshold: 1000}
              - name: notes
                optional: true
              - name: lookup
                circuit_breaker: {failure_threshold: 1000}
            """
        )
    )
    config = tmp_path / "errord.toml"
    config.write_text("turn_retry_budget = 3\nmemory_min_episodes = 10000\n")
    running = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--manifests", str(tools), "--config", str(config),
    )  # fmt: skip
    yield running
    running.terminate(signal.SIGKILL)


def wire_failure(turn: str, call: str, tool: str, message: str) -> pb.ReportFailureRequest:
    code = pb.ERROR_CODE_TIMEOUT if tool == "lookup" else pb.ERROR_CODE_INVALID_INPUT
    return pb.ReportFailureRequest(
        turn_id=turn,
        call_id=call,
        tool=tool,
        attempt=1,
        error=pb.ToolError(code=code, message=message),
    )


async def from_many_clients(
    address: str, requests: list[pb.ReportFailureRequest]
) -> list[pb.RecoveryDecision]:
    """Send ``requests`` at once, spread over CLIENTS channels (separate connections)."""
    channels = [grpc.aio.insecure_channel(address) for _ in range(CLIENTS)]
    try:
        stubs: list[Any] = [errord_pb2_grpc.ErrorHandlerServiceStub(c) for c in channels]
        responses = await asyncio.gather(
            *(stubs[n % CLIENTS].ReportFailure(request) for n, request in enumerate(requests))
        )
    finally:
        await asyncio.gather(*(channel.close() for channel in channels))
    return [response.decision for response in responses]


@pytest.mark.slow
async def test_concurrent_repeats_of_one_mistake_are_told_only_as_often_as_the_bound(
    errord: DaemonProcess,
) -> None:
    """40 fresh ids for one bad call of a required tool, 40 of an optional one, each in
    its turn: 2 corrections each (model_corrections, under the budget of 3), then ESCALATE
    for the required tool and FAIL for the optional one."""
    requests = [wire_failure("loop", f"call_{n}", "search", NO_QUERY) for n in range(40)]
    requests += [wire_failure("loop-2", f"call_{n}", "notes", NO_QUERY) for n in range(40)]
    decisions = await from_many_clients(errord.address, requests)
    for tool, given_up in (
        ("search", pb.RECOVERY_ACTION_ESCALATE),
        ("notes", pb.RECOVERY_ACTION_FAIL),
    ):
        actions = [d.action for d in decisions if d.tool == tool]
        assert actions.count(pb.RECOVERY_ACTION_RETURN_TO_MODEL) == 2
        assert actions.count(given_up) == 38
        told = [d for d in decisions if d.tool == tool and d.action == given_up]
        assert all("the model was already told 2 times in this turn" in d.reason for d in told)


GRANTED = (pb.RECOVERY_ACTION_RETRY, pb.RECOVERY_ACTION_RETURN_TO_MODEL)


@pytest.mark.slow
async def test_concurrent_corrections_and_retries_share_the_turn_s_budget(
    errord: DaemonProcess,
) -> None:
    """Distinct mistakes (no bound is reached) and timeouts at once: 3 in all, as the
    budget says."""
    requests = [
        wire_failure("storm", f"bad_{n}", "search", f"The 'field_{n}' parameter is required")
        for n in range(20)
    ]
    requests += [wire_failure("storm", f"slow_{n}", "lookup", "timed out") for n in range(20)]
    decisions = await from_many_clients(errord.address, requests)
    granted = [d for d in decisions if d.action in GRANTED]
    assert len(granted) == 3
    refused = [d for d in decisions if d.action not in GRANTED]
    assert len(refused) == 37
    assert all("the turn's retry budget is spent" in d.reason for d in refused)
