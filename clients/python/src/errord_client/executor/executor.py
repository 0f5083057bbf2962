"""The executor: runs a model's tool calls and follows errord's decisions on their failures.

    executor = Executor(tools=[flight_search, hotel_search])
    results = await executor.run(tool_calls)        # one ToolResult per call, in order
    messages = [result.to_openai() for result in results]

For each call: admission (the breaker, as errord last said, in memory; AdmitCall only
when it is not closed), the attempt under its timeout, and on a failure errord's
decision, followed (wait and retry, the alternative, the partial result, the default,
skip, back to the model, escalate, fail) until the call has its result. A decision's
consequences apply to the calls of the batch that wait on the failed one. Successes are
reported in the background. When errord does not answer in time the local policy
decides, and the result says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import grpc
import grpc.aio

from errord_client.client import DEFAULT_TARGET
from errord_client.executor.batch import Batch, not_run
from errord_client.executor.board import ToolBoard
from errord_client.executor.call_run import CallRun, Runner
from errord_client.executor.calls import ToolCall, tool_call
from errord_client.executor.declarations import Declarations
from errord_client.executor.link import ErrordLink, open_channel
from errord_client.executor.local_policy import LocalPolicy
from errord_client.executor.plan import plan_of
from errord_client.executor.result import ResultError, ResultStatus, ToolResult
from errord_client.tools import Tool, ToolRegistry
from errord_client.v1 import errord_pb2_grpc

log = logging.getLogger("errord_client.executor")


class Executor:
    """Runs tool calls from ``tools`` (functions, coroutine functions, Tools, or a
    ToolRegistry) under errord at ``target``.

    ``decision_timeout``: seconds errord has to answer a failure before the local policy
    decides (250 ms). ``max_threads``: worker threads for plain (sync) functions; an
    attempt past its timeout is abandoned, its thread left to finish on its own.
    ``watch_tools``: keep errord's breakers and timeouts in memory (WatchTools); without
    it every attempt runs unasked, under ``default_timeout``.
    """

    def __init__(
        self,
        tools: ToolRegistry | Iterable[Tool | Any] = (),
        *,
        target: str = DEFAULT_TARGET,
        token: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        decision_timeout: float = 0.25,
        local_policy: LocalPolicy | None = None,
        default_timeout: float = 30.0,
        max_threads: int = 32,
        watch_tools: bool = True,
    ) -> None:
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.local_policy = local_policy or LocalPolicy()
        self.board = ToolBoard(default_timeout)
        self.declarations = Declarations()
        """What failure reports tell errord of each tool (its schema and timeout)."""
        self._target = target
        self._credentials = credentials
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._decision_timeout = decision_timeout
        self._watch_tools = watch_tools
        self._max_threads = max_threads
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        self._channel: grpc.aio.Channel | None = None
        self._link: ErrordLink | None = None
        self._watch: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self, *, sync_timeout: float = 1.0) -> None:
        """Connect and wait, ``sync_timeout`` seconds at most, for errord's tool policies.
        ``run`` starts the executor by itself; this only spares the first calls the wait."""
        self._started()
        if self._watch is not None:
            try:
                await asyncio.wait_for(self.board.synced.wait(), sync_timeout)
            except TimeoutError:
                log.info("errord's tool policies did not arrive within %s s", sync_timeout)

    async def aclose(self, *, patience: float = 5.0) -> None:
        """Send what is still queued (``patience`` seconds at most), then close."""
        if self._link is not None:
            await self._link.drain(patience)
            self._link.cancel()
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self._channel is not None:
            await self._channel.close()
        if self._threads is not None:  # tools past their timeout are left to finish
            self._threads.shutdown(wait=False, cancel_futures=True)
        self._channel = self._link = self._watch = self._threads = None

    async def run(
        self, calls: Sequence[ToolCall | Mapping[str, Any] | Any], *, turn_id: str | None = None
    ) -> list[ToolResult]:
        """Run ``calls`` (ToolCalls, or tool calls as OpenAI or Anthropic return them) as
        one turn: independent calls at once, a call after those it ``depends_on``. One
        result per call, in order; never raises for a tool's failure or errord's."""
        link = self._started()
        turn_id = turn_id or f"turn-{uuid.uuid4().hex}"
        batch = Batch(turn_id, plan_of([tool_call(call) for call in calls]))
        if batch.plan.dependencies and not await link.begin_turn(batch.plan.begin(turn_id)):
            log.info("turn %s runs its plan without errord's cascades", turn_id)
        runs = [
            self._repeated(call) if position in batch.plan.repeated else self._run(call, batch)
            for position, call in enumerate(batch.plan.calls)
        ]
        # One call needs no task of its own: awaited here, it does not wait for the loop
        # to schedule it behind whatever else is ready (a success then never yields).
        results = [await runs[0]] if len(runs) == 1 else await asyncio.gather(*runs)
        if results:
            link.end_turn(turn_id)
        return list(results)

    async def execute(self, call: ToolCall | Mapping[str, Any] | Any, **options: Any) -> ToolResult:
        """Run one call as a turn of its own (seed 000's executeTool)."""
        return (await self.run([call], **options))[0]

    def _started(self) -> ErrordLink:
        if self._link is None:
            self._channel = open_channel(self._target, self._credentials)
            self._link = ErrordLink(
                self._channel, self._metadata, decision_timeout=self._decision_timeout
            )
            self._threads = concurrent.futures.ThreadPoolExecutor(
                max_workers=self._max_threads, thread_name_prefix="errord-tool"
            )
            if self._watch_tools:
                stub = errord_pb2_grpc.ErrorHandlerServiceStub(self._channel)
                self._watch = asyncio.get_running_loop().create_task(
                    self.board.follow(stub.WatchTools, self._metadata)
                )
        return self._link

    @staticmethod
    async def _repeated(call: ToolCall) -> ToolResult:
        reason = f"an earlier call of the batch has the id {call.call_id}"
        return not_run(call, ResultStatus.FAILED, reason)

    def _runner(self) -> Runner:
        assert self._link is not None
        assert self._threads is not None
        return Runner(
            self.registry,
            self.board,
            self._link,
            self.local_policy,
            self._threads,
            self.declarations,
        )

    async def _run(self, call: ToolCall, batch: Batch) -> ToolResult:
        started = time.monotonic()
        try:
            result = await batch.blocked(call) or await CallRun(self._runner(), call, batch).run()
        except Exception as error:  # a bug here must not cost the other calls their results
            log.exception("the executor failed on call %s", call.call_id)
            result = ToolResult(
                call_id=call.call_id,
                tool=call.name,
                status=ResultStatus.FAILED,
                error=ResultError("UNKNOWN", "", repr(error), "Something went wrong.", False),
                model_text=f"Error: the call could not be run: {error}",
            )
        result = _timed(result, started)
        batch.finish(call.call_id, result)
        return result


def _timed(result: ToolResult, started: float) -> ToolResult:
    return dataclasses.replace(result, execution_time_ms=(time.monotonic() - started) * 1000)
