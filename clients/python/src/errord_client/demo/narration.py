"""What the demo prints: errord's decisions as its trace records them, and the results.

The executor follows errord's decisions without a word; the demo watches the turn's
trace (WatchTrace) while the executor runs it, and prints each failure with the
decision errord gave, and each success reported, as they are committed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import grpc.aio

from errord_client.client import AsyncErrordClient
from errord_client.executor import DecidedBy, ToolResult
from errord_client.v1 import errord_pb2 as pb

Say = Callable[[str], None]
"""Where the demo's lines go, one at a time."""

INDENT = "   "


def event_lines(event: pb.TraceEvent) -> list[str]:
    """The lines a trace event is shown as: a failure and errord's decision, or an
    attempt's success; none for the other kinds of events."""
    kind = event.WhichOneof("event")
    if kind == "failure":
        return _failure_lines(event)
    if kind == "outcome" and event.outcome.outcome == pb.OUTCOME_SUCCESS:
        return [f"{INDENT}{event.tool} attempt {event.attempt} succeeded"]
    return []


def _failure_lines(event: pb.TraceEvent) -> list[str]:
    decision = event.failure.decision
    code = pb.ErrorCode.Name(decision.classification.code).removeprefix("ERROR_CODE_")
    action = pb.RecoveryAction.Name(decision.action).removeprefix("RECOVERY_ACTION_")
    delay = decision.delay.ToTimedelta().total_seconds()
    after = f" after {delay * 1000:.0f} ms" if delay else ""
    return [
        f"{INDENT}{event.tool} attempt {event.attempt} failed ({code}): "
        f"{event.failure.error.message}",
        f"{INDENT}  errord decides {action}{after}. {decision.reason}",
    ]


def result_lines(result: ToolResult) -> list[str]:
    """A result as the demo shows it: what became of the call, and the text the model
    gets (``ToolResult.content()``), line by line."""
    done = f"{result.attempts} attempt{'s' * (result.attempts != 1)}"
    parts = [result.status.name, done if result.attempts else "not run"]
    if result.fallback_used:
        parts.append(f"answered by {result.tool_used}")
    if result.decided_by is not DecidedBy.NOBODY:
        parts.append(f"decided by {result.decided_by.value}")
    lines = [f"{INDENT}result of {result.call_id} ({result.tool}): {', '.join(parts)}"]
    lines.append(f"{INDENT}the model gets:")
    lines += [f"{INDENT}  {line}".rstrip() for line in result.content().splitlines()]
    return lines


async def narrate(client: AsyncErrordClient, turn_id: str, say: Say) -> None:
    """Print the turn's events as errord commits them, until EndTurn closes it. The
    watch replays what was committed before it began, so nothing is missed."""
    try:
        async with contextlib.aclosing(client.watch_trace(turn_id, include_history=True)) as events:
            async for event in events:
                for line in event_lines(event):
                    say(line)
                if event.WhichOneof("event") == "turn_ended":
                    return
    except grpc.aio.AioRpcError as error:  # errord went away: the results still come
        say(f"{INDENT}(errord's trace stopped: {error.code().name})")


async def follow(narrator: asyncio.Task[None], patience: float) -> None:
    """Wait for ``narrator`` to see its turn end (the executor ends it in the
    background), ``patience`` seconds at most, then stop it."""
    done, _ = await asyncio.wait({narrator}, timeout=patience)
    if done:
        narrator.result()  # a bug in the narration is not to pass unseen
        return
    narrator.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await narrator
