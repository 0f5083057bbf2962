"""The tools an executor runs: what a model may call, and how each one runs.

from errord_client.tools import ToolRegistry, tool

@tool
async def flight_search(origin: str, destination: str, passengers: int = 1) -> list[dict]:
    '''Search flights between two airports.'''
    ...

registry = ToolRegistry([flight_search])
registry.get("flight_search").check({"origin": "CDG"})
# InvalidArguments: Invalid parameters: missing 'destination'
registry.get("flight_search").accept({"origin": "CDG", "destination": "JFK", "seat": "12A"})
# Accepted(arguments={'origin': 'CDG', 'destination': 'JFK'}, ignored=('seat',))

A ``Tool`` is a name, the JSON Schema of its arguments, a description, and a callable of
one of four kinds: the developer's own ``function_tool`` (plain functions run in a worker
thread, coroutine functions on the event loop), a ``mock_tool`` answering from a script,
a ``builtin_tool`` (``echo``, ``math_eval``) and an ``internal_tool`` calling one of the
application's ``InternalHandlers``. ``Tool.accept`` takes a call's arguments as frameworks
do (errord_client.tools.arguments: ``2.0`` for an integer is 2, an argument the schema does
not take is ignored) and ``Tool.invoke`` runs it; ``to_openai``/``to_anthropic`` give the
definitions model APIs take.

Exceptions: ToolNotFound and HandlerNotFound (LookupError), InvalidArguments and MathError
(ValueError). Their messages are the error texts a model is shown.
"""

from errord_client.tools.arguments import Accepted, InvalidArguments
from errord_client.tools.builtin import BUILTIN_HANDLERS, builtin_tool
from errord_client.tools.internal import InternalHandlers, internal_tool
from errord_client.tools.math_eval import MathError
from errord_client.tools.mock import Hang, MockTool, Sleep, mock_tool
from errord_client.tools.registry import (
    ANY_ARGUMENTS,
    HandlerNotFound,
    Tool,
    ToolKind,
    ToolNotFound,
    ToolRegistry,
    function_tool,
    tool,
)

__all__ = [
    "ANY_ARGUMENTS",
    "BUILTIN_HANDLERS",
    "Accepted",
    "HandlerNotFound",
    "Hang",
    "InternalHandlers",
    "InvalidArguments",
    "MathError",
    "MockTool",
    "Sleep",
    "Tool",
    "ToolKind",
    "ToolNotFound",
    "ToolRegistry",
    "builtin_tool",
    "function_tool",
    "internal_tool",
    "mock_tool",
    "tool",
]
