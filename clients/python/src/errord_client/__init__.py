"""errord's Python client: an executor that runs tool calls under errord, typed clients,
and the generated messages as ``pb``.

from errord_client import Executor

async def flight_search(origin: str, destination: str) -> dict: ...

executor = Executor(tools=[flight_search])
results = await executor.run(tool_calls)      # one ToolResult per call, in order
messages = [result.to_openai() for result in results]

The raw clients report failures themselves:

from errord_client import ErrordClient, pb

with ErrordClient() as errord:
    decision = errord.report_failure(
        turn_id="t1", call_id="c1", tool="search", attempt=1,
        code=pb.ERROR_CODE_TIMEOUT, message="read timed out",
    ).decision

The rest is in submodules: ``errord_client.executor`` (the local policy, tool calls and
failures), ``errord_client.tools`` (tools of every kind and their registry),
``errord_client.adapters`` (LangGraph, the OpenAI Agents SDK, MCP),
``errord_client.requests`` (requests built from plain values), ``errord_client.errors``
(what a failed call says), ``errord_client.results`` (ReconcileResults' answer for model
APIs) and ``errord_client.operator_token``.
"""

from errord_client.client import DEFAULT_TARGET, AsyncErrordClient, ErrordClient
from errord_client.executor import (
    DecidedBy,
    Executor,
    ResultError,
    ResultStatus,
    ToolCall,
    ToolResult,
)
from errord_client.tools import tool
from errord_client.v1 import errord_pb2 as pb

__all__ = [
    "DEFAULT_TARGET",
    "AsyncErrordClient",
    "DecidedBy",
    "ErrordClient",
    "Executor",
    "ResultError",
    "ResultStatus",
    "ToolCall",
    "ToolResult",
    "pb",
    "tool",
]
