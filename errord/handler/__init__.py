"""The error handler: one decision per report, from in-memory state, durable before the answer.

Every report takes one step (``ErrorHandler._step``): hold the state it reads and
changes (errord.handler.held), and without awaiting read the call's and the turn's
state from the projections, decide (errord.decide.engine) and submit the events as one
unit of work, which reserves them in the projections; then await the commit and
answer (errord.handler.answers). A concurrent report therefore sees every earlier one,
committed or not; a repeat of a report still being committed waits for it and is
answered the same. Nothing is read from SQLite on this path while the projections hold
every call and turn; a key they dropped for room is read back first. What follows each
commit, before its reports are answered (the watchers told, the decisions logged), is
``after_commit`` (errord.state.after_commit), the store's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar, cast

from msgspec import structs

from errord.clock import Clock
from errord.decide.engine import CallCheck, Engine
from errord.decide.engine.views import Reads
from errord.decide.health.admission import Admission, admit, refusal
from errord.decide.manifest.snapshot import ManifestSnapshot
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
from errord.decide.model.events import (
    EventDetail,
    EventKind,
    FailureEvent,
    OutcomeEvent,
    TraceEvent,
    TurnBegan,
    TurnEnded,
)
from errord.decide.redact import redact, redact_json, redact_report
from errord.decide.texts.correction import closest_tools
from errord.decide.texts.summary import summarize
from errord.decide.texts.tool_results import (
    HeldResult,
    Reconciliation,
    ToolCall,
    reconcile,
    synthesized,
    tells_fate,
)
from errord.errors import (
    FieldViolation,
    InvalidRequest,
    ReportConflict,
    ToolNotFound,
    TurnNotFound,
)
from errord.handler.answers import (
    FAILURE,
    OUTCOME,
    TURN_BEGAN,
    TURN_ENDED,
    Answer,
    CallReportKind,
    Units,
)
from errord.handler.held import ReportsHeld
from errord.handler.room import Room
from errord.handler.views import DecisionViews
from errord.limits import MAX_TOOLS, Limits
from errord.state.calls import CallState
from errord.state.holding import Holder
from errord.state.memory_retention import MemoryBounds, MemoryRetention
from errord.state.projections import Projections
from errord.state.store import Store
from errord.state.turns import TurnState

__all__ = ["ErrorHandler"]

R = TypeVar("R", FailureReport, OutcomeReport)
A = TypeVar("A")
Decide = Callable[[R, Reads | None, CallState | None], tuple[tuple[EventDetail, ...], datetime]]
"""A new report's events, decided at the time it returns; raises the report's refusal."""


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
        self.retention = MemoryRetention(
            state.memory, memory_bounds or MemoryBounds(), store.submit, clock
        )
        """Keeps episodic memory within its bounds: room in each unit, age in the background."""
        self._units = Units(store, self.retention)
        self.holder = Holder(store.state)
        """Reads back what a projection dropped for room; operator actions share it."""
        self._held = ReportsHeld(self.holder, state)
        self.views = DecisionViews(state)
        """A tool's state as decisions read it; ``views.share(fleet)`` adds a fleet's."""
        self.room = Room(state, max_turn_events, max_tools)
        """The bounds of a turn's events and of the tools with state (errord.handler.room)."""
        self.after_commit = store.after_commit
        """What follows each commit before its reports are answered: WatchTrace's and
        WatchTools' watchers told, decisions and breaker changes logged."""

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
        async with self._held.reports((report, reads)):
            return await self._step(FAILURE, report, reads, self._decide_failure)

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
        async with self._held.reports(*read):
            # Every report decided and submitted before any answer is awaited.
            answers = [self._refusing(report, reads) for report, reads in read]
            results = await asyncio.gather(*answers, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result  # cancelled: not a refusal of one report
        return cast(list[tuple[Decision, bool] | Exception], results)

    async def report_outcome(self, report: OutcomeReport) -> tuple[TraceEvent, bool]:
        """Record how an attempt ended; True if it was recorded before.

        Raises ReportConflict when the same key was recorded with another outcome.
        """
        async with self._held.reports((report, None)):
            return await self._step(OUTCOME, report, None, self._decide_outcome)

    async def admit_call(
        self, key: ReportKey, arguments: dict[str, JSONValue], scope: str = ""
    ) -> tuple[Admission, Decision | None, bool]:
        """Whether attempt ``key`` may run in ``scope`` (errord.decide.health.admission): the
        admission, the recorded decision on a refused attempt, and True if the attempt was
        asked about before. A probe claimed is committed before the answer.

        Raises TurnClosed for a turn already ended, StoreError when the claim or the
        refusal could not be committed.
        """
        report = self.redacted(refusal(key, arguments, scope=scope))
        held = self.redacted(refusal(key, arguments, held=True, scope=scope))
        reads = self._engine.reads(report, self.manifests)
        held_reads = self._engine.reads(held, self.manifests)
        async with self._held.reports((report, reads), (held, held_reads)):
            call = self._state.calls.view(key.call)
            admission = None
            if self._units.in_flight(EventKind.FAILURE, key) is None and (
                call is None or not call.failure_recorded(key.tool, key.attempt)
            ):
                self.room.check_open(key.turn_id)
                manifest = self.manifests.manifest_for(key.tool)[0]
                now = self.clock.now()
                breaker = self.views.admitting(report.tool_key, now)
                window = self.views.window_of(report.tool_key)
                admission = admit(key, manifest, breaker, now, window, scope)
            if admission is None or not admission.admitted:  # refused, now or before
                if admission is not None and admission.held:
                    report, reads = held, held_reads
                decision, repeated = await self._step(FAILURE, report, reads, self._decide_failure)
                shown = decision.breaker
                if self.views.fleet is not None:
                    shown = self.views.shown(report.tool_key, self.clock.now())
                refused = Admission(admitted=False, breaker=shown or CLOSED_BREAKER)
                return refused, decision, repeated
            claim = self._units.claim(key)
            if admission.claim:
                turn = self._state.turns.view(key.turn_id)
                events = (*self._engine.beginning(key.turn_id, turn, now), *admission.claim)
                self.room.check_events(key.turn_id, turn, events)
                claim = self._units.submit_claim(key, events, now)
            if claim is not None:
                await claim.wait()
        return admission, None, admission.probe and not admission.claim  # probe asked again

    def _step(
        self, how: CallReportKind[R, A], report: R, reads: Reads | None, decide: Decide[R]
    ) -> Answer[A]:
        """The one step of every report: new (decided and submitted now, without
        awaiting), a repeat of one being committed, or one recorded before; the answer
        waits for the commit."""
        key = report.key
        in_flight = self._units.in_flight(how.kind, key)
        if in_flight is not None:
            return self._units.answer(how, report, key, in_flight, False)
        call = self._state.calls.view(key.call)
        if call is not None and how.recorded(call, report.tool, report.attempt):
            return self._units.answer(how, report, key, None, False)
        events, now = decide(report, reads, call)
        unit = self._units.submit(how.kind, key, events, now)
        return self._units.answer(how, report, key, unit, True)

    def _refusing(self, report: FailureReport, reads: Reads) -> Answer[Decision]:
        """The step of one report of a batch; an error raised while deciding, as an answer
        that raises it, so that one report's bug does not lose the answers of the others."""
        try:
            return self._step(FAILURE, report, reads, self._decide_failure)
        except Exception as error:
            return _raise(error)

    def _decide_failure(
        self, report: FailureReport, reads: Reads | None, call: CallState | None
    ) -> tuple[tuple[EventDetail, ...], datetime]:
        assert reads is not None
        turn = self.room.check_open(report.turn_id)
        self.room.check_tool(report.tool_key, self.manifests)
        now = self.clock.now()
        decided = self._engine.decide(
            report,
            self.manifests,
            call,
            turn,
            now,
            self._state.breakers.view,
            self.views.memory_of,
            reads,
            window_of=self.views.window_of,
            activity_of=self._state.tool_stats.view,
            gate=self.views.gate,
        )
        self.room.check_events(report.turn_id, turn, decided.events)
        return decided.events, now

    def _decide_outcome(
        self, report: OutcomeReport, _: Reads | None, call: CallState | None
    ) -> tuple[tuple[EventDetail, ...], datetime]:
        turn = self._state.turns.view(report.turn_id)
        self.room.check_tool(report.tool_key, self.manifests)
        now = self.clock.now()
        events = self._engine.outcome(
            report, self.manifests, turn, now, self._state.breakers.view, call
        )
        self.room.check_events(report.turn_id, turn, events)
        return events, now

    async def begin_turn(
        self,
        turn_id: str,
        deadline: datetime | None,
        budget: RetryBudget | None,
        plan: Sequence[PlannedCall] = (),
    ) -> tuple[TraceEvent, bool]:
        """Begin ``turn_id`` with ``deadline`` (None: the default), ``budget`` (None: the
        daemon's) and ``plan`` (a valid one: errord.decide.policy.plan.plan_problems); the recorded
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
        key = (turn_id,)  # a turn's events' idempotency key
        async with self._held.turn(turn_id):
            began = self._state.turns.view(turn_id)
            if began is not None:
                same = not began.implicit and (began.retry_budget, began.plan) == (budget, plan)
                if not same or (deadline is not None and began.deadline != deadline):
                    how = "with its first report" if began.implicit else "with other values"
                    raise ReportConflict(
                        f"turn {turn_id!r} already began {how} at {began.began_at.isoformat()}"
                    )
                in_flight = self._units.in_flight(EventKind.TURN_BEGAN, key)
                return await self._units.answer(TURN_BEGAN, turn_id, key, in_flight, False)
            event = TurnBegan(
                turn_id=turn_id,
                implicit=False,
                deadline=deadline or self._engine.default_deadline(now),
                retry_budget=budget,
                plan=plan,
            )
            unit = self._units.submit(EventKind.TURN_BEGAN, key, (event,))
            return await self._units.answer(TURN_BEGAN, turn_id, key, unit, True)

    async def end_turn(self, turn_id: str) -> tuple[TurnSummary, bool]:
        """Close ``turn_id``; its summary, and True if it was closed before (the summary
        recorded then). Later failures of the turn are refused (TurnClosed).

        Raises TurnNotFound for a turn neither begun nor reported on.
        """
        key = (turn_id,)
        async with self._held.turn(turn_id):
            turn = self._state.turns.view(turn_id)
            if turn is None:
                raise TurnNotFound(f"no turn {turn_id!r}: it was neither begun nor reported on")
            if turn.ended_at is not None:
                in_flight = self._units.in_flight(EventKind.TURN_ENDED, key)
                return await self._units.answer(TURN_ENDED, turn_id, key, in_flight, False)
            now = self.clock.now()
            summary = summarize(turn_id, turn.began_at, turn.deadline, turn.progress, now)
            ended = TurnEnded(turn_id=turn_id, summary=summary)
            unit = self._units.submit(EventKind.TURN_ENDED, key, (ended,))
            return await self._units.answer(TURN_ENDED, turn_id, key, unit, True)

    async def reconcile_results(
        self, turn_id: str, calls: Sequence[ToolCall], held: Sequence[HeldResult]
    ) -> Reconciliation:
        """One result per call of ``calls``; what became of a call without one is read from
        the turn's state and trace."""
        unanswered = {call.call_id for call in calls} - {result.call_id for result in held}
        fates: dict[str, FailureEvent | OutcomeEvent] = {}
        if unanswered:
            async for event in self.trace_after(0, turn_id=turn_id):
                if tells_fate(event.detail, unanswered):
                    detail = event.detail
                    assert isinstance(detail, FailureEvent | OutcomeEvent)
                    fates[detail.report.call_id] = detail
        async with self._held.turn(turn_id):
            turn = self._state.turns.view(turn_id)
        out_of_time = turn is not None and _out_of_time(turn, self.clock.now())
        progress = turn.progress if turn is not None else {}
        reconciled = reconcile(
            calls,
            held,
            lambda call: synthesized(
                call, fates.get(call.call_id), progress.get(call.call_id), out_of_time
            ),
        )
        self._state.results.count(reconciled, self.clock.now())
        return reconciled

    def redacted(self, report: FailureReport) -> FailureReport:
        """``report`` as it may be stored, logged, exported and decided on: secrets masked
        (errord.decide.redact), so that a repeat compares equal to what was recorded.
        Telemetry builds its spans from it, and hands it to report_failure as it is."""
        return redact_report(report, self._redaction_paths(report.tool))

    def _redacted_call(self, call: PlannedCall) -> PlannedCall:
        default = call.default
        if default is not None:
            default = DefaultValue(redact_json(default.value))
        return structs.replace(
            call,
            arguments=redact(call.arguments, self._redaction_paths(call.tool)),
            default=default,
        )

    def _redaction_paths(self, tool: str) -> tuple[str, ...]:
        return self.manifests.manifest_for(tool)[0].redact

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

    async def trace_after(
        self, after: int, *, turn_id: str = "", page: int = 1000
    ) -> AsyncIterator[TraceEvent]:
        """Recorded events after sequence ``after`` (of one turn if ``turn_id``), page by
        page: what a watcher missed, and a turn's history."""
        while events := await self._store.events_after(after, turn_id=turn_id, limit=page):
            for event in events:
                yield event
            after = events[-1].sequence

    def breaker(self, key: str) -> BreakerState | None:
        """The breaker of a tool in a scope (its key: errord.decide.model.scope) as decisions see
        it; None if it never changed. In a fleet, as the fleet's quorum lets it act."""
        return self.views.shown(key, self.clock.now())

    def window(self, key: str) -> RateWindow | None:
        """The rate-limit window of a tool in a scope (its key) as decisions see it; None if
        it never had one; in a fleet, the longest any host received."""
        return self.views.window_of(key)

    def known_tools(self) -> set[str]:
        """The keys of every tool with a manifest, and of every tool and scope with a
        breaker or a rate-limit window (a fleet's too)."""
        return {*self.manifests.names, *self.views.keys()}

    def validate_call(self, tool: str, arguments: Mapping[str, JSONValue]) -> CallCheck:
        """``arguments`` checked against ``tool``'s JSON Schema; nothing is recorded.

        Raises ToolNotFound for a tool with no manifest.
        """
        if tool not in self.manifests:
            raise ToolNotFound(tool, closest_tools(tool, self.manifests.names))
        return self._engine.check_call(tool, arguments, self.manifests)


async def _raise(error: Exception) -> tuple[Decision, bool]:
    raise error


def _out_of_time(turn: TurnState, now: datetime) -> bool:
    """True when the turn ended, or is still open, at or after its deadline."""
    return turn.deadline is not None and (turn.ended_at or now) >= turn.deadline
