"""One result per tool call: what the executor sends back to the model after a turn.

Model APIs reject a request whose tool calls lack a result, or whose results
answer calls that were never made.
``reconcile`` takes the model's calls, in order, and the results the executor
holds, and returns exactly one result per call, in call order: a held result is
kept (the first, when there are several for one call), a result for a call the
model did not make is dropped, and a call without one gets a synthesized error
result saying what became of it. Pure: what became of a call is looked up by
the caller (errord.handler, from the turn's trace), and ``synthesized`` words it: from
where the call stands in its turn, else from its last event in the trace, the decision
on it or a success.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from errord.decide.model import (
    CallProgress,
    CallStatus,
    ClosedEnum,
    EventDetail,
    FailureEvent,
    Outcome,
    OutcomeEvent,
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model made."""

    call_id: str
    tool: str


@dataclass(frozen=True, slots=True)
class HeldResult:
    """A result the executor holds for a call."""

    call_id: str
    content: str
    is_error: bool = False


class Origin(ClosedEnum):
    KEPT = "KEPT"
    """The executor's own result."""
    SYNTHESIZED = "SYNTHESIZED"
    """Made by errord for a call without a result."""


@dataclass(frozen=True, slots=True)
class Synthesized:
    """What to tell the model about a call that has no result, and why."""

    content: str
    note: str


@dataclass(frozen=True, slots=True)
class Reconciled:
    """The one result of one call."""

    call_id: str
    tool: str
    content: str
    is_error: bool
    origin: Origin
    note: str = ""
    """For a synthesized result, where its content comes from."""


class DropReason(ClosedEnum):
    DUPLICATE = "DUPLICATE"
    """A second result for a call that already has one."""
    UNKNOWN_CALL = "UNKNOWN_CALL"
    """A result for a call id the model did not use."""


@dataclass(frozen=True, slots=True)
class Dropped:
    """A held result left out, by its position among the held results."""

    index: int
    call_id: str
    reason: DropReason


@dataclass(frozen=True, slots=True)
class Reconciliation:
    results: tuple[Reconciled, ...]
    """Exactly one per call, in call order."""
    dropped: tuple[Dropped, ...]


def reconcile(
    calls: Sequence[ToolCall],
    held: Sequence[HeldResult],
    missing: Callable[[ToolCall], Synthesized],
) -> Reconciliation:
    """One result per call of ``calls`` (whose ids are distinct), in order.

    ``missing`` says what to tell the model about a call without a held result.
    """
    called = {call.call_id for call in calls}
    kept: dict[str, HeldResult] = {}
    dropped = []
    for index, result in enumerate(held):
        if result.call_id not in called:
            dropped.append(Dropped(index, result.call_id, DropReason.UNKNOWN_CALL))
        elif result.call_id in kept:
            dropped.append(Dropped(index, result.call_id, DropReason.DUPLICATE))
        else:
            kept[result.call_id] = result
    results = []
    for call in calls:
        own = kept.get(call.call_id)
        if own is not None:
            results.append(
                Reconciled(call.call_id, call.tool, own.content, own.is_error, Origin.KEPT)
            )
        else:
            made = missing(call)
            results.append(
                Reconciled(
                    call.call_id, call.tool, made.content, True, Origin.SYNTHESIZED, made.note
                )
            )
    return Reconciliation(tuple(results), tuple(dropped))


def tells_fate(detail: EventDetail, calls: set[str]) -> bool:
    """True for a decision on one of ``calls``, or a success of one (a failed outcome repeats
    a failure that has its decision)."""
    if isinstance(detail, FailureEvent):
        return detail.report.call_id in calls
    if isinstance(detail, OutcomeEvent):
        return detail.report.call_id in calls and detail.report.outcome is Outcome.SUCCESS
    return False


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


def _succeeded(fate: FailureEvent | OutcomeEvent | None) -> bool:
    return isinstance(fate, OutcomeEvent) and fate.report.outcome is Outcome.SUCCESS
