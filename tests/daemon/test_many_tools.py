"""Thousands of tools on the real daemon process: a scrape of /metrics answers while
reports are decided, and max_tools bounds the tools reports can make.

A scrape read every tool's health on the event loop, and each health searched all of
episodic memory: with 1,000 tools the daemon stopped deciding for seconds and the
scrape failed (HTTP 500), with 20,000 for ten minutes. How long a scrape takes is a
benchmark's figure (tests/benchmarks/scrape.py, docs/benchmarks.md), not these tests'.
"""

from __future__ import annotations

import asyncio
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import (
    DaemonProcess,
    operator_channel,
    scrape,
    start_process,
    sync_operator_channel,
)

BATCH = 256
"""Failures per ReportFailures call: the most one call may hold."""


def failure(tool: str, turn: str) -> pb.ReportFailureRequest:
    return pb.ReportFailureRequest(
        turn_id=turn,
        call_id="c",
        tool=tool,
        attempt=1,
        error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message=f"{tool} timed out after 30s"),
    )


def samples(text: str) -> dict[str, float]:
    """Each unlabelled sample of a scrape, by name."""
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if not sample.labels
    }


def tools_in(text: str) -> set[str]:
    return {
        sample.labels["tool"]
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "errord_tool_executions_total"
    }


def serve(tmp_path: Path, settings: str = "") -> DaemonProcess:
    """The daemon, with a manifest for search, ``settings`` in its config file, metrics on."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "search.yaml").write_text("tools:\n  - name: search\n")
    config = tmp_path / "errord.toml"
    config.write_text(settings)
    return start_process(
        "--config", str(config), "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--manifests", str(tools), "--metrics-listen", "127.0.0.1:0",
    )  # fmt: skip


def test_a_scrape_of_five_thousand_tools_answers_while_reports_are_decided(
    tmp_path: Path,
) -> None:
    daemon = serve(tmp_path)
    try:
        with sync_operator_channel(daemon.address, daemon.token) as channel:
            errors = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            names = [f"tool-{number:04d}" for number in range(5_000)]
            for first in range(0, len(names), BATCH):
                batch = [failure(name, f"make-{name}") for name in names[first : first + BATCH]]
                made = errors.ReportFailures(pb.ReportFailuresRequest(failures=batch))
                assert not [result for result in made.results if result.HasField("refused")]
            with ThreadPoolExecutor(max_workers=1) as pool:
                scraping = pool.submit(scrape, daemon, timeout=300)
                decided: list[int] = []
                while not scraping.done():  # each report sent while the scrape runs
                    turn = f"during-{len(decided)}"
                    answer = errors.ReportFailure(failure(names[len(decided)], turn), timeout=300)
                    decided.append(answer.decision.action)
                text = scraping.result()
            [stats] = (
                errord_pb2_grpc.OperatorServiceStub(channel)
                .GetToolStats(pb.GetToolStatsRequest(tool="tool-4999"))
                .tools
            )
    finally:
        daemon.terminate(signal.SIGKILL)
    assert decided
    assert set(decided) == {pb.RECOVERY_ACTION_RETRY}
    assert tools_in(text) == {*names, "search"}
    assert stats.executions == 1
    assert samples(text)["errord_tools_tracked"] == 5_000


def test_past_max_tools_a_new_tool_is_refused_and_the_others_are_still_decided(
    tmp_path: Path,
) -> None:
    daemon = serve(tmp_path, "max_tools = 3\n")
    try:
        with sync_operator_channel(daemon.address, daemon.token) as channel:
            errors = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            for number in range(3):
                errors.ReportFailure(failure(f"tool-{number}", f"t{number}"))
            with pytest.raises(grpc.RpcError) as refused:
                errors.ReportFailure(failure("tool-new", "late"))
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert refused.value.details() == (
                "tool 'tool-new' is refused: it has no manifest and no recorded report, and "
                "errord already tracks 3 tools and scopes, the most max_tools allows; give it "
                "a manifest, use fewer scopes, or raise max_tools"
            )
            outcome = pb.ReportOutcomeRequest(
                turn_id="late", call_id="c", tool="tool-new", attempt=1, outcome=pb.OUTCOME_SUCCESS
            )
            with pytest.raises(grpc.RpcError) as refused_outcome:
                errors.ReportOutcome(outcome)
            assert refused_outcome.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            batch = [failure("tool-0", "again"), failure("tool-other", "late")]
            answered = errors.ReportFailures(pb.ReportFailuresRequest(failures=batch)).results
            assert answered[0].answer.decision.action == pb.RECOVERY_ACTION_RETRY
            assert answered[1].refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
            assert "max_tools" in answered[1].refused.message
            existing = errors.ReportFailure(failure("tool-1", "existing")).decision
            manifest = errors.ReportFailure(failure("search", "manifest")).decision
            listed = errord_pb2_grpc.OperatorServiceStub(channel).GetToolStats(
                pb.GetToolStatsRequest()
            )
        text = scrape(daemon)
    finally:
        daemon.terminate(signal.SIGKILL)
    assert existing.action == manifest.action == pb.RECOVERY_ACTION_RETRY
    assert {stats.tool for stats in listed.tools} == {"tool-0", "tool-1", "tool-2", "search"}
    figures = samples(text)
    assert figures["errord_tool_limit_refusals_total"] == 3
    assert figures["errord_tools_tracked"] == 4  # a tool with a manifest counts, and passes
    assert figures["errord_tools_limit"] == 3


async def test_concurrent_clients_racing_new_tools_never_pass_max_tools(tmp_path: Path) -> None:
    """Sixteen clients, each on its own connection, each reporting five new tools at once;
    then the daemon restarts, and the tools it tracks still count."""
    daemon = serve(tmp_path, "max_tools = 10\n")

    async def client(number: int) -> list[grpc.StatusCode]:
        async with operator_channel(daemon.address, daemon.token) as channel:
            errors = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            reports = [failure(f"racer-{number}-{n}", f"r{number}-{n}") for n in range(5)]
            answers = await asyncio.gather(
                *(errors.ReportFailure(report) for report in reports), return_exceptions=True
            )
        return [
            answer.code() if isinstance(answer, grpc.aio.AioRpcError) else grpc.StatusCode.OK
            for answer in answers
        ]

    try:
        codes = [code for codes in await asyncio.gather(*map(client, range(16))) for code in codes]
        text = scrape(daemon)
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0
    assert codes.count(grpc.StatusCode.OK) == 10
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 70
    assert samples(text)["errord_tools_tracked"] == 10
    assert len(tools_in(text)) == 11  # and search, whose manifest names it

    again = serve(tmp_path, "max_tools = 10\n")
    try:
        with sync_operator_channel(again.address, again.token) as channel:
            errors = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
            with pytest.raises(grpc.RpcError) as refused:
                errors.ReportFailure(failure("after-restart", "after"))
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert samples(scrape(again))["errord_tools_tracked"] == 10
    finally:
        again.terminate(signal.SIGKILL)
