"""One stack's agents through every scenario of a round, as a process of its own.

    python -m tests.benchmarks.recovery.agents --stack tenacity --profile quick \\
        --address 127.0.0.1:50051 --token-file DIR/operator.token --out DIR

The benchmark starts one such process per stack, so that the stacks share the machine's
two cores as separate programs do and one stack's work never stalls another's event loop.
For each round it builds every scenario's backends (a ScriptedBackend each, and one for
the backup tool) and agents, prints ``ready N``, and waits for ``go T`` on its standard
input: T is the round's start, a time.monotonic() reading (one clock for every process of
the machine). Every scenario then runs at once: each agent's tasks start as they fall due,
whether or not its earlier ones have ended (users do not wait for each other), the fault
windows open and close on time, and tasks still running at the horizon plus the profile's
patience are cut. It writes what happened to ``OUT/round-N-STACK.json`` (times in seconds
after T) and prints ``done N``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc.aio
import httpx
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from tests.benchmarks.recovery.scenarios import (
    FULL,
    QUICK,
    SCENARIOS,
    TOOL_TIMEOUT,
    Profile,
    Scenario,
    Task,
    tasks,
    tool_names,
    window,
)
from tests.benchmarks.recovery.scripted_model import Ending, ScriptedModel
from tests.benchmarks.recovery.stacks import STACKS, StackAgent, search_tool, stack
from tests.scripted_backend import ScriptedBackend, Sends

PROFILES = {profile.name: profile for profile in (QUICK, FULL)}


@dataclass
class Cell:
    """One scenario of the round, for this stack: its backends, agents and what happened."""

    scenario: Scenario
    round_number: int
    tasks: list[Task]
    backends: list[ScriptedBackend]
    """The search's backend, then the backup's."""
    agents: list[StackAgent] = field(default_factory=list)
    sends: list[list[Sends]] = field(default_factory=list)
    """What each agent's tools sent, by agent and backend."""
    clients: list[httpx.AsyncClient] = field(default_factory=list)
    models: list[ScriptedModel] = field(default_factory=list)
    window: list[float] = field(default_factory=list)
    """When the fault's window began and ended, time.monotonic()."""

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tool_names(self.scenario, self.round_number)

    async def open(self, stack_name: str, address: str, agents: int) -> None:
        """Make the stack's ``agents``, each with its own HTTP client and tools."""
        for _ in range(agents):
            client = httpx.AsyncClient(timeout=TOOL_TIMEOUT)
            sends = [Sends() for _ in self.backends]
            self.clients.append(client)
            self.sends.append(sends)
        self.agents = await asyncio.gather(
            *(
                stack(stack_name)(
                    {
                        name: search_tool(client, backend.url, each)
                        for name, backend, each in zip(
                            self.tool_names, self.backends, sends, strict=True
                        )
                    },
                    address,
                )
                for client, sends in zip(self.clients, self.sends, strict=True)
            )
        )

    async def close(self) -> None:
        await asyncio.gather(*(agent.close() for agent in self.agents))
        await asyncio.gather(*(client.aclose() for client in self.clients))
        await asyncio.gather(*(asyncio.to_thread(backend.stop) for backend in self.backends))


def cell(scenario: Scenario, profile: Profile, round_number: int) -> Cell:
    """The scenario's backends, started and prepared, and its tasks."""
    made = tasks(scenario, profile, round_number)
    backends = [ScriptedBackend() for _ in tool_names(scenario, round_number)]
    for backend in backends:
        backend.start()
    scenario.prepare(backends[0], profile)
    backends[0].no_results = {task.query for task in made if task.no_results}
    return Cell(scenario, round_number, made, backends)


async def at(moment: float) -> None:
    await asyncio.sleep(max(0.0, moment - time.monotonic()))


async def run_cell(run: Cell, profile: Profile, start: float) -> None:
    """The scenario's agents through its round, its fault window on time."""
    names = run.tool_names

    async def fault() -> None:
        span = window(run.scenario, profile)
        if span is None or run.scenario.begin is None:
            return
        primary = run.backends[0]
        await at(start + span[0])
        await asyncio.to_thread(run.scenario.begin, primary, profile)
        run.window.append(time.monotonic())
        await at(start + span[1])
        await asyncio.to_thread(run.scenario.end, primary, profile)
        run.window.append(primary.recovered_at or time.monotonic())

    async def task(agent: StackAgent, model: ScriptedModel) -> None:
        await agent.run(model)
        if model.ending is None:
            model.ending = Ending.GAVE_UP

    async def agent(number: int) -> list[asyncio.Task[None]]:
        started = []
        for each in (t for t in run.tasks if t.agent == number):
            await at(start + each.due)
            model = ScriptedModel(each, names, profile.model_latency)
            run.models.append(model)
            started.append(asyncio.create_task(task(run.agents[number], model)))
        return started

    faults = asyncio.create_task(fault())
    spawned = await asyncio.gather(*(agent(number) for number in range(len(run.agents))))
    running = [each for per_agent in spawned for each in per_agent]
    deadline = start + profile.horizon + profile.patience
    _, unfinished = await asyncio.wait(running, timeout=max(0.0, deadline - time.monotonic()))
    for each in unfinished:
        each.cancel()
    await asyncio.gather(*unfinished, return_exceptions=True)
    for model in run.models:
        if model.ending is None:
            model.ending = Ending.UNFINISHED
    await faults


async def breaker_of(address: str, token: str, tool: str) -> dict[str, Any] | None:
    """errord's breaker of ``tool`` after the round: how often it opened, its last break."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = errord_pb2_grpc.OperatorServiceStub(channel)
        try:
            response = await stub.GetBreaker(
                pb.GetBreakerRequest(tool=tool),
                metadata=(("authorization", f"Bearer {token}"),),
                timeout=10,
            )
        except grpc.aio.AioRpcError:
            return None
    breaker = response.breaker
    return {
        "opens": breaker.state.opens,
        "break_length": breaker.state.break_length.ToTimedelta().total_seconds(),
        "first_break": breaker.first_cooldown.ToTimedelta().total_seconds(),
    }


def relative(times: list[float], start: float) -> list[float]:
    return [round(moment - start, 4) for moment in times]


def by_agent(run: Cell, backend: int, start: float) -> dict[str, list[list[float]]]:
    """What the agents' tools sent to one backend: [time, agent] pairs, in time order, and
    each 429 as [time, retry_after, agent]."""
    sent = sorted(
        [at - start, agent] for agent, sends in enumerate(run.sends) for at in sends[backend].sent
    )
    limited = sorted(
        [at - start, wait, agent]
        for agent, sends in enumerate(run.sends)
        for at, wait in sends[backend].limited
    )
    succeeded = sorted(at - start for sends in run.sends for at in sends[backend].succeeded)
    return {"sent": sent, "limited": limited, "succeeded": [[at] for at in succeeded]}


def describe(run: Cell, start: float, extra: dict[str, Any]) -> Any:
    primary = by_agent(run, 0, start)
    return {
        "window": relative(run.window, start) or None,
        "tasks": [
            {
                "agent": model.task.agent,
                "number": model.task.number,
                "due": model.task.due,
                "fault": model.task.fault.value,
                "ending": model.ending.value if model.ending else None,
                "useful_after": None
                if model.useful_at is None
                else round(model.useful_at - start - model.task.due, 4),
                "calls": len(model.calls),
                "last_text": model.last_text[:2000],
            }
            for model in run.models
        ],
        "sent": primary["sent"],
        "limited": primary["limited"],
        "succeeded": [at for [at] in primary["succeeded"]],
        "sent_backup": [
            at
            for backend in range(1, len(run.backends))
            for at, _ in by_agent(run, backend, start)["sent"]
        ],
        "received": sum(len(backend.requests) for backend in run.backends),
        "notes": dict(sum((agent.notes for agent in run.agents), Counter())),
        **extra,
    }


async def run_round(options: argparse.Namespace, profile: Profile, round_number: int) -> None:
    chosen = [s for s in SCENARIOS if not options.scenario or s.name in options.scenario]
    cells = [cell(scenario, profile, round_number) for scenario in chosen]
    await asyncio.gather(
        *(each.open(options.stack, options.address, profile.agents) for each in cells)
    )
    print(f"ready {round_number}", flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    start = float(line.split()[1])
    cpu = time.process_time()
    await asyncio.gather(*(run_cell(each, profile, start) for each in cells))
    cpu = time.process_time() - cpu
    token = options.token_file.read_text().strip() if options.token_file else ""
    described = {}
    for each in cells:
        extra: dict[str, Any] = {}
        if options.stack == "errord" and token:
            extra["breaker"] = await breaker_of(options.address, token, each.tool_names[0])
        described[each.scenario.name] = describe(each, start, extra)
    await asyncio.gather(*(each.close() for each in cells))
    out = options.out / f"round-{round_number}-{options.stack}.json"
    record = {"stack": options.stack, "round": round_number, "cpu": cpu, "scenarios": described}
    out.write_text(json.dumps(record))
    print(f"done {round_number}", flush=True)


async def main_async(options: argparse.Namespace) -> None:
    profile = PROFILES[options.profile]
    if options.rounds:
        profile = dataclasses.replace(profile, rounds=options.rounds)
    for round_number in range(1, profile.rounds + 1):
        await run_round(options, profile, round_number)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", choices=sorted(STACKS), required=True)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="quick")
    parser.add_argument("--rounds", type=int, help="rounds (default: the profile's)")
    parser.add_argument(
        "--scenario", action="append", choices=[s.name for s in SCENARIOS],
        help="run only this scenario (repeatable; default: every one)",
    )  # fmt: skip
    parser.add_argument("--address", required=True, help="errord's address")
    parser.add_argument("--token-file", type=Path, help="errord's operator token")
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(main_async(options))


if __name__ == "__main__":
    main()
