"""The decision path: manifest -> classify -> policy -> messages -> durable trace.

Pure domain code over two seams: a ``TraceLog`` that commits events (the store)
and a ``Clock``. No gRPC and no SQL in here.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Protocol

from errord.clock import Clock
from errord.decide.classify import classify
from errord.decide.messages import compose
from errord.decide.model import (
    Action,
    Decision,
    EventDetail,
    FailureEvent,
    FailureReport,
    OutcomeEvent,
    OutcomeReport,
    ReportKey,
    TraceEvent,
)
from errord.decide.policy import DecisionContext, RecoveryPolicy, Verdict
from errord.decide.redact import redact
from errord.errors import ReportConflict, TurnNotFound
from errord.manifests.model import ManifestSet, RetryPolicy, ToolManifest
from errord.state.ledger import RetryLedger

log = logging.getLogger(__name__)


class TraceLog(Protocol):
    """Where trace events become durable (errord.state.store.TraceStore)."""

    async def append(self, detail: EventDetail) -> tuple[TraceEvent, bool]:
        """Commit ``detail``; return the stored event and whether it is new."""
        ...

    async def turn_events(
        self, turn_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[TraceEvent]: ...

    async def events_after(
        self, sequence: int, *, turn_id: str = "", limit: int | None = None
    ) -> list[TraceEvent]: ...

    async def call_failures(self, turn_id: str, call_id: str) -> list[TraceEvent]: ...


def new_decision_id() -> str:
    return uuid.uuid4().hex


class Engine:
    """Decides on failures and records every report, decision and outcome."""

    def __init__(
        self,
        manifests: ManifestSet,
        trace: TraceLog,
        policy: RecoveryPolicy,
        clock: Clock,
        *,
        default_retry_policy: RetryPolicy | None = None,
        default_timeout: float = 30.0,
        new_id: Callable[[], str] = new_decision_id,
    ) -> None:
        self._manifests = manifests
        self._trace = trace
        self._policy = policy
        self._clock = clock
        self._new_id = new_id
        self._default_retry_policy = default_retry_policy or RetryPolicy()
        self._default_timeout = default_timeout
        self._tool_names = frozenset(manifest.name for manifest in manifests)
        self._ledger = RetryLedger(self._failure_history)

    async def report_failure(self, report: FailureReport) -> tuple[Decision, bool]:
        """The recovery decision for ``report``, committed; True if it was recorded before.

        Raises ReportConflict when the same key was recorded with a different error.
        """
        context, call_complete = await self._context(report)
        verdict = self._policy.decide(context)
        if verdict.action is Action.USE_ALTERNATIVE and not call_complete:
            # The call may predate this process: learn which tools already failed on it.
            context, _ = await self._context(report, need_every_tool=True)
            verdict = self._policy.decide(context)
        decision = self._decision(context, verdict)
        recorded = replace(report, arguments=redact(report.arguments, context.manifest.redact))
        event, created = await self._trace.append(FailureEvent(recorded, decision))
        assert isinstance(event.detail, FailureEvent)
        if not created:
            return self._replayed(event.detail, recorded).decision, True
        self._ledger.record(event.detail)
        log.debug(
            "%s -> %s: %s", decision.technical_message, decision.action.value, decision.reason
        )
        return decision, False

    async def report_outcome(self, report: OutcomeReport) -> tuple[TraceEvent, bool]:
        """Record how an attempt ended; True if it was recorded before.

        Raises ReportConflict when the same key was recorded with another outcome.
        """
        event, created = await self._trace.append(OutcomeEvent(report))
        assert isinstance(event.detail, OutcomeEvent)
        if not created and event.detail.report.outcome is not report.outcome:
            recorded = event.detail.report.outcome.value
            raise ReportConflict(f"{describe(report.key)} was already recorded as {recorded}")
        return event, not created

    async def turn_trace(
        self, turn_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[TraceEvent]:
        """A turn's events after sequence ``after``, oldest first, at most ``limit``.

        Raises TurnNotFound when the turn has no events at all.
        """
        events = await self._trace.turn_events(turn_id, after=after, limit=limit)
        if not events and after == 0:
            raise TurnNotFound(f"no trace events for turn {turn_id!r}")
        return events

    async def replay(
        self, after: int, *, turn_id: str = "", page: int = 1000
    ) -> AsyncIterator[TraceEvent]:
        """Recorded events after sequence ``after`` (of one turn if ``turn_id``), page by page."""
        while events := await self._trace.events_after(after, turn_id=turn_id, limit=page):
            for event in events:
                yield event
            after = events[-1].sequence

    def manifest_for(self, tool: str) -> tuple[ToolManifest, bool]:
        """The tool's manifest and whether it is the default one."""
        manifest = self._manifests.get(tool)
        if manifest is not None:
            return manifest, False
        default = ToolManifest(
            name=tool, timeout=self._default_timeout, retry_policy=self._default_retry_policy
        )
        return default, True

    async def _context(
        self, report: FailureReport, *, need_every_tool: bool = False
    ) -> tuple[DecisionContext, bool]:
        """The decision context, and whether it knows every tool that failed on the call."""
        manifest, is_default = self.manifest_for(report.tool)
        call = await self._ledger.state(report, need_every_tool=need_every_tool)
        context = DecisionContext(
            report=report,
            classification=classify(report.error, manifest.classification, report.tool),
            manifest=manifest,
            default_policy=is_default,
            retry_time_spent=call.retry_time_spent,
            now=self._clock.now(),
            failed_tools=call.failed_tools,
            manifests=self._tool_names,
        )
        return context, call.complete

    @staticmethod
    def _replayed(stored: FailureEvent, report: FailureReport) -> FailureEvent:
        """The stored event of a repeated report, unless the repeat says something else."""
        if stored.report.error != report.error:
            recorded = stored.decision.classification.code.value
            raise ReportConflict(
                f"{describe(report.key)} was already recorded with a different error "
                f"({recorded}); attempts are numbered from 1 per tool and call"
            )
        return stored

    def _decision(self, context: DecisionContext, verdict: Verdict) -> Decision:
        messages = compose(context, verdict)
        report = context.report
        return Decision(
            decision_id=self._new_id(),
            turn_id=report.turn_id,
            call_id=report.call_id,
            tool=report.tool,
            attempt=report.attempt,
            action=verdict.action,
            classification=context.classification,
            reason=messages.reason,
            llm_message=messages.llm,
            user_message=messages.user,
            technical_message=messages.technical,
            decided_at=context.now,
            delay=verdict.delay,
            next_attempt_timeout=self._next_timeout(verdict, context.manifest),
            alternative_tool=verdict.alternative_tool,
            attempts_left=context.retries_left if verdict.action is Action.RETRY else 0,
            default_policy=context.default_policy,
        )

    def _next_timeout(self, verdict: Verdict, manifest: ToolManifest) -> float | None:
        if verdict.action is Action.RETRY:
            return manifest.timeout
        if verdict.alternative_tool is not None:
            return self.manifest_for(verdict.alternative_tool)[0].timeout
        return None

    async def _failure_history(self, turn_id: str, call_id: str) -> list[FailureEvent]:
        events = await self._trace.call_failures(turn_id, call_id)
        return [event.detail for event in events if isinstance(event.detail, FailureEvent)]


def describe(key: ReportKey) -> str:
    return (
        f"the report (turn_id={key.turn_id!r}, call_id={key.call_id!r}, tool={key.tool!r}, "
        f"attempt={key.attempt})"
    )
