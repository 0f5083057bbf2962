"""The scripted model every stack's agents share: it calls the search tool for its task,
reads what comes back, and does what the text tells it, as a capable model would.

Reading a tool's answer, in this order:

- the task's answer is in it: done, a useful result;
- errord escalated the call (the executor told the user): done, a person was asked;
- it names the parameter the model got wrong, not yet corrected: call again, corrected;
- it names another tool the model has, not yet tried: call that one instead;
- it says to try again (not "later"), within MAX_CALLS: call again unchanged;
- it says a person must act (a credential, a permission): done, asking the user;
- anything else: done, telling the user it could not be done.

Each tool call costs the model ``latency`` seconds to write; its ending, no time.
"""

from __future__ import annotations

import asyncio
import enum
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tests.benchmarks.recovery.scenarios import GOOD_DATE, Task

MAX_CALLS = 4
"""Tool calls the model makes for one task at most, re-calls included."""
WRONG_PARAMETER = "date"
"""The only argument the model ever gets wrong."""
TRY_AGAIN = re.compile(r"\btry again\b(?!\s+later)", re.IGNORECASE)
A_PERSON = re.compile(
    r"unauthori[sz]ed|credential|api key|permission|forbidden|administrator|billing",
    re.IGNORECASE,
)
NAMES_THE_PARAMETER = re.compile(rf"\b{WRONG_PARAMETER}\b")


class Ending(enum.Enum):
    """How a task ended."""

    USEFUL = "useful"
    """The model got the answer."""
    ASKED_USER = "asked_user"
    """A person was asked to act (by the model, or by errord's escalation)."""
    GAVE_UP = "gave_up"
    """The user was told it could not be done."""
    RAISED = "raised"
    """An exception came out of the agent's framework: the run failed."""
    UNFINISHED = "unfinished"
    """Still running when the round was cut."""


@dataclass(frozen=True)
class Call:
    """A tool call the model writes."""

    id: str
    tool: str
    arguments: dict[str, str]


@dataclass(frozen=True)
class Observation:
    """What the model reads of a tool call: its output, or the error text it was given."""

    text: str
    escalated: bool = False
    """errord's executor escalated it: the user was told what a person must do."""


class ScriptedModel:
    """The model of one task, with the tools it was given (the first is its search)."""

    def __init__(self, task: Task, tools: Sequence[str], latency: float) -> None:
        self.task = task
        self.tools = tuple(tools)
        self.latency = latency
        self.calls: list[Call] = []
        self.ending: Ending | None = None
        self.useful_at: float | None = None
        """time.monotonic() when the answer reached the model."""
        self.ended_at: float | None = None
        self.last_text = ""
        self._arguments = {"q": task.query, "date": task.date}
        self._tool = self.tools[0]

    @property
    def answer(self) -> str:
        return f"result for {self.task.query}"

    async def step(self, observation: Observation | None) -> Call | None:
        """The model's next tool call after ``observation`` (None: its first), or None
        once the task has ended (``ending`` says how)."""
        if observation is not None and not self._goes_on(observation):
            self.ended_at = time.monotonic()
            return None
        await asyncio.sleep(self.latency)
        call = Call(f"call-{len(self.calls) + 1}", self._tool, dict(self._arguments))
        self.calls.append(call)
        return call

    def raised(self, error: BaseException) -> None:
        """The agent's framework raised ``error`` out of the run."""
        if self.ending is None:
            self.ending, self.ended_at = Ending.RAISED, time.monotonic()
            self.last_text = f"{type(error).__name__}: {error}"

    def _goes_on(self, observation: Observation) -> bool:
        text = self.last_text = observation.text
        if self.answer in text:
            self.useful_at = time.monotonic()
            return self._ends(Ending.USEFUL)
        if observation.escalated:
            return self._ends(Ending.ASKED_USER)
        if len(self.calls) >= MAX_CALLS:
            return self._ends(Ending.ASKED_USER if A_PERSON.search(text) else Ending.GAVE_UP)
        if self._arguments["date"] != GOOD_DATE and NAMES_THE_PARAMETER.search(text):
            self._arguments["date"] = GOOD_DATE
            return True
        others = [tool for tool in self.tools if tool != self._tool and tool in text]
        if others and self._tool == self.tools[0]:
            self._tool = others[0]
            return True
        if TRY_AGAIN.search(text):
            return True
        return self._ends(Ending.ASKED_USER if A_PERSON.search(text) else Ending.GAVE_UP)

    def _ends(self, ending: Ending) -> bool:
        self.ending = ending
        return False
