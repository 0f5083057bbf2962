"""A backend limiting its callers' rate, against errord as a process: 20 agents share one
executor (an agent platform's process) whose tool calls a scripted backend on loopback
that answers 429 with ``Retry-After: 1`` past 15 requests a second.

Every call succeeds; once any agent has a 429 in hand, no request leaves before the wait
it announced is over (the executor holds the others at once, errord's window holds them
through AdmitCall and WatchTools); and a rate limit never opens the breaker.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from errord_client.executor import Executor, ResultStatus
from errord_client.v1 import errord_pb2 as pb

from tests.executor_helpers import Errord, errord_process, failures
from tests.helpers import operator_channel
from tests.scripted_backend import Mode, Sends, scripted_backend, session, tool

AGENTS = 20
CALLS = 8
THINK = (0.8, 1.6)
"""Seconds an agent thinks between calls: the agents ask for some 17 requests a second."""
DECISIONS = 10.0


async def test_a_rate_limited_backend_is_waited_out_never_called_into_and_never_trips_the_breaker(
    tmp_path: Path,
) -> None:
    """No manifest: errord's defaults honour a Retry-After that fits the call's retry time."""
    with (
        errord_process(tmp_path, "tools: []\n") as daemon,
        scripted_backend(mode=Mode.LIMITED, limit=15, retry_after=1.0) as backend,
    ):
        async with session() as http:
            sends = Sends()
            async with Executor(
                [tool("search", http, backend, sends)],
                target=daemon.address,
                decision_timeout=DECISIONS,
            ) as executor:
                await executor.start()
                thinking = random.Random(3)

                async def agent(number: int) -> list[ResultStatus]:
                    statuses = []
                    for n in range(CALLS):
                        await asyncio.sleep(thinking.uniform(*THINK))
                        call = {"id": f"c{n}", "name": "search", "arguments": {"q": str(n)}}
                        result = await executor.run_one(call, turn_id=f"r-{number}-{n}")
                        statuses.append(result.status)
                    return statuses

                statuses = await asyncio.gather(*(agent(n) for n in range(AGENTS)))
            async with operator_channel(daemon.address, daemon.token) as channel:
                errord = Errord(channel)
                breaker = await errord.breaker("search")
                events = [
                    event
                    for number in range(AGENTS)
                    for n in range(CALLS)
                    for event in await errord.trace(f"r-{number}-{n}")
                ]

    limited = [e for e in failures(events) if e.failure.error.http_status == 429]
    held = [e for e in failures(events) if e.failure.error.code == pb.ERROR_CODE_RATE_LIMITED]
    print(
        f"{len(backend.requests)} requests, {len(backend.refusals)} answered 429; "
        f"{len(held)} attempts held by errord's window; breaker opened {breaker.state.opens} times"
    )
    assert backend.refusals, "the backend never limited: the test asked too little of it"
    assert [status for per_agent in statuses for status in per_agent] == [
        ResultStatus.SUCCEEDED
    ] * (AGENTS * CALLS)
    into_a_window = [
        sent
        for sent in sends.sent
        for received, retry_after in sends.limited
        if received <= sent < received + retry_after
    ]
    assert into_a_window == []
    assert breaker.state.opens == 0
    assert breaker.HasField("rate_limit")  # errord showed the window
    assert all(e.failure.decision.action == pb.RECOVERY_ACTION_RETRY for e in limited)
    assert all(e.failure.decision.delay.ToTimedelta().total_seconds() >= 1.0 for e in limited)
