"""The daemon's log: one line per record on stderr (journald adds the time), as logfmt or
JSON.

A record may carry ``extra={"fields": {...}}``: each field becomes a key of the line.
gRPC's and aiosqlite's own loggers stay at WARNING and INFO unless the level asks for
less, so that debug logging shows errord's lines, not every statement and poll. The
line of each decision is written after its commit, in the same layout, without the
logging machinery (errord.state.after_commit).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from enum import Enum
from typing import Any

from errord.state.after_commit import logfmt_value, write_decision_lines


class LogFormat(Enum):
    LOGFMT = "logfmt"
    JSON = "json"


class LogfmtFormatter(logging.Formatter):
    """``level=info logger=errord msg="..." key=value ...``, one line per record."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{key}={logfmt_value(value)}" for key, value in _pairs(self, record))


class JsonFormatter(logging.Formatter):
    """One JSON object per record: level, logger, msg and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(dict(_pairs(self, record)), ensure_ascii=False, default=str)


def configure(level: int, log_format: LogFormat) -> None:
    """Log to stderr at ``level`` in ``log_format``, the chatty libraries held back."""
    write_decision_lines(sys.stderr, as_json=log_format is LogFormat.JSON)
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
