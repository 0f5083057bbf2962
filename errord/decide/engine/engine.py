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

from msgspec import Struct, structs

from errord.decide.classify import fault_of
from errord.decide.engine.context_parts import (
    ARGUMENT_CODES,
    open_tools,
    plan_part,
    reported_problems,
    tool_history,
    turn_part,
)
from errord.decide.engine.recording import (
    closed_episode,
    decision_of,
    ended_execution,
    opened_episode,
    probe_of,
    rate_limited_event,
    transitions,
)
from errord.decide.engine.views import (
    ActivityViews,
    BreakerGate,
    BreakerViews,
    CallHistory,
    MemoryViews,
    Reads,
    TurnHistory,
    WindowViews,
    no_activity,
    no_breakers,
    no_memory,
    no_windows,
    ungated,
)
from errord.decide.health import breaker as breakers
from errord.decide.health import is_rate_limit, was_refused, window_after
from errord.decide.manifest import ManifestSnapshot
from errord.decide.memory import recall
from errord.decide.model import (
    CLOSED_BREAKER,
    Action,
    Correction,
    Decision,
    EpisodeOutcome,
    ErrorClass,
    ErrorCode,
    EventDetail,
    FailureEvent,
    FailureReport,
    Fault,
    JSONValue,
    Outcome,
    OutcomeEvent,
    OutcomeReport,
    TurnBegan,
)
from errord.decide.policy import (
    BreakerPart,
    CallPart,
    DecisionContext,
    RecoveryPolicy,
    Verdict,
    own_request,
    probe_role,
)
from errord.decide.texts import (
    MessageFormat,
    Messages,
    argument_correction,
    compose,
    consequence_reasons,
    correction_for,
    correction_message,
    mistake_key,
    problems_of,
)


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
        problems = reported_problems(report, classification.code, tool.validator)
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
            turn=turn_part(report, turn, mistake),
            now=now,
            breaker=BreakerPart(
                gated,
                open_tools(manifest.alternatives, report.scope, breaker_of, now, gate),
                window_of(key),
                tool.manifest.timeout,
            ),
            plan=plan_part(report.call_id, manifest, turn, manifests),
            problems=problems,
            memory=memory,
            decision_id=decision_id or self._new_id(),
            history=tool_history(activity),
        )
        verdict = self._policy.decide(context)
        decision = self._decision(context, verdict, manifests)
        if gated is not own:  # the fleet's breaker decided; the trace keeps the host's own
            decision = structs.replace(decision, breaker=own)
        if probe_role(context, verdict) == "probe":
            probe = probe_of(decision, context)
            decision = structs.replace(
                decision, breaker=breakers.with_probe(stepped.state, probe), probe=True
            )
        failure = FailureEvent(
            report=report,
            decision=decision,
            opens=opened_episode(context, decision, manifests, error),
            closes=closed_episode(call, report.tool, report.attempt, EpisodeOutcome.FAILED, now),
            mistake=mistake if decision.action is Action.RETURN_TO_MODEL else "",
            execution=ended_execution(report, decision.action, refused, call),
        )
        window = (
            window_after(
                context.breaker.window,
                now,
                own_request(context),
                decision,
                manifest.retry_policy.max_delay,
            )
            if rate_limited and is_rate_limit(classification, refused)
            else None
        )
        return Decided(
            decision,
            (
                *self.beginning(report.turn_id, turn, now),
                *transitions(report.tool, report.scope, report.turn_id, stepped),
                *(() if window is None else (rate_limited_event(report, window),)),
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
            *transitions(report.tool, report.scope, report.turn_id, stepped),
            OutcomeEvent(
                report=report,
                breaker=None if stepped.state == before else stepped.state,
                closes=closed_episode(call, report.tool, report.attempt, told, now),
                execution=(
                    (call.run_time(report.tool) if call is not None else 0.0) + report.duration
                    if succeeded
                    else None
                ),
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
            return decision_of(context, verdict, manifests, UNWORDED, None, verdict.consequences)
        correction = None
        if verdict.action is Action.RETURN_TO_MODEL:
            correction = correction_for(context, verdict.corrections_left)
        elif verdict.corrections_spent is not None:
            # What was wrong, for the user's sake; no hint to call again, which is over.
            correction = structs.replace(correction_for(context, 0), retry_hint="")
        messages = compose(context, verdict, correction, self._message_format)
        consequences = consequence_reasons(context, verdict)
        return decision_of(context, verdict, manifests, messages, correction, consequences)


UNWORDED = Messages("", "", "", "")
"""The texts of a decision a wordless engine makes."""
