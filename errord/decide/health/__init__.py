"""A tool's health: what protects it and its callers across calls.

Its circuit breaker (``breaker``: pybreaker's state machine over the state errord
records; it opens on evidence of an outage, never on one call's retries), its
rate-limit window (``rate_limits``: a tool limiting its callers' rate is not down, and
is waited for instead), whether the two let an attempt run, asked before it runs
(``admission``), and the alert conditions of its metrics (``alerts``). The breaker's
steps are read as a module, ``breaker.on_failure(...)``.
"""

from errord.decide.health import breaker
from errord.decide.health.admission import (
    REFUSAL_CODES,
    Admission,
    admit,
    refusal,
    refused_error,
    was_refused,
)
from errord.decide.health.alerts import Alert, AlertKind, AlertThresholds
from errord.decide.health.breaker import Stepped, opening_streak
from errord.decide.health.rate_limits import is_rate_limit, lengthened, window_after

__all__ = [
    "REFUSAL_CODES",
    "Admission",
    "Alert",
    "AlertKind",
    "AlertThresholds",
    "Stepped",
    "admit",
    "breaker",
    "is_rate_limit",
    "lengthened",
    "opening_streak",
    "refusal",
    "refused_error",
    "was_refused",
    "window_after",
]
