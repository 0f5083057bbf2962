"""What-if replay on a trace recorded through the handler: the manifests in force change
nothing (determinism), and making 503 permanent for one tool changes exactly that tool's
503 decisions."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from errord.assembly import engine_for
from errord.config import Settings
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import Action, BreakerChange, ErrorClass, ErrorCode, RefusalKind
from errord.decide.model.events import BreakerChanged, FailureEvent, TraceEvent
from errord.manifests.files import load_manifest_dir
from errord.replay import ReplayScope, ReplaySummary, replay_database
from errord.replay.compare import Comparison
from errord.replay.fold import Replayer
from errord.replay.snapshot import trace_snapshot
from tests.harness import FLEET_MANIFESTS, Harness, fleet_load

PERMANENT_503 = FLEET_MANIFESTS.replace(
    "  - name: weather\n",
    "  - name: weather\n    classification:\n      - {http_status: 503, class: permanent}\n",
)


def manifests(directory: Path, text: str) -> ManifestSnapshot:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tools.yaml").write_text(text)
    return load_manifest_dir(directory)


def replay(db: Path, snapshot: ManifestSnapshot, tool: str = "") -> ReplaySummary:
    return replay_database(db, engine_for(Settings()), snapshot, ReplayScope(tool=tool))


def worded_replay(db: Path, snapshot: ManifestSnapshot) -> ReplaySummary:
    """The replay with every decision worded, as it was before replay went wordless."""
    comparison = Comparison(ReplayScope())
    replayer = Replayer(engine_for(Settings()), snapshot, comparison.replayed_events)
    for event in recorded(db):
        redecided = replayer.step(event)
        if redecided is not None:
            comparison.decision(event, redecided.recorded.decision, redecided.decision)
        elif type(event.detail) is BreakerChanged:
            comparison.recorded_events(event)
    return comparison.finished(0.0)


def recorded(db: Path) -> list[TraceEvent]:
    with trace_snapshot(db) as snapshot:
        return list(snapshot.events())


@pytest.fixture(scope="module")
def fleet_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace of 10,000 failures or more reported as a fleet's executors would, 40 calls
    at once, with the daemon's seeded jitter."""
    path = tmp_path_factory.mktemp("fleet")
    harness = Harness(path, manifests(path / "manifests", FLEET_MANIFESTS))
    harness.jitter = None

    async def record() -> None:
        handler = await harness.start()
        await fleet_load(handler, harness.clock, harness.actions, failures=10_000)
        await harness.close()

    asyncio.run(record())
    return harness.db


@pytest.mark.slow
async def test_the_manifests_in_force_replay_every_decision_identically(
    fleet_trace: Path, tmp_path: Path
) -> None:
    events = recorded(fleet_trace)
    failures = [e.detail for e in events if isinstance(e.detail, FailureEvent)]
    opened = [
        e
        for e in events
        if isinstance(e.detail, BreakerChanged) and e.detail.change is BreakerChange.OPENED
    ]
    actions = Counter(failure.decision.action for failure in failures)
    never_fix = [
        f
        for f in failures
        if f.decision.refusal and f.decision.refusal.kind is RefusalKind.RETRIES_NEVER_FIX
    ]
    # The trace is the one the brief asks for: under load, breakers opening, memory steering.
    assert len(failures) >= 10_000
    assert len(opened) >= 10
    assert actions[Action.RETRY]
    assert actions[Action.USE_ALTERNATIVE]
    assert never_fix  # episodic memory steering: lookup's retries stopped
    assert any(f.report.error.code is ErrorCode.CIRCUIT_OPEN for f in failures)

    summary = replay(fleet_trace, manifests(tmp_path, FLEET_MANIFESTS))

    assert summary.changes == []
    assert (summary.failures, summary.changed) == (len(failures), 0)
    assert summary.retry_wait_after == summary.retry_wait_before > 0
    assert summary.breaker_openings_after == summary.breaker_openings_before == len(opened)
    assert summary.escalations_after == summary.escalations_before


@pytest.mark.slow
async def test_503_made_permanent_for_one_tool_changes_exactly_what_the_trace_says_it_must(
    fleet_trace: Path, tmp_path: Path
) -> None:
    """Worked out from the recorded trace alone: each weather failure recorded as a
    transient 503 becomes a permanent one, and its decision an ESCALATE (weather has no
    alternative, default or optional flag, and a permanent error is not retried); weather's
    breaker, which permanent errors do not count, never opens, so each attempt AdmitCall
    refused because it was open is admitted instead; no other tool's decision changes."""
    events = recorded(fleet_trace)
    weather = [
        e.detail
        for e in events
        if isinstance(e.detail, FailureEvent) and e.detail.report.tool == "weather"
    ]
    transient_503 = [
        f.decision
        for f in weather
        if (f.decision.classification.error_class, f.decision.classification.code)
        == (ErrorClass.TRANSIENT, ErrorCode.UNAVAILABLE)
    ]
    refused = [f for f in weather if f.report.error.code is ErrorCode.CIRCUIT_OPEN]
    weather_openings = sum(
        isinstance(e.detail, BreakerChanged)
        and e.detail.tool == "weather"
        and e.detail.change is BreakerChange.OPENED
        for e in events
    )
    expected = Counter(
        ("action", d.action.name, "ESCALATE")
        for d in transient_503
        if d.action is not Action.ESCALATE
    )
    expected[("classification", "TRANSIENT/UNAVAILABLE", "PERMANENT/UNAVAILABLE")] = len(
        transient_503
    )
    expected[("admission", "REFUSED", "ADMITTED")] = len(refused)
    assert transient_503  # the trace shows each kind of change
    assert refused
    assert weather_openings

    summary = replay(fleet_trace, manifests(tmp_path, PERMANENT_503))

    assert {(c.kind, c.before, c.after): c.count for c in summary.changes} == expected
    assert summary.changed == len(transient_503) + len(refused)
    assert summary.breaker_openings_after == summary.breaker_openings_before - weather_openings
    assert {e.tool for change in summary.changes for e in change.examples} == {"weather"}
    others = replay(fleet_trace, manifests(tmp_path / "other", PERMANENT_503), "search")
    assert others.failures > 0
    assert others.changed == 0


@pytest.mark.slow
async def test_replay_words_its_examples_as_a_replay_wording_every_decision_does(
    fleet_trace: Path, tmp_path: Path
) -> None:
    """Replay decides wordless and words again only the decisions it keeps as examples:
    the changes, their counts and their examples' reasons are those of a replay that words
    every decision."""
    snapshot = manifests(tmp_path, PERMANENT_503)

    summary = replay(fleet_trace, snapshot)

    assert summary.changes == worded_replay(fleet_trace, snapshot).changes
    examples = [example for change in summary.changes for example in change.examples]
    assert examples
    assert all(e.reason_after and e.reason_after != e.reason_before for e in examples)
