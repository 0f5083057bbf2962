"""The error handler: one decision per report, from in-memory state, durable before the answer.

For each report, in one step that does not await: read the call's and the
turn's state from the projections, decide (errord.decide.engine), submit the
events as one unit of work, which reserves them in the projections. Then await
the commit. A concurrent report therefore sees every earlier one, committed or
not; a repeat of a report still being committed waits for it and answers the
same decision. Nothing is read from SQLite on this path while the projections
hold every call and turn; a key they dropped for room is read back first.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol, TypeAlias, TypeVar, cast

from msgspec import structs

from errord.clock import Clock
from errord.decide.admission import Admission, admit, refusal, was_refused
from errord.decide.correction import closest_tools
from errord.decide.engine import BreakerGate, CallCheck, Engine, ungated
from errord.decide.events import (
    EventDetail,
    EventKind,
    FailureEvent,
    OutcomeEvent,
    TraceEvent,
    TurnBegan,
    TurnEnded,
)
from errord.decide.manifest_snapshot import ManifestSnapshot
from errord.decide.memory import MemoryKey, MemoryStats
from errord.decide.model import (
    CLOSED_BREAKER,
    BreakerState,
    Decision,
    DefaultValue,
    FailureReport,
    JSONValue,
    OutcomeReport,
    PlannedCall,
    RateWindow,
    ReportKey,
    RetryBudget,
    TurnSummary,
)
from errord.decide.reads import Reads
from errord.decide.reconcile import HeldResult, Reconciliation, ToolCall, reconcile
from errord.decide.redact import redact, redact_json, redact_report
from errord.decide.scope import tool_and_scope
from errord.decide.summary import summarize
from errord.decide.synthesized import synthesized, tells_fate
from errord.errors import (
    FieldViolation,
    InvalidRequest,
    ReportConflict,
    StoreError,
    ToolNotFound,
    TurnClosed,
    TurnNotFound,
)
from errord.limits import MAX_TOOLS, LimitExceeded, Limits
from errord.state.holding import NOTHING_HELD, Holder, Key
from errord.state.memory_retention import MemoryBounds, MemoryRetention
from errord.state.projections import Projections
from errord.state.store import DuplicateEvent, Store, Unit
from errord.state.turns import TurnState

T = TypeVar("T")


class SharedViews(Protocol):
    """What a fleet adds to a host's views (errord.fleet.view.FleetView): decisions read
    them instead of the host's own, never awaiting."""

    def gate(self, key: str, state: BreakerState, now: datetime) -> BreakerState: ...
    def peek(self, key: str, state: BreakerState, now: datetime) -> BreakerState: ...
    def window_of(self, key: str) -> RateWindow | None: ...
    def memory_of(self, key: str, signature: str) -> MemoryStats | None: ...
    def keys(self) -> Iterator[str]: ...


Answer: TypeAlias = Coroutine[Any, Any, tuple[T, bool]]
"""What a report is answered with, and whether it was recorded before; awaited after deciding."""


class ErrorHandler:
    """Decides on reports and records them, one unit of work each."""

    def __init__(
        self,
        engine: Engine,
        store: Store,
        state: Projections,
        manifests: ManifestSnapshot,
        clock: Clock,
        memory_bounds: MemoryBounds | None = None,
        max_turn_events: int = Limits.max_turn_events,
        max_tools: int = MAX_TOOLS,
    ) -> None:
        self._engine = engine
        self._store = store
        self._state = state
        self.clock = clock
        self.manifests = manifests
        """The manifests in force; a reload replaces the whole snapshot at once."""
        self._in_flight: dict[tuple[EventKind, ReportKey | str], Unit] = {}
        """Units being committed, by the kind and key of the report they record."""
        self._claims: dict[ReportKey, Unit] = {}
        """Probe claims being committed, by the attempt that claimed."""
        self.holder = Holder(store.state)
        """Reads back what a projection dropped for room; operator actions share it."""
        self.max_turn_events = max_turn_events
        """Trace events one turn may hold: a report that would pass it is refused."""
        self.max_tools = max_tools
        """Tools reports may make state for: past it, a report of a new tool (no manifest,
        no state) is refused."""
        self.tools_refused = 0
        """Reports refused since start because they named a new tool past ``max_tools``."""
        self.retention = MemoryRetention(
            state.memory, memory_bounds or MemoryBounds(), store.submit, clock
        )
        """Keeps episodic memory within its bounds: room in each unit, age in the background."""
        self.fleet: SharedViews | None = None
        self._gate: BreakerGate = ungated
        self._window_of: Callable[[str], RateWindow | None] = state.windows.view
        self._memory_of: Callable[[str, str], MemoryStats | None] = self._remembered

    def share(self, fleet: SharedViews) -> None:
        """Decide with what ``fleet`` adds: other hosts' windows and memory, and their
        breakers' quorum (errord.fleet)."""
        self.fleet = fleet
        self._gate = fleet.gate
        self._window_of = fleet.window_of
        self._memory_of = fleet.memory_of

    async def report_failure(
        self, report: FailureReport, *, redacted: bool = False
    ) -> tuple[Decision, bool]:
        """The recovery decision for ``report``, committed; True if it was recorded before.
        ``redacted``: ``report`` is what ``redacted`` gave already (not masked again).

        Raises ReportConflict when the same key was recorded with a different error,
        StoreError when the decision could not be committed.
        """
        if not redacted:
            report = self.redacted(report)
        reads = self._engine.reads(report, self.manifests)
        async with self._holding((report, reads)), self._holding_memory((report, reads)):
            answer = self._answer_failure(report, reads)
        return await answer

    async def report_failures(
        self, reports: Sequence[FailureReport], *, redacted: bool = False
    ) -> list[tuple[Decision, bool] | Exception]:
        """The decision on each of ``reports``, as report_failure would give them one after
        the other, all submitted in one step, so that the writer usually commits them in one
        transaction; for a report refused, the error it was refused with. Not atomic: each
        report is recorded or refused on its own. ``redacted``: as for report_failure.
        """
        if not redacted:
            reports = list(map(self.redacted, reports))
        read = [(report, self._engine.reads(report, self.manifests)) for report in reports]
        # All read back before any is decided: no await may come between the two.
        async with self._holding(*read), self._holding_memory(*read):
            answers = [_refusing(self._answer_failure, *each) for each in read]
        results = await asyncio.gather(*answers, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result  # cancelled: not a refusal of one report
        return cast(list[tuple[Decision, bool] | Exception], results)

    async def admit_call(
        self, key: ReportKey, arguments: dict[str, JSONValue], scope: str = ""
    ) -> tuple[Admission, Decision | None, bool]:
        """Whether attempt ``key`` may run in ``scope`` (errord.decide.admission): the
        admission, the recorded decision on a refused attempt, and True if the attempt was
        asked about before. A probe claimed is committed before the answer.

        Raises TurnClosed for a turn already ended, StoreError when the claim or the
        refusal could not be committed.
        """
        report = self.redacted(refusal(key, arguments, scope=scope))
        held = self.redacted(refusal(key, arguments, held=True, scope=scope))
        reads = self._engine.reads(report, self.manifests)
        held_reads = self._engine.reads(held, self.manifests)
        async with (
            self._holding((report, reads)),
            self._holding_memory((report, reads), (held, held_reads)),
        ):
            call = self._state.calls.view(key.call)
            refused_before = (EventKind.FAILURE, key) in self._in_flight or (
                call is not None and call.failure_recorded(key.tool, key.attempt)
            )
            admission, claim = None, None
            if not refused_before:
                self._check_open(key.turn_id)
                manifest = self.manifests.manifest_for(key.tool)[0]
                breaker = self._state.breakers.view(report.tool_key)
                window = self._window_of(report.tool_key)
                now = self.clock.now()
                if self.fleet is not None:
                    breaker = self._gate(report.tool_key, breaker or CLOSED_BREAKER, now)
                admission = admit(key, manifest, breaker, now, window, scope)
            if admission is not None and admission.held:
                answer = self._answer_failure(held, held_reads)
            elif admission is None or not admission.admitted:
                answer = self._answer_failure(report, reads)
            elif admission.claim:
                turn = self._state.turns.view(key.turn_id)
                events = (*self._engine.beginning(key.turn_id, turn, now),)
                events += admission.claim
                self._check_room(key.turn_id, turn, events)
                submitted = self._store.submit(events, now)
                self._claims[key] = submitted
                submitted.on_settled = lambda: self._claims.pop(key, None)
                claim = submitted
            else:
                claim = self._claims.get(key)
        if admission is None or not admission.admitted:
            decision, replayed = await answer
            shown = self.breaker(report.tool_key) if self.fleet is not None else decision.breaker
            refused = Admission(admitted=False, breaker=shown or CLOSED_BREAKER)
            return refused, decision, replayed
        if claim is not None:
            await claim.wait()
        return admission, None, admission.probe and not admission.claim  # probe asked again

    async def begin_turn(
        self,
        turn_id: str,
        deadline: datetime | None,
        budget: RetryBudget | None,
        plan: Sequence[PlannedCall] = (),
    ) -> tuple[TraceEvent, bool]:
        """Begin ``turn_id`` with ``deadline`` (None: the default), ``budget`` (None: the
        daemon's) and ``plan`` (a valid one: errord.decide.plan.plan_problems); the recorded
        event, and True if it was begun before with these values.

        Raises InvalidRequest for a deadline already past, ReportConflict for a turn that
        began with other values or with its first report.
        """
        now = self.clock.now()
        if deadline is not None and deadline <= now:
            raise InvalidRequest(
                [FieldViolation("deadline", f"must be in the future, got {deadline.isoformat()}")]
            )
        plan = tuple(self._redacted_call(call) for call in plan)
        async with self._holding_turn(turn_id):
            began = self._state.turns.view(turn_id)
            if began is not None:
                same = not began.implicit and (began.retry_budget, began.plan) == (budget, plan)
                if not same or (deadline is not None and began.deadline != deadline):
                    how = "with its first report" if began.implicit else "with other values"
                    raise ReportConflict(
                        f"turn {turn_id!r} already began {how} at {began.began_at.isoformat()}"
                    )
                return await self._recorded(EventKind.TURN_BEGAN, turn_id)
            event = TurnBegan(
                turn_id=turn_id,
                implicit=False,
                deadline=deadline or self._engine.default_deadline(now),
                retry_budget=budget,
                plan=plan,
            )
            unit = self._submit(EventKind.TURN_BEGAN, turn_id, (event,))
        try:
            await unit.wait()
        except DuplicateEvent:
            return await self._recorded(EventKind.TURN_BEGAN, turn_id)
        return unit.events[-1], False

    def _redaction_paths(self, tool: str) -> tuple[str, ...]:
        return self.manifests.manifest_for(tool)[0].redact

    def _redacted_call(self, call: PlannedCall) -> PlannedCall:
        default = call.default
        if default is not None:
            default = DefaultValue(redact_json(default.value))
        return structs.replace(
            call,
            arguments=redact(call.arguments, self._redaction_paths(call.tool)),
            default=default,
        )

    def redacted(self, report: FailureReport) -> FailureReport:
        """``report`` as it may be stored, logged, exported and decided on: secrets masked
        (errord.decide.redact), so that a repeat compares equal to what was recorded.
        Telemetry builds its spans from it, and hands it to report_failure as it is."""
        return redact_report(report, self._redaction_paths(report.tool))

    async def end_turn(self, turn_id: str) -> tuple[TurnSummary, bool]:
        """Close ``turn_id``; its summary, and True if it was closed before (the summary
        recorded then). Later failures of the turn are refused (TurnClosed).

        Raises TurnNotFound for a turn neither begun nor reported on.
        """
        async with self._holding_turn(turn_id):
            turn = self._state.turns.view(turn_id)
            if turn is None:
                raise TurnNotFound(f"no turn {turn_id!r}: it was neither begun nor reported on")
            unit = None
            if turn.ended_at is None:
                now = self.clock.now()
                summary = summarize(turn_id, turn.began_at, turn.deadline, turn.progress, now)
                ended = TurnEnded(turn_id=turn_id, summary=summary)
                unit = self._submit(EventKind.TURN_ENDED, turn_id, (ended,))
        if unit is not None:
            try:
                await unit.wait()
                return summary, False
            except DuplicateEvent:
                pass
        recorded = (await self._recorded(EventKind.TURN_ENDED, turn_id))[0].detail
        assert isinstance(recorded, TurnEnded)
        return recorded.summary, True

    def _holding_turn(self, turn_id: str) -> AbstractAsyncContextManager[None]:
        return self.holder.holding(((self._state.turns, turn_id),))

    async def _recorded(self, kind: EventKind, turn_id: str) -> tuple[TraceEvent, bool]:
        """The recorded event of ``kind`` keyed by ``turn_id`` (once it is committed)."""
        in_flight = self._in_flight.get((kind, turn_id))
        if in_flight is not None:
            await in_flight.wait()
            return in_flight.events[-1], True
        stored = await self._store.find(kind, (turn_id,))
        if stored is None:
            raise StoreError(f"turn {turn_id!r} has a {kind.value} event that cannot be found")
        return stored, True

    async def reconcile_results(
        self, turn_id: str, calls: Sequence[ToolCall], held: Sequence[HeldResult]
    ) -> Reconciliation:
        """One result per call of ``calls``; what became of a call without one is read from
        the turn's state and trace."""
        unanswered = {call.call_id for call in calls} - {result.call_id for result in held}
        fates: dict[str, FailureEvent | OutcomeEvent] = {}
        if unanswered:
            async for event in self.replay(0, turn_id=turn_id):
                if tells_fate(event.detail, unanswered):
                    detail = event.detail
                    assert isinstance(detail, FailureEvent | OutcomeEvent)
                    fates[detail.report.call_id] = detail
        async with self._holding_turn(turn_id):
            turn = self._state.turns.view(turn_id)
        out_of_time = turn is not None and _out_of_time(turn, self.clock.now())
        progress = turn.progress if turn is not None else {}
        return reconcile(
            calls,
            held,
            lambda call: synthesized(
                call, fates.get(call.call_id), progress.get(call.call_id), out_of_time
            ),
        )

    def tools_tracked(self) -> int:
        """Tools with state, counted as max_tools counts them (in one step)."""
        return self._state.tools_tracked()

    def breaker(self, key: str) -> BreakerState | None:
        """The breaker of a tool in a scope (its key: errord.decide.scope) as decisions see
        it; None if it never changed. In a fleet, as the fleet's quorum lets it act."""
        own = self._state.breakers.view(key)
        if self.fleet is None:
            return own
        return self.fleet.peek(key, own or CLOSED_BREAKER, self.clock.now())

    def window(self, key: str) -> RateWindow | None:
        """The rate-limit window of a tool in a scope (its key) as decisions see it; None if
        it never had one; in a fleet, the longest any host received."""
        return self._window_of(key)

    def known_tools(self) -> set[str]:
        """The keys of every tool with a manifest, and of every tool and scope with a
        breaker or a rate-limit window."""
        state = self._state
        shared = self.fleet.keys() if self.fleet is not None else ()
        return {
            *self.manifests.names,
            *state.breakers.snapshot(),
            *state.windows.snapshot(),
            *shared,
        }

    def validate_call(self, tool: str, arguments: Mapping[str, JSONValue]) -> CallCheck:
        """``arguments`` checked against ``tool``'s JSON Schema; nothing is recorded.

        Raises ToolNotFound for a tool with no manifest.
        """
        if tool not in self.manifests:
            raise ToolNotFound(tool, closest_tools(tool, self.manifests.names))
        return self._engine.check_call(tool, arguments, self.manifests)

    async def report_outcome(self, report: OutcomeReport) -> tuple[TraceEvent, bool]:
        """Record how an attempt ended; True if it was recorded before.

        Raises ReportConflict when the same key was recorded with another outcome.
        """
        async with self._holding((report, None)), self._holding_memory((report, None)):
            answer = self._answer_outcome(report)
        return await answer

    async def record(self, event: EventDetail) -> TraceEvent:
        """Record an event that decides nothing (a manifest reload); the recorded event."""
        unit = self._store.submit([event])
        await unit.wait()
        return unit.events[-1]

    async def turn_trace(
        self, turn_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[TraceEvent]:
        """A turn's events after sequence ``after``, oldest first, at most ``limit``.

        Raises TurnNotFound when the turn has no events at all.
        """
        events = await self._store.turn_events(turn_id, after=after, limit=limit)
        if not events and after == 0:
            raise TurnNotFound(f"no trace events for turn {turn_id!r}")
        return events

    async def replay(
        self, after: int, *, turn_id: str = "", page: int = 1000
    ) -> AsyncIterator[TraceEvent]:
        """Recorded events after sequence ``after`` (of one turn if ``turn_id``), page by page."""
        while events := await self._store.events_after(after, turn_id=turn_id, limit=page):
            for event in events:
                yield event
            after = events[-1].sequence

    def _answer_failure(self, report: FailureReport, reads: Reads) -> Answer[Decision]:
        """Decide and submit now, without awaiting; the answer waits for the commit."""
        in_flight = self._in_flight.get((EventKind.FAILURE, report.key))
        if in_flight is not None:
            return self._repeated_failure(report, in_flight)
        call = self._state.calls.view(report.key.call)
        if call is not None and call.failure_recorded(report.tool, report.attempt):
            return self._recorded_failure(report)
        turn = self._check_open(report.turn_id)
        self._check_tool_room(report.tool_key)
        now = self.clock.now()
        decided = self._engine.decide(
            report,
            self.manifests,
            call,
            turn,
            now,
            self._state.breakers.view,
            self._memory_of,
            reads,
            window_of=self._window_of,
            activity_of=self._state.tool_stats.view,
            gate=self._gate,
        )
        self._check_room(report.turn_id, turn, decided.events)
        unit = self._submit(EventKind.FAILURE, report.key, decided.events, now)
        return self._new_failure(report, decided.decision, unit)

    def _answer_outcome(self, report: OutcomeReport) -> Answer[TraceEvent]:
        """Submit now, without awaiting; the answer waits for the commit."""
        in_flight = self._in_flight.get((EventKind.OUTCOME, report.key))
        if in_flight is not None:
            return self._repeated_outcome(report, in_flight)
        call = self._state.calls.view(report.key.call)
        if call is not None and call.outcome(report.tool, report.attempt) is not None:
            return self._recorded_outcome(report)
        turn = self._state.turns.view(report.turn_id)
        self._check_tool_room(report.tool_key)
        now = self.clock.now()
        events = self._engine.outcome(
            report, self.manifests, turn, now, self._state.breakers.view, call
        )
        self._check_room(report.turn_id, turn, events)
        unit = self._submit(EventKind.OUTCOME, report.key, events, now)
        return self._new_outcome(report, unit)

    def _check_open(self, turn_id: str) -> TurnState | None:
        """The turn's state; raises TurnClosed when it ended."""
        turn = self._state.turns.view(turn_id)
        if turn is not None and turn.ended_at is not None:
            raise TurnClosed(
                f"turn {turn_id!r} ended at {turn.ended_at.isoformat()}; "
                "report the failures of a new turn under a new turn_id"
            )
        return turn

    def _check_room(
        self, turn_id: str, turn: TurnState | None, events: Sequence[EventDetail]
    ) -> None:
        """Raise LimitExceeded when ``events`` would take the turn past max_turn_events."""
        held = turn.events if turn is not None else 0
        if held + sum(event.turn_id == turn_id for event in events) > self.max_turn_events:
            raise LimitExceeded(
                f"turn {turn_id!r} holds {held} of the {self.max_turn_events} trace events "
                "one turn may (max_turn_events); end it, and report further failures under "
                "a new turn_id"
            )

    def _check_tool_room(self, key: str) -> None:
        """Raise LimitExceeded when the tool's key (errord.decide.scope) is new (no
        manifest, no state) and max_tools tools and scopes have state already: a tool's
        manifest does not make room for its scopes. Called in the step that submits the
        report's events, which reserve the key's statistics: no await between, so
        concurrent reports of new tools cannot pass the limit together."""
        tracked = self.tools_tracked()
        if tracked < self.max_tools or key in self.manifests or self._state.has_tool(key):
            return
        self.tools_refused += 1
        tool, scope = tool_and_scope(key)
        named = f"tool {tool!r} in scope {scope!r}" if scope else f"tool {tool!r}"
        raise LimitExceeded(
            f"{named} is refused: it has no manifest and no recorded report, and errord "
            f"already tracks {tracked} tools and scopes, the most max_tools allows; give it "
            "a manifest, use fewer scopes, or raise max_tools"
        )

    def _submit(
        self,
        kind: EventKind,
        key: ReportKey | str,
        events: tuple[EventDetail, ...],
        at: datetime | None = None,
    ) -> Unit:
        """Submit ``events``, recorded at ``at`` (the time they were decided at: what a
        replay decides them at again), else now."""
        unit = self._store.submit(self.retention.with_room(events), at)
        self._in_flight[(kind, key)] = unit
        unit.on_settled = lambda: self._in_flight.pop((kind, key), None)
        return unit

    async def _new_failure(
        self, report: FailureReport, decision: Decision, unit: Unit
    ) -> tuple[Decision, bool]:
        try:
            await unit.wait()
        except DuplicateEvent:  # recorded before this process knew of it
            return await self._recorded_failure(report)
        return decision, False

    async def _repeated_failure(
        self, report: FailureReport, in_flight: Unit
    ) -> tuple[Decision, bool]:
        """The decision of a report still being committed, once it is."""
        try:
            await in_flight.wait()
        except DuplicateEvent:
            return await self._recorded_failure(report)
        failure = in_flight.events[-1].detail
        assert isinstance(failure, FailureEvent)
        return _same_failure(report, failure), True

    async def _recorded_failure(self, report: FailureReport) -> tuple[Decision, bool]:
        stored = await self._store.find(EventKind.FAILURE, report.key)
        if stored is None or not isinstance(stored.detail, FailureEvent):
            raise StoreError(f"{describe(report.key)} is recorded, yet its event cannot be found")
        return _same_failure(report, stored.detail), True

    async def _new_outcome(self, report: OutcomeReport, unit: Unit) -> tuple[TraceEvent, bool]:
        try:
            await unit.wait()
        except DuplicateEvent:
            return await self._recorded_outcome(report)
        return unit.events[-1], False

    async def _repeated_outcome(
        self, report: OutcomeReport, in_flight: Unit
    ) -> tuple[TraceEvent, bool]:
        try:
            await in_flight.wait()
        except DuplicateEvent:
            return await self._recorded_outcome(report)
        return self._same_outcome(report, in_flight.events[-1]), True

    async def _recorded_outcome(self, report: OutcomeReport) -> tuple[TraceEvent, bool]:
        stored = await self._store.find(EventKind.OUTCOME, report.key)
        if stored is None:
            raise StoreError(f"{describe(report.key)} is recorded, yet its event cannot be found")
        return self._same_outcome(report, stored), True

    @staticmethod
    def _same_outcome(report: OutcomeReport, stored: TraceEvent) -> TraceEvent:
        detail = stored.detail
        assert isinstance(detail, OutcomeEvent)
        if detail.report.outcome is not report.outcome:
            recorded = detail.report.outcome.value
            raise ReportConflict(f"{describe(report.key)} was already recorded as {recorded}")
        return stored

    def _holding(
        self, *reports: tuple[FailureReport | OutcomeReport, Reads | None]
    ) -> AbstractAsyncContextManager[None]:
        """Hold every state the reports read or change: each one's call and turn, its
        tool's statistics and breaker, and (for a failure) the breakers its decision reads,
        of the tool's alternatives."""
        return self.holder.holding(self._state_keys(reports))

    def _state_keys(
        self, reports: Sequence[tuple[FailureReport | OutcomeReport, Reads | None]]
    ) -> list[Key]:
        state = self._state
        keys: list[Key] = []
        for report, reads in reports:
            keys += [
                (state.calls, report.key.call),
                (state.turns, report.turn_id),
                (state.tool_stats, report.tool_key),
                (state.windows, report.tool_key),
                *(
                    (state.breakers, key)
                    for key in (reads.breakers if reads else (report.tool_key,))
                ),
            ]
        return keys

    def _holding_memory(
        self, *reports: tuple[FailureReport | OutcomeReport, Reads | None]
    ) -> AbstractAsyncContextManager[None]:
        """Hold the episodic-memory keys the reports may change, inside ``_holding``: of the
        episode each may close, known once its call is held, and (a failure) of the error
        its decision reads. Costs nothing while memory holds every key. When one must be
        read back, the states ``_holding`` holds are pinned again with it: that await must
        not let a commit drop a state ``_holding`` found in memory and did not pin."""
        memory = self._state.memory
        if memory.complete:
            return NOTHING_HELD
        keys: list[Key] = []
        for report, reads in reports:
            call = self._state.calls.view(report.key.call)
            episode = call.awaited_by(report.tool, report.attempt) if call is not None else None
            if episode is not None:
                keys.append((memory, MemoryKey(episode.tool_key, episode.signature)))
            if reads is not None:
                keys.append((memory, reads.memory_key))
        if not any(memory.missing(key) for _, key in keys):
            return NOTHING_HELD
        return self.holder.holding([*self._state_keys(reports), *keys])

    def _remembered(self, key: str, signature_key: str) -> MemoryStats | None:
        return self._state.memory.view(MemoryKey(key, signature_key))


def _refusing(
    answer: Callable[[FailureReport, Reads], Answer[Decision]], report: FailureReport, reads: Reads
) -> Answer[Decision]:
    """``answer(report, reads)``; an error raised while deciding, as an answer that raises it, so
    that one report's bug does not lose the answers of the others."""
    try:
        return answer(report, reads)
    except Exception as error:
        return _raise(error)


async def _raise(error: Exception) -> tuple[Decision, bool]:
    raise error


def _out_of_time(turn: TurnState, now: datetime) -> bool:
    """True when the turn ended, or is still open, at or after its deadline."""
    return turn.deadline is not None and (turn.ended_at or now) >= turn.deadline


def _same_failure(report: FailureReport, stored: FailureEvent) -> Decision:
    """The stored decision of a repeated report, unless the repeat says something else. An
    attempt errord refused is refused once, whatever refuses it when asked again."""
    if stored.report.scope != report.scope:
        raise ReportConflict(
            f"{describe(report.key)} was already recorded in scope {stored.report.scope!r}, "
            f"not {report.scope!r}"
        )
    if stored.report.error != report.error and not (
        was_refused(report) and was_refused(stored.report)
    ):
        recorded = stored.decision.classification.code.value
        raise ReportConflict(
            f"{describe(report.key)} was already recorded with a different error "
            f"({recorded}); attempts are numbered from 1 per tool and call"
        )
    return stored.decision


def describe(key: ReportKey) -> str:
    return (
        f"the report (turn_id={key.turn_id!r}, call_id={key.call_id!r}, tool={key.tool!r}, "
        f"attempt={key.attempt})"
    )
