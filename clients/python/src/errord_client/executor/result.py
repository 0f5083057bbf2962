"""The one result of one tool call, and the shapes model APIs take it back in.

The executor always returns a ``ToolResult`` per call, never None: what became of
the call (``ResultStatus``), who decided it (``DecidedBy``), the tool's output or
the error (``ResultError``: a technical message for logs, a plain one for the
user), how long it took and how many attempts.

``content()`` is what the model reads; ``to_openai()``, ``to_openai_responses()``
and ``to_anthropic()`` put it in the message each API takes, as
``errord_client.results`` does for ReconcileResults' answer; ``to_dict()`` is the
whole record as JSON-able values, for logs and traces: the fields by name, as the
TypeScript client's ToolResult has them (in its own case).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final


class ResultStatus(Enum):
    """What became of a call."""

    SUCCEEDED = "succeeded"
    """A tool (the one called, or an alternative) returned its output."""
    FAILED = "failed"
    """The call failed and nothing stands in for its output."""
    TIMED_OUT = "timed_out"
    """The last attempt did not finish in time."""
    SKIPPED = "skipped"
    """The call was not run, or given up, and the turn goes on without it."""
    DEFAULTED = "defaulted"
    """The tool failed; its default result stands in for its output."""
    PARTIAL = "partial"
    """The tool failed after producing part of its output, which the turn goes on with."""
    RETURNED_TO_MODEL = "returned_to_model"
    """The model is to correct its call: the result says what to fix."""
    ESCALATED = "escalated"
    """The user is to be asked before the turn goes on."""


_OK: Final = frozenset({ResultStatus.SUCCEEDED, ResultStatus.DEFAULTED, ResultStatus.PARTIAL})


class DecidedBy(Enum):
    """Who decided how the call ended."""

    NOBODY = "nobody"
    """It succeeded at the first attempt: there was nothing to decide."""
    ERRORD = "errord"
    """errord's recovery decisions (``ToolResult.decision_ids``)."""
    LOCAL = "local"
    """The executor's local fallback policy, errord being unreachable."""


@dataclass(frozen=True, slots=True)
class ResultError:
    """Why a call has no output of its own."""

    code: str
    """An ErrorCode name without its prefix ("TIMEOUT", "RATE_LIMITED"), or "" if unknown."""
    error_class: str
    """ "transient", "permanent", or "" when nobody classified it."""
    message: str
    """The technical message, for logs."""
    user_message: str
    """What to tell the user, in plain words."""
    retryable: bool
    """Whether calling again at once may succeed: a transient failure, but not a call
    its open circuit breaker refused ("CIRCUIT_OPEN"), which errord refuses again until
    the breaker half-opens."""
    fault: str = ""
    """Who can act on the failure: "ARGUMENTS" (the model), "TOOL" (its own code),
    "BACKEND" (time), "PERSON" (someone must), or "" when nobody said."""
    parameter: str = ""
    """The call's parameter the failure is about, when known."""
    exception_type: str = ""
    """The class of the exception the last attempt failed with, as the executor reported
    it: the tool's ("TimeoutError", "requests.HTTPError"), or the executor's own check's
    ("InvalidArguments", "ToolNotFound"); "" when there was none."""
    correction: Correction | None = None
    """errord's correction of a call handed back to the model: what to fix and how."""

    def to_dict(self) -> dict[str, Any]:
        """The fields by name."""
        return {
            "code": self.code,
            "error_class": self.error_class,
            "message": self.message,
            "user_message": self.user_message,
            "retryable": self.retryable,
            "fault": self.fault,
            "parameter": self.parameter,
            "exception_type": self.exception_type,
            "correction": None if self.correction is None else self.correction.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Correction:
    """errord's correction of a call whose arguments (or tool name) the model got wrong:
    its Correction message, for code that shows it in a layout of its own."""

    type: str
    """missing_parameter, invalid_type, invalid_value, ..., unknown_tool (errord's list)."""
    message: str
    """What is wrong, in a sentence the model can act on."""
    parameter: str = ""
    """The parameter to correct first, if known."""
    required_parameters: tuple[str, ...] = ()
    """The parameters the tool's JSON Schema requires."""
    example: Mapping[str, Any] | None = None
    """Arguments that satisfy the tool's schema, built from it; None when errord has none."""
    retry_hint: str = ""
    """How to call again."""
    available_tools: tuple[str, ...] = ()
    """For an unknown tool: the known tools closest to the name."""

    def to_dict(self) -> dict[str, Any]:
        """The fields by name."""
        return {
            "type": self.type,
            "message": self.message,
            "parameter": self.parameter,
            "required_parameters": list(self.required_parameters),
            "example": None if self.example is None else dict(self.example),
            "retry_hint": self.retry_hint,
            "available_tools": list(self.available_tools),
        }


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The one result of one tool call."""

    call_id: str
    """The model's id for the call."""
    tool: str
    """The tool the model called."""
    status: ResultStatus
    output: Any = None
    """The output the model gets: the tool's, a partial one, or the default."""
    error: ResultError | None = None
    execution_time_ms: float = 0.0
    """Wall time of the call, all attempts and waits between them included."""
    attempts: int = 0
    """Attempts run, of the tool called and of its alternatives."""
    fallback_used: bool = False
    """True when an alternative tool ran in place of the one called."""
    tool_used: str = ""
    """The tool whose result this is: ``tool``, or the alternative's name when one ran
    (left empty, it is ``tool``)."""
    decided_by: DecidedBy = DecidedBy.NOBODY
    decision_ids: tuple[str, ...] = ()
    """errord's decisions on the call, in order."""
    model_text: str = ""
    """What to tell the model of an error (errord's llm_message), when there is one."""
    ignored_arguments: tuple[str, ...] = ()
    """The call's arguments its tool's schema does not take, which the tool was run
    without (as frameworks ignore them), in call order; the model is not told."""

    def __post_init__(self) -> None:
        if not self.tool_used:
            object.__setattr__(self, "tool_used", self.tool)
        if self.attempts < 0:
            raise ValueError(f"ToolResult.attempts should not be negative, got {self.attempts}")
        if not self.execution_time_ms >= 0:
            raise ValueError(
                "ToolResult.execution_time_ms should be a duration, not negative, "
                f"got {self.execution_time_ms}"
            )

    @property
    def ok(self) -> bool:
        """True when the model gets an output: succeeded, defaulted or partial."""
        return self.status in _OK

    @property
    def is_error(self) -> bool:
        """True when the model should read the result as an error: every status but the
        ``ok`` ones. A skipped call counts: the model gets no output, only a note saying
        so (errord marks the results it writes for calls without one the same way)."""
        return not self.ok

    def content(self) -> str:
        """What the model reads. For an error: ``model_text``, else a sentence made of the
        status and the error's message. Else the output as text: a string as it is,
        anything else as compact JSON (see ``json_text``)."""
        if self.is_error:
            return self.model_text or _error_text(self)
        if isinstance(self.output, str):
            return self.output
        return json_text(self.output)

    def to_openai(self) -> dict[str, Any]:
        """An OpenAI Chat Completions ``tool`` message. The API has no error flag: an
        error is said in the content."""
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content()}

    def to_openai_responses(self) -> dict[str, Any]:
        """An OpenAI Responses ``function_call_output`` input item."""
        return {"type": "function_call_output", "call_id": self.call_id, "output": self.content()}

    def to_anthropic(self) -> dict[str, Any]:
        """An Anthropic ``tool_result`` content block, with ``"is_error": true`` for an error."""
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": self.call_id,
            "content": self.content(),
        }
        if self.is_error:
            block["is_error"] = True
        return block

    def to_dict(self) -> dict[str, Any]:
        """The whole result as JSON-able values, the fields by name: ``status`` and
        ``decided_by`` their values, ``output`` as plain JSON (``json_value``), ``error``
        its fields or None."""
        return {
            "call_id": self.call_id,
            "tool": self.tool,
            "status": self.status.value,
            "output": json_value(self.output),
            "error": None if self.error is None else self.error.to_dict(),
            "execution_time_ms": self.execution_time_ms,
            "attempts": self.attempts,
            "fallback_used": self.fallback_used,
            "tool_used": self.tool_used,
            "decided_by": self.decided_by.value,
            "decision_ids": list(self.decision_ids),
            "model_text": self.model_text,
            "ignored_arguments": list(self.ignored_arguments),
        }


_ERROR_WORDS: Final = {
    ResultStatus.FAILED: "Error: {tool} failed",
    ResultStatus.TIMED_OUT: "Error: {tool} timed out",
    ResultStatus.SKIPPED: "Not run: the {tool} call was skipped",
    ResultStatus.RETURNED_TO_MODEL: "Error: the {tool} call needs correcting",
    ResultStatus.ESCALATED: "Error: {tool} failed; the user is being asked how to go on",
}


def _error_text(result: ToolResult) -> str:
    text = _ERROR_WORDS[result.status].format(tool=result.tool)
    detail = "" if result.error is None else result.error.message or result.error.user_message
    return f"{text}: {detail}" if detail else f"{text}."


def json_text(value: Any) -> str:
    """``value`` as compact JSON, non-ASCII characters kept. Dataclasses and pydantic
    models become their fields, sets lists, anything else JSON cannot hold its
    ``str()``; a value that cannot be walked (a cycle, a tuple key) its ``str()``."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_jsonable)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def json_value(value: Any) -> Any:
    """``value`` as plain JSON values (dicts with str keys, lists, str, finite numbers,
    bools, None), converted as ``json_text`` does, NaN and infinities as None; a value
    that cannot be walked its ``str()``."""
    try:
        text = json.dumps(value, default=_jsonable)
    except (TypeError, ValueError, RecursionError):
        return str(value)
    return json.loads(text, parse_constant=lambda _: None)


def _jsonable(value: Any) -> Any:
    """What stands in for a value JSON cannot hold (``json.dumps``' ``default``)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and not isinstance(value, type):
        try:
            return model_dump(mode="json")
        except Exception:  # a model that cannot dump itself is still shown
            return str(value)
    if isinstance(value, set | frozenset):
        try:
            return sorted(value)
        except TypeError:  # members that do not compare: any order
            return list(value)
    return str(value)
