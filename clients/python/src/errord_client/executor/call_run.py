"""One call, attempt after attempt, until it has its result: admission, the attempt under
its timeout, and the verdict on its failure (errord's, else the local policy's), followed."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from errord_client.executor.batch import Batch, Running
from errord_client.executor.board import ToolBoard, board_key
from errord_client.executor.calls import ToolCall
from errord_client.executor.declarations import Declarations
from errord_client.executor.failures import ToolFailure, failure_from_exception
from errord_client.executor.link import ErrordLink, as_struct
from errord_client.executor.local_policy import LocalPolicy
from errord_client.executor.progress import OnProgress, Progress, ProgressKind, tell
from errord_client.executor.result import DecidedBy, ResultError, ResultStatus, ToolResult
from errord_client.executor.verdict import ENDINGS, NO_VALUE, Action, Verdict, from_decision
from errord_client.requests import as_duration
from errord_client.tools import InvalidArguments, Tool, ToolNotFound, ToolRegistry
from errord_client.v1 import errord_pb2 as pb


@dataclass(frozen=True, slots=True)
class Runner:
    """What running a call needs of its executor."""

    registry: ToolRegistry
    board: ToolBoard
    link: ErrordLink
    local_policy: LocalPolicy
    threads: concurrent.futures.Executor
    declarations: Declarations
    on_progress: OnProgress | None = None


class CallRun:
    """One call, attempt after attempt, until it has its result."""

    def __init__(self, runner: Runner, call: ToolCall, batch: Batch) -> None:
        self.runner = runner
        self.link = runner.link
        self.call = call
        self.batch = batch
        self.tool = call.name
        self.attempt = 1
        self.attempts = 0
        self.timeout: float | None = None
        self.admitted = False
        self.fallback_used = False
        self.decision_ids: list[str] = []
        self.delays: dict[str, float] = {}
        self.last_decision = ""
        self.decided_by = DecidedBy.NOBODY
        """Who decided the last verdict followed; NOBODY while none was needed."""
        self.running: Tool | None = None
        """The registered tool of the current attempt; None when there is none."""
        self.ignored: tuple[str, ...] = ()
        """The call's arguments the current attempt's tool was run without."""
        self.standing = Running(call.name)
        """Where the call stands, as the batch sees it (for the turn's deadline)."""

    @property
    def key(self) -> str:
        """The key of the current tool's breaker and window on the board: the tool in the
        scope of the registered tool of that name (errord keeps them per tool and scope)."""
        return board_key(self.tool, self._scope())

    def _scope(self) -> str:
        try:
            return self.runner.registry.get(self.tool).scope
        except ToolNotFound:
            return ""

    async def run(self) -> ToolResult:
        self.batch.running[self.call.call_id] = self.standing
        while True:
            failure, elapsed, verdict, output = await self._attempt()
            if failure is None and verdict is None:
                return self._succeeded(output)
            if verdict is None:
                assert failure is not None
                verdict = await self._decide(failure, elapsed)
            self.decided_by = verdict.decided_by
            if verdict.decision_id:
                self.decision_ids.append(verdict.decision_id)
                self.last_decision = verdict.decision_id
            self.batch.cascade(verdict)
            if verdict.action is Action.RETRY:
                self._tell(ProgressKind.RETRY, delay=verdict.delay, message=verdict.user_message)
                self.delays[self.tool] = self.delays.get(self.tool, 0.0) + verdict.delay
                await self.runner.board.wait(self.key, verdict.delay)
                self.attempt += 1
                self.timeout = verdict.next_timeout
                # Only the probe is admitted with its retry; any other retry asks first if
                # the breaker opened or a rate-limit window holds the tool meanwhile.
                self.admitted = verdict.probe
            elif verdict.action is Action.USE_ALTERNATIVE and verdict.alternative:
                self._tell(
                    ProgressKind.ALTERNATIVE,
                    alternative=verdict.alternative,
                    message=verdict.user_message,
                )
                self.tool, self.attempt = verdict.alternative, 1
                self.standing.tool = self.tool
                self.timeout = verdict.next_timeout
                self.admitted, self.fallback_used = False, True
            else:
                return self._ended(verdict, failure)

    async def _attempt(
        self,
    ) -> tuple[ToolFailure | None, float, Verdict | None, Any]:
        """Run the current attempt: its failure (None on success), how long it ran, the
        verdict that refused it before it ran (None if it ran), and its output."""
        failure = await self._ready()
        if failure is not None:
            return failure, 0.0, None, None
        tool, arguments, failure = self._tool()
        if tool is None:
            return failure, 0.0, None, None
        board, key = self.runner.board, board_key(self.tool, tool.scope)
        if not self.admitted and not board.closed(key):
            refusal = await self._admit(tool.scope)
            if refusal is not None:
                return None, 0.0, refusal, None
            # Admitted, or errord silent: a rate limit met here errord has not heard of
            # yet still holds the tool until the wait the backend asked for is over.
            await board.wait_out_limits(key)
        timeout = self.timeout or board.timeout(key, tool.timeout)
        self.attempts += 1
        self.standing.attempts = self.attempts
        self._tell(ProgressKind.ATTEMPT)
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                output = await tool.invoke(arguments, threads=self.runner.threads)
        except TimeoutError as error:
            elapsed = time.monotonic() - started
            if elapsed < timeout:  # the tool's own TimeoutError, not ours
                return failure_from_exception(error), elapsed, None, None
            message = f"{self.tool} did not answer within {timeout:g} s"
            return ToolFailure(message, "TimeoutError", "TIMEOUT"), elapsed, None, None
        except Exception as error:
            failed = failure_from_exception(error)
            if failed.retry_after is not None and _rate_limited(failed):
                board.limit(key, failed.retry_after)  # the other calls hold at once
            return failed, time.monotonic() - started, None, None
        return None, time.monotonic() - started, None, output

    async def _ready(self) -> ToolFailure | None:
        """Await the current tool's ``ready`` (if it has one), and register the tool it
        gives in its place; the failure of an attempt that could not be made ready."""
        registry = self.runner.registry
        try:
            tool = registry.get(self.tool)
        except ToolNotFound:
            return None  # _tool says so
        if tool.ready is None:
            return None
        try:
            current = await tool.ready()
        except Exception as error:  # what prepares the attempt failed: the attempt did
            return failure_from_exception(error)
        if current is not tool:
            registry.replace(current)
        return None

    def _tell(self, kind: ProgressKind, **step: Any) -> None:
        progress = Progress(
            kind, self.batch.turn_id, self.call.call_id, self.tool, self.attempt, **step
        )
        tell(self.runner.on_progress, progress)

    def _tool(self) -> tuple[Tool | None, Mapping[str, Any], ToolFailure | None]:
        """The tool to run and the arguments it takes (``Tool.accept``, unless its own
        framework checks them), or the failure that stands for it: a tool not registered,
        or arguments it cannot take."""
        self.running, self.ignored = None, ()
        try:
            tool = self.runner.registry.get(self.tool)
        except ToolNotFound as error:
            if self.fallback_used:  # errord named it: not the model's mistake
                message = f"the alternative {self.tool} is not registered with the executor"
                return None, {}, ToolFailure(message, "ToolNotFound", "UNSUPPORTED")
            return None, {}, ToolFailure(str(error), "ToolNotFound", "TOOL_NOT_FOUND")
        self.running = tool
        if self.call.malformed and not self.fallback_used:
            message = f"the arguments are not a JSON object: {self.call.malformed}"
            return None, {}, ToolFailure(message, "InvalidArguments", "INVALID_INPUT")
        if tool.validates_arguments:
            return tool, self.call.arguments, None
        try:
            accepted = tool.accept(self.call.arguments)
        except InvalidArguments as error:
            refused = ToolFailure(
                str(error), "InvalidArguments", "INVALID_INPUT", api_parameter=error.parameter
            )
            return None, {}, refused
        self.ignored = accepted.ignored
        return tool, accepted.arguments, None

    async def _admit(self, scope: str) -> Verdict | None:
        """AdmitCall: None when the attempt may run (or errord did not answer: it runs
        then), else the verdict that refused it."""
        request = pb.AdmitCallRequest(
            turn_id=self.batch.turn_id,
            call_id=self.call.call_id,
            tool=self.tool,
            attempt=self.attempt,
            arguments=as_struct(self.call.arguments),
            scope=scope,
        )
        response = await self.link.admit(request)
        if response is None or response.admitted:
            return None
        return from_decision(response.decision)

    async def _decide(self, failure: ToolFailure, elapsed: float) -> Verdict:
        request = pb.ReportFailureRequest(
            turn_id=self.batch.turn_id,
            call_id=self.call.call_id,
            tool=self.tool,
            attempt=self.attempt,
            error=failure.to_proto(),
            arguments=as_struct(self.call.arguments),
            elapsed=as_duration(elapsed),
            scope=self.running.scope if self.running is not None else "",
            user_id=self.batch.user_id,
            session_id=self.batch.session_id,
        )
        if self.running is not None:
            timeout = self.timeout or self.runner.board.timeout(self.key, self.running.timeout)
            request.tool_declaration.CopyFrom(self.runner.declarations.of(self.running, timeout))
        verdict = await self.link.decide(request)
        if verdict is None:
            verdict = self.runner.local_policy.decide(
                self.tool,
                failure,
                self.attempt,
                self.delays.get(self.tool, 0.0),
                self.call.arguments,
                self._parameters(),
            )
        return verdict

    def _parameters(self) -> tuple[str, ...]:
        """The parameters the tool's schema names; none for a tool not registered."""
        try:
            properties = self.runner.registry.get(self.tool).parameters.get("properties")
        except ToolNotFound:
            return ()
        return tuple(properties) if isinstance(properties, dict) else ()

    def _succeeded(self, output: Any) -> ToolResult:
        self.link.report_outcome(
            pb.ReportOutcomeRequest(
                turn_id=self.batch.turn_id,
                call_id=self.call.call_id,
                tool=self.tool,
                attempt=self.attempt,
                outcome=pb.OUTCOME_SUCCESS,
                decision_id=self.last_decision,
                scope=self.running.scope if self.running is not None else "",
                user_id=self.batch.user_id,
                session_id=self.batch.session_id,
            )
        )
        return ToolResult(
            call_id=self.call.call_id,
            tool=self.call.name,
            status=ResultStatus.SUCCEEDED,
            output=output,
            attempts=self.attempts,
            fallback_used=self.fallback_used,
            tool_used=self.tool,
            decided_by=self.decided_by,
            decision_ids=tuple(self.decision_ids),
            ignored_arguments=self.ignored,
        )

    def _ended(self, verdict: Verdict, failure: ToolFailure | None) -> ToolResult:
        status = ENDINGS.get(verdict.action, ResultStatus.FAILED)
        code = verdict.code or (failure.code if failure else "")
        if status in _GIVEN_UP and code == "TIMEOUT":  # its last attempt timed out
            status = ResultStatus.TIMED_OUT
        output = None
        if verdict.action is Action.USE_DEFAULT and verdict.default_value is not NO_VALUE:
            output = verdict.default_value
        elif verdict.action is Action.CONTINUE_PARTIAL and failure is not None:
            output = failure.partial_result
        return ToolResult(
            call_id=self.call.call_id,
            tool=self.call.name,
            status=status,
            output=output,
            error=ResultError(
                code=code,
                error_class=verdict.error_class,
                message=failure.message if failure else verdict.reason,
                user_message=verdict.user_message,
                retryable=verdict.error_class == "transient" and code != "CIRCUIT_OPEN",
                fault=verdict.fault,
                parameter=verdict.parameter,
                exception_type=failure.exception_type if failure else "",
                correction=verdict.correction,
            ),
            attempts=self.attempts,
            fallback_used=self.fallback_used,
            tool_used=self.tool,
            decided_by=verdict.decided_by,
            decision_ids=tuple(self.decision_ids),
            model_text=verdict.llm_message,
            ignored_arguments=self.ignored,
        )


_GIVEN_UP = frozenset({ResultStatus.FAILED, ResultStatus.ESCALATED})
"""Endings that are TIMED_OUT when the call's last attempt timed out."""


def _rate_limited(failure: ToolFailure) -> bool:
    """True for a failure in which the tool's backend limited the call's rate."""
    return failure.http_status == 429 or failure.code == "RATE_LIMITED"
