"""The error handler over a real SQLite store, in the test's event loop, with a fake clock."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import yaml

from errord.decide.engine import Engine
from errord.decide.manifest_snapshot import ManifestSnapshot
from errord.decide.model import ErrorCode, FailureReport, RetryBudget, ToolFailure
from errord.decide.model_message import MessageFormat
from errord.decide.policy import default_policy
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

    async def start(self) -> ErrorHandler:
        self.state = Projections(self.capacity)
        self.store = await Store.open(self.db, self.clock, self.state)
        engine = Engine(
            default_policy(FixedJitter(), self.budget),
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
) -> FailureReport:
    """The report of ``call``'s ``attempt`` of ``tool`` failing with ``error`` in ``turn``:
    by default the first attempt of call c of search timing out, in turn t. A module binds
    its own defaults with ``functools.partial``."""
    return FailureReport(turn_id=turn, call_id=call, tool=tool, attempt=attempt, error=error)


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
