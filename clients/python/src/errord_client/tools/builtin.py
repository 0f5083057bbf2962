"""Builtin tools: handlers shipped with the client, chosen by name.

- ``echo`` returns its arguments as a dict, unchanged: a tool to try an executor with.
- ``math_eval`` takes ``{"expression": "2 + 2"}`` and returns the value, an int or a
  float, computed by errord_client.tools.math_eval (arithmetic only, never Python's eval).

``builtin_tool`` builds a tool for any handler name. A name that no handler has still
makes a tool, whose every invocation raises HandlerNotFound (``Builtin handler '<name>'
not found``), so that the executor returns that error as the call's result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from errord_client.tools.math_eval import MAX_LENGTH, Number, evaluate
from errord_client.tools.registry import ANY_ARGUMENTS, HandlerNotFound, Tool, ToolKind


def echo(**arguments: Any) -> dict[str, Any]:
    """The arguments, as a dict."""
    return arguments


def math_eval(expression: str) -> Number:
    """The value of an arithmetic expression; raises MathError."""
    return evaluate(expression)


BUILTIN_HANDLERS: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {"echo": echo, "math_eval": math_eval}
)
"""Every builtin handler, by name."""

_MATH_EVAL_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "expression": {
            "type": "string",
            "description": "Arithmetic: numbers, + - * / // % ** and parentheses, "
            "abs, round, min, max, sqrt.",
            "maxLength": MAX_LENGTH,
        }
    },
    "required": ["expression"],
    "additionalProperties": False,
}
_PARAMETERS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {"echo": ANY_ARGUMENTS, "math_eval": _MATH_EVAL_PARAMETERS}
)
_DESCRIPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "echo": "Returns its arguments unchanged.",
        "math_eval": "Evaluates an arithmetic expression and returns the number.",
    }
)


def builtin_tool(
    name: str,
    handler: str,
    *,
    parameters: Mapping[str, Any] | None = None,
    description: str = "",
) -> Tool:
    """A tool running the builtin ``handler`` (a key of BUILTIN_HANDLERS), described by
    ``parameters`` and ``description`` or else by the handler's own."""

    def run(**arguments: Any) -> Any:
        try:
            chosen = BUILTIN_HANDLERS[handler]
        except KeyError:
            raise HandlerNotFound(handler, ToolKind.BUILTIN) from None
        return chosen(**arguments)

    return Tool(
        name,
        _PARAMETERS.get(handler, ANY_ARGUMENTS) if parameters is None else parameters,
        description or _DESCRIPTIONS.get(handler, ""),
        ToolKind.BUILTIN,
        False,
        function=run,
    )
