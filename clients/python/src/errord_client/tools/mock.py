"""Mock tools: a static response, or a script of answers, failures and hangs, for tests.

``mock_tool("search", {"hits": []})`` answers every call with the same value. With a
``script``, each invocation takes the next step, in the order the invocations start (so
concurrent invocations share one script and never take the same step):

- an exception instance (or class) is raised;
- ``Hang(seconds)`` sleeps, a day by default, then raises TimeoutError: it stands for a
  tool that never answers, which only a timeout or a cancellation ends;
- ``Sleep(seconds, then=step)`` sleeps, then takes ``then`` as its step;
- any other value is returned.

Once the script has run out, every invocation takes ``response`` as its step: returned,
or raised if it is an exception, or slept on if it is a Hang (``response`` is None unless
given). Sleeps are ``asyncio.sleep``: cancelling the awaiting task ends them.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from errord_client.tools.registry import ANY_ARGUMENTS, Tool, ToolKind


@dataclass(frozen=True, slots=True)
class Hang:
    """A step that never answers in time: sleeps ``seconds``, then raises TimeoutError."""

    seconds: float = 86_400.0
    """How long it sleeps before giving up."""

    def __post_init__(self) -> None:
        if not self.seconds >= 0:
            raise ValueError(f"Hang: seconds must be 0 or more, not {self.seconds!r}")


@dataclass(frozen=True, slots=True)
class Sleep:
    """A step that sleeps ``seconds``, then takes ``then`` as its step (returns a value,
    raises an exception)."""

    seconds: float
    """How long it sleeps first."""
    then: Any = None
    """The step taken after the sleep."""

    def __post_init__(self) -> None:
        if not self.seconds >= 0:
            raise ValueError(f"Sleep: seconds must be 0 or more, not {self.seconds!r}")


class MockScript:
    """The callable behind a mock tool: hands out the script's steps, one per call, and
    counts the calls."""

    def __init__(self, steps: Sequence[Any], response: Any) -> None:
        self._steps = deque(steps)
        self._response = response
        self.calls = 0
        """How many times the tool was invoked."""
        self.received: list[dict[str, Any]] = []
        """The arguments of each invocation, in order (a mock uses none of them)."""

    def __call__(self, **arguments: Any) -> Any:
        self.calls += 1
        self.received.append(arguments)
        return _perform(self._steps.popleft() if self._steps else self._response)

    @property
    def remaining(self) -> int:
        """How many steps of the script are left."""
        return len(self._steps)


def _perform(step: Any) -> Any:
    """Raise, return, or return the coroutine that sleeps first."""
    if isinstance(step, BaseException):
        raise step
    if isinstance(step, type) and issubclass(step, BaseException):
        raise step()
    if isinstance(step, Hang):
        return _hang(step.seconds)
    if isinstance(step, Sleep):
        return _sleep_then(step.seconds, step.then)
    return step


async def _hang(seconds: float) -> Any:
    await asyncio.sleep(seconds)
    raise TimeoutError(f"the mock tool hung for {seconds:g} s")


async def _sleep_then(seconds: float, then: Any) -> Any:
    await asyncio.sleep(seconds)
    result = _perform(then)
    return await result if inspect.isawaitable(result) else result


@dataclass(frozen=True, slots=True)
class MockTool(Tool):
    """A mock tool, with its script to count the invocations."""

    script: MockScript = field(kw_only=True, repr=False, compare=False)
    """The steps and the count of invocations."""

    @property
    def calls(self) -> int:
        """How many times the tool was invoked."""
        return self.script.calls

    @property
    def received(self) -> list[dict[str, Any]]:
        """The arguments of each invocation, in order."""
        return self.script.received


def mock_tool(
    name: str,
    response: Any = None,
    *,
    script: Sequence[Any] = (),
    parameters: Mapping[str, Any] | None = None,
    description: str = "",
) -> MockTool:
    """A tool that answers from ``script``, one step per invocation, then with ``response``
    (see the module's docstring for the steps). ``parameters`` defaults to any object."""
    steps = MockScript(script, response)
    return MockTool(
        name,
        ANY_ARGUMENTS if parameters is None else parameters,
        description,
        ToolKind.MOCK,
        False,
        function=steps,
        script=steps,
    )
