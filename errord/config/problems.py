"""What can be wrong with the daemon's settings: every invalid setting, named.

``problems`` yields each one as a SettingProblem (the setting, and what is wrong),
which Settings raises all together (InvalidSettings) and the settings file locates
(errord.config.settings_file). A record built from the settings that refuses a value
(InvalidValue) names its attribute, which the record's table turns into the setting.
The files the settings name are read at start, not here.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterator
from typing import TYPE_CHECKING

from errord.decide.manifest import MAX_COOLDOWN
from errord.decide.texts.layout import MessageFormat
from errord.errors import InvalidValue, SettingProblem

if TYPE_CHECKING:
    from errord.config.settings import Settings

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("logfmt", "json")
TCP_ADDRESS = re.compile(r"^(?P<host>\[[0-9a-fA-F:.]+\]|[^\s:\[\]]+):(?P<port>\d{1,5})$")
FLEET_SCHEMES = ("redis://", "rediss://", "unix://")
FLEET_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
MAX_MODEL_CORRECTIONS = 10
MAX_MEMORY_AGE = 31_536_000.0
"""A year, in seconds."""
MAX_TRACE_AGE = 315_360_000.0
"""Ten years, in seconds."""
MIN_TRACE_BYTES, MAX_TRACE_BYTES = 16 << 20, 1 << 40


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


def problems(settings: Settings) -> Iterator[SettingProblem]:
    """Each invalid setting of ``settings``: values, then the access settings' shapes."""
    for setting, problem in (*_values(settings), *_fleet(settings), *_access(settings)):
        yield SettingProblem(setting, problem)


def _values(settings: Settings) -> Iterator[tuple[str, str]]:
    problem = check_listen(settings.listen)
    if problem:
        yield "listen", problem
    if not 0 < settings.turn_deadline_seconds <= MAX_COOLDOWN:
        yield "turn_deadline_seconds", "must be positive and at most a week"
    if settings.metrics_listen is not None:
        if settings.metrics_listen.startswith("unix:"):
            problem = "expected host:port; the metrics endpoint is HTTP over TCP"
        else:
            problem = check_listen(settings.metrics_listen)
        if problem:
            yield "metrics_listen", problem
    if settings.console_listen is not None:
        problem = check_listen(settings.console_listen)
        if problem:
            yield "console_listen", problem
    if settings.console_trace_url is not None:
        problem = check_trace_url(settings.console_trace_url)
        if problem:
            yield "console_trace_url", problem
    for build, names in settings.records():
        try:
            build()
        except InvalidValue as error:
            yield names[error.field], error.problem
    for name in ("shutdown_grace_seconds", "shutdown_quiet_seconds"):
        if not 0 <= getattr(settings, name) < math.inf:  # nan fails every comparison
            yield name, "must be a finite number of seconds, not negative"
    if settings.log_level.lower() not in LOG_LEVELS:
        yield "log_level", f"expected one of {', '.join(LOG_LEVELS)}"
    if settings.log_format not in LOG_FORMATS:
        yield "log_format", f"expected one of {', '.join(LOG_FORMATS)}"
    if not 0 <= settings.model_corrections <= MAX_MODEL_CORRECTIONS:
        yield "model_corrections", f"must be from 0 to {MAX_MODEL_CORRECTIONS}"
    if not 1 <= settings.memory_min_episodes <= 10_000:
        yield "memory_min_episodes", "must be from 1 to 10000"
    if not 1 <= settings.memory_max_errors <= 10_000_000:
        yield "memory_max_errors", "must be from 1 to 10000000"
    if not 3_600 <= settings.memory_max_age_seconds <= MAX_MEMORY_AGE:
        yield "memory_max_age_seconds", "must be from 3600 (an hour) to a year"
    if not 1_000 <= settings.state_capacity <= 10_000_000:
        yield "state_capacity", "must be from 1000 to 10000000"
    if not 3_600 <= settings.trace_retention_seconds <= MAX_TRACE_AGE:
        yield "trace_retention_seconds", "must be from 3600 (an hour) to 315360000 (ten years)"
    if not MIN_TRACE_BYTES <= settings.trace_retention_bytes <= MAX_TRACE_BYTES:
        yield (
            "trace_retention_bytes",
            f"must be from {MIN_TRACE_BYTES} (16 MiB) to {MAX_TRACE_BYTES} (1 TiB)",
        )
    if not 1 <= settings.max_tools <= 1_000_000:
        yield "max_tools", "must be from 1 to 1000000"
    if settings.otel_endpoint is not None and not settings.otel_endpoint.startswith(
        ("http://", "https://")
    ):
        yield "otel_endpoint", "expected an http:// or https:// URL (OTLP over HTTP)"
    formats = [layout.value for layout in MessageFormat]
    if settings.llm_message_format not in formats:
        yield "llm_message_format", f"expected one of {', '.join(formats)}"


def _fleet(settings: Settings) -> Iterator[tuple[str, str]]:
    if settings.fleet_url is not None and not settings.fleet_url.startswith(FLEET_SCHEMES):
        yield "fleet_url", "expected a redis://, rediss:// or unix:// URL"
    for name in ("fleet_name", "fleet_host"):
        value = getattr(settings, name)
        if value is not None and not FLEET_NAME.fullmatch(value):
            yield name, "expected 1 to 64 letters, digits, '.', '_' or '-'"
    if not 1 <= settings.fleet_quorum <= 100:
        yield "fleet_quorum", "must be from 1 to 100"
    if not 1 <= settings.fleet_breaker_window_seconds <= 86_400:
        yield "fleet_breaker_window_seconds", "must be from 1 to 86400 (a day)"


def _access(settings: Settings) -> Iterator[tuple[str, str]]:
    """The access settings' shapes; their files are read at start."""
    group = settings.socket_group
    if group is not None and (group == "" or (isinstance(group, int) and not 0 <= group < 2**32)):
        yield "socket_group", "expected a group name or a number from 0"
    if settings.tls_cert_file is not None and settings.tls_key_file is None:
        yield "tls_cert_file", "needs tls_key_file too"
    if settings.tls_key_file is not None and settings.tls_cert_file is None:
        yield "tls_key_file", "needs tls_cert_file too"
    if settings.tls_client_ca_file is not None and settings.tls_cert_file is None:
        yield "tls_client_ca_file", "needs tls_cert_file and tls_key_file"
    console = settings.console_listen
    tcp_console = console is not None and not console.startswith("unix:")
    if (
        settings.tls_cert_file is not None
        and settings.listen.startswith("unix:")
        and not tcp_console
    ):
        yield "tls_cert_file", "TLS is for TCP; listen is a unix socket"
