"""ReconcileResults' answer in the shapes model APIs take back: one result per tool call.

- OpenAI Chat Completions: a ``tool`` message per call (``tool_call_id``, ``content``);
  the API has no error flag, so an error is said in the content, as errord writes it.
- OpenAI Responses: a ``function_call_output`` input item per call (``call_id``, ``output``).
- Anthropic Messages: a ``tool_result`` content block per call (``tool_use_id``,
  ``content``, ``is_error`` for an error), to put first in the next user message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from errord_client.v1 import errord_pb2 as pb


def _results(
    reconciled: pb.ReconcileResultsResponse | Iterable[pb.ReconciledResult],
) -> Iterable[pb.ReconciledResult]:
    if isinstance(reconciled, pb.ReconcileResultsResponse):
        return reconciled.results
    return reconciled


def openai_chat_messages(
    reconciled: pb.ReconcileResultsResponse | Iterable[pb.ReconciledResult],
) -> list[dict[str, Any]]:
    """``{"role": "tool", "tool_call_id": ..., "content": ...}`` per call, in call order."""
    return [
        {"role": "tool", "tool_call_id": result.call_id, "content": result.content}
        for result in _results(reconciled)
    ]


def openai_responses_items(
    reconciled: pb.ReconcileResultsResponse | Iterable[pb.ReconciledResult],
) -> list[dict[str, Any]]:
    """``{"type": "function_call_output", "call_id": ..., "output": ...}`` per call."""
    return [
        {"type": "function_call_output", "call_id": result.call_id, "output": result.content}
        for result in _results(reconciled)
    ]


def anthropic_tool_results(
    reconciled: pb.ReconcileResultsResponse | Iterable[pb.ReconciledResult],
) -> list[dict[str, Any]]:
    """``{"type": "tool_result", "tool_use_id": ..., "content": ...}`` per call, with
    ``"is_error": true`` for an error."""
    blocks = []
    for result in _results(reconciled):
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": result.call_id,
            "content": result.content,
        }
        if result.is_error:
            block["is_error"] = True
        blocks.append(block)
    return blocks
