"""The decision: manifest -> classify -> breaker, memory -> context -> policy -> messages -> events.

Pure and synchronous: the engine reads the state it is handed (what the call
and the turn went through, the breakers, what episodic memory holds of the error,
as the projections see them) and returns the decision with the events that record
it, the episodes it opens and closes among them. Committing them is the caller's
(errord.handler); no gRPC, no SQL and no awaits in here.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Protocol

from msgspec import Struct, structs

from errord.decide import breaker as breakers
from errord.decide.admission import was_refused
from errord.decide.classify import fault_of
from errord.decide.context import (
    BreakerPart,
    CallPart,
    DecisionContext,
    PlanPart,
    ToolHistory,
    TurnPart,
)
from errord.decide.correction import argument_correction, correction_for, problems_of
from errord.decide.events import (
    BreakerChanged,
    EventDetail,
    FailureEvent,
    OutcomeEvent,
    RateLimited,
    TurnBegan,
)
from errord.decide.manifest import ToolManifest
from errord.decide.manifest_snapshot import ManifestSnapshot
from errord.decide.memory import MemoryStats, recall
from errord.decide.messages import (
    Messages,
    compose,
    consequence_reasons,
    correction_message,
)
from errord.decide.mistake import mistake_key
from errord.decide.model import (
    CLOSED_BREAKER,
    Action,
    BreakerPhase,
    BreakerState,
    CallProgress,
    CallStatus,
    ClosedEpisode,
    Consequence,
    Correction,
    Decision,
    DefaultValue,
    Episode,
    EpisodeOutcome,
    ErrorClass,
    ErrorCode,
    FailureReport,
    Fault,
    JSONValue,
    Outcome,
    OutcomeReport,
    ParameterProblem,
    PlannedCall,
    Probe,
    RateWindow,
    Recalled,
    RetryBudget,
)
from errord.decide.model_message import MessageFormat
from errord.decide.plan import Waiting, waiting_on
from errord.decide.policy import RecoveryPolicy
from errord.decide.rate_limits import is_rate_limit, window_after
from errord.decide.reads import Reads
from errord.decide.scope import tool_key
from errord.decide.signature import Signature
from errord.decide.validate import CallValidator
from errord.decide.verdict import Verdict, probe_role


class CallHistory(Protocol):
    """What the engine reads of a call's past (errord.state.calls.CallState)."""

    def delay_granted(self, tool: str) -> float: ...

    def refused(self, tool: str) -> int: ...

    @property
    def failed_tools(self) -> frozenset[str]: ...

    @property
    def corrections(self) -> int: ...

    def awaited_by(self, tool: str, attempt: int) -> Episode | None: ...


class TurnHistory(Protocol):
    """What the engine reads of a turn (errord.state.turns.TurnState)."""

    @property
    def began_at(self) -> datetime: ...

    @property
    def calls(self) -> tuple[str, ...]: ...

    @property
    def retries(self) -> int: ...

    @property
    def deadline(self) -> datetime | None: ...

    @property
    def retry_budget(self) -> RetryBudget | None: ...

    @property
    def corrections(self) -> int: ...

    def told(self, mistake: str) -> int: ...

    @property
    def plan(self) -> tuple[PlannedCall, ...]: ...

    @property
    def progress(self) -> Mapping[str, CallProgress]: ...


MemoryViews = Callable[[str, str], MemoryStats | None]
"""What episodic memory holds of a tool's error, by tool and signature key."""


def no_memory(tool: str, signature_key: str) -> MemoryStats | None:
    return None


BreakerViews = Callable[[str], BreakerState | None]
"""A tool's breaker as decisions see it (errord.state.breakers), None if it never changed."""


def no_breakers(tool: str) -> BreakerState | None:
    return None


WindowViews = Callable[[str], RateWindow | None]
"""A tool's rate-limit window (errord.state.rate_windows), None if it never had one."""


def no_windows(tool: str) -> RateWindow | None:
    return None


BreakerGate = Callable[[str, BreakerState, datetime], BreakerState]
"""A tool's breaker as decisions must obey it, given its key, the host's own breaker and
the time: the own one, or a stricter one while the fleet refuses the tool (errord.fleet).
Never recorded: the trace keeps the host's own breaker."""


def ungated(tool: str, state: BreakerState, now: datetime) -> BreakerState:
    return state


class ToolActivity(Protocol):
    """What the engine reads of a tool's activity for every call (errord.state.tool_stats)."""

    @property
    def succeeded_at(self) -> datetime | None: ...

    @property
    def reset_at(self) -> datetime | None: ...


ActivityViews = Callable[[str], ToolActivity | None]
"""A tool's activity, None if no report of it was recorded."""


def no_activity(tool: str) -> ToolActivity | None:
    return None


class CallCheck(Struct, frozen=True, gc=False):
    """A call's arguments, checked before it runs."""

    checked: bool
    """False when the tool has no JSON Schema: every call is valid then."""
    correction: Correction | None = None
    """What the model must correct; None for a valid call."""
    llm_message: str = ""

    @property
    def valid(self) -> bool:
        return self.correction is None


class Decided(Struct, frozen=True, gc=False):
    """A decision and the events that record it, in order."""

    decision: Decision
    events: tuple[EventDetail, ...]


DEFAULT_TURN_DEADLINE = 300.0
"""Seconds a turn has when BeginTurn does not say."""


def new_decision_id() -> str:
    """A random version-4 UUID in hex, as ``uuid.uuid4().hex`` is, without the cost of
    building a ``uuid.UUID`` (about a microsecond, in Python code)."""
    drawn = bytearray(os.urandom(16))
    drawn[6] = drawn[6] & 0x0F | 0x40  # version 4
    drawn[8] = drawn[8] & 0x3F | 0x80  # RFC 4122 variant
    return drawn.hex()


class Engine:
    """Decides on failures and says what to record for failures and outcomes."""

    def __init__(
        self,
        policy: RecoveryPolicy,
        *,
        new_id: Callable[[], str] = new_decision_id,
        turn_deadline: float = DEFAULT_TURN_DEADLINE,
        message_format: MessageFormat = MessageFormat.TEXT,
        wording: bool = True,
    ) -> None:
        """``wording`` False: decisions come without their texts, their correction and
        their consequences' reasons (see ``wordless``)."""
        self._policy = policy
        self._new_id = new_id
        self._message_format = message_format
        self._wording = wording
        self._turn_deadline = timedelta(seconds=turn_deadline)
        """How long a turn begun by its first report has."""

    def decide(
        self,
        report: FailureReport,
        manifests: ManifestSnapshot,
        call: CallHistory | None,
        turn: TurnHistory | None,
        now: datetime,
        breaker_of: BreakerViews = no_breakers,
        memory_of: MemoryViews = no_memory,
        reads: Reads | None = None,
        decision_id: str | None = None,
        window_of: WindowViews = no_windows,
        activity_of: ActivityViews = no_activity,
        gate: BreakerGate = ungated,
    ) -> Decided:
        """The decision on ``report`` (redacted already: errord.decide.redact.redact_report),
        given what its call and turn went through so far, the breakers of its tool and the
        tool's alternatives, the tool's rate-limit window and its activity for every call;
        ``reads``, what ``reads`` said of it, if the caller asked. ``decision_id``: the
        decision's id (a replay gives the recorded one); None for a new one. The id seeds
        the decision's jitter, so that deciding the same report with the same id, state
        and ``now`` gives the same decision. ``gate``: the breaker the policy obeys, from
        the tool's own once the failure is counted (a fleet's may be stricter); the
        decision records the own one."""
        if reads is None or reads.manifests is not manifests:
            reads = Reads(report, manifests)
        classification = reads.classification
        tool = manifests.declared_part(
            report.tool,
            report.declaration,
            validating=(
                classification.code in ARGUMENT_CODES or fault_of(classification) is Fault.ARGUMENTS
            ),
        )
        manifest = tool.manifest
        refused = was_refused(report)
        rate_limited = classification.code is ErrorCode.RATE_LIMITED
        key = report.tool_key
        stepped = breakers.on_failure(
            breaker_of(key),
            manifest.breaker,
            now,
            counts=classification.error_class is ErrorClass.TRANSIENT
            and not rate_limited
            and not refused,
            attempt=(report.turn_id, report.call_id, report.attempt),
        )
        failed = call.failed_tools if call is not None else frozenset()
        error = reads.error
        memory = recall(memory_of(key, error.key), now)
        problems = _problems(report, classification.code, tool.validator)
        mistake = mistake_key(report, error, classification, problems, manifest.parameters)
        activity = activity_of(key)
        own = stepped.state
        gated = gate(key, own, now)
        context = DecisionContext(
            report=report,
            classification=classification,
            tool=tool,
            call=CallPart(
                retry_time_spent=call.delay_granted(report.tool) if call is not None else 0.0,
                failed_tools=failed | {report.tool},
                corrections=call.corrections if call is not None else 0,
                refused=(call.refused(report.tool) if call is not None else 0) + refused,
                was_refused=refused,
            ),
            turn=_turn_part(report, turn, mistake),
            now=now,
            breaker=BreakerPart(
                gated,
                _open_tools(manifest.alternatives, report.scope, breaker_of, now, gate),
                window_of(key),
                tool.manifest.timeout,
            ),
            plan=_plan_part(report.call_id, manifest, turn, manifests),
            problems=problems,
            memory=memory,
            decision_id=decision_id or self._new_id(),
            history=_history(activity),
        )
        verdict = self._policy.decide(context)
        decision = self._decision(context, verdict, manifests)
        if gated is not own:  # the fleet's breaker decided; the trace keeps the host's own
            decision = structs.replace(decision, breaker=own)
        if probe_role(context, verdict) == "probe":
            probe = _probe(decision, context)
            decision = structs.replace(
                decision, breaker=breakers.with_probe(stepped.state, probe), probe=True
            )
        failure = FailureEvent(
            report=report,
            decision=decision,
            opens=_opened(context, decision, manifests, error),
            closes=_closed(call, report.tool, report.attempt, EpisodeOutcome.FAILED, now),
            mistake=mistake if decision.action is Action.RETURN_TO_MODEL else "",
        )
        window = (
            window_after(context, decision) if rate_limited and is_rate_limit(context) else None
        )
        return Decided(
            decision,
            (
                *self.beginning(report.turn_id, turn, now),
                *_transitions(report.tool, report.scope, report.turn_id, stepped),
                *(() if window is None else (_rate_limited(report, window),)),
                failure,
            ),
        )

    @staticmethod
    def reads(report: FailureReport, manifests: ManifestSnapshot) -> Reads:
        """What deciding on ``report`` (redacted already) reads of the state beyond its call
        and turn; pass it to ``decide``, which then does not work it out again."""
        return Reads(report, manifests)

    def outcome(
        self,
        report: OutcomeReport,
        manifests: ManifestSnapshot,
        turn: TurnHistory | None,
        now: datetime,
        breaker_of: BreakerViews = no_breakers,
        call: CallHistory | None = None,
    ) -> tuple[EventDetail, ...]:
        """The events that record ``report``: the outcome, the breaker changes it makes,
        and the episode it ends."""
        succeeded = report.outcome is Outcome.SUCCESS
        told = EpisodeOutcome.SUCCEEDED if succeeded else EpisodeOutcome.FAILED
        before = breaker_of(report.tool_key) or CLOSED_BREAKER
        stepped = breakers.on_outcome(
            before,
            manifests.manifest_for(report.tool)[0].breaker,
            now,
            succeeded=report.outcome is Outcome.SUCCESS,
            attempt=(report.turn_id, report.call_id, report.attempt),
        )
        return (
            *self.beginning(report.turn_id, turn, now),
            *_transitions(report.tool, report.scope, report.turn_id, stepped),
            OutcomeEvent(
                report=report,
                breaker=None if stepped.state == before else stepped.state,
                closes=_closed(call, report.tool, report.attempt, told, now),
            ),
        )

    def check_call(
        self, tool: str, arguments: Mapping[str, JSONValue], manifests: ManifestSnapshot
    ) -> CallCheck:
        """``arguments`` checked against ``tool``'s JSON Schema before the call runs;
        the tool must have a manifest."""
        validator = manifests.validators.for_tool(tool)
        if validator is None:
            return CallCheck(checked=False)
        problems = problems_of(validator, arguments)
        if not problems:
            return CallCheck(checked=True)
        manifest = manifests.manifest_for(tool)[0]
        correction = argument_correction(
            tool, manifest.parameters, validator, problems, "", arguments=arguments
        )
        return CallCheck(
            checked=True,
            correction=correction,
            llm_message=correction_message(tool, correction, self._message_format),
        )

    def wordless(self) -> Engine:
        """This engine, deciding alike but wording nothing: each decision's reason and
        messages are empty, its correction None, its consequences without reasons. Every
        other field, and every event, is what this engine gives; a replay compares those,
        and words only the decisions it shows."""
        twin = copy.copy(self)
        twin._wording = False
        return twin

    def default_deadline(self, now: datetime) -> datetime:
        """The deadline of a turn begun at ``now`` without one."""
        return now + self._turn_deadline

    def beginning(
        self, turn_id: str, turn: TurnHistory | None, now: datetime
    ) -> tuple[EventDetail, ...]:
        """A TurnBegan, with the default deadline, for a turn errord has not seen yet."""
        if turn is not None:
            return ()
        return (TurnBegan(turn_id=turn_id, deadline=self.default_deadline(now)),)

    def _decision(
        self, context: DecisionContext, verdict: Verdict, manifests: ManifestSnapshot
    ) -> Decision:
        if not self._wording:
            return _decision_of(context, verdict, manifests, UNWORDED, None, verdict.consequences)
        correction = None
        if verdict.action is Action.RETURN_TO_MODEL:
            correction = correction_for(context, verdict.corrections_left)
        elif verdict.corrections_spent is not None:
            # What was wrong, for the user's sake; no hint to call again, which is over.
            correction = structs.replace(correction_for(context, 0), retry_hint="")
        messages = compose(context, verdict, correction, self._message_format)
        consequences = consequence_reasons(context, verdict)
        return _decision_of(context, verdict, manifests, messages, correction, consequences)


UNWORDED = Messages("", "", "", "")
"""The texts of a decision a wordless engine makes."""


def _decision_of(
    context: DecisionContext,
    verdict: Verdict,
    manifests: ManifestSnapshot,
    messages: Messages,
    correction: Correction | None,
    consequences: tuple[Consequence, ...],
) -> Decision:
    report = context.report
    return Decision(
        decision_id=context.decision_id,
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
        consequences=consequences,
        breaker=context.breaker.state,
        default_value=(
            context.plan.default.value
            if verdict.action is Action.USE_DEFAULT and context.plan.default
            else None
        ),
        correction=correction,
        recalled=tuple(
            Recalled(
                recovery=name,
                succeeded=e.succeeded,
                failed=e.failed,
                unknown=e.unknown,
                from_fleet=e.from_fleet,
            )
            for name, e in context.memory.items()
        ),
    )


def _turn_part(report: FailureReport, turn: TurnHistory | None, mistake: str) -> TurnPart:
    if turn is None:
        return TurnPart()
    calls = len(turn.calls) + (report.call_id not in turn.calls)
    return TurnPart(
        began_at=turn.began_at,
        calls=calls,
        retries=turn.retries,
        deadline=turn.deadline,
        retry_budget=turn.retry_budget,
        corrections=turn.corrections,
        told=turn.told(mistake) if mistake else 0,
    )


ARGUMENT_CODES = frozenset({ErrorCode.INVALID_INPUT, ErrorCode.SCHEMA_VIOLATION})
"""Codes of failures whose reported arguments errord checks against the tool's schema."""


def _problems(
    report: FailureReport, code: ErrorCode, validator: CallValidator | None
) -> tuple[ParameterProblem, ...]:
    """How the reported arguments break the tool's schema, for a failure that says they
    may be invalid."""
    if validator is None or code not in ARGUMENT_CODES or not report.arguments:
        return ()
    return problems_of(validator, report.arguments)


RECOVERIES = frozenset({Action.RETRY, Action.USE_ALTERNATIVE})
"""Actions whose outcome the next attempt tells: what episodic memory learns from."""


def _opened(
    context: DecisionContext, decision: Decision, manifests: ManifestSnapshot, error: Signature
) -> Episode | None:
    """The episode ``decision`` begins, if it is a recovery whose outcome will be told."""
    if decision.action not in RECOVERIES:
        return None
    report = context.report
    if decision.action is Action.RETRY:
        via, attempt = report.tool, report.attempt + 1
    else:
        via, attempt = decision.alternative_tool or report.tool, 1
    timeout = decision.next_attempt_timeout or manifests.manifest_for(via)[0].timeout
    return Episode(
        tool=report.tool,
        signature=error.key,
        fingerprint=error.fingerprint,
        action=decision.action,
        decision_id=decision.decision_id,
        decided_at=context.now,
        via=via,
        attempt=attempt,
        until=context.now + timedelta(seconds=decision.delay + timeout),
        scope=report.scope,
    )


def _closed(
    call: CallHistory | None, tool: str, attempt: int, outcome: EpisodeOutcome, now: datetime
) -> ClosedEpisode | None:
    """The episode attempt ``attempt`` of ``tool`` ends, with ``outcome``, if it ends one."""
    episode = call.awaited_by(tool, attempt) if call is not None else None
    return None if episode is None else ClosedEpisode(episode=episode, outcome=outcome, at=now)


def _plan_part(
    call_id: str, manifest: ToolManifest, turn: TurnHistory | None, manifests: ManifestSnapshot
) -> PlanPart:
    """The call's fallbacks, from the turn's plan where it says, else from the tool's
    manifest; and the calls of the plan that wait on it."""
    plan = turn.plan if turn is not None else ()
    planned = next((call for call in plan if call.call_id == call_id), None) if plan else None
    if turn is None or planned is None:
        return PlanPart(optional=manifest.optional, default=manifest.default)
    waiting = tuple(
        _waiting(call, manifests.manifest_for(call.tool)[0], turn)
        for call in waiting_on(plan, call_id)
    )
    return PlanPart(_optional(planned, manifest), _default(planned, manifest), waiting)


def _waiting(call: PlannedCall, manifest: ToolManifest, turn: TurnHistory) -> Waiting:
    return Waiting(
        call,
        optional=_optional(call, manifest),
        default=_default(call, manifest),
        pending=_pending(turn, call.call_id),
    )


def _optional(call: PlannedCall, manifest: ToolManifest) -> bool:
    return manifest.optional if call.optional is None else call.optional


def _default(call: PlannedCall, manifest: ToolManifest) -> DefaultValue | None:
    return manifest.default if call.default is None else call.default


def _pending(turn: TurnHistory, call_id: str) -> bool:
    progress = turn.progress.get(call_id)
    return progress is None or progress.status is CallStatus.PENDING


def _probe(decision: Decision, context: DecisionContext) -> Probe:
    """The retry ``decision`` grants, as the breaker's probe: released if its outcome has
    not arrived after the delay and the timeout the executor enforces."""
    until = context.now + timedelta(seconds=decision.delay + context.breaker.probe_time)
    return Probe(
        turn_id=decision.turn_id,
        call_id=decision.call_id,
        attempt=decision.attempt + 1,
        until=until,
    )


def _history(activity: ToolActivity | None) -> ToolHistory:
    if activity is None:
        return NO_HISTORY
    return ToolHistory(activity.succeeded_at, activity.reset_at)


NO_HISTORY = ToolHistory()


def _rate_limited(report: FailureReport, window: RateWindow) -> RateLimited:
    return RateLimited(tool=report.tool, window=window, turn_id=report.turn_id, scope=report.scope)


def _open_tools(
    tools: tuple[str, ...],
    scope: str,
    breaker_of: BreakerViews,
    now: datetime,
    gate: BreakerGate = ungated,
) -> frozenset[str]:
    """Those of ``tools`` whose breaker in ``scope`` (the failed call's: an alternative
    is read where the call ran), as ``gate`` lets it act, is open at ``now``."""
    open_tools = []
    for tool in tools:
        key = tool_key(tool, scope)
        breaker = breaker_of(key)
        if gate is not ungated:
            breaker = gate(key, breaker or CLOSED_BREAKER, now)
        if breaker is not None and breaker.effective_phase(now) is BreakerPhase.OPEN:
            open_tools.append(tool)
    return frozenset(open_tools)


def _transitions(
    tool: str, scope: str, turn_id: str, stepped: breakers.Stepped
) -> tuple[EventDetail, ...]:
    return tuple(
        BreakerChanged(tool=tool, change=change, breaker=state, turn_id=turn_id, scope=scope)
        for change, state in stepped.changes
    )


def _next_timeout(
    context: DecisionContext, verdict: Verdict, manifests: ManifestSnapshot
) -> float | None:
    if verdict.action is Action.RETRY:
        return context.manifest.timeout
    if verdict.alternative_tool is not None:
        return manifests.manifest_for(verdict.alternative_tool)[0].timeout
    return None
