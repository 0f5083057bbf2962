"""What errord tells the model of a call it holds no result for.

When an executor reconciles a turn's results (errord.decide.texts.tool_results), a call
without one gets a synthesized error result: from where the call stands in its
turn, else from its last event in the trace, the decision on it or a success.
"""

from __future__ import annotations

from errord.decide.model import CallProgress, CallStatus, Outcome
from errord.decide.model.events import EventDetail, FailureEvent, OutcomeEvent
from errord.decide.texts.tool_results import Synthesized, ToolCall


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
