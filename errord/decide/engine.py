"""The decision: manifest -> classify -> context -> policy -> messages -> the events to record.

Pure and synchronous: the engine reads the state it is handed (what the call
and the turn went through, as the projections see them) and returns the
decision with the events that record it. Committing them is the caller's
(errord.handler); no gRPC, no SQL and no awaits in here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from msgspec import structs

from errord.decide.classify import classify
from errord.decide.events import EventDetail, FailureEvent, OutcomeEvent, TurnBegan
from errord.decide.messages import compose
from errord.decide.model import Action, Decision, FailureReport, OutcomeReport
from errord.decide.policy import (
    CallPart,
    DecisionContext,
    RecoveryPolicy,
    ToolPart,
    TurnPart,
    Verdict,
)
from errord.decide.redact import redact
from errord.manifests.snapshot import ManifestSnapshot


class CallHistory(Protocol):
    """What the engine reads of a call's past (errord.state.calls.CallState)."""

    def delay_granted(self, tool: str) -> float: ...

    @property
    def failed_tools(self) -> frozenset[str]: ...


class TurnHistory(Protocol):
    """What the engine reads of a turn (errord.state.turns.TurnState)."""

    @property
    def began_at(self) -> datetime: ...


@dataclass(frozen=True, slots=True)
class Decided:
    """A decision and the events that record it, in order."""

    decision: Decision
    events: tuple[EventDetail, ...]


def new_decision_id() -> str:
    return uuid.uuid4().hex


class Engine:
    """Decides on failures and says what to record for failures and outcomes."""

    def __init__(
        self, policy: RecoveryPolicy, *, new_id: Callable[[], str] = new_decision_id
    ) -> None:
        self._policy = policy
        self._new_id = new_id

    def decide(
        self,
        report: FailureReport,
        manifests: ManifestSnapshot,
        call: CallHistory | None,
        turn: TurnHistory | None,
        now: datetime,
    ) -> Decided:
        """The decision on ``report``, given what its call and turn went through so far."""
        context = self.context(report, manifests, call, turn, now)
        decision = self._decision(context, self._policy.decide(context), manifests)
        recorded = structs.replace(
            report, arguments=redact(report.arguments, context.manifest.redact)
        )
        return Decided(
            decision,
            (*_beginning(report.turn_id, turn), FailureEvent(report=recorded, decision=decision)),
        )

    def outcome(self, report: OutcomeReport, turn: TurnHistory | None) -> tuple[EventDetail, ...]:
        """The events that record ``report``."""
        return (*_beginning(report.turn_id, turn), OutcomeEvent(report=report))

    @staticmethod
    def context(
        report: FailureReport,
        manifests: ManifestSnapshot,
        call: CallHistory | None,
        turn: TurnHistory | None,
        now: datetime,
    ) -> DecisionContext:
        """Everything the policy and the messages read, built in this one place."""
        manifest, is_default = manifests.manifest_for(report.tool)
        failed = call.failed_tools if call is not None else frozenset()
        return DecisionContext(
            report=report,
            classification=classify(report.error, manifest.classification, report.tool),
            tool=ToolPart(manifest, is_default, manifests.names),
            call=CallPart(
                retry_time_spent=call.delay_granted(report.tool) if call is not None else 0.0,
                failed_tools=failed | {report.tool},
            ),
            turn=TurnPart(began_at=turn.began_at if turn is not None else None),
            now=now,
        )

    def _decision(
        self, context: DecisionContext, verdict: Verdict, manifests: ManifestSnapshot
    ) -> Decision:
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
            next_attempt_timeout=_next_timeout(context, verdict, manifests),
            alternative_tool=verdict.alternative_tool,
            attempts_left=context.retries_left if verdict.action is Action.RETRY else 0,
            default_policy=context.tool.default_policy,
            refusal=verdict.refusal,
            consequences=verdict.consequences,
        )


def _beginning(turn_id: str, turn: TurnHistory | None) -> tuple[EventDetail, ...]:
    """A TurnBegan for a turn errord has not seen yet."""
    return (TurnBegan(turn_id=turn_id),) if turn is None else ()


def _next_timeout(
    context: DecisionContext, verdict: Verdict, manifests: ManifestSnapshot
) -> float | None:
    if verdict.action is Action.RETRY:
        return context.manifest.timeout
    if verdict.alternative_tool is not None:
        return manifests.manifest_for(verdict.alternative_tool)[0].timeout
    return None
