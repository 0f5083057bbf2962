"""What the engine reads of the state: the views its caller hands it (``CallHistory``,
``TurnHistory``, ``ToolActivity`` and the ``...Views`` of breakers, windows and memory, as
errord.state's projections offer them; ``no_...`` for a state that holds nothing), and
what deciding on one failure reads of them, said before they are read (``Reads``).

The caller must hold in memory every state a decision reads (errord.handler reads
back what a projection dropped for room). Beyond the call and the turn, that is the
breakers of the tool and its alternatives, and what episodic memory holds of the
error, whose key is the error's signature. The error is classified and signed at
most once per report (whose fault it is, which reads the call's arguments, once per
report too): when the caller first asks for the memory key (only when
memory dropped errors for room) or when the decision needs them, and a report
answered from the trace (a repeat) is never classified at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Protocol

from errord.decide.classify import classify, names_of, with_fault
from errord.decide.manifest import ManifestSnapshot, ToolManifest
from errord.decide.memory import MemoryKey, MemoryStats, Signature, signature
from errord.decide.model import (
    BreakerState,
    CallProgress,
    Classification,
    Episode,
    FailureReport,
    PlannedCall,
    RateWindow,
    RetryBudget,
    tool_key,
)


class CallHistory(Protocol):
    """What the engine reads of a call's past (errord.state.calls.CallState)."""

    def delay_granted(self, tool: str) -> float: ...

    def refused(self, tool: str) -> int: ...

    def run_time(self, tool: str) -> float: ...

    def ran_attempts(self, tool: str) -> int: ...

    @property
    def failed_tools(self) -> frozenset[str]: ...

    @property
    def corrections(self) -> int: ...

    def awaited_by(self, tool: str, attempt: int) -> Episode | None: ...


class TurnHistory(Protocol):
    """What the engine reads of a turn (errord.state.turns.TurnState)."""

    @property
    def began_at(self) -> datetime: ...

    @property
    def calls(self) -> tuple[str, ...]: ...

    @property
    def retries(self) -> int: ...

    @property
    def deadline(self) -> datetime | None: ...

    @property
    def retry_budget(self) -> RetryBudget | None: ...

    @property
    def corrections(self) -> int: ...

    def told(self, mistake: str) -> int: ...

    @property
    def plan(self) -> tuple[PlannedCall, ...]: ...

    @property
    def progress(self) -> Mapping[str, CallProgress]: ...


MemoryViews = Callable[[str, str], MemoryStats | None]
"""What episodic memory holds of a tool's error, by tool and signature key."""


def no_memory(tool: str, signature_key: str) -> MemoryStats | None:
    return None


BreakerViews = Callable[[str], BreakerState | None]
"""A tool's breaker as decisions see it (errord.state.breakers), None if it never changed."""


def no_breakers(tool: str) -> BreakerState | None:
    return None


BreakerGate = Callable[[str, BreakerState, datetime], BreakerState]
"""A tool's breaker as decisions must obey it, given its key, the host's own breaker and
the time: the own one, or a stricter one while the fleet refuses the tool (errord.fleet).
Never recorded: the trace keeps the host's own breaker."""


def ungated(tool: str, state: BreakerState, now: datetime) -> BreakerState:
    return state


WindowViews = Callable[[str], RateWindow | None]
"""A tool's rate-limit window (errord.state.rate_windows), None if it never had one."""


def no_windows(tool: str) -> RateWindow | None:
    return None


class ToolActivity(Protocol):
    """What the engine reads of a tool's activity for every call (errord.state.tool_stats)."""

    @property
    def succeeded_at(self) -> datetime | None: ...

    @property
    def reset_at(self) -> datetime | None: ...


ActivityViews = Callable[[str], ToolActivity | None]
"""A tool's activity, None if no report of it was recorded."""


def no_activity(tool: str) -> ToolActivity | None:
    return None


class Reads:
    """What deciding on one failure reads, beyond its call and its turn."""

    __slots__ = ("_classified", "_fault", "_manifest", "_report", "breakers", "manifests")

    def __init__(
        self,
        report: FailureReport,
        manifests: ManifestSnapshot,
        classified: tuple[Classification, Signature] | None = None,
    ) -> None:
        """For ``report`` (redacted already) decided with ``manifests``; ``classified``, its
        error's classification and signature when the caller knows them already (a replay
        that met the same error of the same tool before)."""
        self._report = report
        self._manifest: ToolManifest = manifests.manifest_for(report.tool)[0]
        self._classified = classified
        self._fault: Classification | None = None
        self.manifests = manifests
        """The manifests these were worked out with: a decision with others works them out
        again."""
        scope = report.scope
        self.breakers = (
            (report.tool, *self._manifest.alternatives)
            if not scope
            else tuple(
                tool_key(tool, scope) for tool in (report.tool, *self._manifest.alternatives)
            )
        )
        """The keys of the breakers the decision reads: the failed tool's and its
        alternatives', in the call's scope."""

    @property
    def classification(self) -> Classification:
        """The error, classified by its tool's rules, with whose fault it is by the call's
        arguments (errord.decide.classify.fault)."""
        if self._fault is None:
            report = self._report
            self._fault = with_fault(
                self._classify()[0], report.error, report.arguments, self.parameters
            )
        return self._fault

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameters the tool's schema names: its manifest's, else the executor's."""
        schema = self._manifest.parameters
        if schema is None and self._report.declaration is not None:
            schema = self._report.declaration.parameters
        return tuple(names_of(schema))

    @property
    def error(self) -> Signature:
        """The error's signature: which error it is, for episodic memory."""
        return self._classify()[1]

    @property
    def classified(self) -> tuple[Classification, Signature]:
        """The classification (before the call's evidence) and the signature, as a Reads
        for the same error of the same tool may be given them."""
        return self._classify()

    @property
    def memory_key(self) -> MemoryKey:
        """Where episodic memory holds this error of this tool."""
        return MemoryKey(self._report.tool_key, self.error.key)

    def _classify(self) -> tuple[Classification, Signature]:
        if self._classified is None:
            report = self._report
            classification = classify(report.error, self._manifest.classification, report.tool)
            self._classified = classification, signature(classification.code, report.error.message)
        return self._classified
