"""The tool calls a model asks for, read from whichever API's shape they come in.

``tool_call`` takes one call as the model API returned it and gives a ``ToolCall``:

- OpenAI Chat Completions: ``{"id", "type": "function", "function": {"name",
  "arguments": "<JSON>"}}``, or the SDK's object of the same attributes;
- OpenAI Responses: a ``{"type": "function_call", "call_id", "name", "arguments":
  "<JSON>"}`` output item (its ``call_id`` is the call's id, not its item ``id``);
- Anthropic Messages: a ``{"type": "tool_use", "id", "name", "input": {...}}``
  content block, or the SDK's ``ToolUseBlock``;
- a plain ``{"id" or "call_id", "name", "arguments" or "input"}``, the arguments a
  mapping or a JSON text.

Models write their arguments as text, and sometimes get it wrong. Arguments that
are not JSON, or not a JSON object, do not raise: the call comes back with
arguments ``{}`` and ``malformed`` saying what was wrong, so that the executor runs
nothing and hands the call back to the model as an ``INVALID_INPUT`` failure to
correct. Missing or empty arguments are ``{}``. Only a call without an id or a
name, which no result could answer, raises ValueError.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final


class _NoDefault(Enum):
    NO_DEFAULT = "NO_DEFAULT"

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault.NO_DEFAULT
"""``ToolCall.default`` when the call has none of its own: its tool's manifest says."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of the model's message, and what the turn's plan says of it."""

    call_id: str
    """The model's id for the call, which its result must carry."""
    name: str
    """The tool the model called."""
    arguments: Mapping[str, Any]
    """The tool's input; ``{}`` when ``malformed``."""
    depends_on: tuple[str, ...] = ()
    """Ids of the calls whose results this call needs (the turn's plan)."""
    optional: bool | None = None
    """Whether the turn can go on without this call; None: as its tool's manifest says."""
    default: Any = NO_DEFAULT
    """The call's default result (any JSON value, None included); NO_DEFAULT: the manifest's."""
    malformed: str = ""
    """Why the model's arguments could not be read, when they could not: the executor
    returns the call to the model as an INVALID_INPUT failure instead of running it."""

    def __post_init__(self) -> None:
        if not self.call_id:
            raise ValueError("ToolCall.call_id should not be empty")
        if not self.name:
            raise ValueError(f"ToolCall.name should not be empty (call {self.call_id})")


def tool_call(raw: ToolCall | Mapping[str, Any] | object) -> ToolCall:
    """``raw`` as a ToolCall, from any shape the module's docstring lists (a ToolCall is
    returned as it is). Raises ValueError naming the key when it has no id or no name."""
    if isinstance(raw, ToolCall):
        return raw
    function = _get(raw, "function")
    holder = raw if function is None else function
    call_id = _text(raw, "call_id") or _text(raw, "id")
    if not call_id:
        raise ValueError(f"tool call has no 'id' (nor 'call_id'): {_preview(raw)}")
    name = _text(holder, "name")
    if not name:
        key = "name" if function is None else "function.name"
        raise ValueError(f"tool call {call_id} has no {key!r}: {_preview(raw)}")
    given = _get(holder, "arguments")
    if given is None:
        given = _get(holder, "input")
    arguments, malformed = _arguments(given)
    return ToolCall(call_id, name, arguments, malformed=malformed)


def call_identity(raw: object) -> tuple[str, str]:
    """The id and name ``raw`` has, each "" when it has none (or not as a string): for the
    result of a call ``tool_call`` cannot read."""
    function = _get(raw, "function")
    names = (_get(raw if function is None else function, "name"),)
    ids = (_get(raw, "call_id"), _get(raw, "id"))
    call_id = next((value for value in ids if isinstance(value, str) and value), "")
    name = next((value for value in names if isinstance(value, str)), "")
    return call_id, name


def _arguments(given: object) -> tuple[dict[str, Any], str]:
    """The arguments as a dict, and why they are malformed ("" when they are not)."""
    if given is None:
        return {}, ""
    shown = given
    if isinstance(given, str | bytes | bytearray):
        if not given.strip():
            return {}, ""
        try:
            given = json.loads(given)
        except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
            return {}, f"the arguments are not valid JSON: {error}"
        except RecursionError:
            return {}, "the arguments are not valid JSON: nested too deeply"
    if not isinstance(given, Mapping):
        return {}, f"the arguments should be a JSON object, got {_kind(given)}: {_preview(shown)}"
    return dict(given), ""


_JSON_KINDS: Final = {
    type(None): "null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    str: "a string",
    list: "an array",
}


def _kind(value: object) -> str:
    return _JSON_KINDS.get(type(value), type(value).__name__)


def _get(raw: object, key: str) -> Any:
    """``raw[key]`` of a mapping, ``raw.key`` of an SDK object; None when absent."""
    if isinstance(raw, Mapping):
        return raw.get(key)
    try:
        return getattr(raw, key, None)
    except Exception:  # a property that cannot answer: absent
        return None


def _text(raw: object, key: str) -> str:
    """A string field; "" when absent. Raises ValueError when it is not a string."""
    value = _get(raw, key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"tool call's {key!r} should be a string, got {type(value).__name__}")
    return value


_PREVIEW_CHARACTERS: Final = 200


def _preview(value: object) -> str:
    text = repr(value)
    if len(text) <= _PREVIEW_CHARACTERS:
        return text
    return text[:_PREVIEW_CHARACTERS] + "..."
