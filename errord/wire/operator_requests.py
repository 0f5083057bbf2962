"""OperatorService's requests in: a reload's author, a breaker reset or forced open, a
tool's statistics, memory recalled; every field validated.

Each ``*_from_proto`` raises InvalidRequest naming every bad field of its request
(errord.wire.bounds).
"""

from __future__ import annotations

from dataclasses import dataclass

from errord_client.v1 import errord_pb2 as pb

from errord.decide.manifest import MAX_COOLDOWN
from errord.decide.model import ErrorCode
from errord.wire.bounds import Violations
from errord.wire.requests import CODES, optional_identifier

MAX_FORCED_OPEN_SECONDS = MAX_COOLDOWN
"""The longest timed forced opening (a week); longer ones are until reset."""
MAX_BY_LENGTH = 512
"""Characters of the ``by`` an operator gives a reset, a forced opening or a reload."""


def reload_by_from_proto(request: pb.ReloadManifestsRequest) -> str:
    """Who asked for the reload, as the request says."""
    check = Violations()
    by = check.text("by", request.by, MAX_BY_LENGTH)
    check.raise_any()
    return by


def tool_from_proto(tool: str, scope: str = "") -> tuple[str, str]:
    """The tool an operator request names, and its scope (empty: none)."""
    check = Violations()
    tool = check.identifier("tool", tool)
    scope = optional_identifier(check, "scope", scope)
    check.raise_any()
    return tool, scope


@dataclass(frozen=True)
class BreakerAction:
    """A reset, or a forced opening of ``seconds`` (0: until reset), of the breaker of
    ``tool`` in ``scope``."""

    tool: str
    by: str
    seconds: float = 0.0
    scope: str = ""


def reset_from_proto(request: pb.ResetBreakerRequest) -> BreakerAction:
    check = Violations()
    tool = check.identifier("tool", request.tool)
    by = check.text("by", request.by, MAX_BY_LENGTH)
    scope = optional_identifier(check, "scope", request.scope)
    check.raise_any()
    return BreakerAction(tool, by, scope=scope)


def forced_opening_from_proto(request: pb.ForceOpenBreakerRequest) -> BreakerAction:
    check = Violations()
    tool = check.identifier("tool", request.tool)
    scope = optional_identifier(check, "scope", request.scope)
    by = check.text("by", request.by, MAX_BY_LENGTH)
    problems_before = len(check.found)
    seconds = check.seconds("duration", request.duration)
    if len(check.found) == problems_before and seconds > MAX_FORCED_OPEN_SECONDS:
        check.add(
            "duration",
            f"at most {MAX_FORCED_OPEN_SECONDS:g} s (a week); leave it unset to keep "
            "the breaker open until ResetBreaker",
        )
    check.raise_any()
    return BreakerAction(tool, by, seconds, scope)


@dataclass(frozen=True)
class EpisodeQuery:
    """What RecallEpisodes asks memory: one tool's errors, or the one ``message`` is."""

    tool: str
    message: str | None
    code: ErrorCode | None
    scope: str = ""


def episode_query_from_proto(request: pb.RecallEpisodesRequest) -> EpisodeQuery:
    check = Violations()
    tool = check.identifier("tool", request.tool)
    scope = optional_identifier(check, "scope", request.scope)
    message = check.text("message", request.message) if request.message else None
    code = None
    if request.code != pb.ERROR_CODE_UNSPECIFIED:
        code = check.enum("code", request.code, CODES)
    check.raise_any()
    return EpisodeQuery(tool, message, code, scope)
