"""A turn's retry budget: its calls share one count of retries, reserved before the commit."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from errord.config import Settings
from errord.decide.manifest import BreakerPolicy, ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import Action, FailureReport, RetryBudget
from errord.errors import ConfigError
from errord.handler import ErrorHandler
from tests.harness import Harness, failure_report
from tests.helpers import DaemonProcess, start_process

NO_BREAKER = BreakerPolicy(failure_threshold=1000)
MANIFESTS = ManifestSnapshot(
    [
        ToolManifest(name="search", breaker=NO_BREAKER, alternatives=("backup",)),
        ToolManifest(name="lookup", breaker=NO_BREAKER),
    ]
)


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    harness = Harness(tmp_path, MANIFESTS)
    harness.budget = RetryBudget(max_retries=2)
    await harness.start()
    yield harness
    await harness.close()


failure = partial(failure_report, tool="lookup")


async def actions(handler: ErrorHandler, *reports: FailureReport) -> list[Action]:
    return [(await handler.report_failure(report))[0].action for report in reports]


async def test_a_spent_budget_refuses_the_next_retry_and_says_why(harness: Harness) -> None:
    handler = harness.handler
    assert await actions(handler, failure("a"), failure("b")) == [Action.RETRY] * 2
    refused, _ = await handler.report_failure(failure("c"))
    assert refused.action is Action.FAIL  # transient: unavailable for now, no one's to act on
    assert refused.reason.startswith(
        "No retry: the turn's retry budget is spent: its calls were granted 2 of the 2 retries "
        "it allows"
    )
    other_turn = failure("a", turn="u")
    assert (await handler.report_failure(other_turn))[0].action is Action.RETRY


async def test_a_spent_budget_still_lets_a_call_switch_to_its_alternative(
    harness: Harness,
) -> None:
    await actions(harness.handler, failure("a"), failure("b"))
    switched, _ = await harness.handler.report_failure(failure("c", tool="search"))
    assert (switched.action, switched.alternative_tool) == (Action.USE_ALTERNATIVE, "backup")


async def test_the_share_grows_with_the_turn_s_calls(tmp_path: Path) -> None:
    harness = Harness(tmp_path, MANIFESTS)
    harness.budget = RetryBudget(max_share=0.5)
    handler = await harness.start()
    try:
        got = await actions(
            handler,
            failure("a"),  # 1 call: ceil(0.5) = 1 retry
            failure("a", attempt=2),  # spent
            failure("b"),  # 2 calls: 1
            failure("c"),  # 3 calls: 2
        )
        assert got == [Action.RETRY, Action.FAIL, Action.FAIL, Action.RETRY]
    finally:
        await harness.close()


async def test_the_count_survives_a_restart(harness: Harness) -> None:
    await actions(harness.handler, failure("a"), failure("b"))
    handler = await harness.restart()
    assert await actions(handler, failure("c")) == [Action.FAIL]


def test_budget_settings_are_checked() -> None:
    assert Settings(turn_retry_budget=3).retry_budget() == RetryBudget(max_retries=3)
    assert Settings().retry_budget() is None
    with pytest.raises(ConfigError, match="turn_retry_budget_share: must be from 0 to 1000"):
        Settings(turn_retry_budget_share=-1)


@pytest.fixture
def errord(tmp_path: Path) -> Iterator[DaemonProcess]:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "search.yaml").write_text(
        "tools:\n  - name: search\n    circuit_breaker: {failure_threshold: 1000}\n"
    )
    config = tmp_path / "errord.toml"
    config.write_text("turn_retry_budget = 3\n")
    running = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--manifests", str(tools), "--config", str(config),
    )  # fmt: skip
    yield running
    running.terminate(signal.SIGKILL)


@pytest.mark.slow
async def test_twenty_concurrent_failing_calls_of_a_turn_get_exactly_its_three_retries(
    errord: DaemonProcess,
) -> None:
    channels = [grpc.aio.insecure_channel(errord.address) for _ in range(20)]
    try:
        responses = await asyncio.gather(
            *(
                errord_pb2_grpc.ErrorHandlerServiceStub(channel).ReportFailure(
                    pb.ReportFailureRequest(
                        turn_id="storm",
                        call_id=f"call_{n}",
                        tool="search",
                        attempt=1,
                        error=pb.ToolError(code=pb.ERROR_CODE_UNAVAILABLE),
                    )
                )
                for n, channel in enumerate(channels)
            )
        )
    finally:
        await asyncio.gather(*(channel.close() for channel in channels))
    actions = [response.decision.action for response in responses]
    assert actions.count(pb.RECOVERY_ACTION_RETRY) == 3
    assert actions.count(pb.RECOVERY_ACTION_FAIL) == 17  # unavailable for now: no escalation
