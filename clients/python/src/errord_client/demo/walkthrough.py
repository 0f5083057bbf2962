"""The demo's run: each scenario's messages through one Executor, narrated.

errord must know the demo's tools (their timeouts, the alternative, the argument
schema): ``run_demo`` first asks it to validate a car_rental call, which only a daemon
started with the demo's manifests can, and stops with what to do when it cannot.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from importlib import resources
from pathlib import Path

import grpc
import grpc.aio

from errord_client.client import AsyncErrordClient
from errord_client.demo.narration import INDENT, Say, follow, narrate, result_lines
from errord_client.demo.scenarios import SCENARIOS, Call, Scenario, demo_tools
from errord_client.executor import Executor

TURN_END_PATIENCE = 10.0
"""Seconds to wait for the trace to show a turn ended after its results came back."""

CHECK_TIMEOUT = 5.0
"""Seconds errord has to answer the check, and to send its tool policies (the timeouts
the executor applies), before the demo starts."""


def manifests_directory() -> Path:
    """The directory of the demo's tool manifests, for ``errord serve --manifests``."""
    return Path(str(resources.files("errord_client.demo") / "manifests"))


def how_to_start() -> str:
    """The commands that start a daemon the demo can use, then the demo against it."""
    return (
        "errord serve --listen 127.0.0.1:50061 --db demo.db "
        '--manifests "$(python -m errord_client.demo --manifests)", '
        "then the demo with --target 127.0.0.1:50061"
    )


async def run_demo(target: str, *, token: str | None = None, say: Say = print) -> int:
    """Run every scenario against errord at ``target``; 0 when done, 1 when errord cannot
    run the demo (not there, or without the demo's manifests), which ``say`` explains."""
    async with AsyncErrordClient(target, token=token) as client:
        problem = await _unfit(client, target)
        if problem:
            say(problem)
            return 1
        executor = Executor(demo_tools(), target=target, token=token)
        try:
            await executor.start(sync_timeout=CHECK_TIMEOUT)
            if not executor.board.synced.is_set():
                say(f"errord at {target} did not send its tool policies (WatchTools) in time")
                return 1
            say(f"errord at {target} decides; the demo's tools fail as scripted.")
            for number, scenario in enumerate(SCENARIOS, start=1):
                await _play(number, scenario, executor, client, say)
        finally:
            await executor.close()
    return 0


async def _unfit(client: AsyncErrordClient, target: str) -> str:
    """Why errord at ``target`` cannot run the demo; "" when it can."""
    try:
        await client.validate_call(
            "car_rental", {"city": "Paris", "days": 3}, timeout=CHECK_TIMEOUT
        )
    except grpc.aio.AioRpcError as error:
        code = error.code()
        if code is grpc.StatusCode.NOT_FOUND:
            return (
                f"errord at {target} has no manifest for the demo's tools; start one "
                f"with them: {how_to_start()}"
            )
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return (
                f"errord at {target} did not answer ({code.name}: {error.details()}); "
                f"start one with the demo's manifests: {how_to_start()}"
            )
        return f"errord at {target} refused the demo's first call ({code.name}: {error.details()})"
    return ""


async def _play(
    number: int, scenario: Scenario, executor: Executor, client: AsyncErrordClient, say: Say
) -> None:
    say("")
    say(f"{number}. {scenario.title}")
    for calls in scenario.messages:
        for call in calls:
            say(f"{INDENT}the model calls {_shown(call)}")
        turn_id = f"demo-{uuid.uuid4().hex}"
        narrator = asyncio.create_task(narrate(client, turn_id, say))
        results = await executor.run(calls, turn_id=turn_id)
        await follow(narrator, TURN_END_PATIENCE)
        for result in results:
            for line in result_lines(result):
                say(line)


def _shown(call: Call) -> str:
    return f"{call['name']}({json.dumps(call['arguments'])})"
