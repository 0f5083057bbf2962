"""How attempts turned out: an attempt's outcome as the executor reports it, and the
episodes of episodic memory: a recovery errord decided on (a retry, an alternative
tool), closed by the outcome of the attempt that tells whether it worked.
"""

from __future__ import annotations

from datetime import datetime

from msgspec import Struct

from errord.decide.model.decisions import Action
from errord.decide.model.failures import ClosedEnum, Record, ReportKey
from errord.decide.model.scope import tool_key


class Outcome(ClosedEnum):
    """How an attempt ended."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"


class OutcomeReport(Record, frozen=True):
    """How one attempt of a tool call ended."""

    turn_id: str
    call_id: str
    tool: str
    attempt: int
    outcome: Outcome
    duration: float = 0.0
    """Seconds the attempt ran."""
    decision_id: str = ""
    """The decision the attempt followed, if any."""
    user_id: str = ""
    """As FailureReport's: for telemetry, never logged."""
    session_id: str = ""
    scope: str = ""
    """As FailureReport's: the scope the attempt ran in."""

    @property
    def key(self) -> ReportKey:
        return ReportKey(self.turn_id, self.call_id, self.tool, self.attempt)

    @property
    def tool_key(self) -> str:
        """The key of the tool's state in the report's scope (errord.decide.model.scope)."""
        return tool_key(self.tool, self.scope)


class EpisodeOutcome(ClosedEnum):
    """How a recovery errord decided on turned out."""

    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class Episode(Record, frozen=True):
    """A recovery whose outcome says whether it worked, for episodic memory: a RETRY of
    the failing tool, or the alternative tool used instead. The
    attempt that tells is attempt ``attempt`` of ``via`` on the same call."""

    tool: str
    """The tool that failed."""
    signature: str
    """Which error it was: errord.decide.memory.signatures.Signature.key."""
    action: Action
    decision_id: str
    decided_at: datetime
    via: str
    """The tool whose next attempt tells: the failing tool for RETRY, the alternative."""
    attempt: int
    """The attempt of ``via`` that tells."""
    until: datetime
    """When the telling attempt is over at the latest (the delay plus its timeout); an
    episode still open then has an unknown outcome."""
    fingerprint: str = ""
    """The error's message with its varying details replaced, for people to read."""
    scope: str = ""
    """The scope the failing tool ran in: memory is per tool and scope."""

    @property
    def tool_key(self) -> str:
        """The key of the failing tool's state in its scope (errord.decide.model.scope)."""
        return tool_key(self.tool, self.scope)


class ClosedEpisode(Record, frozen=True):
    """An episode with its outcome, as the report that told it records it."""

    episode: Episode
    outcome: EpisodeOutcome
    at: datetime


class MemoryKey(Struct, frozen=True, array_like=True, gc=False):
    """Where episodic memory holds a tool's error: the tool in a scope, and the error's
    signature."""

    tool: str
    """The tool's key: its name, and its scope if any (errord.decide.model.scope)."""
    signature: str
    """Which error: errord.decide.memory.signatures.Signature.key."""
