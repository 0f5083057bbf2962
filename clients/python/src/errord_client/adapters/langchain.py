"""errord inside LangChain's agents: a middleware for ``create_agent`` that runs each tool
call through errord's executor.

    from langchain.agents import create_agent
    from errord_client.adapters.langchain import ErrordMiddleware

    errord = ErrordMiddleware(target="127.0.0.1:50051")
    agent = create_agent(model, [flight_search, hotel_search], middleware=[errord])

The middleware wraps the agent's tool node (LangChain's documented ``wrap_tool_call``
hook): each attempt of a call is the framework's own execution of it, so a tool's
injected arguments (``InjectedState``, ``InjectedStore``, ``ToolRuntime``), its
``content_and_artifact`` artifact and a ``Command`` it returns come out exactly as they do
without the middleware. Around the attempts, errord decides on each failure (retry after
a delay, the alternative tool, the default, skip, hand the call back to the model to
correct, escalate, fail) and the executor follows, so the model sees one ToolMessage per
call; a call that ends without an output of its own is a ``ToolMessage`` with
``status="error"`` and errord's text for the model. Arguments the tool's own schema
refuses are the model's mistake errord corrects, naming the parameter (the tool node
would answer them with pydantic's text).

One run of the agent (``agent.invoke``, ``ainvoke``, ``stream``, ``astream``) is one
errord turn, begun before the agent's first step and ended after its last: errord's
budgets, cascades, "do not call X again in this turn" and its summary span every call the
run makes. The turn is named ``agent-<random hex>``, or by ``turn_id`` (a function of the
run's config, which must give each run a turn no earlier one used).

Streamed with ``stream_mode="custom"``, the run yields each step of each call
(``{"errord": Progress.to_dict()}``: an attempt, a retry with its delay and what to tell
the user, a switch to an alternative, the call's end), for a UI to show while it waits.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    PrivateStateAttr,
    ToolCallRequest,
)
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command

from errord_client.adapters.langgraph import (
    PROGRESS_KEY,
    Handler,
    ToolCallGuard,
    ToolErrorRegistry,
)
from errord_client.executor import Turn
from errord_client.tools import ToolRegistry

__all__ = ["PROGRESS_KEY", "ErrordMiddleware", "ErrordState"]

log = logging.getLogger("errord_client.adapters.langchain")


class ErrordState(AgentState[Any]):
    """The agent's state with the errord turn of the run in progress (never in the
    graph's input or output; checkpointed, so that a run resumed after an interrupt goes
    on in its turn)."""

    errord_turn_id: NotRequired[Annotated[str, PrivateStateAttr]]


class ErrordMiddleware(AgentMiddleware[ErrordState, Any, Any]):
    """Runs the agent's tool calls through errord: one errord turn per run of the agent.

    ``alternatives``: LangChain tools errord may name as a failed tool's alternative
    (its manifest's ``alternatives``) that the model is not given; the agent's own tools
    are run as they are called. ``sync_timeout``: seconds the first run on an event loop
    waits for errord's tool timeouts and breakers. ``turn_id``: the turn of a run, from
    its config. Other keywords go to the ``Executor`` (``target``, ``token``,
    ``decision_timeout``, ``default_timeout``, ``user_id``, ``session_id``, ``deadline``
    (seconds from the run's start), ``on_progress``, ...).

    Awaited runs use an executor of the middleware's for each event loop; synchronous
    ones, an event loop of its own in a thread. Close the middleware when done:
    ``await errord.aclose()`` on the loop it ran on, ``errord.close()`` after synchronous
    runs. ``errors`` holds every call answered with an error, by tool and type.
    """

    state_schema = ErrordState

    def __init__(
        self,
        *,
        alternatives: Sequence[BaseTool] = (),
        sync_timeout: float = 1.0,
        turn_id: Callable[[RunnableConfig], str] | None = None,
        **executor_options: Any,
    ) -> None:
        self.guard = ToolCallGuard(
            executor_options, alternatives=alternatives, sync_timeout=sync_timeout, log=log
        )
        """What runs the agent's calls through errord."""
        self.turn_id = turn_id or _new_turn
        self._turns: dict[str, tuple[Turn, asyncio.AbstractEventLoop]] = {}
        """The turns of the runs in progress, each with the event loop it runs on."""

    @property
    def errord_tools(self) -> ToolRegistry:
        """The tools as the executor runs them, registered as the agent calls them."""
        return self.guard.registry

    @property
    def errors(self) -> ToolErrorRegistry:
        """Every call the middleware answered with an error, by tool and type."""
        return self.guard.errors

    # the run: one turn

    async def abefore_agent(
        self, state: ErrordState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        return await self._begin(self.turn_id(get_config()))

    def before_agent(self, state: ErrordState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        turn_id = self.turn_id(get_config())
        return self.guard.loop_thread().run(self._begin(turn_id))

    async def aafter_agent(
        self, state: ErrordState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        begun = self._turns.pop(state.get("errord_turn_id", ""), None)
        if begun is not None:
            begun[0].end()
        return None

    def after_agent(self, state: ErrordState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.guard.loop_thread().run(self.aafter_agent(state, runtime))

    async def _begin(self, turn_id: str) -> dict[str, Any]:
        executor = await self.guard.executor()
        self._turns[turn_id] = executor.turn(turn_id), asyncio.get_running_loop()
        return {"errord_turn_id": turn_id}

    # each call

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Handler
    ) -> ToolMessage | Command[Any]:
        return await self.guard.awrap(request, handler, self._turn(request))

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        return self.guard.wrap(request, handler, self._turn(request))

    def _turn(self, request: ToolCallRequest) -> Turn | None:
        begun = self._turns.get(_turn_of(request.state))
        return None if begun is None else begun[0]

    # life

    async def aclose(self) -> None:
        """End this loop's turns of runs that raised (and so never ended), and close the
        executor of the running event loop, sending what it still holds."""
        self._end_open()
        await self.guard.aclose()

    def close(self) -> None:
        """End the turns of synchronous runs that raised, close the executor of
        synchronous runs, and stop their thread."""
        self.guard.close_with(self._end_open)

    def _end_open(self) -> None:
        """End the turns still open on the running loop (their runs raised)."""
        loop = asyncio.get_running_loop()
        for turn_id, (turn, on) in list(self._turns.items()):
            if on is loop:
                del self._turns[turn_id]
                turn.end()


def _turn_of(state: Any) -> str:
    if isinstance(state, dict):
        return str(state.get("errord_turn_id", ""))
    return str(getattr(state, "errord_turn_id", ""))


def _new_turn(config: RunnableConfig) -> str:
    return f"agent-{uuid.uuid4().hex}"
