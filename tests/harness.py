"""The error handler over a real SQLite store, in the test's event loop, with a fake clock."""

from __future__ import annotations

import asyncio
import itertools
import random
from pathlib import Path
from typing import Any

import yaml

from errord.decide.engine import Engine
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import (
    Action,
    ErrorCode,
    FailureReport,
    Outcome,
    OutcomeReport,
    ReportKey,
    RetryBudget,
    ToolDeclaration,
    ToolFailure,
)
from errord.decide.policy import default_policy
from errord.decide.policy.backoff import Jitter
from errord.decide.texts.layout import MessageFormat
from errord.handler import ErrorHandler
from errord.operator_actions import OperatorActions
from errord.state.memory_retention import MemoryBounds
from errord.state.projections import Projections
from errord.state.store import Store
from tests.fakes import FakeClock, FixedJitter


class Harness:
    """A handler over a store in one directory; ``restart`` reopens both, as a new daemon."""

    def __init__(
        self,
        path: Path,
        manifests: ManifestSnapshot | None = None,
        message_format: MessageFormat = MessageFormat.TEXT,
    ) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.db = path / "errord.db"
        self.manifests = manifests or ManifestSnapshot()
        self.clock = FakeClock()
        self.ids = (f"decision-{n}" for n in itertools.count(1))
        self.capacity = 100_000
        self.budget: RetryBudget | None = None
        """The turns' retry budget; None for none."""
        self.message_format = message_format
        self.memory_bounds = MemoryBounds()
        self.jitter: Jitter | None = FixedJitter()
        """The policy's jitter; None for the daemon's, seeded by each decision's id."""

    async def start(self) -> ErrorHandler:
        self.state = Projections(self.capacity)
        self.store = await Store.open(self.db, self.clock, self.state)
        engine = Engine(
            default_policy(self.jitter, self.budget),
            new_id=lambda: next(self.ids),
            message_format=self.message_format,
        )
        self.handler = ErrorHandler(
            engine, self.store, self.state, self.manifests, self.clock, self.memory_bounds
        )
        handler = self.handler
        self.actions = OperatorActions(
            self.store, self.state, handler.holder, lambda: handler.manifests, self.clock
        )
        return self.handler

    async def restart(self) -> ErrorHandler:
        await self.store.close()
        return await self.start()

    async def close(self) -> None:
        await self.store.close()


TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT)


def failure_report(
    call: str = "c",
    tool: str = "search",
    *,
    attempt: int = 1,
    turn: str = "t",
    error: ToolFailure = TIMEOUT,
    declared_timeout: float | None = None,
    scope: str = "",
) -> FailureReport:
    """The report of ``call``'s ``attempt`` of ``tool`` failing with ``error`` in ``turn``:
    by default the first attempt of call c of search timing out, in turn t. A module binds
    its own defaults with ``functools.partial``."""
    return FailureReport(
        turn_id=turn,
        call_id=call,
        tool=tool,
        attempt=attempt,
        error=error,
        declaration=None if declared_timeout is None else ToolDeclaration(timeout=declared_timeout),
        scope=scope,
    )


ERROR_CORPUS_PATH = Path(__file__).parent / "fixtures" / "error_corpus.yaml"


def load_error_corpus() -> list[dict[str, Any]]:
    """The real error messages of fixtures/error_corpus.yaml, with their expected labels."""
    with ERROR_CORPUS_PATH.open(encoding="utf-8") as stream:
        entries: list[dict[str, Any]] = yaml.safe_load(stream)
    return entries


def corpus_failure(entry: dict[str, Any]) -> ToolFailure:
    """The failure an executor would report for a corpus entry."""
    return ToolFailure(
        http_status=entry.get("http_status"),
        exception_type=entry.get("exception_type", ""),
        message=entry["message"],
    )


FLEET_MANIFESTS = """\
tools:
  - name: search
    alternatives: [search_backup]
    circuit_breaker: {failure_threshold: 3, timeout_ms: 4000}
  - name: search_backup
  - name: weather
  - name: lookup
    optional: true
  - name: pay
    idempotent: false
    parameters:
      type: object
      required: [amount]
      properties:
        amount: {type: number}
"""
"""The tools of ``fleet_load``: a breaker that opens (search, with an alternative), errors
retries mostly fix (weather) and never fix (lookup), and calls the model gets wrong (pay)."""

FLEET_ERRORS = {
    "search": ToolFailure(code=ErrorCode.TIMEOUT, message="read timed out after 30s"),
    "search_backup": ToolFailure(code=ErrorCode.TIMEOUT, message="read timed out after 30s"),
    "weather": ToolFailure(http_status=503, message="HTTP 503 Service Unavailable"),
    "lookup": ToolFailure(http_status=503, message="HTTP 503 Service Unavailable"),
    "pay": ToolFailure(code=ErrorCode.INVALID_INPUT, message="amount: expected a number"),
}
FLEET_RECOVERS = {"search": 0.3, "search_backup": 0.6, "weather": 0.9, "lookup": 0.0, "pay": 0.5}
"""How often an attempt after a failure succeeds, per tool."""


async def fleet_load(
    handler: ErrorHandler,
    clock: FakeClock,
    actions: OperatorActions,
    *,
    failures: int,
    calls_per_wave: int = 40,
    seed: int = 7,
) -> int:
    """Report at least ``failures`` failures of the FLEET_MANIFESTS tools as executors
    would, ``calls_per_wave`` calls at once, each following errord's decisions (retries,
    alternatives, a probe claimed when the breaker is half-open), a second between waves
    and a quiet minute every ten (each ten a burst of its own for episodic memory), turns
    ended, and now and then an operator's reset; the failures reported."""
    chooser = random.Random(seed)
    tools = sorted(FLEET_ERRORS)
    reported = [0]
    wave = 0
    while reported[0] < failures:
        turns = [f"w{wave}-t{n}" for n in range(calls_per_wave // 4)]
        await asyncio.gather(
            *(
                _fleet_call(handler, chooser, reported, turns[n % len(turns)], f"c{n}", tool)
                for n, tool in enumerate(chooser.choice(tools) for _ in range(calls_per_wave))
            )
        )
        await asyncio.gather(*(handler.end_turn(turn) for turn in turns[::2]))
        if wave % 25 == 24:
            await actions.reset_breaker("search", by="fleet_load")
        clock.advance(61.0 if wave % 10 == 9 else 1.0)
        wave += 1
    return reported[0]


async def _fleet_call(
    handler: ErrorHandler,
    chooser: random.Random,
    reported: list[int],
    turn: str,
    call: str,
    tool: str,
) -> None:
    attempt = 1
    while True:
        if attempt > 1 and handler.breaker(tool) is not None:
            admission, refused, _ = await handler.admit_call(
                ReportKey(turn, call, tool, attempt), {}
            )
            if not admission.admitted:
                reported[0] += 1
                assert refused is not None
                return
        await asyncio.sleep(0)  # the attempt runs: others report meanwhile
        if attempt > 1 and chooser.random() < FLEET_RECOVERS[tool]:
            success = OutcomeReport(
                turn_id=turn, call_id=call, tool=tool, attempt=attempt, outcome=Outcome.SUCCESS
            )
            await handler.report_outcome(success)
            return
        report = FailureReport(
            turn_id=turn,
            call_id=call,
            tool=tool,
            attempt=attempt,
            error=FLEET_ERRORS[tool],
            arguments={"amount": "ten"} if tool == "pay" else {},
        )
        decision, _ = await handler.report_failure(report)
        reported[0] += 1
        if decision.action is Action.RETRY:
            attempt += 1
        elif decision.action is Action.USE_ALTERNATIVE and decision.alternative_tool:
            tool, attempt = decision.alternative_tool, 1
        elif decision.action is Action.RETURN_TO_MODEL:
            attempt += 1
        else:
            return
