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
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from errord.clock import Clock
from errord.decide.engine import Engine
from errord.decide.events import EventKind, FailureEvent, OutcomeEvent, TraceEvent
from errord.decide.model import Decision, FailureReport, OutcomeReport, ReportKey
from errord.errors import ReportConflict, StoreError, TurnNotFound
from errord.manifests.snapshot import ManifestSnapshot
from errord.state.projection import Projection
from errord.state.projections import Projections
from errord.state.store import DuplicateEvent, Store, Unit

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _InFlight:
    """A unit of work being committed, and the event a repeat of its report is answered with."""

    unit: Unit
    event: FailureEvent | OutcomeEvent


class ErrorHandler:
    """Decides on reports and records them, one unit of work each."""

    def __init__(
        self,
        engine: Engine,
        store: Store,
        state: Projections,
        manifests: ManifestSnapshot,
        clock: Clock,
    ) -> None:
        self._engine = engine
        self._store = store
        self._state = state
        self._clock = clock
        self.manifests = manifests
        """The manifests in force; a reload replaces the whole snapshot at once."""
        self._in_flight: dict[tuple[EventKind, ReportKey], _InFlight] = {}
        self._loading: dict[tuple[str, Any], asyncio.Future[None]] = {}

    async def report_failure(self, report: FailureReport) -> tuple[Decision, bool]:
        """The recovery decision for ``report``, committed; True if it was recorded before.

        Raises ReportConflict when the same key was recorded with a different error,
        StoreError when the decision could not be committed.
        """
        await self._hold(report.key)
        in_flight = self._in_flight.get((EventKind.FAILURE, report.key))
        if in_flight is not None:
            return await self._repeat_failure(report, in_flight), True
        call = self._state.calls.view(report.key.call)
        if call is not None and call.failure_recorded(report.tool, report.attempt):
            return await self._recorded_failure(report), True
        turn = self._state.turns.view(report.turn_id)
        decided = self._engine.decide(report, self.manifests, call, turn, self._clock.now())
        failure = decided.events[-1]
        assert isinstance(failure, FailureEvent)
        unit = self._submit(EventKind.FAILURE, report.key, decided.events, failure)
        try:
            await asyncio.shield(unit.done)
        except DuplicateEvent:
            return await self._recorded_failure(report), True
        decision = decided.decision
        log.debug(
            "%s -> %s: %s", decision.technical_message, decision.action.value, decision.reason
        )
        return decision, False

    async def report_outcome(self, report: OutcomeReport) -> tuple[TraceEvent, bool]:
        """Record how an attempt ended; True if it was recorded before.

        Raises ReportConflict when the same key was recorded with another outcome.
        """
        await self._hold(report.key)
        in_flight = self._in_flight.get((EventKind.OUTCOME, report.key))
        if in_flight is not None:
            await asyncio.shield(in_flight.unit.done)
            return self._same_outcome(report, in_flight.unit.events[-1]), True
        call = self._state.calls.view(report.key.call)
        if call is not None and call.outcome(report.tool, report.attempt) is not None:
            return await self._recorded_outcome(report), True
        events = self._engine.outcome(report, self._state.turns.view(report.turn_id))
        outcome = events[-1]
        assert isinstance(outcome, OutcomeEvent)
        unit = self._submit(EventKind.OUTCOME, report.key, events, outcome)
        try:
            await asyncio.shield(unit.done)
        except DuplicateEvent:
            return await self._recorded_outcome(report), True
        return unit.events[-1], False

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

    def _submit(
        self,
        kind: EventKind,
        key: ReportKey,
        events: tuple[Any, ...],
        event: FailureEvent | OutcomeEvent,
    ) -> Unit:
        unit = self._store.submit(events)
        self._in_flight[(kind, key)] = _InFlight(unit, event)
        unit.done.add_done_callback(lambda _: self._in_flight.pop((kind, key), None))
        return unit

    async def _repeat_failure(self, report: FailureReport, in_flight: _InFlight) -> Decision:
        try:
            await asyncio.shield(in_flight.unit.done)
        except DuplicateEvent:
            return await self._recorded_failure(report)
        assert isinstance(in_flight.event, FailureEvent)
        return _same_failure(report, in_flight.event)

    async def _recorded_failure(self, report: FailureReport) -> Decision:
        stored = await self._store.find(EventKind.FAILURE, report.key)
        if stored is None or not isinstance(stored.detail, FailureEvent):
            raise StoreError(f"{describe(report.key)} is recorded, yet its event cannot be found")
        return _same_failure(report, stored.detail)

    async def _recorded_outcome(self, report: OutcomeReport) -> TraceEvent:
        stored = await self._store.find(EventKind.OUTCOME, report.key)
        if stored is None:
            raise StoreError(f"{describe(report.key)} is recorded, yet its event cannot be found")
        return self._same_outcome(report, stored)

    @staticmethod
    def _same_outcome(report: OutcomeReport, stored: TraceEvent) -> TraceEvent:
        detail = stored.detail
        assert isinstance(detail, OutcomeEvent)
        if detail.report.outcome is not report.outcome:
            recorded = detail.report.outcome.value
            raise ReportConflict(f"{describe(report.key)} was already recorded as {recorded}")
        return stored

    async def _hold(self, key: ReportKey) -> None:
        """Make sure the projections hold the call and the turn of ``key``, reading back
        what they dropped for room (only then does this await)."""
        await self._read_back(self._state.calls, key.call)
        await self._read_back(self._state.turns, key.turn_id)

    async def _read_back(self, projection: Projection[Any, Any], key: Any) -> None:
        if not projection.missing(key):
            return
        loading = self._loading.get((projection.name, key))
        if loading is None:
            loading = asyncio.ensure_future(self._adopt(projection, key))
            self._loading[(projection.name, key)] = loading
            loading.add_done_callback(lambda _: self._loading.pop((projection.name, key), None))
        await asyncio.shield(loading)

    async def _adopt(self, projection: Projection[Any, Any], key: Any) -> None:
        projection.adopt(key, await self._store.state(projection, key))


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
