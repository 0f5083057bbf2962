"""The trace folded again through fresh state, each failure decided with other manifests.

``Replayer.step`` takes the recorded events in trace order and keeps the state decisions
read (calls, turns, breakers, episodic memory: the folds of errord.state) as the daemon
would have kept it had it run with the other manifests:

- a failure is decided again (``Engine.decide``) at its recorded time, with its recorded
  decision id; the events of that decision (its breaker transitions, the turn it begins,
  the episodes it opens and closes) are folded, not the recorded ones;
- an outcome is folded through ``Engine.outcome`` at its recorded time, likewise;
- a turn begun with BeginTurn, a turn ended, an error memory forgot, and an operator's
  reset or forced opening of a breaker are applied as recorded (an operator's action on
  the breaker as it is in the replay);
- a half-open breaker's probe claimed by AdmitCall is claimed again if the replayed
  breaker lets it; transitions recorded because of a report are left to that report;
- an attempt AdmitCall refused (recorded as a CIRCUIT_OPEN failure, or a RATE_LIMITED
  one held by a rate-limit window) is asked about again: refused again, it is decided
  again; admitted by the replayed breaker and window, it would have run, with a result
  the trace cannot know: it is ``admitted``, and decides nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from errord.decide.engine import Decided, Engine
from errord.decide.health import breaker as breakers
from errord.decide.health.admission import admit, refusal, was_refused
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory import MemoryKey, MemoryStats
from errord.decide.model import (
    BreakerChange,
    BreakerState,
    CallKey,
    Decision,
    ErrorCode,
    FailureReport,
    RateWindow,
    ReportKey,
)
from errord.decide.model.events import (
    BreakerChanged,
    EventDetail,
    FailureEvent,
    MemoryForgotten,
    OutcomeEvent,
    TraceEvent,
    TurnBegan,
    TurnEnded,
)
from errord.replay.checks import remembering
from errord.replay.classified import Classified
from errord.state.breakers import BreakerFold
from errord.state.calls import CallFold, CallState
from errord.state.memory import MemoryFold
from errord.state.projection import Fold
from errord.state.rate_windows import RateWindowFold
from errord.state.tool_stats import ToolStats, ToolStatsFold
from errord.state.turns import TurnFold, TurnState


@dataclass(slots=True)
class ReplayState:
    """What decisions read, folded from the replayed events: held whole, in memory."""

    calls: dict[CallKey, CallState] = field(default_factory=dict)
    turns: dict[str, TurnState] = field(default_factory=dict)
    breakers: dict[str, BreakerState] = field(default_factory=dict)
    windows: dict[str, RateWindow] = field(default_factory=dict)
    tool_stats: dict[str, ToolStats] = field(default_factory=dict)
    memory: dict[MemoryKey, MemoryStats] = field(default_factory=dict)

    _folds: tuple[tuple[Fold[Any, Any], dict[Any, Any]], ...] = ()

    def __post_init__(self) -> None:
        self._folds = (
            (CallFold(), self.calls),
            (TurnFold(), self.turns),
            (BreakerFold(), self.breakers),
            (RateWindowFold(), self.windows),
            (ToolStatsFold(), self.tool_stats),
            (MemoryFold(), self.memory),
        )

    def remembered(self, tool: str, signature_key: str) -> MemoryStats | None:
        return self.memory.get(MemoryKey(tool, signature_key))

    def apply(self, event: TraceEvent) -> None:
        """Fold ``event`` into every state it changes."""
        for fold, states in self._folds:
            for key in fold.keys(event):
                after = fold.apply(key, states.get(key), event)
                if after is None:
                    states.pop(key, None)
                else:
                    states[key] = after


@dataclass(frozen=True, slots=True)
class Redecided:
    """A recorded failure and the decision the replay gave it."""

    event: TraceEvent
    recorded: FailureEvent
    decision: Decision | None
    """None for an attempt AdmitCall refused that the replayed breaker admits."""


Shown = Callable[[TraceEvent, Decision, Decision], bool]
"""Whether a replayed decision is one the replay shows, and so needs its texts: told the
failure's event, its recorded decision and its replayed one, wordless."""


class Replayer:
    """Folds recorded events one by one; what it regenerates goes to ``on_events``.

    Given ``shown``, failures are decided by the engine made wordless (Engine.wordless:
    the same decisions and events, without the texts, which are most of a decision's
    cost), and decided again with their texts only when ``shown`` says so; without it,
    every decision has its texts. Arguments are checked against a tool's schema once
    however often the trace reports them (errord.replay.checks), and an error of a tool
    classified once (errord.replay.classified).
    """

    def __init__(
        self,
        engine: Engine,
        manifests: ManifestSnapshot,
        on_events: Callable[[TraceEvent, Sequence[EventDetail]], None] | None = None,
        shown: Shown | None = None,
    ) -> None:
        self.state = ReplayState()
        self._engine = engine
        self._deciding = engine if shown is None else engine.wordless()
        self._shown = shown
        self._manifests = remembering(manifests)
        self._classified = Classified(self._manifests)
        self._on_events = on_events
        self.outcomes = 0
        """Outcomes folded so far."""

    def step(self, event: TraceEvent) -> Redecided | None:
        """Fold ``event``; the replayed decision when it is a failure."""
        detail = event.detail
        kind = type(detail)
        if kind is FailureEvent:
            assert isinstance(detail, FailureEvent)
            return self._failure(event, detail)
        if kind is OutcomeEvent:
            assert isinstance(detail, OutcomeEvent)
            self._outcome(event, detail)
        elif kind is BreakerChanged:
            assert isinstance(detail, BreakerChanged)
            self._breaker(event, detail)
        elif kind is TurnEnded or kind is MemoryForgotten:
            self._apply(event)
        elif kind is TurnBegan:
            assert isinstance(detail, TurnBegan)
            if not detail.implicit:  # an implicit one comes again with its first report
                self._apply(event)
        return None  # the manifests reloaded: the replay has its own throughout

    def _failure(self, event: TraceEvent, recorded: FailureEvent) -> Redecided:
        report, state = recorded.report, self.state
        if was_refused(report):
            admission = admit(
                report.key,
                self._manifests.manifest_for(report.tool)[0],
                state.breakers.get(report.tool_key),
                recorded.decision.decided_at,
                state.windows.get(report.tool_key),
                report.scope,
            )
            if admission.admitted:
                self._claimed(event, report.key, admission.claim)
                return Redecided(event, recorded, None)
            if admission.held != (report.error.code is ErrorCode.RATE_LIMITED):
                report = refusal(
                    report.key, report.arguments, held=admission.held, scope=report.scope
                )
        decided = self._decide(self._deciding, report, recorded.decision)
        if self._shown is not None and self._shown(event, recorded.decision, decided.decision):
            decided = self._decide(self._engine, report, recorded.decision)
        self._regenerated(event, decided.events)
        return Redecided(event, recorded, decided.decision)

    def _decide(self, engine: Engine, report: FailureReport, recorded: Decision) -> Decided:
        """``report`` decided again, at its recorded time with its recorded id, on the
        state as replayed so far."""
        state = self.state
        return engine.decide(
            report,
            self._manifests,
            state.calls.get(CallKey(report.turn_id, report.call_id)),
            state.turns.get(report.turn_id),
            recorded.decided_at,
            state.breakers.get,
            state.remembered,
            self._classified.reads(report),
            decision_id=recorded.decision_id,
            window_of=state.windows.get,
            activity_of=state.tool_stats.get,
        )

    def _outcome(self, event: TraceEvent, recorded: OutcomeEvent) -> None:
        self.outcomes += 1
        report, state = recorded.report, self.state
        events = self._engine.outcome(
            report,
            self._manifests,
            state.turns.get(report.turn_id),
            event.time,
            state.breakers.get,
            state.calls.get(CallKey(report.turn_id, report.call_id)),
        )
        self._regenerated(event, events)

    def _breaker(self, event: TraceEvent, recorded: BreakerChanged) -> None:
        if not recorded.turn_id:  # an operator's
            self._operator(event, recorded)
        elif recorded.change is BreakerChange.PROBE_CLAIMED:
            self._claim(event, recorded)

    def _operator(self, event: TraceEvent, recorded: BreakerChanged) -> None:
        before = self.state.breakers.get(recorded.tool_key)
        if recorded.change is BreakerChange.RESET:
            stepped = breakers.reset(before, event.time)
        elif recorded.change is BreakerChange.FORCED_OPEN:
            opened = recorded.breaker.opened_at or event.time
            stepped = breakers.force_open(before, opened, recorded.breaker.half_opens_at)
        else:
            return
        self._regenerated(
            event,
            tuple(
                BreakerChanged(
                    tool=recorded.tool,
                    change=change,
                    breaker=after,
                    by=recorded.by,
                    scope=recorded.scope,
                )
                for change, after in stepped.changes
            ),
        )

    def _claim(self, event: TraceEvent, recorded: BreakerChanged) -> None:
        """The probe claimed again, if the replayed breaker admits it as one."""
        probe = recorded.breaker.probe
        if probe is None:
            return
        key = ReportKey(probe.turn_id, probe.call_id, recorded.tool, probe.attempt)
        manifest = self._manifests.manifest_for(recorded.tool)[0]
        breaker = self.state.breakers.get(recorded.tool_key)
        admission = admit(key, manifest, breaker, event.time, scope=recorded.scope)
        self._claimed(event, key, admission.claim)

    def _claimed(
        self, event: TraceEvent, key: ReportKey, claim: tuple[BreakerChanged, ...]
    ) -> None:
        """Fold the ``claim`` of a probe (if any), beginning its turn if it is new."""
        if claim:
            turn = self.state.turns.get(key.turn_id)
            beginning = self._engine.beginning(key.turn_id, turn, event.time)
            self._regenerated(event, (*beginning, *claim))

    def _regenerated(self, event: TraceEvent, details: Sequence[EventDetail]) -> None:
        apply, sequence, time = self.state.apply, event.sequence, event.time
        for detail in details:
            apply(TraceEvent(sequence, time, detail))
        if self._on_events is not None:
            self._on_events(event, details)

    def _apply(self, event: TraceEvent) -> None:
        self.state.apply(event)
