"""The stacks an agent's tool calls go through, each configured as its documentation
recommends, around the same tool: an httpx POST to the scripted backend that raises for an
HTTP error status (``raise_for_status``) and returns the first result's title.

- none: the tool's exception goes to the model as its text ("Error: Type: message").
- tenacity: ``@retry(stop=stop_after_attempt(5), wait=wait_exponential_jitter(),
  reraise=True)``: exponential backoff with jitter (1 s first), any exception retried.
- stamina: ``@stamina.retry(on=hook)`` with its defaults (10 attempts, 45 s, 0.1 s first
  wait), the hook of its documentation: transport errors and 5xx are retried, a 429 after
  its Retry-After, any other 4xx not.
- tenacity+pybreaker: tenacity as above around a ``pybreaker.CircuitBreaker(fail_max=5,
  reset_timeout=60)`` per tool (its README's example, client errors excluded as its README
  shows), an open breaker not retried.
- langgraph, openai-agents: the frameworks' default error handling (frameworks.py).
- errord: the Executor with errord's defaults (a daemon on this machine).

Each agent is a process of its own in spirit: its own HTTP client, breakers and executor.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import httpx
import pybreaker
import stamina
from errord_client import Executor, ResultStatus
from errord_client.tools import function_tool as errord_function_tool
from tenacity import retry, retry_if_not_exception_type, stop_after_attempt, wait_exponential_jitter

from tests.benchmarks.recovery.scripted_model import Call, Observation, ScriptedModel
from tests.scripted_backend import Sends

Guarded = TypeVar("Guarded", bound=Callable[..., Awaitable[Any]])
ToolFunction = Callable[..., Awaitable[str]]
"""A tool: ``await search(q=..., date=...)`` returns the first result's title."""
Tools = Mapping[str, ToolFunction]
"""An agent's tools by name, its search first."""


def search_tool(client: httpx.AsyncClient, url: str, sends: Sends) -> ToolFunction:
    """The search tool every stack runs, calling ``url`` with ``client``; ``sends``
    records each request it sends, each 429 it gets and each result it returns."""

    async def search(q: str, date: str) -> str:
        """Search the web for a query, on a date (YYYY-MM-DD)."""
        sends.sent.append(time.monotonic())
        try:
            response = await client.post(url, json={"q": q, "date": date})
            response.raise_for_status()
        except httpx.HTTPStatusError as error:
            if error.response.status_code == 429:
                retry_after = float(error.response.headers.get("Retry-After", "0"))
                sends.limited.append((time.monotonic(), retry_after))
            raise
        title: str = response.json()["results"][0]["title"]  # the bug: no result at all
        sends.succeeded.append(time.monotonic())
        return title

    return search


class StackAgent(Protocol):
    """One agent of a stack: runs a task's model to its ending."""

    notes: Counter[str]
    """What the stack counted along the way (errord: who decided each failed call)."""

    async def run(self, model: ScriptedModel) -> None: ...

    async def close(self) -> None: ...


Stack = Callable[[Tools, str], Awaitable[StackAgent]]
"""Makes an agent of the stack with its tools; the string is errord's address."""


def error_text(error: BaseException) -> str:
    """What a hand-written agent loop tells the model of a tool's exception."""
    return f"Error: {type(error).__name__}: {error}"


@dataclass
class HandLoop:
    """The agent loop an application writes around its tools: model, tool, model..."""

    call: Callable[[Call], Awaitable[Observation]]
    closing: Callable[[], Awaitable[None]] | None = None
    notes: Counter[str] = field(default_factory=Counter)

    async def run(self, model: ScriptedModel) -> None:
        step = await model.step(None)
        while step is not None:
            step = await model.step(await self.call(step))

    async def close(self) -> None:
        if self.closing is not None:
            await self.closing()


def calling(tools: Tools) -> Callable[[Call], Awaitable[Observation]]:
    """A call of ``tools``, its exception handed to the model as text."""

    async def call(step: Call) -> Observation:
        try:
            return Observation(await tools[step.tool](**step.arguments))
        except Exception as error:
            return Observation(error_text(error))

    return call


async def no_handling(tools: Tools, address: str) -> StackAgent:
    return HandLoop(calling(tools))


def tenacity_retry(**options: Any) -> Callable[[Guarded], Guarded]:
    """tenacity's exponential backoff with jitter, 5 attempts."""
    decorator = retry(
        stop=stop_after_attempt(5), wait=wait_exponential_jitter(), reraise=True, **options
    )
    return cast(Callable[[Guarded], Guarded], decorator)


async def with_tenacity(tools: Tools, address: str) -> StackAgent:
    return HandLoop(calling({name: tenacity_retry()(tool) for name, tool in tools.items()}))


def retry_server_errors(error: Exception) -> bool | float:
    """stamina's backoff hook for an HTTP API: 5xx and transport errors are retried, a 429
    after the wait its Retry-After asks, any other client error never."""
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        if status == 429:
            return float(error.response.headers.get("Retry-After", "0")) or True
        return status >= 500
    return isinstance(error, httpx.HTTPError)


async def with_stamina(tools: Tools, address: str) -> StackAgent:
    retrying = stamina.retry(on=retry_server_errors)
    return HandLoop(calling({name: retrying(tool) for name, tool in tools.items()}))


def client_error(error: BaseException) -> bool:
    """Not the backend's failure: pybreaker's README excludes client errors."""
    return isinstance(error, httpx.HTTPStatusError) and error.response.status_code < 500


def broken(tool: ToolFunction) -> ToolFunction:
    """``tool`` behind a breaker of its own, retried by tenacity while it is closed."""
    breaker = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=60, exclude=[client_error])

    @tenacity_retry(retry=retry_if_not_exception_type(pybreaker.CircuitBreakerError))
    async def guarded(**arguments: str) -> str:
        with breaker.calling():
            return await tool(**arguments)

    return guarded


async def with_tenacity_and_pybreaker(tools: Tools, address: str) -> StackAgent:
    return HandLoop(calling({name: broken(tool) for name, tool in tools.items()}))


async def with_errord(tools: Tools, address: str) -> StackAgent:
    executor = Executor(
        [errord_function_tool(tool, name=name) for name, tool in tools.items()], target=address
    )
    await executor.start()
    notes: Counter[str] = Counter()

    async def execute(step: Call) -> Observation:
        # execute() ends its turn: each of the model's calls is a turn of its own.
        turn = f"{step.arguments['q']}-{step.id}"
        call = {"id": step.id, "name": step.tool, "arguments": step.arguments}
        result = await executor.run_one(call, turn_id=turn)
        if not result.ok or result.attempts > 1:
            notes[f"decided by {result.decided_by.value}"] += 1
        escalated = result.status is ResultStatus.ESCALATED
        return Observation(result.content(), escalated=escalated)

    return HandLoop(execute, executor.close, notes)


STACKS = (
    "none",
    "tenacity",
    "stamina",
    "tenacity+pybreaker",
    "langgraph",
    "openai-agents",
    "errord",
)
"""Every stack, in the order the table shows them."""
RETRYING = ("tenacity", "stamina", "tenacity+pybreaker", "openai-agents")
"""The stacks that call a failing tool again (the model, told to try again, for the SDK)."""


def stack(name: str) -> Stack:
    """The stack ``name``. A framework's module is imported only when its stack is asked
    for: the OpenAI Agents SDK alone takes seconds to import, and each stack runs in a
    process of its own."""
    if name in ("langgraph", "openai-agents"):
        from tests.benchmarks.recovery import frameworks

        return frameworks.with_langgraph if name == "langgraph" else frameworks.with_openai_agents
    return {
        "none": no_handling,
        "tenacity": with_tenacity,
        "stamina": with_stamina,
        "tenacity+pybreaker": with_tenacity_and_pybreaker,
        "errord": with_errord,
    }[name]
