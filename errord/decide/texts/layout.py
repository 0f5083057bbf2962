"""The model's message, in either of two formats a deployment chooses.

``text`` is a block of labelled lines ("Tool Execution Failed / Tool: / Error Type: /
Message:") followed by the guidance and, for a call the model must correct,
the parameter, the required parameters, an example and a retry hint. ``json``
is one JSON object with the same content, a field each. The
words are chosen by errord.decide.texts.guidance; this module only lays them out and
bounds their length.
"""

from __future__ import annotations

import json
from typing import Any

from msgspec import Struct

from errord.decide.model import ClosedEnum, Correction

MAX_MODEL_MESSAGE = 6_000
"""Characters of a model message at most; the example call is dropped first, then the
text is cut."""
MAX_EXAMPLE = 1_500
"""Characters of an example call's JSON in a model message."""


class MessageFormat(ClosedEnum):
    TEXT = "text"
    JSON = "json"


class ModelMessage(Struct, frozen=True, gc=False):
    """What the model is told, before it is laid out."""

    tool: str
    error_type: str
    """A correction's kind, else the normalized code and class: ``TIMEOUT (transient)``."""
    error: str
    """The tool's error message, clipped."""
    action: str
    guidance: tuple[str, ...]
    correction: Correction | None = None


def render(message: ModelMessage, layout: MessageFormat) -> str:
    """``message`` laid out as ``layout``, at most MAX_MODEL_MESSAGE characters."""
    text = _LAYOUTS[layout](message, with_example=True)
    if len(text) > MAX_MODEL_MESSAGE:
        text = _LAYOUTS[layout](message, with_example=False)
    return text[:MAX_MODEL_MESSAGE]


def _text(message: ModelMessage, *, with_example: bool) -> str:
    lines = [
        "Tool Execution Failed",
        f"Tool: {message.tool}",
        f"Error Type: {message.error_type}",
    ]
    if message.error:
        lines.append(f"Message: {message.error}")
    lines += ["", *message.guidance]
    correction = message.correction
    if correction is not None:
        lines += _correction_lines(correction, with_example=with_example)
    return "\n".join(lines)


def _correction_lines(correction: Correction, *, with_example: bool) -> list[str]:
    lines = []
    if correction.parameter:
        lines.append(f"Parameter: '{correction.parameter}'")
    for problem in correction.problems[1:]:
        lines.append(f"Also: {problem.message}")
    if correction.required_parameters:
        lines.append(f"Required Parameters: {', '.join(correction.required_parameters)}")
    if correction.known_tools:
        lines.append(f"Available Tools: {', '.join(correction.known_tools)}")
    example = _example(correction) if with_example else None
    if example is not None:
        lines.append(f"Example Usage: {example}")
    if correction.retry_hint:
        lines.append(f"Retry Hint: {correction.retry_hint}")
    return lines


def _json(message: ModelMessage, *, with_example: bool) -> str:
    body: dict[str, Any] = {
        "error": "Tool Execution Failed",
        "tool": message.tool,
        "type": message.error_type,
        "message": message.error,
        "action": message.action,
        "guidance": " ".join(message.guidance),
    }
    correction = message.correction
    if correction is not None:
        body["parameter"] = correction.parameter or None
        body["required_parameters"] = list(correction.required_parameters)
        example = _example(correction) if with_example else None
        body["example"] = None if example is None else correction.example
        body["retry_hint"] = correction.retry_hint
        if correction.problems:
            body["problems"] = [
                {"type": p.kind, "parameter": p.parameter, "message": p.message}
                for p in correction.problems
            ]
        if correction.known_tools:
            body["available_tools"] = list(correction.known_tools)
    return json.dumps(body, ensure_ascii=False)


def _example(correction: Correction) -> str | None:
    if correction.example is None:
        return None
    example = json.dumps(correction.example, ensure_ascii=False, sort_keys=True)
    return example if len(example) <= MAX_EXAMPLE else None


_LAYOUTS = {MessageFormat.TEXT: _text, MessageFormat.JSON: _json}
