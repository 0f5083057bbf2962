"""When no retry or alternative is left: the partial result, the default, or no result
(an optional tool), before escalating."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from google.protobuf import json_format

from errord.decide.manifest import ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    Decision,
    DefaultValue,
    ErrorCode,
    ToolFailure,
)
from errord.manifests.files import load_manifest_dir
from errord.wire.responses import decision_to_proto
from tests.harness import Harness, failure_report

PERMANENT = ToolFailure(code=ErrorCode.NOT_FOUND, message="no such page")
PARTIAL = ToolFailure(code=ErrorCode.NOT_FOUND, message="page 3 missing", partial_result=[1, 2])


async def decide(tmp_path: Path, manifest: ToolManifest, error: ToolFailure) -> Decision:
    harness = Harness(tmp_path, ManifestSnapshot([manifest]))
    handler = await harness.start()
    try:
        report = failure_report(tool=manifest.name, error=error)
        return (await handler.report_failure(report))[0]
    finally:
        await harness.close()


async def test_a_partial_result_is_used_when_the_tool_accepts_it(tmp_path: Path) -> None:
    tool = ToolManifest(name="pages", accepts_partial_results=True)
    decision = await decide(tmp_path, tool, PARTIAL)
    assert decision.action is Action.CONTINUE_PARTIAL
    assert decision.reason.endswith("continuing with the partial result pages returned.")
    assert "Use what it returned, and say that it may be incomplete." in decision.llm_message
    assert decision.user_message == (
        "Pages returned only part of its results; continuing with those."
    )


@pytest.mark.parametrize(
    ("tool", "error"),
    [
        (ToolManifest(name="pages", accepts_partial_results=True), PERMANENT),  # nothing partial
        (ToolManifest(name="pages"), PARTIAL),  # partial results not accepted
    ],
)
async def test_without_both_a_partial_result_and_its_acceptance_the_call_fails(
    tmp_path: Path, tool: ToolManifest, error: ToolFailure
) -> None:
    """A page that does not exist: nothing anyone can do would recover the call (FAIL)."""
    assert (await decide(tmp_path, tool, error)).action is Action.FAIL


async def test_the_default_result_stands_in(tmp_path: Path) -> None:
    tool = ToolManifest(name="weather", default=DefaultValue({"forecast": "unknown"}))
    decision = await decide(tmp_path, tool, PERMANENT)
    assert decision.action is Action.USE_DEFAULT
    assert decision.default_value == {"forecast": "unknown"}
    assert 'its default result stands in for it: {"forecast": "unknown"}' in decision.llm_message
    wire = decision_to_proto(decision)
    assert json_format.MessageToDict(wire.default_value) == {"forecast": "unknown"}


async def test_a_null_default_is_a_default_too(tmp_path: Path) -> None:
    tool = ToolManifest(name="weather", default=DefaultValue(None))
    decision = await decide(tmp_path, tool, PERMANENT)
    assert decision.action is Action.USE_DEFAULT
    assert decision_to_proto(decision).HasField("default_value")


async def test_an_optional_tool_is_skipped(tmp_path: Path) -> None:
    decision = await decide(tmp_path, ToolManifest(name="ads", optional=True), PERMANENT)
    assert decision.action is Action.SKIP
    assert decision.reason.endswith("the call is optional, so it is skipped.")
    assert decision.user_message == "Ads is unavailable; continuing without it."


async def test_an_alternative_comes_first_then_partial_then_default_then_skip(
    tmp_path: Path,
) -> None:
    everything = ToolManifest(
        name="pages",
        alternatives=("mirror",),
        accepts_partial_results=True,
        default=DefaultValue([]),
        optional=True,
    )
    assert (await decide(tmp_path / "1", everything, PARTIAL)).action is Action.USE_ALTERNATIVE
    no_alternative = ToolManifest(
        name="pages", accepts_partial_results=True, default=DefaultValue([]), optional=True
    )
    assert (await decide(tmp_path / "2", no_alternative, PARTIAL)).action is (
        Action.CONTINUE_PARTIAL
    )
    assert (await decide(tmp_path / "3", no_alternative, PERMANENT)).action is Action.USE_DEFAULT
    optional = ToolManifest(name="pages", optional=True)
    assert (await decide(tmp_path / "4", optional, PERMANENT)).action is Action.SKIP


def test_manifests_say_which_tools_accept_partial_results(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        textwrap.dedent(
            """\
            tools:
              - name: pages
                accepts_partial_results: true
            """
        )
    )
    manifest, _ = load_manifest_dir(tmp_path).manifest_for("pages")
    assert manifest.accepts_partial_results
