"""The daemon's log: one line per record on stderr (journald adds the time), as logfmt or
JSON, and one structured line per decision.

A record may carry ``extra={"fields": {...}}``: each field becomes a key of the line.
gRPC's and aiosqlite's own loggers stay at WARNING and INFO unless the level asks for
less, so that debug logging shows errord's lines, not every statement and poll.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from enum import Enum
from typing import Any

from errord.decide.model import Action, Decision, FailureReport

decisions = logging.getLogger("errord.decisions")


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


def configure(level: int, log_format: LogFormat) -> None:
    """Log to stderr at ``level`` in ``log_format``, the chatty libraries held back."""
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
    if decision.action is Action.RETRY:
        fields["delay_ms"] = round(decision.delay * 1000)
    if decision.alternative_tool:
        fields["alternative"] = decision.alternative_tool
    if decision.refusal is not None:
        fields["refusal"] = decision.refusal.kind.value
    fields["decision"] = decision.decision_id
    decisions.info("decision", extra={"fields": fields})


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
    if text and not any(c in text for c in ' "=\\\n\t'):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped.replace(chr(9), chr(92) + "t")}"'
