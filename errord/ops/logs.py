"""The daemon's log: one line per record on stderr (journald adds the time), as logfmt or
JSON, and one structured line per decision.

A record may carry ``extra={"fields": {...}}``: each field becomes a key of the line.
gRPC's and aiosqlite's own loggers stay at WARNING and INFO unless the level asks for
less, so that debug logging shows errord's lines, not every statement and poll.

Decision lines are on the path of every report, so they skip the logging machinery
(a record, a handler lock, a write and a flush per line cost about 75 µs of CPU a
decision, 15 % of the daemon's): each is formatted directly, in the same layout, and
the lines of one turn of the event loop (the decisions of one group commit) are written
to stderr together, the way the trace itself is.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from collections.abc import Mapping
from enum import Enum
from typing import Any, TextIO

from errord.decide.model import Action, Decision, FailureReport

decisions = logging.getLogger("errord.decisions")
_NEEDS_QUOTES = re.compile(r'[\s"=\\]')


class LogFormat(Enum):
    LOGFMT = "logfmt"
    JSON = "json"


class LogfmtFormatter(logging.Formatter):
    """``level=info logger=errord msg="..." key=value ...``, one line per record."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{key}={_logfmt_value(value)}" for key, value in _pairs(self, record))


class JsonFormatter(logging.Formatter):
    """One JSON object per record: level, logger, msg and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(dict(_pairs(self, record)), ensure_ascii=False, default=str)


class DecisionLines:
    """Decision lines for ``stream``, written together once per turn of the event loop."""

    def __init__(self, stream: TextIO, log_format: LogFormat) -> None:
        self._stream = stream
        self._format = log_format
        self._pending: list[str] = []

    def add(self, fields: Mapping[str, object]) -> None:
        if self._format is LogFormat.LOGFMT:
            pairs = " ".join(f"{key}={_logfmt_value(value)}" for key, value in fields.items())
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


_decision_lines = DecisionLines(sys.stderr, LogFormat.LOGFMT)


def configure(level: int, log_format: LogFormat) -> None:
    """Log to stderr at ``level`` in ``log_format``, the chatty libraries held back."""
    global _decision_lines
    _decision_lines = DecisionLines(sys.stderr, log_format)
    handler = logging.StreamHandler(sys.stderr)
    formatter = LogfmtFormatter() if log_format is LogFormat.LOGFMT else JsonFormatter()
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # aiosqlite logs every statement with its parameters at debug: whole trace rows.
    logging.getLogger("aiosqlite").setLevel(max(level, logging.INFO))
    logging.getLogger("grpc").setLevel(max(level, logging.WARNING))
    logging.getLogger("asyncio").setLevel(max(level, logging.WARNING))


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


def _pairs(formatter: logging.Formatter, record: logging.LogRecord) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = [
        ("level", record.levelname.lower()),
        ("logger", record.name),
        ("msg", record.getMessage()),
    ]
    fields: Mapping[str, object] = getattr(record, "fields", {})
    pairs += fields.items()
    if record.exc_info:
        pairs.append(("error", formatter.formatException(record.exc_info)))
    return pairs


def _logfmt_value(value: object) -> str:
    text = str(value)
    if text and _NEEDS_QUOTES.search(text) is None:
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped.replace(chr(9), chr(92) + "t")}"'
