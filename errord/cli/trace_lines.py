"""Trace events as one line each, for ``errord trace`` and ``errord tail``.

A line reads: time (UTC), sequence, the turn (when several turns are shown),
the event's kind, what it is about (a call's id, tool and attempt, or a tool),
then what happened, e.g.::

    2025-06-01T12:00:00.125Z  #7  failure  c1 search attempt 1  RETRY after 0.5 s [TIMEOUT ...
    2025-06-01T12:00:01.002Z  #8  outcome  c1 search attempt 2  SUCCESS in 0.3 s

An event kind this module does not know (from a newer daemon) shows its name only.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable
from datetime import UTC

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

REASON_WIDTH = 80
"""Reasons, notices and operator notes are shortened to this many characters."""


def event_line(event: pb.TraceEvent, *, with_turn: bool = True) -> str:
    """The event as one line; ``with_turn`` names its turn, for lines of several turns."""
    kind = event.WhichOneof("event") or "unknown"
    parts = [timestamp(event.time), f"#{event.sequence}"]
    if with_turn:
        parts.append(event.turn_id or "-")
    parts.append(kind)
    if subject := _subject(event):
        parts.append(subject)
    describe = _DESCRIPTIONS.get(kind)
    if describe is not None:
        parts.append(describe(event))
    return "  ".join(parts)


def timestamp(time: timestamp_pb2.Timestamp) -> str:
    """ISO 8601 in UTC to the millisecond, e.g. ``2025-06-01T12:00:00.125Z``."""
    moment = time.ToDatetime(tzinfo=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def duration(span: duration_pb2.Duration) -> str:
    """Seconds to the millisecond without trailing zeros, e.g. ``0.5 s``."""
    return f"{round(span.seconds + span.nanos / 1e9, 3):g} s"


def shorten(text: str) -> str:
    """``text`` on one line, cut at a word to REASON_WIDTH characters."""
    return textwrap.shorten(text, REASON_WIDTH, placeholder=" …")


def word(enum: EnumTypeWrapper, value: int, prefix: str) -> str:
    """An enum value's name without its prefix (RETRY); the number for a value unknown here."""
    try:
        return enum.Name(value).removeprefix(prefix)
    except ValueError:
        return str(value)


def _subject(event: pb.TraceEvent) -> str:
    tool = f"{event.tool} @ {event.scope}" if event.scope else event.tool
    if event.call_id:
        return f"{event.call_id} {tool} attempt {event.attempt}"
    return tool


def _failure(event: pb.TraceEvent) -> str:
    decision = event.failure.decision
    action = word(pb.RecoveryAction, decision.action, "RECOVERY_ACTION_")
    text = action
    if action == "RETRY":
        text += f" after {duration(decision.delay)}"
    elif action == "USE_ALTERNATIVE":
        text += f" {decision.alternative_tool}"
    if decision.probe:
        text += " (probe)"
    verdict = decision.classification
    code = word(pb.ErrorCode, verdict.code, "ERROR_CODE_")
    error_class = word(pb.ErrorClass, verdict.error_class, "ERROR_CLASS_").lower()
    return f"{text} [{code} {error_class}]: {shorten(decision.reason)}"


def _outcome(event: pb.TraceEvent) -> str:
    outcome = event.outcome
    text = word(pb.Outcome, outcome.outcome, "OUTCOME_")
    if outcome.HasField("duration"):
        text += f" in {duration(outcome.duration)}"
    if outcome.HasField("breaker"):
        text += f", breaker {word(pb.BreakerPhase, outcome.breaker.phase, 'BREAKER_PHASE_')}"
    return text


def _turn_began(event: pb.TraceEvent) -> str:
    began = event.turn_began
    text = "began with its first report" if began.implicit else "began"
    if began.HasField("deadline"):
        text += f", deadline {timestamp(began.deadline)}"
    if began.plan:
        text += f", plan of {len(began.plan)} call{'s' if len(began.plan) != 1 else ''}"
    return text


def _breaker(event: pb.TraceEvent) -> str:
    change = event.breaker
    text = word(pb.BreakerChange, change.change, "BREAKER_CHANGE_")
    if change.breaker.HasField("half_opens_at"):
        text += f", half-opens at {timestamp(change.breaker.half_opens_at)}"
    if change.by:
        text += f", by {shorten(change.by)}"
    return text


def _turn_ended(event: pb.TraceEvent) -> str:
    summary = event.turn_ended.summary
    statuses = Counter(word(pb.CallStatus, call.status, "CALL_STATUS_") for call in summary.calls)
    text = f"{len(summary.calls)} call{'s' if len(summary.calls) != 1 else ''}"
    if statuses:
        text += ": " + ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    if summary.deadline_passed:
        text += ", deadline passed"
    if summary.user_notice:
        text += f"; {shorten(summary.user_notice)}"
    return text


def _memory_forgotten(event: pb.TraceEvent) -> str:
    forgotten = event.memory_forgotten
    count = len(forgotten.errors)
    tools = ", ".join(sorted({error.tool for error in forgotten.errors}))
    reason = word(pb.ForgetReason, forgotten.reason, "FORGET_REASON_")
    return f"{count} error{'s' if count != 1 else ''} of {tools or 'no tool'} ({reason})"


_DESCRIPTIONS: dict[str, Callable[[pb.TraceEvent], str]] = {
    "failure": _failure,
    "outcome": _outcome,
    "turn_began": _turn_began,
    "breaker": _breaker,
    "turn_ended": _turn_ended,
    "memory_forgotten": _memory_forgotten,
}
