"""The executor: a model's tool calls, run and guarded by errord."""

from errord_client.executor.calls import NO_DEFAULT, ToolCall, tool_call
from errord_client.executor.executor import Executor
from errord_client.executor.failures import ToolFailure, failure_from_exception
from errord_client.executor.local_policy import LocalPolicy
from errord_client.executor.progress import OnProgress, Progress, ProgressKind
from errord_client.executor.result import (
    Correction,
    DecidedBy,
    ResultError,
    ResultStatus,
    ToolResult,
)
from errord_client.executor.turn import Turn

__all__ = [
    "NO_DEFAULT",
    "Correction",
    "DecidedBy",
    "Executor",
    "LocalPolicy",
    "OnProgress",
    "Progress",
    "ProgressKind",
    "ResultError",
    "ResultStatus",
    "ToolCall",
    "ToolFailure",
    "ToolResult",
    "Turn",
    "failure_from_exception",
    "tool_call",
]
