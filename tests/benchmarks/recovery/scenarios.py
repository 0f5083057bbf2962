"""The scenarios: what the backend does over a round, and the tasks the agents run in it.

Every scenario runs for a horizon (the seconds over which tasks fall due) against a
ScriptedBackend of its own for each stack. A fault with a window begins at a quarter of
the horizon and ends at 60 % of it; the others last the whole round. Each task is a user's
request to an agent: its due time, its query, the ``date`` argument the model first
writes, and whose fault a failure of it is (the ground truth wrong endings are read from).
Tasks are drawn from a seed of the scenario and the round, so every stack gets the same.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from dataclasses import dataclass

from tests.scripted_backend import Mode, ScriptedBackend

GOOD_DATE = "2026-06-05"
"""The ``date`` a task asks for, as the backend takes it."""
BAD_DATE = "next friday"
"""The ``date`` the model writes for a task it gets wrong first."""
WINDOW = (0.25, 0.6)
"""Where a fault's window begins and ends, as shares of the horizon."""
TOOL_TIMEOUT = 1.0
"""Seconds a tool waits for the backend (httpx's timeout, and errord's timeout_ms)."""


@dataclass(frozen=True)
class Profile:
    """How big a run is."""

    name: str
    horizon: float
    """Seconds over which tasks fall due."""
    agents: int
    """Agents of each stack in each scenario."""
    rate: float
    """Tasks a second each agent is given."""
    patience: float
    """Seconds after the horizon before tasks still running are cut (UNFINISHED)."""
    rounds: int
    model_latency: float = 0.2
    """Seconds the scripted model takes to write each tool call."""
    overhead_calls: int = 3000
    """Successful calls each stack makes in the success-path overhead measurement."""

    @property
    def demand(self) -> float:
        """Tasks a second one stack's agents are given in one scenario."""
        return self.agents * self.rate


QUICK = Profile("quick", horizon=6.0, agents=2, rate=1.5, patience=10.0, rounds=1,
                overhead_calls=400)  # fmt: skip
FULL = Profile("full", horizon=40.0, agents=10, rate=0.2, patience=50.0, rounds=2)


class Fault(enum.Enum):
    """Who can act on a task's failure: nobody needs to (it should succeed), time (the
    backend's), the model (its arguments), a person (a credential), the tool's author."""

    NONE = "none"
    BACKEND = "backend"
    ARGUMENTS = "arguments"
    PERSON = "person"
    TOOL = "tool"


Change = Callable[[ScriptedBackend, Profile], None]
"""A change of the backend, at the start of a round or at either end of a fault window."""


def _nothing(backend: ScriptedBackend, profile: Profile) -> None:
    return None


@dataclass(frozen=True)
class Scenario:
    """One way the backend fails, and how the round's tasks meet it."""

    name: str
    title: str
    """What it is, in a few words, for the table."""
    fault: Fault
    """Whose fault a failure of its tasks is (for tool_bug and bad_arguments only the
    tasks ``share`` picks; the others should succeed)."""
    prepare: Change = _nothing
    begin: Change | None = None
    """At the window's start; None: the fault lasts the whole round."""
    end: Change = _nothing
    down: bool = False
    """Requests sent in the window go to a backend that is down."""
    backup: bool = False
    """The agents also have ``search_backup``, on a healthy backend of its own."""
    share: float = 0.0
    """The share of tasks the fault touches, when it does not touch every one."""

    @property
    def windowed(self) -> bool:
        return self.begin is not None


def _brownout(backend: ScriptedBackend, profile: Profile) -> None:
    backend.mode, backend.failure_share = Mode.BROWNOUT, 0.3


def _go_down(backend: ScriptedBackend, profile: Profile) -> None:
    backend.go_down()


def _come_back(backend: ScriptedBackend, profile: Profile) -> None:
    backend.come_back()


def _spikes(backend: ScriptedBackend, profile: Profile) -> None:
    backend.hang, backend.hang_share = 1.5 * TOOL_TIMEOUT, 0.5
    backend.mode = Mode.SPIKING


def _calm(backend: ScriptedBackend, profile: Profile) -> None:
    backend.mode = Mode.HEALTHY


def _overloadable(backend: ScriptedBackend, profile: Profile) -> None:
    backend.mode, backend.capacity = Mode.OVERLOADED, round(1.5 * profile.demand)


def _overloaded(backend: ScriptedBackend, profile: Profile) -> None:
    backend.capacity = max(1, round(0.5 * profile.demand))


def _limited(backend: ScriptedBackend, profile: Profile) -> None:
    backend.mode, backend.limit, backend.retry_after = (
        Mode.LIMITED,
        round(1.5 * profile.demand),
        1.0,
    )


def _limit_lowered(backend: ScriptedBackend, profile: Profile) -> None:
    backend.limit = max(1, round(0.5 * profile.demand))


def _revoked(backend: ScriptedBackend, profile: Profile) -> None:
    backend.mode = Mode.UNAUTHORIZED


SCENARIOS = (
    Scenario("brownout", "30 % of requests fail with 503", Fault.BACKEND, prepare=_brownout),
    Scenario(
        "outage",
        "connections refused, then healthy again",
        Fault.BACKEND,
        begin=_go_down,
        end=_come_back,
        down=True,
    ),
    Scenario(
        "latency",
        "half the requests answer past the tool's timeout",
        Fault.BACKEND,
        begin=_spikes,
        end=_calm,
    ),
    Scenario(
        "overload",
        "capacity falls to half the demand; more requests, more 503s",
        Fault.BACKEND,
        prepare=_overloadable,
        begin=_overloaded,
        end=_overloadable,
    ),
    Scenario(
        "rate_limit",
        "the rate limit falls to half the demand; 429 with Retry-After: 1",
        Fault.BACKEND,
        prepare=_limited,
        begin=_limit_lowered,
        end=_limited,
    ),
    Scenario(
        "credentials",
        "the API key is revoked (401); a backup tool works",
        Fault.PERSON,
        prepare=_revoked,
        backup=True,
    ),
    Scenario("tool_bug", "the tool fails on 30 % of queries (its own bug)", Fault.TOOL, share=0.3),
    Scenario(
        "bad_arguments",
        "the model writes a wrong date in 30 % of calls (400 naming it)",
        Fault.ARGUMENTS,
        share=0.3,
    ),
)
BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}


@dataclass(frozen=True)
class Task:
    """One user's request to an agent: one search, until a useful result or an ending."""

    agent: int
    number: int
    due: float
    """Seconds after the round's start when it falls due."""
    query: str
    date: str
    """The ``date`` the model writes first."""
    fault: Fault
    """Whose fault its failure is; NONE when it should succeed."""
    no_results: bool = False
    """The backend has no result for its query (the tool's bug meets it)."""


def tasks(scenario: Scenario, profile: Profile, round_number: int) -> list[Task]:
    """The round's tasks: each agent's fall due ``1 / rate`` seconds apart, the agents'
    staggered, until the horizon; those the fault touches drawn from the seed."""
    draws = random.Random(f"{scenario.name}-{round_number}")
    made = []
    for agent in range(profile.agents):
        number = 0
        while (due := (number + agent / profile.agents) / profile.rate) < profile.horizon:
            touched = scenario.share == 0.0 or draws.random() < scenario.share
            query = f"{scenario.name}-{round_number}-{agent}-{number}"
            made.append(
                Task(
                    agent,
                    number,
                    due,
                    query,
                    BAD_DATE if touched and scenario.fault is Fault.ARGUMENTS else GOOD_DATE,
                    scenario.fault if touched else Fault.NONE,
                    no_results=touched and scenario.fault is Fault.TOOL,
                )
            )
            number += 1
    return made


def window(scenario: Scenario, profile: Profile) -> tuple[float, float] | None:
    """Seconds after the round's start when the fault's window begins and ends."""
    if not scenario.windowed:
        return None
    return WINDOW[0] * profile.horizon, WINDOW[1] * profile.horizon


def tool_names(scenario: Scenario, round_number: int) -> tuple[str, ...]:
    """The tools of the scenario's round: each round's breakers and memory start afresh."""
    primary = f"search_{scenario.name}_{round_number}"
    return (primary, f"{primary}_backup") if scenario.backup else (primary,)


def manifests(profile: Profile) -> str:
    """errord's manifests for a run: every tool's timeout (its httpx timeout), and the
    backup as the alternative where there is one. The rest is errord's defaults."""
    lines = ["tools:"]
    timeout_ms = int(TOOL_TIMEOUT * 1000)
    for round_number in range(1, profile.rounds + 1):
        for scenario in SCENARIOS:
            names = tool_names(scenario, round_number)
            for position, name in enumerate(names):
                lines += [f"  - name: {name}", f"    timeout_ms: {timeout_ms}"]
                if position == 0 and len(names) > 1:
                    lines.append(f"    alternatives: [{', '.join(names[1:])}]")
    return "\n".join(lines) + "\n"
