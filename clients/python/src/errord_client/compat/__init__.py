"""Drop-in modules for code written against the systems errord was specified from.

Each module offers one document's public surface under its own names and shapes, backed
by errord: the calls run through the executor, errord decides (retries, breakers,
corrections) and counts, and the module only speaks the document's language.

- ``errord_client.compat.tool_node``: the error-handling LangGraph tool node
  (``ErrorHandlingToolNode``, ``ToolExecutionError``, ``format_tool_error_for_llm``,
  ``create_tool_error_message``, ``ToolErrorRegistry``...).
- ``errord_client.compat.structured_errors``: structured errors for self-correction
  (``ToolExecutionError(error_type, message, parameter, ...)``, ``ToolExecutor``
  with ``execute_tool_call`` and ``format_tool_result_for_llm``, ``ToolCallBuffer``).
- ``errord_client.compat.tool_execution``: the tool execution specification
  (``ToolExecutor.execute_tool`` returning ``{success, result | error, tool_name,
  execution_time_ms}``; mock, builtin and internal tools).

Two documents name a class ``ToolExecutionError``; each module has its own. Where
errord answers differently from a document on purpose, docs/coming-from.md says why.
Each module finds errord at its ``target`` argument, else at ``ERRORD_TARGET`` in the
environment, else at DEFAULT_TARGET, so that code written against a document runs
unchanged.
"""

from __future__ import annotations

import os

from errord_client.client import DEFAULT_TARGET

TARGET_VARIABLE = "ERRORD_TARGET"
"""The environment variable naming errord's address for the compat modules."""


def default_target() -> str:
    """errord's address: ``ERRORD_TARGET`` when set and not blank, else DEFAULT_TARGET."""
    return os.environ.get(TARGET_VARIABLE, "").strip() or DEFAULT_TARGET
