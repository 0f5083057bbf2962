"""errord's Python client: the generated messages as ``pb`` and typed clients.

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
from errord_client.v1 import errord_pb2 as pb

__all__ = [
    "DEFAULT_TARGET",
    "AsyncErrordClient",
    "ErrordClient",
    "failure_request",
    "field_violations",
    "pb",
    "planned_call",
]
