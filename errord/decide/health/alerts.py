"""Alert conditions of a tool: which there are, and the thresholds that raise them."""

from __future__ import annotations

from dataclasses import dataclass

from errord.decide.manifest import MAX_TIMEOUT
from errord.decide.model import ClosedEnum
from errord.errors import InvalidValue


@dataclass(frozen=True)
class AlertThresholds:
    """When a tool is flagged: a recent failure rate or mean duration above these."""

    failure_rate: float = 0.05
    """Recent failures per execution above which the tool is flagged."""
    mean_duration: float = 5.0
    """Recent mean duration, in seconds, above which the tool is flagged."""
    window: float = 300.0
    """Seconds of recent figures the alerts look at, at most an hour. Figures are kept
    per minute: the window covers every minute it overlaps."""
    min_executions: int = 10
    """Recent executions needed before the failure rate is judged."""

    def __post_init__(self) -> None:
        if not 0 <= self.failure_rate <= 1:
            raise InvalidValue("failure_rate", "must be between 0 and 1")
        if not 0 < self.mean_duration <= MAX_TIMEOUT:
            raise InvalidValue("mean_duration", f"must be positive and at most {MAX_TIMEOUT:g}")
        if not 60 <= self.window <= 3600:
            raise InvalidValue("window", "must be between 60 and 3600")
        if self.min_executions < 1:
            raise InvalidValue("min_executions", "must be at least 1")


class AlertKind(ClosedEnum):
    FAILURE_RATE = "FAILURE_RATE"
    SLOW = "SLOW"
    BREAKER_TRIPPED = "BREAKER_TRIPPED"
    RESPONSE_VALIDATION = "RESPONSE_VALIDATION"
    """Results reconciliation had to synthesize or drop (errord.state.result_checks)."""


@dataclass(frozen=True, slots=True)
class Alert:
    kind: AlertKind
    message: str
