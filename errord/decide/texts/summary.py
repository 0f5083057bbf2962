"""A turn's summary: each call's final status, and a notice the user can read.

A turn that reaches its deadline does not stop its running
tools; it keeps what completed, skips the rest and tells the user, as in
"Completed flight search, but hotel search timed out." At EndTurn every call
still pending is given its final status here: TIMED_OUT when the turn ends at or
after its deadline, SKIPPED when the executor ends it earlier.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from errord.decide.model import CallProgress, CallStatus, CallSummary, TurnSummary

COMPLETED = (CallStatus.SUCCEEDED, CallStatus.PARTIAL, CallStatus.DEFAULTED)
"""Statuses of a call whose result, or a stand-in, the turn goes on with."""

PROBLEMS: tuple[tuple[CallStatus, str, str], ...] = (
    (CallStatus.TIMED_OUT, "timed out", "timed out"),
    (CallStatus.FAILED, "failed", "failed"),
    (CallStatus.SKIPPED, "was skipped", "were skipped"),
)
"""How the notice says what did not complete: the status, its verb for one and for many."""

COMPLETED_NOTES = {
    CallStatus.PARTIAL: " (partial results)",
    CallStatus.DEFAULTED: " (a standard result)",
}


def summarize(
    turn_id: str,
    began_at: datetime,
    deadline: datetime | None,
    progress: Mapping[str, CallProgress],
    now: datetime,
) -> TurnSummary:
    """The summary of the turn ``turn_id`` ending at ``now``."""
    out_of_time = deadline is not None and now >= deadline
    calls = tuple(
        _final(call_id, call, out_of_time=out_of_time) for call_id, call in progress.items()
    )
    return TurnSummary(
        turn_id=turn_id,
        began_at=began_at,
        ended_at=now,
        deadline=deadline,
        calls=calls,
        user_notice=user_notice(calls),
    )


def _final(call_id: str, call: CallProgress, *, out_of_time: bool) -> CallSummary:
    status = call.status
    if status is CallStatus.PENDING:
        status = CallStatus.TIMED_OUT if out_of_time else CallStatus.SKIPPED
    return CallSummary(
        call_id=call_id,
        tool=call.tool,
        status=status,
        detail=_detail(call, status),
        blocked_by=call.blocked_by,
        decisions=call.decisions,
    )


def _detail(call: CallProgress, status: CallStatus) -> str:
    last = call.decisions[-1] if call.decisions else None
    if call.blocked_by:
        return f"depends on {call.blocked_by}, which ended without a result"
    if call.status is CallStatus.PENDING:
        if status is CallStatus.TIMED_OUT:
            return "had not finished at the turn's deadline"
        return "had not finished when the turn ended"
    if last is not None:
        return f"attempt {last.attempt} of {last.tool} failed; decided {last.action.value}"
    return "reported a success" if status is CallStatus.SUCCEEDED else ""


def user_notice(calls: Iterable[CallSummary]) -> str:
    """What the turn did, in one or two plain sentences."""
    calls = tuple(calls)
    if not calls:
        return "No tool was called."
    completed = [
        label(call.tool) + COMPLETED_NOTES.get(call.status, "")
        for call in calls
        if call.status in COMPLETED
    ]
    problems = []
    for status, one, many in PROBLEMS:
        tools = [label(call.tool) for call in calls if call.status is status]
        if tools:
            problems.append(f"{listing(tools)} {one if len(tools) == 1 else many}")
    if not problems:
        return f"Completed {listing(completed)}."
    if not completed:
        return f"Could not complete the request: {listing(problems)}."
    return f"Completed {listing(completed)}, but {listing(problems)}."


def label(tool: str) -> str:
    """A tool's name as a person reads it: ``hotel_search`` is "hotel search"."""
    return tool.replace("_", " ").replace("-", " ").strip() or tool


def listing(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"; an item named more than once, once with its count."""
    counted = {item: items.count(item) for item in items}
    named = [item if count == 1 else f"{item} ({count} calls)" for item, count in counted.items()]
    if len(named) == 1:
        return named[0]
    return f"{', '.join(named[:-1])} and {named[-1]}"
