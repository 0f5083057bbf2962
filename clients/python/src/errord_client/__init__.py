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
"""

from errord_client.client import (
    DEFAULT_TARGET,
    AsyncErrordClient,
    ErrordClient,
    failure_request,
    field_violations,
    planned_call,
)
from errord_client.executor import (
    NO_DEFAULT,
    DecidedBy,
    Executor,
    LocalPolicy,
    ResultError,
    ResultStatus,
    ToolCall,
    ToolFailure,
    ToolResult,
    failure_from_exception,
    tool_call,
)
from errord_client.tools import (
    Tool,
    ToolRegistry,
    builtin_tool,
    function_tool,
    internal_tool,
    mock_tool,
    tool,
)
from errord_client.v1 import errord_pb2 as pb

__all__ = [
    "DEFAULT_TARGET",
    "NO_DEFAULT",
    "AsyncErrordClient",
    "DecidedBy",
    "ErrordClient",
    "Executor",
    "LocalPolicy",
    "ResultError",
    "ResultStatus",
    "Tool",
    "ToolCall",
    "ToolFailure",
    "ToolRegistry",
    "ToolResult",
    "builtin_tool",
    "failure_from_exception",
    "failure_request",
    "field_violations",
    "function_tool",
    "internal_tool",
    "mock_tool",
    "pb",
    "planned_call",
    "tool",
    "tool_call",
]
