"""What follows each commit: the watchers told, the decisions and breaker changes logged.

The store's writer calls its ``AfterCommit`` with every batch it commits, in sequence
order, before any waiter of the batch wakes: WatchTrace's feed gets the events
(errord.state.feed), WatchTools' the tools whose breaker or rate-limit window changed
(errord.state.breaker_feed), the log a line per decision and per breaker change, and, in
a fleet, its link to the other hosts (errord.fleet).
Nothing here awaits, and nothing is published that is not durable.

Decision lines are on the path of every report, so they skip the logging machinery
(a record, a handler lock, a write and a flush per line cost about 75 µs of CPU a
decision, 15 % of the daemon's): each is formatted directly, in the layout of the
daemon's log (errord.ops.logs), and the lines of one turn of the event loop (the
decisions of one group commit) are written to stderr together, the way the trace
itself is.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from errord.decide.model import Action, BreakerChange, BreakerPhase, Decision, FailureReport
from errord.decide.model.events import BreakerChanged, FailureEvent, TraceEvent
from errord.decide.model.scope import scoped_name
from errord.state.breaker_feed import BreakerFeed
from errord.state.feed import TraceFeed

LOG = logging.getLogger("errord")
decisions = logging.getLogger("errord.decisions")
_NEEDS_QUOTES = re.compile(r'[\s"=\\]')


class AfterCommit:
    """Follows each committed batch: the feeds of watchers, then the log."""

    def __init__(self) -> None:
        self.trace = TraceFeed()
        """WatchTrace's watchers."""
        self.tools = BreakerFeed()
        """WatchTools' watchers: executors keeping their tools' breakers and windows."""
        self.shared: Callable[[Sequence[TraceEvent]], None] | None = None
        """Told each batch after the watchers and the log: a fleet's link (errord.fleet)."""

    def __call__(self, events: Sequence[TraceEvent]) -> None:
        self.trace.publish(events)
        self.tools.publish(events)
        for event in events:
            detail = event.detail
            if type(detail) is FailureEvent:
                log_decision(detail.report, detail.decision)
                LOG.debug("%s: %s", detail.decision.technical_message, detail.decision.reason)
            elif type(detail) is BreakerChanged:
                log_breaker_change(detail)
        if self.shared is not None:
            self.shared(events)

    def close(self) -> None:
        """Release every watcher: the daemon is shutting down."""
        self.trace.close()
        self.tools.close()


class DecisionLines:
    """Decision lines for ``stream``, written together once per turn of the event loop."""

    def __init__(self, stream: TextIO, as_json: bool = False) -> None:
        self._stream = stream
        self._json = as_json
        self._pending: list[str] = []

    def add(self, fields: Mapping[str, object]) -> None:
        if not self._json:
            pairs = " ".join(f"{key}={logfmt_value(value)}" for key, value in fields.items())
            line = f"level=info logger={decisions.name} msg=decision {pairs}\n"
        else:
            record = {"level": "info", "logger": decisions.name, "msg": "decision", **fields}
            line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        if not self._pending:
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:  # no event loop: write it now
                self._pending.append(line)
                self.flush()
                return
        self._pending.append(line)

    def flush(self) -> None:
        lines, self._pending = self._pending, []
        try:
            self._stream.write("".join(lines))
            self._stream.flush()
        except (OSError, ValueError):  # stderr closed: nothing to log to
            pass


_decision_lines = DecisionLines(sys.stderr)


def write_decision_lines(stream: TextIO, *, as_json: bool) -> None:
    """Write decision lines to ``stream``, as JSON objects or as logfmt."""
    global _decision_lines
    _decision_lines = DecisionLines(stream, as_json)


def log_decision(report: FailureReport, decision: Decision) -> None:
    """The decision's line at INFO: what was decided and why, never the tool's input or
    the error's text (which may carry what redaction could not recognise)."""
    if not decisions.isEnabledFor(logging.INFO):
        return
    classification = decision.classification
    fields: dict[str, object] = {
        "turn": report.turn_id,
        "call": report.call_id,
        "tool": report.tool,
        "attempt": report.attempt,
        "code": classification.code.value,
        "class": classification.error_class.value,
        "rule": classification.rule,
        "action": decision.action.value,
    }
    if report.scope:
        fields["scope"] = report.scope
    if decision.action is Action.RETRY:
        fields["delay_ms"] = round(decision.delay * 1000)
    if decision.alternative_tool:
        fields["alternative"] = decision.alternative_tool
    if decision.refusal is not None:
        fields["refusal"] = decision.refusal.kind.value
    fields["decision"] = decision.decision_id
    _decision_lines.add(fields)


CHANGE_WORDS = {
    BreakerChange.OPENED: "opened",
    BreakerChange.HALF_OPENED: "half-opened",
    BreakerChange.CLOSED: "closed",
    BreakerChange.RESET: "reset",
    BreakerChange.FORCED_OPEN: "forced open",
    BreakerChange.PROBE_CLAIMED: "probe claimed",
}


def log_breaker_change(change: BreakerChanged) -> None:
    """The change's line: WARNING while the breaker is open, else INFO."""
    breaker = change.breaker
    text = f"circuit breaker of {scoped_name(change.tool, change.scope)} "
    text += CHANGE_WORDS[change.change]
    if change.by:
        text += f" by {change.by}"
    if change.change is BreakerChange.OPENED:
        text += (
            f" after {breaker.failures} consecutive transient failures "
            f"({breaker.recent_failures} of its last {breaker.seen} attempts failed)"
        )
    if breaker.phase is BreakerPhase.OPEN:
        until, length = breaker.half_opens_at, breaker.break_length
        if until is None or length is None:
            text += "; open until reset"
        else:
            text += f"; half-opens at {until.isoformat()}, a {length:g} s break"
    level = logging.WARNING if breaker.phase is BreakerPhase.OPEN else logging.INFO
    LOG.log(level, "%s", text)


def logfmt_value(value: object) -> str:
    """``value`` as one logfmt value: quoted and escaped when it must be."""
    text = str(value)
    if text and _NEEDS_QUOTES.search(text) is None:
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped.replace(chr(9), chr(92) + "t")}"'
