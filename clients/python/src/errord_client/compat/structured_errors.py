"""Structured tool errors for self-correction, under the document's names, backed by errord.

    from errord_client.compat.structured_errors import ToolExecutor

    executor = ToolExecutor([search_documents])
    result = await executor.execute_tool_call(
        tool_name="search_documents", tool_args={}, user_id="user-123", tool_call_id="call_1"
    )
    print(executor.format_tool_result_for_llm(result))
    # ❌ Tool Call Error: Invalid parameters: missing 'query'
    #
    # Missing Parameter: 'query'
    # Required Parameters: query
    # ...

The document's names and shapes (its ``src/proxy/tool_executor.py``):

- ``ToolExecutionError(error_type, message, parameter, required_parameters, example,
  retry_hint)`` and its ``to_dict()`` (``type``, ``message``, ``parameter``,
  ``required_parameters``, ``example``, ``retry_hint``);
- ``ToolExecutor.execute_tool_call(tool_name, tool_args, user_id, tool_call_id)``,
  returning ``{"tool_call_id", "results"}`` or ``{"tool_call_id", "error":
  error.to_dict(), "results": []}``, and ``format_tool_result_for_llm(result)`` with the
  document's layout (``❌ Tool Call Error:``, ``Missing Parameter:``, ``Required
  Parameters:``, ``Example Usage:``, the ``💡`` hint);
- ``validate_parameter_type``, ``validate_parameter_not_empty``, ``ToolCallBuffer`` (retry
  counts and error history per tool call id).

The error comes from errord: the executor checks the arguments against the tool's
schema and errord words the correction (its type, the parameter, the required
parameters, an example built from the schema, the retry hint), so every tool gets what
the document wrote by hand for one. A failure that is not the arguments' is
``authentication_error`` (errord's AUTH), ``rate_limit_exceeded`` (RATE_LIMITED) or
``execution_error``; transient ones are retried after errord's delays before the result
is returned. errord's spans carry ``errord.correction.type`` and
``errord.correction.parameter`` (docs/operations.md).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Final, Self

from errord_client.compat import default_target
from errord_client.executor import Executor, ToolResult
from errord_client.tools import Tool

__all__ = [
    "ToolCallBuffer",
    "ToolExecutionError",
    "ToolExecutor",
    "format_tool_result_for_llm",
    "tool_execution_error",
    "validate_parameter_not_empty",
    "validate_parameter_type",
]

logger = logging.getLogger("errord_client.compat.structured_errors")

_TYPES_BY_CODE: Final = {"AUTH": "authentication_error", "RATE_LIMITED": "rate_limit_exceeded"}


class ToolExecutionError:
    """Structured tool execution error with guidance for LLM self-correction."""

    def __init__(
        self,
        error_type: str,
        message: str,
        parameter: str | None = None,
        required_parameters: Iterable[str] | None = None,
        example: Mapping[str, Any] | None = None,
        retry_hint: str | None = None,
    ) -> None:
        self.error_type = error_type
        """Classification: missing_parameter, invalid_type, invalid_value,
        authentication_error, rate_limit_exceeded, execution_error (or errord's finer
        correction types: out_of_range, unknown_tool...)."""
        self.message = message
        """Human-readable error message."""
        self.parameter = parameter
        """Name of the problematic parameter."""
        self.required_parameters = list(required_parameters or ())
        """Every required parameter."""
        self.example = None if example is None else dict(example)
        """Example of correct usage."""
        self.retry_hint = retry_hint
        """Explicit guidance for retrying."""

    def to_dict(self) -> dict[str, Any]:
        """Convert to dictionary for JSON serialization."""
        return {
            "type": self.error_type,
            "message": self.message,
            "parameter": self.parameter,
            "required_parameters": self.required_parameters,
            "example": self.example,
            "retry_hint": self.retry_hint,
        }

    def __repr__(self) -> str:
        return f"ToolExecutionError({self.to_dict()!r})"


def validate_parameter_type(
    param_name: str,
    value: Any,
    expected_type: type,
    example_value: Any = None,
) -> ToolExecutionError | None:
    """Validate parameter type and return structured error if invalid."""
    if not isinstance(value, expected_type):
        return ToolExecutionError(
            error_type="invalid_type",
            message=f"Parameter '{param_name}' must be {expected_type.__name__}, "
            f"got {type(value).__name__}",
            parameter=param_name,
            example={param_name: example_value},
        )
    return None


def validate_parameter_not_empty(
    param_name: str,
    value: str,
    example_value: str | None = None,
) -> ToolExecutionError | None:
    """Validate parameter is not empty and return structured error if invalid."""
    if not value or not value.strip():
        return ToolExecutionError(
            error_type="invalid_value",
            message=f"Parameter '{param_name}' cannot be empty",
            parameter=param_name,
            example={param_name: example_value},
        )
    return None


def tool_execution_error(result: ToolResult) -> ToolExecutionError:
    """The structured error of ``result``, a call that ended without an output: errord's
    correction when it handed the call back to the model, else its code's type."""
    error = result.error
    if error is None:
        return ToolExecutionError("execution_error", result.content())
    correction = error.correction
    if correction is not None:
        return ToolExecutionError(
            error_type=correction.type,
            message=correction.message or error.message,
            parameter=correction.parameter or None,
            required_parameters=correction.required_parameters,
            example=correction.example,
            retry_hint=correction.retry_hint or None,
        )
    return ToolExecutionError(
        error_type=_TYPES_BY_CODE.get(error.code, "execution_error"),
        message=error.message or result.content(),
        parameter=error.parameter or None,
        retry_hint=_guidance(result.model_text) or None,
    )


def _guidance(model_text: str) -> str:
    """What errord tells the model to do next: its text for the model without the
    ``Tool Execution Failed`` block that restates the error."""
    if model_text.startswith("Tool Execution Failed\n") and "\n\n" in model_text:
        return model_text.split("\n\n", 1)[1]
    return model_text


def format_tool_result_for_llm(result: Mapping[str, Any]) -> str:
    """What the model reads of ``result`` (``execute_tool_call``'s): a structured error
    in the document's layout, a legacy string error as ``Tool execution error: ...``, the
    results as JSON."""
    error = result.get("error")
    if isinstance(error, Mapping):
        return _error_text(error)
    if error:
        return f"Tool execution error: {error}"
    return json.dumps(result.get("results", []), ensure_ascii=False)


def _error_text(error: Mapping[str, Any]) -> str:
    parts = [f"❌ Tool Call Error: {error.get('message', '')}"]
    lines = []
    parameter = error.get("parameter")
    if parameter:
        label = "Missing Parameter" if error.get("type") == "missing_parameter" else "Parameter"
        lines.append(f"{label}: '{parameter}'")
    required = error.get("required_parameters")
    if required:
        lines.append(f"Required Parameters: {', '.join(required)}")
    if lines:
        parts.append("\n".join(lines))
    example = error.get("example")
    if example:
        parts.append(f"Example Usage:\n{json.dumps(example, indent=2, ensure_ascii=False)}")
    hint = error.get("retry_hint")
    if hint:
        parts.append(f"💡 {hint}")
    return "\n\n".join(parts)


class ToolExecutor:
    """Runs tool calls through errord's executor and answers in the document's shapes.

    ``tools``: the executor's tools (``errord_client.tools``: ``@tool`` functions,
    ``function_tool``, ...). ``target``: errord's address (default: ``ERRORD_TARGET``,
    else the default address); other keywords go to the Executor. Close it when done
    (``await executor.close()``, or ``async with``).
    """

    def __init__(
        self, tools: Iterable[Tool | Any], *, target: str | None = None, **options: Any
    ) -> None:
        self.executor = Executor(tools, target=target or default_target(), **options)
        """The executor the calls run through."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the executor, sending errord what it still holds."""
        await self.executor.close()

    async def execute_tool_call(
        self,
        tool_name: str,
        tool_args: Mapping[str, Any] | None,
        user_id: str = "",
        tool_call_id: str = "",
    ) -> dict[str, Any]:
        """Run one call: ``{"tool_call_id", "results"}`` on success, else ``{"tool_call_id",
        "error": ToolExecutionError.to_dict(), "results": []}``; never raises."""
        call = {"id": tool_call_id or "call", "name": tool_name, "arguments": tool_args}
        result = await self.executor.run_one(call)
        if result.ok:
            return {"tool_call_id": tool_call_id, "results": result.output}
        error = tool_execution_error(result)
        logger.warning(
            "Tool execution error: %s",
            error.error_type,
            extra={
                "tool_name": tool_name,
                "error_type": error.error_type,
                "parameter": error.parameter,
                "user_id": user_id,
                "tool_call_id": tool_call_id,
                "exception": result.error.message if result.error else "",
            },
        )
        return {"tool_call_id": tool_call_id, "error": error.to_dict(), "results": []}

    @staticmethod
    def format_tool_result_for_llm(result: Mapping[str, Any]) -> str:
        """format_tool_result_for_llm(result)."""
        return format_tool_result_for_llm(result)


class ToolCallBuffer:
    """Retry counts and error history per tool call id."""

    def __init__(self) -> None:
        self.retry_counts: dict[str, int] = {}
        self.error_history: dict[str, list[str]] = {}

    def increment_retry_count(self, tool_call_id: str) -> int:
        """Increment retry count and return new count."""
        self.retry_counts[tool_call_id] = self.retry_counts.get(tool_call_id, 0) + 1
        return self.retry_counts[tool_call_id]

    def get_retry_count(self, tool_call_id: str) -> int:
        """Get current retry count."""
        return self.retry_counts.get(tool_call_id, 0)

    def should_retry(self, tool_call_id: str, max_retries: int = 2) -> bool:
        """Check if tool call should be retried."""
        return self.get_retry_count(tool_call_id) < max_retries

    def record_error(self, tool_call_id: str, error_type: str) -> None:
        """Record an error for telemetry and debugging."""
        self.error_history.setdefault(tool_call_id, []).append(error_type)

    def get_error_history(self, tool_call_id: str) -> list[str]:
        """Get list of all errors for this tool call."""
        return list(self.error_history.get(tool_call_id, ()))
