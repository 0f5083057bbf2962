"""The daemon's settings, each with its default and its documentation.

A record validated on construction (errord.config.problems names every invalid
setting at once); ``from_toml`` reads a settings file (errord.config.settings_file),
``override`` puts the command's flags on top. The records errord builds from them
(each tool's breaker and retry defaults, the turns' retry budget, the limits, the alert
thresholds) take their attributes from the settings the tables below name, which also
name the setting when a record refuses a value.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from errord_client.operator_token import OPERATOR_TOKEN, default_state_directory

from errord.client_config import ClientSettings
from errord.config.problems import problems
from errord.config.settings_file import settings_from_file
from errord.decide.health.alerts import AlertThresholds
from errord.decide.manifest import BreakerPolicy, RetryPolicy
from errord.decide.manifest.snapshot import ToolDefaults
from errord.decide.model import RetryBudget
from errord.decide.texts.layout import MessageFormat
from errord.errors import InvalidSettings
from errord.limits import MAX_TOOLS, STATE_CAPACITY, Limits

BREAKER_SETTINGS = {
    "failure_threshold": "breaker_failure_threshold",
    "cooldown": "breaker_cooldown_seconds",
    "success_threshold": "breaker_success_threshold",
    "first_cooldown": "breaker_first_cooldown_seconds",
    "cooldown_multiplier": "breaker_cooldown_multiplier",
    "failure_rate": "breaker_failure_rate",
    "min_calls": "breaker_min_calls",
    "window": "breaker_window",
}
"""The setting of each attribute of every tool's default BreakerPolicy."""
RETRY_SETTINGS = {
    "max_total_time": "retry_max_total_time_seconds",
    "max_retry_after": "retry_max_retry_after_seconds",
}
"""The setting of each attribute of every tool's default RetryPolicy that one sets."""
BUDGET_SETTINGS = {
    "max_retries": "turn_retry_budget",
    "max_share": "turn_retry_budget_share",
}
"""The setting of each attribute of every turn's RetryBudget."""
ALERT_SETTINGS = {
    "failure_rate": "alert_failure_rate",
    "mean_duration": "alert_mean_duration_seconds",
    "window": "alert_window_seconds",
    "min_executions": "alert_min_executions",
}
"""The setting of each attribute of the AlertThresholds."""
LIMIT_SETTINGS = {limit.name: limit.name for limit in fields(Limits)}
"""The setting of each attribute of the Limits: its own name."""


def default_db_path() -> Path:
    """errord.db in systemd's STATE_DIRECTORY, else XDG_STATE_HOME, else ~/.local/state."""
    return default_state_directory() / "errord.db"


def default_listen() -> str:
    """errord.sock in systemd's RUNTIME_DIRECTORY, else 127.0.0.1:50051."""
    runtime_directory = os.environ.get("RUNTIME_DIRECTORY")
    if runtime_directory:
        return f"unix:{Path(runtime_directory.split(':')[0]) / 'errord.sock'}"
    return "127.0.0.1:50051"


@dataclass(frozen=True)
class Settings:
    """Everything the daemon needs to start."""

    listen: str = field(default_factory=default_listen)
    """Where to serve gRPC: host:port or unix:PATH."""
    db: Path = field(default_factory=default_db_path)
    """The SQLite trace database."""
    manifests: Path | None = None
    """Directory of tool manifests; None for none."""
    manifests_root: Path | None = None
    """The directory manifests are read under (errord.manifests.root): ReplayManifests
    replays a directory under it only, and no manifest may be a symbolic link leading out
    of it. None: the real parent of ``manifests``; with neither, ReplayManifests replays
    the daemon's own manifests only."""
    shutdown_grace_seconds: float = 5.0
    """How long shutdown may take: the drain (at most half of it), then the calls still in
    flight."""
    shutdown_quiet_seconds: float = 0.5
    """At shutdown the server keeps taking and deciding calls until none has arrived for
    this long (errord.wire.drain); 0 stops it at once."""
    log_level: str = "info"
    """debug, info, warning or error."""
    log_format: str = "logfmt"
    """logfmt or json: how each line of the log on stderr is laid out."""
    reflection: bool | None = None
    """Server reflection; None turns it on for loopback and unix sockets only."""
    metrics_listen: str | None = None
    """host:port of the Prometheus HTTP endpoint; None for none."""
    console_listen: str | None = None
    """host:port or unix:PATH of the read-only web console (errord.ops.console); None for
    none. It needs the operator token, and serves HTTPS with the TLS files on TCP."""
    console_trace_url: str | None = None
    """A link from a turn's page to its spans in the tracing system: an http(s) URL in
    which ``{trace_id}`` (the trace errord derives from the turn id) and ``{turn_id}``
    are replaced; shown when OpenTelemetry export is on. None for no link."""
    breaker_failure_threshold: int = BreakerPolicy.failure_threshold
    breaker_cooldown_seconds: float = BreakerPolicy.cooldown
    """The longest break, and how long a breaker stays closed before its next break is the
    first again (the seed's fixed 30 s break)."""
    breaker_success_threshold: int = BreakerPolicy.success_threshold
    breaker_first_cooldown_seconds: float = BreakerPolicy.first_cooldown
    """The first break; equal to breaker_cooldown_seconds, every break is the seed's."""
    breaker_cooldown_multiplier: float = BreakerPolicy.cooldown_multiplier
    breaker_failure_rate: float = BreakerPolicy.failure_rate
    breaker_min_calls: int = BreakerPolicy.min_calls
    breaker_window: int = BreakerPolicy.window
    retry_max_total_time_seconds: float = RetryPolicy.max_total_time
    """Seconds of delay one call's retries of a tool may be granted in all (the seed: 2)."""
    retry_max_retry_after_seconds: float | None = RetryPolicy.max_retry_after
    """The longest Retry-After honoured; None: any that fits the remaining total retry time
    (the seed: 0.8, its max_delay)."""
    alert_failure_rate: float = AlertThresholds.failure_rate
    alert_mean_duration_seconds: float = AlertThresholds.mean_duration
    alert_window_seconds: float = AlertThresholds.window
    alert_min_executions: int = AlertThresholds.min_executions
    turn_deadline_seconds: float = 300.0
    """A turn's deadline, from its beginning, when BeginTurn gives none."""
    turn_retry_budget: int | None = None
    """Retries one turn's calls may be granted in all; None for no count."""
    turn_retry_budget_share: float | None = None
    """Retries per call of a turn, rounded up; None for no share."""
    model_corrections: int = 2
    """Times per call, and per mistake in a turn, a failure the model caused goes back to it
    before ESCALATE (or FAIL, for an optional call)."""
    llm_message_format: str = "text"
    """How llm_message is laid out: text or json."""
    memory_min_episodes: float = 5.0
    """Told episodes (decayed) of a recovery before episodic memory steers decisions."""
    memory_max_errors: int = 100_000
    """Errors (a tool and a signature) episodic memory holds; the least recently seen
    beyond it are forgotten."""
    memory_max_age_seconds: float = 86_400.0
    """An error memory has not seen for this long is forgotten."""
    state_capacity: int = STATE_CAPACITY
    """Calls, and turns, whose state is held in memory; the least recently changed beyond
    it are read back from the database when a report needs them."""
    trace_retention_seconds: float = 7 * 86_400.0
    """Seconds after its last event that a turn (not open) leaves the trace; the
    daemon's own events go at the same age."""
    trace_retention_bytes: int = 1 << 30
    """Bytes the database may take: past 90 % of it the oldest turns (not open, a minute
    old) leave the trace until it takes under 80 %."""
    max_tools: int = MAX_TOOLS
    """Tools with state (statistics, a breaker), held in memory whole; past it a report
    naming a new tool without a manifest is refused."""
    socket_group: str | int | None = None
    """Group (name or number) of a unix socket, which is mode 0660; None for the daemon's
    own group. Unused on TCP."""
    token_file: Path | None = None
    """File holding the bearer token callers must send; read at start. None for no token."""
    operator_token_file: Path | None = None
    """Without ``token_file``: the file holding the token operator calls must send, made
    (mode 0600, random) at the first start; None for ``operator.token`` beside ``db``."""
    tls_cert_file: Path | None = None
    """PEM certificate chain of TLS on a TCP listener; None for plaintext."""
    tls_key_file: Path | None = None
    """PEM private key of ``tls_cert_file``."""
    tls_client_ca_file: Path | None = None
    """PEM CA certificates; when set, TLS clients must present a certificate they signed."""
    max_message_bytes: int = Limits.max_message_bytes
    """The largest request accepted, in bytes."""
    max_concurrent_rpcs: int = Limits.max_concurrent_rpcs
    """Calls in progress at once, beside the streams (which have limits of their own)."""
    max_health_watches: int = Limits.max_health_watches
    """Health Watch streams open at once."""
    max_watchers: int = Limits.max_watchers
    """WatchTrace streams open at once."""
    max_tool_watchers: int = Limits.max_tool_watchers
    """WatchTools streams open at once."""
    max_reflection_streams: int = Limits.max_reflection_streams
    """Server reflection streams open at once."""
    peer_stream_share: float = Limits.peer_stream_share
    """The part of each stream limit one TCP peer (an address) may hold."""
    max_turn_events: int = Limits.max_turn_events
    """Trace events one turn may hold."""
    keepalive_min_ping_seconds: float = Limits.keepalive_min_ping_seconds
    """The shortest interval between a client's pings that is not abuse."""
    keepalive_permit_without_calls: bool = Limits.keepalive_permit_without_calls
    """Whether clients may ping a connection with no call in progress."""
    otel_endpoint: str | None = None
    """OTLP/HTTP endpoint spans are exported to (/v1/traces appended); None: the
    environment's OTEL_EXPORTER_OTLP_ENDPOINT, if any (errord.wire.telemetry)."""
    telemetry_hash_ids: bool = False
    """Whether reports' user_id and session_id are recorded and exported as their hex
    SHA-256 (of ``telemetry_id_salt`` followed by the id) instead of as given."""
    telemetry_id_salt: str | None = None
    """Prefixed to each id before it is hashed; None for none."""
    fleet_url: str | None = None
    """The Redis (or Valkey) a fleet shares through: redis://, rediss:// (TLS) or
    unix:///PATH, with an ACL user and password if any (errord.fleet); None: alone."""
    fleet_name: str = "errord"
    """The fleet's name: daemons share only with those of the same name."""
    fleet_host: str | None = None
    """This daemon's name in the fleet; None: the machine's host name."""
    fleet_quorum: int = 2
    """Hosts whose own breaker of a tool must be open for every host to refuse it."""
    fleet_breaker_window_seconds: float = 120.0
    """How long after a host's breaker opened that opening counts towards the quorum."""
    client: ClientSettings = field(default_factory=ClientSettings)
    """How the operator commands reach this daemon: the ``[client]`` table."""

    def __post_init__(self) -> None:
        found = list(problems(self))
        if found:
            raise InvalidSettings(found)

    @property
    def operator_token_path(self) -> Path:
        """Where the operator's token is kept: ``token_file`` when it is set (one token for
        everything), else ``operator_token_file``, else ``operator.token`` beside ``db``."""
        return self.token_file or self.operator_token_file or self.db.parent / OPERATOR_TOKEN

    @property
    def message_format(self) -> MessageFormat:
        return MessageFormat(self.llm_message_format)

    def breaker_defaults(self) -> BreakerPolicy:
        return BreakerPolicy(**self._record(BREAKER_SETTINGS))

    def retry_defaults(self) -> RetryPolicy:
        return RetryPolicy(**self._record(RETRY_SETTINGS))

    def tool_defaults(self) -> ToolDefaults:
        """What a tool without a manifest gets, and what a manifest does not say."""
        return ToolDefaults(retry_policy=self.retry_defaults(), breaker=self.breaker_defaults())

    def retry_budget(self) -> RetryBudget | None:
        """The retry budget of every turn; None when neither setting is given."""
        if self.turn_retry_budget is None and self.turn_retry_budget_share is None:
            return None
        return RetryBudget(**self._record(BUDGET_SETTINGS))

    def limits(self) -> Limits:
        return Limits(**self._record(LIMIT_SETTINGS))

    def alert_thresholds(self) -> AlertThresholds:
        return AlertThresholds(**self._record(ALERT_SETTINGS))

    def records(self) -> tuple[tuple[Callable[[], object], Mapping[str, str]], ...]:
        """Each record built from the settings, and the setting of each of its attributes
        (what names a value it refuses: errord.config.problems)."""
        return (
            (self.breaker_defaults, BREAKER_SETTINGS),
            (self.retry_defaults, RETRY_SETTINGS),
            (self.alert_thresholds, ALERT_SETTINGS),
            (self.retry_budget, BUDGET_SETTINGS),
            (self.limits, LIMIT_SETTINGS),
        )

    def _record(self, settings: Mapping[str, str]) -> dict[str, Any]:
        """The values of ``settings`` (attribute of a record: its setting) by attribute."""
        return {attribute: getattr(self, setting) for attribute, setting in settings.items()}

    @property
    def logging_level(self) -> int:
        return int(getattr(logging, self.log_level.upper()))

    @classmethod
    def from_toml(cls, path: Path) -> Settings:
        """Settings from the TOML file at ``path``. Raises ConfigError naming the file, and
        each problem's line and setting, every problem at once."""
        return settings_from_file(path, cls)

    def override(self, **values: Any) -> Settings:
        """A copy with every value that is not None replaced."""
        return replace(self, **{key: value for key, value in values.items() if value is not None})
