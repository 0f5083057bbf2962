"""A wordless engine (what replay decides with) decides as the engine it comes from,
field for field and event for event, only without the texts a replay does not compare."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

from msgspec import structs

from errord.decide.engine import Engine
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import Action, Decision, FailureReport
from errord.decide.model.events import EventDetail, FailureEvent, TraceEvent
from errord.decide.policy import default_policy
from errord.manifests.files import load_manifest_dir
from errord.replay.fold import ReplayState
from tests.harness import FLEET_ERRORS, FLEET_MANIFESTS

START = datetime(2026, 1, 1, tzinfo=UTC)


def without_words(decision: Decision) -> Decision:
    return structs.replace(
        decision,
        reason="",
        llm_message="",
        user_message="",
        technical_message="",
        correction=None,
        consequences=tuple(structs.replace(c, reason="") for c in decision.consequences),
    )


def unworded(details: tuple[EventDetail, ...]) -> tuple[EventDetail, ...]:
    return tuple(
        structs.replace(d, decision=without_words(d.decision)) if type(d) is FailureEvent else d
        for d in details
    )


def test_a_wordless_engine_decides_every_fleet_failure_as_the_worded_one_without_texts(
    tmp_path: Path,
) -> None:
    """Each FLEET tool's error reported attempt after attempt (retries, alternatives,
    corrections, escalations, breakers opening), the state folded as replay folds it."""
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / "tools.yaml").write_text(FLEET_MANIFESTS)
    manifests = load_manifest_dir(directory)
    worded = Engine(default_policy())
    wordless = worded.wordless()
    state = ReplayState()
    sequence = itertools.count(1)
    actions = set()
    errors = itertools.islice(itertools.cycle(FLEET_ERRORS.items()), 40)
    for call, (tool, error) in enumerate(errors):
        for attempt in range(1, 6):
            report = FailureReport(
                turn_id=f"t{call // 5}",
                call_id=f"c{call}",
                tool=tool,
                attempt=attempt,
                error=error,
                arguments={"amount": "ten"} if tool == "pay" else {},
            )
            now = START + timedelta(seconds=call * 10 + attempt)
            decide = (
                report,
                manifests,
                state.calls.get(report.key.call),
                state.turns.get(report.turn_id),
                now,
                state.breakers.get,
                state.remembered,
            )
            with_texts = worded.decide(*decide, decision_id=f"d{call}-{attempt}")
            without = wordless.decide(*decide, decision_id=f"d{call}-{attempt}")

            assert without.decision.reason == without.decision.llm_message == ""
            assert without.decision.correction is None
            assert with_texts.decision.reason
            assert unworded(with_texts.events) == unworded(without.events)
            assert without_words(with_texts.decision) == without_words(without.decision)
            actions.add(with_texts.decision.action)
            for detail in with_texts.events:
                state.apply(TraceEvent(next(sequence), now, detail))
    assert {Action.RETRY, Action.USE_ALTERNATIVE, Action.RETURN_TO_MODEL} <= actions


def test_wordless_leaves_the_engine_it_comes_from_wording() -> None:
    engine = Engine(default_policy())
    engine.wordless()
    error = FLEET_ERRORS["search"]
    report = FailureReport(turn_id="t", call_id="c", tool="x", attempt=1, error=error)
    decision = engine.decide(report, ManifestSnapshot(), None, None, START).decision
    assert decision.reason
