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
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeAlias, TypeVar, cast

from msgspec import structs

from errord.clock import Clock
from errord.decide import breaker as breakers
from errord.decide.classify import classify
from errord.decide.correction import closest_tools
from errord.decide.engine import CallCheck, Engine
from errord.decide.events import (
    BreakerChanged,
    EventDetail,
    EventKind,
    FailureEvent,
    OutcomeEvent,
    TraceEvent,
    TurnBegan,
    TurnEnded,
)
from errord.decide.manifest_snapshot import ManifestSnapshot
from errord.decide.memory import MemoryKey, MemoryStats, recall
from errord.decide.model import (
    BreakerState,
    CallProgress,
    CallStatus,
    Decision,
    DefaultValue,
    ErrorCode,
    FailureReport,
    JSONValue,
    Outcome,
    OutcomeReport,
    PlannedCall,
    ReportKey,
    RetryBudget,
    ToolFailure,
    TurnSummary,
)
from errord.decide.reconcile import HeldResult, Reconciliation, Synthesized, ToolCall, reconcile
from errord.decide.redact import redact, redact_json, redact_report, redact_text
from errord.decide.signature import signature
from errord.decide.summary import summarize
from errord.errors import (
    FieldViolation,
    InvalidRequest,
    ReportConflict,
    StoreError,
    ToolNotFound,
    TurnClosed,
    TurnNotFound,
)
from errord.limits import LimitExceeded, Limits
from errord.ops.logs import log_decision
from errord.state.memory_retention import MemoryBounds, MemoryRetention
from errord.state.projection import Projection
from errord.state.projections import Projections
from errord.state.store import DuplicateEvent, Store, Unit
from errord.state.turns import TurnState

log = logging.getLogger(__name__)


T = TypeVar("T")
Answer: TypeAlias = Coroutine[Any, Any, tuple[T, bool]]
"""What a report is answered with, and whether it was recorded before; awaited after deciding."""
_Held: TypeAlias = tuple[tuple[Projection[Any, Any], Any], ...]
"""Projection keys pinned while a report is decided."""


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
    ) -> None:
        self._engine = engine
        self._store = store
        self._state = state
        self._clock = clock
        self.manifests = manifests
        """The manifests in force; a reload replaces the whole snapshot at once."""
        self._in_flight: dict[tuple[EventKind, ReportKey | str], Unit] = {}
        """Units being committed, by the kind and key of the report they record."""
        self._loading: dict[tuple[str, Any], asyncio.Future[None]] = {}
        self.max_turn_events = max_turn_events
        """Trace events one turn may hold: a report that would pass it is refused."""
        self.retention = MemoryRetention(
            state.memory, memory_bounds or MemoryBounds(), store.submit, clock
        )
        """Keeps episodic memory within its bounds: room in each unit, age in the background."""

    async def report_failure(self, report: FailureReport) -> tuple[Decision, bool]:
        """The recovery decision for ``report``, committed; True if it was recorded before.

        Raises ReportConflict when the same key was recorded with a different error,
        StoreError when the decision could not be committed.
        """
        report = self._redacted(report)
        held = await self._hold(report)
        try:
            answer = self._answer_failure(report)
        finally:
            self._let_go(held)
        return await answer

    async def report_failures(
        self, reports: Sequence[FailureReport]
    ) -> list[tuple[Decision, bool] | Exception]:
        """The decision on each of ``reports``, as report_failure would give them one after
        the other, all submitted in one step, so that the writer usually commits them in one
        transaction; for a report refused, the error it was refused with. Not atomic: each
        report is recorded or refused on its own.
        """
        reports = [self._redacted(report) for report in reports]
        # All read back before any is decided: no await may come between the two.
        held = await self._hold(*reports)
        try:
            answers = [_refusing(self._answer_failure, report) for report in reports]
        finally:
            self._let_go(held)
        results = await asyncio.gather(*answers, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result  # cancelled: not a refusal of one report
        return cast(list[tuple[Decision, bool] | Exception], results)

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
        now = self._clock.now()
        if deadline is not None and deadline <= now:
            raise InvalidRequest(
                [FieldViolation("deadline", f"must be in the future, got {deadline.isoformat()}")]
            )
        plan = tuple(self._redacted_call(call) for call in plan)
        held = await self._hold_turn(turn_id)
        try:
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
        finally:
            self._let_go(held)
        try:
            await asyncio.shield(unit.done)
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

    def _redacted(self, report: FailureReport) -> FailureReport:
        """``report`` as it may be stored, logged and decided on: secrets masked (errord.
        decide.redact), so that a repeat compares equal to what was recorded."""
        return redact_report(report, self._redaction_paths(report.tool))

    async def end_turn(self, turn_id: str) -> tuple[TurnSummary, bool]:
        """Close ``turn_id``; its summary, and True if it was closed before (the summary
        recorded then). Later failures of the turn are refused (TurnClosed).

        Raises TurnNotFound for a turn neither begun nor reported on.
        """
        held = await self._hold_turn(turn_id)
        try:
            turn = self._state.turns.view(turn_id)
            if turn is None:
                raise TurnNotFound(f"no turn {turn_id!r}: it was neither begun nor reported on")
            unit = None
            if turn.ended_at is None:
                now = self._clock.now()
                summary = summarize(turn_id, turn.began_at, turn.deadline, turn.progress, now)
                ended = TurnEnded(turn_id=turn_id, summary=summary)
                unit = self._submit(EventKind.TURN_ENDED, turn_id, (ended,))
        finally:
            self._let_go(held)
        if unit is not None:
            try:
                await asyncio.shield(unit.done)
                return summary, False
            except DuplicateEvent:
                pass
        recorded = (await self._recorded(EventKind.TURN_ENDED, turn_id))[0].detail
        assert isinstance(recorded, TurnEnded)
        return recorded.summary, True

    async def _hold_turn(self, turn_id: str) -> _Held:
        return await self._read_missing(((self._state.turns, turn_id),))

    async def _recorded(self, kind: EventKind, turn_id: str) -> tuple[TraceEvent, bool]:
        """The recorded event of ``kind`` keyed by ``turn_id`` (once it is committed)."""
        in_flight = self._in_flight.get((kind, turn_id))
        if in_flight is not None:
            await asyncio.shield(in_flight.done)
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
                if _tells_fate(event.detail, unanswered):
                    detail = event.detail
                    assert isinstance(detail, FailureEvent | OutcomeEvent)
                    fates[detail.report.call_id] = detail
        held_turn = await self._hold_turn(turn_id)
        try:
            turn = self._state.turns.view(turn_id)
        finally:
            self._let_go(held_turn)
        out_of_time = turn is not None and _out_of_time(turn, self._clock.now())
        progress = turn.progress if turn is not None else {}
        return reconcile(
            calls,
            held,
            lambda call: synthesized(
                call, fates.get(call.call_id), progress.get(call.call_id), out_of_time
            ),
        )

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
        held = await self._hold(report)
        try:
            answer = self._answer_outcome(report)
        finally:
            self._let_go(held)
        return await answer

    async def reset_breaker(self, tool: str, *, by: str = "") -> TraceEvent:
        """Close ``tool``'s breaker and zero its counters; the recorded event.

        Raises ToolNotFound for a tool with no manifest and no recorded report.
        """
        return await self._change_breaker(tool, breakers.reset, by)

    async def force_open_breaker(
        self, tool: str, *, duration: float | None, by: str = ""
    ) -> TraceEvent:
        """Open ``tool``'s breaker for ``duration`` seconds, or until reset when None."""
        now = self._clock.now()
        until = None if duration is None else now + timedelta(seconds=duration)
        return await self._change_breaker(
            tool, lambda state: breakers.force_open(state, now, until), by
        )

    async def _change_breaker(
        self, tool: str, change: Callable[[BreakerState | None], breakers.Stepped], by: str
    ) -> TraceEvent:
        state = self._state
        held = await self._read_missing(((state.breakers, tool), (state.tool_stats, tool)))
        try:
            if tool not in self.manifests and not state.has_tool(tool):
                raise ToolNotFound(tool)
            [(kind, after)] = change(state.breakers.view(tool)).changes
            event = BreakerChanged(tool=tool, change=kind, breaker=after, by=by)
            unit = self._store.submit([event])
        finally:
            self._let_go(held)
        try:
            await asyncio.shield(unit.done)
        except DuplicateEvent as error:  # the generation is taken: not while one daemon owns the db
            raise StoreError(f"the breaker of {tool!r} changed meanwhile; try again") from error
        return unit.events[-1]

    async def record(self, event: EventDetail) -> TraceEvent:
        """Record an event that decides nothing (a manifest reload); the recorded event."""
        unit = self._store.submit([event])
        await asyncio.shield(unit.done)
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

    def _answer_failure(self, report: FailureReport) -> Answer[Decision]:
        """Decide and submit now, without awaiting; the answer waits for the commit."""
        in_flight = self._in_flight.get((EventKind.FAILURE, report.key))
        if in_flight is not None:
            return self._repeated_failure(report, in_flight)
        call = self._state.calls.view(report.key.call)
        if call is not None and call.failure_recorded(report.tool, report.attempt):
            return self._recorded_failure(report)
        turn = self._state.turns.view(report.turn_id)
        if turn is not None and turn.ended_at is not None:
            raise TurnClosed(
                f"turn {report.turn_id!r} ended at {turn.ended_at.isoformat()}; "
                "report the failures of a new turn under a new turn_id"
            )
        decided = self._engine.decide(
            report,
            self.manifests,
            call,
            turn,
            self._clock.now(),
            self._state.breakers.view,
            self._remembered,
        )
        self._check_room(report.turn_id, turn, decided.events)
        unit = self._submit(EventKind.FAILURE, report.key, decided.events)
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
        events = self._engine.outcome(
            report, self.manifests, turn, self._clock.now(), self._state.breakers.view, call
        )
        self._check_room(report.turn_id, turn, events)
        return self._new_outcome(report, self._submit(EventKind.OUTCOME, report.key, events))

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

    def _submit(
        self, kind: EventKind, key: ReportKey | str, events: tuple[EventDetail, ...]
    ) -> Unit:
        unit = self._store.submit(self.retention.with_room(events))
        self._in_flight[(kind, key)] = unit
        unit.done.add_done_callback(lambda _: self._in_flight.pop((kind, key), None))
        return unit

    async def _new_failure(
        self, report: FailureReport, decision: Decision, unit: Unit
    ) -> tuple[Decision, bool]:
        try:
            await asyncio.shield(unit.done)
        except DuplicateEvent:  # recorded before this process knew of it
            return await self._recorded_failure(report)
        log_decision(report, decision)
        log.debug("%s: %s", decision.technical_message, decision.reason)
        return decision, False

    async def _repeated_failure(
        self, report: FailureReport, in_flight: Unit
    ) -> tuple[Decision, bool]:
        """The decision of a report still being committed, once it is."""
        try:
            await asyncio.shield(in_flight.done)
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
            await asyncio.shield(unit.done)
        except DuplicateEvent:
            return await self._recorded_outcome(report)
        return unit.events[-1], False

    async def _repeated_outcome(
        self, report: OutcomeReport, in_flight: Unit
    ) -> tuple[TraceEvent, bool]:
        try:
            await asyncio.shield(in_flight.done)
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

    async def _hold(self, *reports: FailureReport | OutcomeReport) -> _Held:
        """Make sure the projections hold every state the reports read or change: each
        one's call and turn, its tool's statistics and breaker, and (for a failure) the
        breakers of the tool's alternatives.

        In the steady state they do, and this returns at once, without awaiting.
        When a projection dropped one of them for room, all are pinned (so that
        no commit drops them meanwhile) and the missing ones are read back; the
        caller decides, then lets go of the pins, without awaiting in between.
        The episodic-memory keys a report may change are known once its call is held
        (the episode it may close): they are read back second, and only once memory
        dropped any.
        """
        state = self._state
        wanted: list[tuple[Projection[Any, Any], Any]] = []
        for report in reports:
            alternatives = (
                self.manifests.alternatives(report.tool)
                if isinstance(report, FailureReport)
                else ()
            )
            wanted += [
                (state.calls, report.key.call),
                (state.turns, report.turn_id),
                (state.tool_stats, report.tool),
                *((state.breakers, tool) for tool in (report.tool, *alternatives)),
            ]
        held = await self._read_missing(tuple(wanted))
        if state.memory.complete:
            return held
        remembered = [(state.memory, key) for r in reports for key in self._memory_keys(r)]
        if not any(state.memory.missing(key) for _, key in remembered):
            return held
        self._let_go(held)
        return await self._read_missing((*wanted, *remembered))

    async def recall_episodes(
        self, tool: str, message: str | None, code: ErrorCode | None
    ) -> list[tuple[MemoryKey, MemoryStats]]:
        """What episodic memory holds of ``tool``'s errors, most episodes first: of the one
        ``message`` is (its code inferred unless given), or of all memory holds in RAM.

        Raises ToolNotFound for a tool with no manifest and no recorded report.
        """
        if tool not in self.manifests and not self._state.has_tool(tool):
            raise ToolNotFound(tool)
        memory, now = self._state.memory, self._clock.now()
        if message is None:
            found = [(k, s) for k, s in memory.snapshot().items() if k.tool == tool]
        else:
            message = redact_text(message)  # as the reports it stands for were
            if code is None:
                rules = self.manifests.manifest_for(tool)[0].classification
                code = classify(ToolFailure(message=message), rules, tool).code
            key = MemoryKey(tool, signature(code, message).key)
            held = await self._read_missing(((memory, key),))
            try:
                stats = memory.view(key)
            finally:
                self._let_go(held)
            found = [] if stats is None else [(key, stats)]
        return sorted(found, key=lambda item: -_episodes(item[1], now))

    def _remembered(self, tool: str, signature_key: str) -> MemoryStats | None:
        return self._state.memory.view(MemoryKey(tool, signature_key))

    def _memory_keys(self, report: FailureReport | OutcomeReport) -> list[MemoryKey]:
        """The episodic-memory keys ``report`` may change: of the episode it may close, and
        (a failure) of the one its decision may open."""
        keys = []
        call = self._state.calls.view(report.key.call)
        episode = call.awaited_by(report.tool, report.attempt) if call is not None else None
        if episode is not None:
            keys.append(MemoryKey(episode.tool, episode.signature))
        if isinstance(report, FailureReport):
            rules = self.manifests.manifest_for(report.tool)[0].classification
            code = classify(report.error, rules, report.tool).code
            keys.append(MemoryKey(report.tool, signature(code, report.error.message).key))
        return keys

    async def _read_missing(self, wanted: _Held) -> _Held:
        """Pin ``wanted`` and read back the keys missing from memory; () when none is."""
        # A batch may name one turn, call or tool many times: read each back once.
        missing = list(dict.fromkeys((p, k) for p, k in wanted if p.missing(k)))
        if not missing:
            return ()
        for projection, k in wanted:
            projection.pin(k)
        try:
            for projection, k in missing:
                await self._read_back(projection, k)
        except BaseException:
            self._let_go(wanted)
            raise
        return wanted

    @staticmethod
    def _let_go(held: _Held) -> None:
        for projection, key in held:
            projection.unpin(key)

    async def _read_back(self, projection: Projection[Any, Any], key: Any) -> None:
        loading = self._loading.get((projection.name, key))
        if loading is None:
            loading = asyncio.ensure_future(self._adopt(projection, key))
            self._loading[(projection.name, key)] = loading
            loading.add_done_callback(lambda _: self._loading.pop((projection.name, key), None))
        await asyncio.shield(loading)

    async def _adopt(self, projection: Projection[Any, Any], key: Any) -> None:
        projection.adopt(key, await self._store.state(projection, key))


def _refusing(
    answer: Callable[[FailureReport], Answer[Decision]], report: FailureReport
) -> Answer[Decision]:
    """``answer(report)``; an error raised while deciding, as an answer that raises it, so
    that one report's bug does not lose the answers of the others."""
    try:
        return answer(report)
    except Exception as error:
        return _raise(error)


async def _raise(error: Exception) -> tuple[Decision, bool]:
    raise error


def _tells_fate(detail: EventDetail, calls: set[str]) -> bool:
    """True for a decision on one of ``calls``, or a success of one (a failed outcome repeats
    a failure that has its decision)."""
    if isinstance(detail, FailureEvent):
        return detail.report.call_id in calls
    if isinstance(detail, OutcomeEvent):
        return detail.report.call_id in calls and detail.report.outcome is Outcome.SUCCESS
    return False


def _out_of_time(turn: TurnState, now: datetime) -> bool:
    """True when the turn ended, or is still open, at or after its deadline."""
    return turn.deadline is not None and (turn.ended_at or now) >= turn.deadline


def synthesized(
    call: ToolCall,
    fate: FailureEvent | OutcomeEvent | None,
    progress: CallProgress | None = None,
    out_of_time: bool = False,
) -> Synthesized:
    """The result of a call the executor holds none for: from where it stands in its turn
    (skipped for the call it waited on, out of time), else from the call's last event."""
    if progress is not None and progress.blocked_by:
        return Synthesized(
            f"Not run: {call.tool} needed the result of call {progress.blocked_by}, which has "
            "none.",
            f"skipped with {progress.blocked_by}, which it depends on",
        )
    pending = progress is None or progress.status is CallStatus.PENDING
    if out_of_time and pending and not _succeeded(fate):
        return Synthesized(
            f"No result: {call.tool} did not finish before the turn's deadline.",
            "still pending at the turn's deadline",
        )
    if isinstance(fate, FailureEvent):
        decision = fate.decision
        return Synthesized(
            decision.llm_message,
            f"the last decision on this call, {decision.decision_id} "
            f"({decision.action.value} after attempt {decision.attempt} of {decision.tool})",
        )
    if isinstance(fate, OutcomeEvent) and fate.report.outcome is Outcome.SUCCESS:
        return Synthesized(
            f"{call.tool} completed, but its result was not passed on; call it again if you "
            "need it.",
            f"attempt {fate.report.attempt} of {fate.report.tool} was reported a success",
        )
    return Synthesized(
        f"No result: the {call.tool} call did not complete.", "errord has no report of this call"
    )


def _episodes(stats: MemoryStats, now: datetime) -> float:
    return sum(evidence.episodes for evidence in recall(stats, now).values())


def _succeeded(fate: FailureEvent | OutcomeEvent | None) -> bool:
    return isinstance(fate, OutcomeEvent) and fate.report.outcome is Outcome.SUCCESS


def _same_failure(report: FailureReport, stored: FailureEvent) -> Decision:
    """The stored decision of a repeated report, unless the repeat says something else."""
    if stored.report.error != report.error:
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
