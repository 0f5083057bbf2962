"""errord's exceptions, one root, expected failures apart from bugs.

    ErrordError                  every error errord raises on purpose
    ├── ConfigError              daemon settings are invalid
    │   └── InvalidSettings      carries every SettingProblem found
    ├── ListenError              the listen address cannot be bound
    ├── ManifestError            tool manifests are invalid; carries every Problem found
    ├── NoManifestDirectory      a reload or replay needs a manifests directory there is not
    ├── InvalidRequest           a request field is wrong; carries FieldViolations
    ├── LimitExceeded            a request would pass one of errord's limits
    ├── ReportConflict           a report's key was recorded with different content
    ├── TurnNotFound             no trace events exist for a turn
    ├── TurnClosed               a failure reported for a turn EndTurn closed
    ├── ToolNotFound             a tool without a manifest errord never saw a report of
    ├── WatcherFellBehind        a trace watcher's backlog overflowed
    └── StoreError               the database cannot be opened, migrated or written
        └── CorruptDatabase      it fails SQLite's integrity check, or is no database

The errord command adds two of its own under ErrordError (errord.cli: CommandError,
TLSFileError), and the fleet one (errord.fleet.records.Refused: a value read from Redis
that is ignored, never raised past the link). Anything else escaping the service layer
is a bug, reported as INTERNAL.
A record refuses a value on construction with InvalidValue (a ValueError naming its
field), which whoever built it words in its own terms: a setting, a manifest key, a
request field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class ErrordError(Exception):
    """Root of every error errord raises on purpose."""


class ConfigError(ErrordError):
    """Daemon settings are invalid; the message names the setting and its source."""


@dataclass(frozen=True)
class SettingProblem:
    """One invalid setting, and what is wrong with it."""

    key: str
    """The setting's key, in its table."""
    message: str
    """What is wrong, such as ``must be at least 1``."""
    table: str = ""
    """The table of the settings file that holds it (``client``); empty: the top level."""

    @property
    def setting(self) -> str:
        """The setting's name, dotted under its table: ``client.tls_ca_file``."""
        return f"{self.table}.{self.key}" if self.table else self.key

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}"


class InvalidSettings(ConfigError):
    """Settings are invalid; ``problems`` lists every one found."""

    def __init__(self, problems: Sequence[SettingProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(map(str, self.problems)))


class InvalidValue(ValueError):
    """A record refused one of its values on construction: ``field``, and what is wrong
    with it (``problem``); the message is "field problem"."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a manifest file, located for a human to fix."""

    file: str
    """The manifest file's path."""
    line: int
    """1-based line of the offending key or value."""
    field: str
    """Dotted path of the field, such as ``tools[0].retry_policy.max_attempts``."""
    message: str
    """What is wrong, such as ``expected an integer, got 'five'``."""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class ManifestError(ErrordError):
    """Tool manifests are invalid; ``problems`` lists every one found."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


@dataclass(frozen=True)
class FieldViolation:
    """One invalid request field, as google.rpc.BadRequest reports it."""

    field: str
    description: str


class InvalidRequest(ErrordError):
    """A request is malformed; each violation names its field."""

    def __init__(self, violations: Sequence[FieldViolation]) -> None:
        self.violations = tuple(violations)
        super().__init__("; ".join(f"{v.field}: {v.description}" for v in self.violations))


class StoreError(ErrordError):
    """The trace database cannot be opened, migrated or written."""


class ReportConflict(ErrordError):
    """A report repeats a recorded key (turn, call, tool, attempt) but says something else."""


class TurnNotFound(ErrordError):
    """No trace events exist for the turn asked about."""


class TurnClosed(ErrordError):
    """A failure was reported for a turn that EndTurn has closed."""


class ToolNotFound(ErrordError):
    """A tool with no manifest that errord has never seen a report of."""

    def __init__(self, tool: str, closest: Sequence[str] | None = None, *, scope: str = "") -> None:
        if scope:
            super().__init__(f"no tool {tool!r} in scope {scope!r}: errord has no report of it")
        elif closest is None:
            super().__init__(f"no tool {tool!r}: it has no manifest and errord has no report of it")
        else:
            known = f"; tools with one: {', '.join(closest)}" if closest else ""
            super().__init__(f"no manifest for tool {tool!r}{known}")


class WatcherFellBehind(ErrordError):
    """A trace watcher read too slowly and its backlog overflowed."""


class ListenError(ErrordError):
    """The daemon cannot listen on the address it was given."""


class NoManifestDirectory(ErrordError):
    """A reload asked of a daemon started without a manifests directory, or a replay of
    another directory than its own asked of one that has no manifests root either."""


class CorruptDatabase(StoreError):
    """The trace database fails SQLite's integrity check, or is no database at all."""


class LimitExceeded(ErrordError):
    """A request would pass one of errord's limits (RESOURCE_EXHAUSTED); the message names
    the limit, its setting, and what to do."""
