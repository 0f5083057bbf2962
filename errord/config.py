"""Daemon settings: embedded defaults, a TOML file, command-line flags (last wins).

    listen = "127.0.0.1:50051"          # host:port, [v6]:port, or unix:PATH (under systemd:
                                        # errord.sock in $RUNTIME_DIRECTORY)
    db = "/var/lib/errord/errord.db"    # the trace database
    manifests = "/etc/errord/tools.d"   # directory of tool manifests (YAML)
    manifests_root = "/etc/errord"      # manifests are read under it only (ReplayManifests
                                        # too); default: the real parent of manifests
    shutdown_grace_seconds = 5.0        # how long shutdown may take: drain, then calls in flight
    shutdown_quiet_seconds = 0.5        # drain: keep deciding until no call came for this long
    log_level = "info"
    log_format = "logfmt"               # "logfmt" or "json", one line per record on stderr
    reflection = true                   # default: on for loopback and unix sockets
    metrics_listen = "127.0.0.1:9464"   # Prometheus /metrics over HTTP; off when unset
    console_listen = "127.0.0.1:9465"   # the read-only web console (docs/operations.md), host:port
                                        # or unix:PATH; off when unset; the operator token and
                                        # the TLS files apply
    console_trace_url = "https://tracing.example/trace/{trace_id}"  # a turn's link to its
                                        # spans when OpenTelemetry export is on ({turn_id} too)

    # Who may call; errord/wire/access.py tabulates which calls need the token.
    socket_group = "errord"             # a unix: socket's group (mode 0660); default: errord's
    token_file = "/etc/errord/token"    # require "authorization: Bearer <token>"; off when unset
    operator_token_file = "operator.token"  # without token_file, the operator's token: made
                                        # (0600) at first start; default: beside the db
    tls_cert_file = "tls/cert.pem"      # serve TCP over TLS: certificate chain (PEM) ...
    tls_key_file = "tls/key.pem"        # ... and its unencrypted private key
    tls_client_ca_file = "tls/ca.pem"   # require client certificates these CAs signed

    # Defaults of every tool's circuit breaker; a manifest's circuit_breaker overrides them.
    breaker_failure_threshold = 5       # consecutive transient failures, of two calls at least
                                        # and with no recent success, that open it
    breaker_failure_rate = 0.5          # or this share of failures among the recent attempts,
    breaker_min_calls = 50              # once there are this many of them,
    breaker_window = 100                # of the last this many (since the last quiet spell)
    breaker_first_cooldown_seconds = 1.0  # the first break: open this long, then one probe
    breaker_cooldown_multiplier = 1.5   # each opening in a row waits this much longer ...
    breaker_cooldown_seconds = 30.0     # ... at most this long (the seed's fixed break)
    breaker_success_threshold = 2       # consecutive successes in half-open that close it

    # Defaults of every tool's retry policy; a manifest's retry_policy overrides them.
    retry_max_total_time_seconds = 30.0  # delays granted to one call's retries in all (seed: 2)
    retry_max_retry_after_seconds = 0.8  # the longest Retry-After honoured; unset (default):
                                        # any that fits the remaining total retry time

    turn_deadline_seconds = 300.0       # a turn's deadline when BeginTurn gives none

    # Errors the model caused go back to it this many times per call and per mistake in a
    # turn, then escalate (or fail, for an optional call).
    model_corrections = 2
    llm_message_format = "text"         # "text" (a block of labelled lines) or "json" (one object)

    # Episodic memory steers a decision once a recovery has this many told episodes (decayed).
    memory_min_episodes = 5
    memory_max_errors = 100000          # errors (tool and signature) memory holds at most
    memory_max_age_seconds = 86400      # an error not seen for this long is forgotten
    state_capacity = 25000              # calls, and turns, held in memory; older: read back

    # The trace keeps turns this long after their last event, and within this size (the
    # oldest done turns go first); breakers, statistics and memory are kept whole.
    trace_retention_seconds = 604800    # 7 days
    trace_retention_bytes = 1073741824  # 1 GiB
    max_tools = 10000                   # tools with state; past it a new tool without a
                                        # manifest is refused (RESOURCE_EXHAUSTED)

    # Retries and corrections one turn's calls may be granted in all; no budget unless set.
    turn_retry_budget = 10              # at most this many
    turn_retry_budget_share = 1.0       # at most this many per call of the turn, rounded up

    # When GetToolStats, `errord stats` and /metrics flag a tool.
    alert_failure_rate = 0.05           # recent failures per execution above this
    alert_mean_duration_seconds = 5.0   # recent mean duration above this
    alert_window_seconds = 300          # "recent": 60 to 3600, in whole minutes
    alert_min_executions = 10           # recent executions before the rate is judged

    # How much one caller may ask (errord/limits.py); passing one answers RESOURCE_EXHAUSTED.
    max_message_bytes = 4194304         # largest request, 64 KiB to 64 MiB
    max_concurrent_rpcs = 1000          # calls in progress at once, beside the streams
    max_health_watches = 256            # health Watch streams open at once
    max_watchers = 512                  # WatchTrace streams open at once
    max_tool_watchers = 512             # WatchTools streams open at once
    max_reflection_streams = 64         # server reflection streams open at once
    peer_stream_share = 0.5             # of each stream limit, what one TCP peer may hold
    max_turn_events = 10000             # trace events one turn may hold; EndTurn still closes it
    keepalive_min_ping_seconds = 10.0   # two client pings sooner than this: GOAWAY too_many_pings
    keepalive_permit_without_calls = true  # pings on a connection with no call in progress

    # OpenTelemetry (docs/operations.md): spans of decisions, off unless an endpoint is set
    # here or in OTEL_EXPORTER_OTLP_ENDPOINT; needs the errord[otel] extra.
    otel_endpoint = "http://127.0.0.1:4318"  # OTLP/HTTP collector; /v1/traces is appended
    telemetry_hash_ids = false          # user_id, session_id: recorded and exported as SHA-256
    telemetry_id_salt = "..."           # prefixed to each id before it is hashed

    # A fleet (docs/fleet.md): daemons sharing rate-limit windows, breaker evidence and
    # memory through Redis or Valkey; off unless fleet_url is set; needs errord[fleet].
    fleet_url = "redis://errord:secret@10.0.0.5:6379/0"  # or rediss://, or unix:///PATH
    fleet_name = "errord"               # daemons of one fleet share a name (and a Redis)
    fleet_host = "agent-1"              # this daemon's name in the fleet; default: hostname
    fleet_quorum = 2                    # hosts whose breaker must be open to refuse a tool
    fleet_breaker_window_seconds = 120  # how long a host's breaker opening counts

Relative paths in the file are relative to the file's directory. A ``[client]`` table
says how the operator commands reach the daemon (errord/client_config.py).
"""

from __future__ import annotations

import logging
import math
import os
import re
import string
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import NoneType
from typing import Any, get_args, get_type_hints

from errord_client.operator_token import OPERATOR_TOKEN, default_state_directory

from errord.client_config import ClientSettings
from errord.decide.alerts import AlertThresholds
from errord.decide.manifest import MAX_COOLDOWN, BreakerPolicy, RetryPolicy
from errord.decide.manifest_snapshot import ToolDefaults
from errord.decide.model import RetryBudget
from errord.decide.model_message import MessageFormat
from errord.errors import ConfigError
from errord.limits import MAX_TOOLS, STATE_CAPACITY, Limits

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("logfmt", "json")
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
RETRY_SETTINGS = {
    "max_total_time": "retry_max_total_time_seconds",
    "max_retry_after": "retry_max_retry_after_seconds",
}
BUDGET_SETTINGS = {
    "max_retries": "turn_retry_budget",
    "max_share": "turn_retry_budget_share",
}
ALERT_SETTINGS = {
    "failure_rate": "alert_failure_rate",
    "mean_duration": "alert_mean_duration_seconds",
    "window": "alert_window_seconds",
    "min_executions": "alert_min_executions",
}
LIMIT_SETTINGS = {limit.name: limit.name for limit in fields(Limits)}
"""Each record attribute's setting, to name it in errors."""
TCP_ADDRESS = re.compile(r"^(?P<host>\[[0-9a-fA-F:.]+\]|[^\s:\[\]]+):(?P<port>\d{1,5})$")


FLEET_SCHEMES = ("redis://", "rediss://", "unix://")
FLEET_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
MAX_MODEL_CORRECTIONS = 10
MAX_MEMORY_AGE = 31_536_000.0
"""A year, in seconds."""
MAX_TRACE_AGE = 315_360_000.0
"""Ten years, in seconds."""
MIN_TRACE_BYTES, MAX_TRACE_BYTES = 16 << 20, 1 << 40


def default_db_path() -> Path:
    """errord.db in systemd's STATE_DIRECTORY, else XDG_STATE_HOME, else ~/.local/state."""
    return default_state_directory() / "errord.db"


def default_listen() -> str:
    """errord.sock in systemd's RUNTIME_DIRECTORY, else 127.0.0.1:50051."""
    runtime_directory = os.environ.get("RUNTIME_DIRECTORY")
    if runtime_directory:
        return f"unix:{Path(runtime_directory.split(':')[0]) / 'errord.sock'}"
    return "127.0.0.1:50051"


def check_listen(listen: str) -> str | None:
    """What is wrong with a listen address, or None."""
    if listen.startswith("unix:"):
        return None if len(listen) > len("unix:") else "unix: needs a socket path"
    match = TCP_ADDRESS.match(listen)
    if match is None:
        return f"expected host:port or unix:PATH, got {listen!r}"
    if int(match["port"]) > 65535:
        return f"port {match['port']} is above 65535"
    return None


TRACE_URL_FIELDS = frozenset({"trace_id", "turn_id"})
"""What console_trace_url may name in braces."""


def check_trace_url(template: str) -> str | None:
    """What is wrong with a console_trace_url template, or None."""
    if not template.startswith(("http://", "https://")):
        return "expected an http:// or https:// URL"
    try:
        named = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as error:
        return f"{error} (write a literal brace as {{{{ or }}}})"
    unknown = named - TRACE_URL_FIELDS
    if unknown:
        return f"unknown field {{{sorted(unknown)[0]}}}; expected {{trace_id}} or {{turn_id}}"
    return None


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
        problems = [*self._problems(), *self._access_problems()]
        if problems:
            raise ConfigError("\n".join(problems))

    def _problems(self) -> Iterator[str]:
        """Each invalid setting, as "setting: problem"."""
        problem = check_listen(self.listen)
        if problem:
            yield f"listen: {problem}"
        if not 0 < self.turn_deadline_seconds <= MAX_COOLDOWN:
            yield "turn_deadline_seconds: must be positive and at most a week"
        if self.metrics_listen is not None:
            if self.metrics_listen.startswith("unix:"):
                problem = "expected host:port; the metrics endpoint is HTTP over TCP"
            else:
                problem = check_listen(self.metrics_listen)
            if problem:
                yield f"metrics_listen: {problem}"
        if self.console_listen is not None:
            problem = check_listen(self.console_listen)
            if problem:
                yield f"console_listen: {problem}"
        if self.console_trace_url is not None:
            problem = check_trace_url(self.console_trace_url)
            if problem:
                yield f"console_trace_url: {problem}"
        for build, names in (
            (self.breaker_defaults, BREAKER_SETTINGS),
            (self.retry_defaults, RETRY_SETTINGS),
            (self.alert_thresholds, ALERT_SETTINGS),
            (self.retry_budget, BUDGET_SETTINGS),
            (self.limits, LIMIT_SETTINGS),
        ):
            try:
                build()
            except ValueError as error:  # "attribute must ...": named as the setting
                attribute, _, problem = str(error).partition(" ")
                yield f"{names[attribute]}: {problem}"
        for name in ("shutdown_grace_seconds", "shutdown_quiet_seconds"):
            if not 0 <= getattr(self, name) < math.inf:  # nan fails every comparison
                yield f"{name}: must be a finite number of seconds, not negative"
        if self.log_level.lower() not in LOG_LEVELS:
            yield f"log_level: expected one of {', '.join(LOG_LEVELS)}"
        if self.log_format not in LOG_FORMATS:
            yield f"log_format: expected one of {', '.join(LOG_FORMATS)}"
        if not 0 <= self.model_corrections <= MAX_MODEL_CORRECTIONS:
            yield f"model_corrections: must be from 0 to {MAX_MODEL_CORRECTIONS}"
        if not 1 <= self.memory_min_episodes <= 10_000:
            yield "memory_min_episodes: must be from 1 to 10000"
        if not 1 <= self.memory_max_errors <= 10_000_000:
            yield "memory_max_errors: must be from 1 to 10000000"
        if not 3_600 <= self.memory_max_age_seconds <= MAX_MEMORY_AGE:
            yield "memory_max_age_seconds: must be from 3600 (an hour) to a year"
        if not 1_000 <= self.state_capacity <= 10_000_000:
            yield "state_capacity: must be from 1000 to 10000000"
        if not 3_600 <= self.trace_retention_seconds <= MAX_TRACE_AGE:
            yield "trace_retention_seconds: must be from 3600 (an hour) to 315360000 (ten years)"
        if not MIN_TRACE_BYTES <= self.trace_retention_bytes <= MAX_TRACE_BYTES:
            yield (
                f"trace_retention_bytes: must be from {MIN_TRACE_BYTES} (16 MiB) to "
                f"{MAX_TRACE_BYTES} (1 TiB)"
            )
        if not 1 <= self.max_tools <= 1_000_000:
            yield "max_tools: must be from 1 to 1000000"
        if self.otel_endpoint is not None and not self.otel_endpoint.startswith(
            ("http://", "https://")
        ):
            yield "otel_endpoint: expected an http:// or https:// URL (OTLP over HTTP)"
        formats = [layout.value for layout in MessageFormat]
        if self.llm_message_format not in formats:
            yield f"llm_message_format: expected one of {', '.join(formats)}"
        yield from self._fleet_problems()

    def _fleet_problems(self) -> Iterator[str]:
        if self.fleet_url is not None and not self.fleet_url.startswith(FLEET_SCHEMES):
            yield "fleet_url: expected a redis://, rediss:// or unix:// URL"
        for name in ("fleet_name", "fleet_host"):
            value = getattr(self, name)
            if value is not None and not FLEET_NAME.fullmatch(value):
                yield f"{name}: expected 1 to 64 letters, digits, '.', '_' or '-'"
        if not 1 <= self.fleet_quorum <= 100:
            yield "fleet_quorum: must be from 1 to 100"
        if not 1 <= self.fleet_breaker_window_seconds <= 86_400:
            yield "fleet_breaker_window_seconds: must be from 1 to 86400 (a day)"

    def _access_problems(self) -> Iterator[str]:
        """The access settings' shapes; their files are read at start."""
        group = self.socket_group
        if group is not None and (
            group == "" or (isinstance(group, int) and not 0 <= group < 2**32)
        ):
            yield "socket_group: expected a group name or a number from 0"
        if self.tls_cert_file is not None and self.tls_key_file is None:
            yield "tls_cert_file: needs tls_key_file too"
        if self.tls_key_file is not None and self.tls_cert_file is None:
            yield "tls_key_file: needs tls_cert_file too"
        if self.tls_client_ca_file is not None and self.tls_cert_file is None:
            yield "tls_client_ca_file: needs tls_cert_file and tls_key_file"
        tcp_console = self.console_listen is not None and not self.console_listen.startswith(
            "unix:"
        )
        if self.tls_cert_file is not None and self.listen.startswith("unix:") and not tcp_console:
            yield "tls_cert_file: TLS is for TCP; listen is a unix socket"

    @property
    def operator_token_path(self) -> Path:
        """Where the operator's token is kept: ``token_file`` when it is set (one token for
        everything), else ``operator_token_file``, else ``operator.token`` beside ``db``."""
        return self.token_file or self.operator_token_file or self.db.parent / OPERATOR_TOKEN

    @property
    def message_format(self) -> MessageFormat:
        return MessageFormat(self.llm_message_format)

    def breaker_defaults(self) -> BreakerPolicy:
        return BreakerPolicy(
            failure_threshold=self.breaker_failure_threshold,
            cooldown=self.breaker_cooldown_seconds,
            success_threshold=self.breaker_success_threshold,
            first_cooldown=self.breaker_first_cooldown_seconds,
            cooldown_multiplier=self.breaker_cooldown_multiplier,
            failure_rate=self.breaker_failure_rate,
            min_calls=self.breaker_min_calls,
            window=self.breaker_window,
        )

    def retry_defaults(self) -> RetryPolicy:
        return RetryPolicy(
            max_total_time=self.retry_max_total_time_seconds,
            max_retry_after=self.retry_max_retry_after_seconds,
        )

    def tool_defaults(self) -> ToolDefaults:
        """What a tool without a manifest gets, and what a manifest does not say."""
        return ToolDefaults(retry_policy=self.retry_defaults(), breaker=self.breaker_defaults())

    def retry_budget(self) -> RetryBudget | None:
        """The retry budget of every turn; None when neither setting is given."""
        if self.turn_retry_budget is None and self.turn_retry_budget_share is None:
            return None
        return RetryBudget(self.turn_retry_budget, self.turn_retry_budget_share)

    def limits(self) -> Limits:
        return Limits(
            max_message_bytes=self.max_message_bytes,
            max_concurrent_rpcs=self.max_concurrent_rpcs,
            max_health_watches=self.max_health_watches,
            max_watchers=self.max_watchers,
            max_tool_watchers=self.max_tool_watchers,
            max_reflection_streams=self.max_reflection_streams,
            peer_stream_share=self.peer_stream_share,
            max_turn_events=self.max_turn_events,
            keepalive_min_ping_seconds=self.keepalive_min_ping_seconds,
            keepalive_permit_without_calls=self.keepalive_permit_without_calls,
        )

    def alert_thresholds(self) -> AlertThresholds:
        return AlertThresholds(
            failure_rate=self.alert_failure_rate,
            mean_duration=self.alert_mean_duration_seconds,
            window=self.alert_window_seconds,
            min_executions=self.alert_min_executions,
        )

    @property
    def logging_level(self) -> int:
        return int(getattr(logging, self.log_level.upper()))

    @classmethod
    def from_toml(cls, path: Path) -> Settings:
        """Settings from a TOML file; errors name the file, the line and the setting."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"{path}: cannot read: {error.strerror}") from error
        try:
            table = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path}: {error}") from error
        values, problems = {}, []
        for key, value in table.items():
            try:
                values[key] = _setting(path, text, key, value)
            except ConfigError as error:
                problems.extend(str(error).splitlines())
        try:
            settings = cls(**values)
        except ConfigError as error:  # each line "setting: problem"
            for problem in str(error).splitlines():
                key = problem.split(":", 1)[0]
                problems.append(f"{path}:{line_of(text, key)}: {problem}")
        if problems:
            raise ConfigError("\n".join(sorted(problems, key=_line_number)))
        return settings

    def override(self, **values: Any) -> Settings:
        """A copy with every value that is not None replaced."""
        return replace(self, **{key: value for key, value in values.items() if value is not None})


TOML_TYPES: dict[object, tuple[type, ...]] = {
    str: (str,),
    Path: (str,),
    int: (int,),
    float: (int, float),
    bool: (bool,),
    NoneType: (),
}
"""The TOML values a setting of each type takes: a path is a string, a float any number,
and None is the setting left out."""


def members(annotation: object) -> tuple[object, ...]:
    """The types a union annotation joins, or the annotation itself."""
    return get_args(annotation) or (annotation,)


ANNOTATIONS = {
    name: annotation for name, annotation in get_type_hints(Settings).items() if name != "client"
}
"""The type of each setting of the file's top level, from the fields of Settings."""
SETTING_TYPES = {
    name: tuple(kind for member in members(annotation) for kind in TOML_TYPES[member])
    for name, annotation in ANNOTATIONS.items()
}
"""The TOML value types each setting takes (``str | int | None``: str, int)."""
PATH_SETTINGS = frozenset(
    name for name, annotation in ANNOTATIONS.items() if Path in members(annotation)
)
"""Settings that name files, relative to the settings file's directory."""


def _setting(path: Path, text: str, key: str, value: Any) -> Any:
    if key == "client":
        return ClientSettings.from_table(path, text, value)
    where = f"{path}:{line_of(text, key)}"
    types = SETTING_TYPES.get(key)
    if types is None:
        known = ", ".join(f.name for f in fields(Settings))
        raise ConfigError(f"{where}: unknown setting {key!r} (known: {known})")
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        expected = " or ".join(kind.__name__ for kind in types)
        raise ConfigError(f"{where}: {key}: expected {expected}, got {type(value).__name__}")
    if key in PATH_SETTINGS:
        return path.parent / Path(str(value)).expanduser()
    return value


def _line_number(problem: str) -> int:
    """The line a "file:line: ..." problem names, to list them in file order."""
    parts = problem.split(":", 2)
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 0


def line_of(text: str, key: str) -> int:
    """The 1-based line where ``key`` is assigned in TOML ``text``; 1 if not found."""
    pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return 1
