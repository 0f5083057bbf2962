"""A turn's story: its events in order on a timeline, each decision with its reason,
what the model and the user were told, the rule that classified the error, and what
episodic memory and the breaker contributed.

Read from the turn's events (errord.state.store.reader: the ``events_by_turn`` index, a
page of PAGE_SIZE events at a time) and its committed state; the words for a decision's
parts are here, the layout in the ``story.html`` template.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final
from urllib.parse import quote

from errord.decide.model import (
    Action,
    BreakerPhase,
    BreakerState,
    Decision,
    Outcome,
    Recalled,
    Refusal,
    RefusalKind,
)
from errord.decide.model.events import (
    BreakerChanged,
    FailureEvent,
    OutcomeEvent,
    RateLimited,
    TraceEvent,
    TurnEnded,
)
from errord.decide.model.scope import scoped_name
from errord.ops.console.charts import Point, Timeline, timeline
from errord.state.store.reader import TraceReader, TurnRecord

PAGE_SIZE: Final = 500
"""Events a page of a turn's story shows."""
TURN_LANE: Final = "(turn)"
BREAKER_LANE: Final = "(breakers)"


@dataclass(frozen=True, slots=True)
class TraceLink:
    """The link from a turn to its spans: ``template`` with ``{trace_id}`` (the trace
    errord's spans of the turn are in, unless its executor sent a trace context of its
    own) and ``{turn_id}`` replaced."""

    template: str
    trace_id: Callable[[str], bytes]

    def of(self, turn_id: str) -> str:
        return self.template.format(
            trace_id=self.trace_id(turn_id).hex(), turn_id=quote(turn_id, safe="")
        )


@dataclass(frozen=True, slots=True)
class Entry:
    """One event of the story, with its time since the turn began."""

    event: TraceEvent
    offset: float

    @property
    def kind(self) -> str:
        return self.event.kind.value

    @property
    def anchor(self) -> str:
        return f"e{self.event.sequence}"


@dataclass(frozen=True, slots=True)
class Story:
    turn_id: str
    record: TurnRecord | None
    """The turn's state; None when only its events are left (a turn being removed)."""
    entries: tuple[Entry, ...]
    timeline: Timeline
    began_at: datetime
    next_after: int | None
    """The last sequence of this page when more events follow."""
    after: int
    """The sequence this page begins after (0: the first page)."""
    user: str
    trace_url: str | None


def read_story(
    reader: TraceReader, turn_id: str, after: int = 0, link: TraceLink | None = None
) -> Story | None:
    """In the console's thread: a page of the turn's story; None when the trace holds
    nothing of the turn."""
    record = reader.turn(turn_id)
    events = reader.turn_events(turn_id, after=after, limit=PAGE_SIZE + 1)
    if record is None and not events and not after:
        return None
    more = len(events) > PAGE_SIZE
    events = events[:PAGE_SIZE]
    began_at = record.state.began_at if record is not None else _first_time(events)
    entries = tuple(
        Entry(event, max(0.0, (event.time - began_at).total_seconds())) for event in events
    )
    return Story(
        turn_id,
        record,
        entries,
        timeline(tuple(_point(entry) for entry in entries)),
        began_at,
        events[-1].sequence if more else None,
        after,
        reader.user_of(turn_id),
        link.of(turn_id) if link is not None else None,
    )


def _first_time(events: list[TraceEvent]) -> datetime:
    return events[0].time if events else datetime.now(UTC)


def _point(entry: Entry) -> Point:
    detail = entry.event.detail
    label = f"#{entry.event.sequence} +{entry.offset:.3f} s {mark_words(entry.event)}"
    if isinstance(detail, FailureEvent):
        decision = detail.decision
        wait = decision.delay if decision.action is Action.RETRY else 0.0
        return Point(detail.report.call_id, entry.offset, "failure", entry.anchor, label, wait)
    if isinstance(detail, OutcomeEvent):
        kind = "success" if detail.report.outcome is Outcome.SUCCESS else "failure"
        return Point(detail.report.call_id, entry.offset, kind, entry.anchor, label)
    if isinstance(detail, BreakerChanged | RateLimited):
        kind = "breaker" if isinstance(detail, BreakerChanged) else "rate"
        return Point(BREAKER_LANE, entry.offset, kind, entry.anchor, label)
    return Point(TURN_LANE, entry.offset, "turn", entry.anchor, label)


def mark_words(event: TraceEvent) -> str:
    """The event in a few words, for its mark on the timeline."""
    detail = event.detail
    if isinstance(detail, FailureEvent):
        report = detail.report
        tool = scoped_name(report.tool, report.scope)
        return f"{report.call_id}: {tool} attempt {report.attempt} failed, " + (
            decision_words(detail.decision)
        )
    if isinstance(detail, OutcomeEvent):
        told = detail.report
        tool = scoped_name(told.tool, told.scope)
        return f"{told.call_id}: {tool} attempt {told.attempt} {told.outcome.value}"
    if isinstance(detail, BreakerChanged):
        return f"breaker of {scoped_name(detail.tool, detail.scope)} {detail.change.value}"
    if isinstance(detail, RateLimited):
        tool = scoped_name(detail.tool, detail.scope)
        return f"{tool} rate-limited until {clock(detail.window.until)}"
    if isinstance(detail, TurnEnded):
        return "turn ended"
    return event.kind.value.replace("_", " ")


def decision_words(decision: Decision) -> str:
    """The action and its parameters: ``RETRY after 0.5 s``, ``USE_ALTERNATIVE hotels_b``."""
    action = decision.action
    text = action.value
    if action is Action.RETRY:
        text += f" after {seconds(decision.delay)}"
        if decision.probe:
            text += " (the half-open breaker's probe)"
    elif action is Action.USE_ALTERNATIVE and decision.alternative_tool:
        text += f" {decision.alternative_tool}"
    return text


REFUSALS: Final = {
    RefusalKind.PERMANENT_ERROR: "the error is permanent: a retry fails alike",
    RefusalKind.NOT_IDEMPOTENT: "the tool is not idempotent",
    RefusalKind.ATTEMPTS_EXHAUSTED: "attempt {attempt} was the last the policy allows",
    RefusalKind.RETRY_TIME_EXHAUSTED: "{spent:g} s of the {limit:g} s of retry time spent",
    RefusalKind.RETRY_AFTER_TOO_LONG: "the tool asked to wait {wait:g} s, more than {limit:g} s",
    RefusalKind.BREAKER_OPEN: "the breaker is open",
    RefusalKind.BREAKER_PROBING: "the half-open breaker's one probe is taken",
    RefusalKind.RETRY_BUDGET_SPENT: "the turn's retry budget is spent ({granted} granted)",
    RefusalKind.DEADLINE: "a retry would not end before the turn's deadline",
    RefusalKind.RETRIES_NEVER_FIX: (
        "episodic memory: retries fixed {recovered:.1f} of {tried:.1f} bursts of this error"
    ),
}


def refusal_words(refusal: Refusal) -> str:
    """Why no retry was granted, with the figures that decided it."""
    return REFUSALS[refusal.kind].format(
        attempt=refusal.attempt,
        spent=refusal.spent,
        limit=refusal.limit,
        wait=refusal.wait,
        granted=refusal.granted,
        recovered=refusal.recovered,
        tried=refusal.tried,
    )


def memory_words(recalled: Recalled) -> str:
    """One recovery's evidence as the decision read it."""
    name = recalled.recovery.replace("USE_ALTERNATIVE:", "the alternative ")
    text = f"{name.lower() if name == 'RETRY' else name}: fixed it in {recalled.succeeded:.1f} "
    text += f"bursts, failed in {recalled.failed:.1f}"
    if round(recalled.unknown, 1):
        text += f", {recalled.unknown:.1f} never told"
    return text


def breaker_words(state: BreakerState) -> str:
    """The breaker as a decision or a change left it."""
    phase = state.phase
    if phase is BreakerPhase.OPEN:
        if state.half_opens_at is None:
            return "open until an operator resets it"
        text = f"open until {clock(state.half_opens_at)}"
        if state.break_length is not None:
            text += f" (a {seconds(state.break_length)} break"
            text += f", opening {state.streak} in a row)" if state.streak > 1 else ")"
        return text
    if phase is BreakerPhase.HALF_OPEN:
        return "half-open: one probe at a time"
    text = "closed"
    if state.failures:
        text += f", {state.failures} consecutive transient failure{'s' * (state.failures > 1)}"
    if state.seen:
        text += f", {state.recent_failures} of its last {state.seen} attempts failed"
    return text


def clock(moment: datetime) -> str:
    """The time of day in UTC, to the millisecond."""
    return moment.astimezone(UTC).strftime("%H:%M:%S.%f")[:-3]


def seconds(value: float) -> str:
    return f"{round(value, 3):g} s"
