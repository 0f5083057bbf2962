"""What a tool manifest says: timeouts, retry and breaker policy, classification, fallbacks.

Frozen records validated on construction; ``ValueError`` messages name the field.
Reading them from YAML, with file and line in every error, is errord/manifests/files.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from errord.decide.arguments import LinearPattern, compile_linear
from errord.decide.classify import SEARCHED_CHARS
from errord.decide.model import DefaultValue, ErrorClass, ErrorCode, JSONValue, ToolFailure
from errord.errors import InvalidValue

MAX_TIMEOUT = 86_400.0
"""Seconds: the longest timeout of one attempt of a tool."""
MAX_COOLDOWN = 604_800.0
"""Seconds: the longest a breaker stays open before it half-opens."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, bounded by attempts and total time."""

    initial_delay: float = 0.1
    """Seconds before the second attempt."""
    max_delay: float = 0.8
    """Cap in seconds on any one computed delay."""
    multiplier: float = 2.0
    """Factor between consecutive delays."""
    jitter: float = 0.1
    """Relative random variation of each delay: 0.1 is +-10 %."""
    max_attempts: int = 5
    """Attempts of one tool for one call, the first included; attempts errord refused
    before they ran (an open breaker, a rate-limit window) do not count."""
    max_total_time: float = 30.0
    """Seconds of delay errord may grant one call's retries of one tool, in all. The
    failed attempts' run time is recorded but does not count. The seed's 2 s bounds the
    backoff (its four delays take 1.5 s); 30 s, one breaker break at its longest, lets a
    call also wait out a Retry-After or a breaker's break, which call nobody."""
    max_retry_after: float | None = None
    """The longest wait a tool's Retry-After may ask for and still get a retry; None
    means as long as the call's remaining total retry time (the seed's limit was
    max_delay). A retry is never sooner than the tool asked."""

    @property
    def longest_retry_after(self) -> float | None:
        """The longest Retry-After honoured on its own; None: whatever fits the total."""
        return self.max_retry_after

    def __post_init__(self) -> None:
        for name in ("initial_delay", "max_delay", "max_total_time", "max_retry_after"):
            if (getattr(self, name) or 0) < 0:
                raise InvalidValue(name, "must not be negative")
        if self.multiplier < 1:
            raise InvalidValue("multiplier", "must be at least 1")
        if not 0 <= self.jitter < 1:
            raise InvalidValue("jitter", "must be at least 0 and below 1")
        if self.max_attempts < 1:
            raise InvalidValue("max_attempts", "must be at least 1")
        if self.max_delay < self.initial_delay:
            raise InvalidValue("max_delay", "must not be below initial_delay")


MAX_WINDOW = 1_000
"""Attempts: the longest window a breaker's failure rate is read over."""


@dataclass(frozen=True)
class BreakerPolicy:
    """When a tool's circuit breaker opens, how long it stays open, and when it closes.

    It opens on evidence of an outage, never on one call's retries nor on chance: after
    ``failure_threshold`` consecutive transient failures from at least two calls while
    nearly every recent attempt failed (a dead backend), or when at least
    ``failure_rate`` of at least ``min_calls`` of the last ``window`` attempts failed (a
    sick one). Its break
    grows: ``first_cooldown`` the first time, times ``cooldown_multiplier`` at each
    opening in a row, at most ``cooldown``; a breaker that stays closed for ``cooldown``
    starts again from ``first_cooldown``.
    """

    failure_threshold: int = 5
    """Consecutive transient failures, from two calls at least, that open the breaker of a
    tool with no recent success; permanent ones and rate limits never count."""
    cooldown: float = 30.0
    """Seconds: the longest break, and how long the breaker must stay closed before its
    next break is the first one again (the seed's fixed break)."""
    success_threshold: int = 2
    """Consecutive successes in half-open that close the breaker."""
    first_cooldown: float = 1.0
    """Seconds an open breaker waits before it half-opens the first time: an outage as
    short as this costs no longer wait. Cut to ``cooldown`` when longer."""
    cooldown_multiplier: float = 1.5
    """Factor between consecutive breaks: each reopening waits this much longer."""
    failure_rate: float = 0.5
    """Failed share of the recent attempts that opens the breaker, once there are
    ``min_calls`` of them."""
    min_calls: int = 50
    """Recent attempts the failure rate needs before it may open the breaker."""
    window: int = 100
    """Recent attempts the failure rate is read over: the last ``window`` transient
    failures and successes since the tool's last quiet spell (no failure for
    ``cooldown``)."""
    window_mask: int = field(init=False, repr=False, compare=False)
    """``window`` one bits: what keeps the recent attempts' bits to the window."""

    def __post_init__(self) -> None:
        if self.failure_threshold < 1:
            raise InvalidValue("failure_threshold", "must be at least 1")
        if self.success_threshold < 1:
            raise InvalidValue("success_threshold", "must be at least 1")
        for name in ("cooldown", "first_cooldown"):
            if not 0 < getattr(self, name) <= MAX_COOLDOWN:
                raise InvalidValue(
                    name, f"must be positive and at most {MAX_COOLDOWN:g} s (a week)"
                )
        if not 1 <= self.cooldown_multiplier <= 100:
            raise InvalidValue("cooldown_multiplier", "must be from 1 to 100")
        if not 0 < self.failure_rate <= 1:
            raise InvalidValue("failure_rate", "must be above 0 and at most 1")
        if not 1 <= self.window <= MAX_WINDOW:
            raise InvalidValue("window", f"must be from 1 to {MAX_WINDOW}")
        if not 1 <= self.min_calls <= self.window:
            raise InvalidValue("min_calls", "must be at least 1 and at most window")
        object.__setattr__(self, "window_mask", (1 << self.window) - 1)

    def break_for(self, streak: int) -> float:
        """Seconds the ``streak``-th opening in a row stays open (the first is 1)."""
        try:
            grown = self.first_cooldown * self.cooldown_multiplier ** max(0, streak - 1)
        except OverflowError:  # openings in the thousands: far beyond the ceiling
            grown = self.cooldown
        return min(grown, self.cooldown)


@dataclass(frozen=True)
class ClassificationRule:
    """A manifest override: failures matching every given condition get ``error_class``."""

    error_class: ErrorClass
    code: ErrorCode | None = None
    """Matches the normalized code."""
    http_status: int | None = None
    """Matches the HTTP status."""
    exception_type: str | None = None
    """Matches the exception type name exactly."""
    message: re.Pattern[str] | None = None
    """Searched for in the first SEARCHED_CHARS (4,096) characters of the error message,
    as the default rules read it, by RE2 in linear time (see decide/arguments/regexes.py):
    its pattern and flags are what counts, Python's ``re`` never runs it."""
    _message: LinearPattern | None = field(init=False, repr=False, compare=False)
    """``message`` compiled by RE2."""

    def __post_init__(self) -> None:
        if (self.code, self.http_status, self.exception_type, self.message) == (None,) * 4:
            raise ValueError(
                "a rule needs at least one of code, http_status, exception_type, message"
            )
        linear = None
        if self.message is not None:
            try:
                linear = compile_linear(self.message.pattern, self.message.flags)
            except ValueError as exc:
                raise ValueError(f"message: {exc}") from None
        object.__setattr__(self, "_message", linear)

    def matches(self, failure: ToolFailure, code: ErrorCode) -> bool:
        """True when every condition the rule states holds for ``failure``."""
        return (
            (self.code is None or self.code == code)
            and (self.http_status is None or self.http_status == failure.http_status)
            and (self.exception_type is None or self.exception_type == failure.exception_type)
            and (self._message is None or self._message.search(failure.message[:SEARCHED_CHARS]))
        )


@dataclass(frozen=True)
class ToolManifest:
    """Everything errord knows about one tool."""

    name: str
    description: str = ""
    timeout: float = 30.0
    """Hard timeout in seconds of one attempt, enforced by the executor."""
    idempotent: bool = True
    """False forbids retries: a repeated call could repeat a side effect."""
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    breaker: BreakerPolicy = field(default_factory=BreakerPolicy)
    classification: tuple[ClassificationRule, ...] = ()
    """Overrides of the default classification, first match wins."""
    alternatives: tuple[str, ...] = ()
    """Tools to use instead, in order of preference."""
    optional: bool = False
    """The turn can go on without this tool's result: SKIP when nothing better is left."""
    accepts_partial_results: bool = False
    """A partial result the tool returned with its failure is worth going on with:
    CONTINUE_PARTIAL when no retry or alternative is left."""
    default: DefaultValue | None = None
    """The result to use when the tool cannot produce one: USE_DEFAULT when no retry,
    alternative or partial result is left."""
    parameters: Mapping[str, JSONValue] | None = None
    """JSON Schema of the tool's arguments."""
    redact: tuple[str, ...] = ()
    """Dotted argument paths whose values are never stored or logged."""
    source: str = ""
    """Where the manifest was defined, ``file:line``; empty for the default."""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("name must not be empty")
        if not 0 < self.timeout <= MAX_TIMEOUT:
            raise ValueError(f"timeout must be positive and at most {MAX_TIMEOUT:g} s (a day)")
        if self.name in self.alternatives:
            raise ValueError("alternatives must not name the tool itself")
