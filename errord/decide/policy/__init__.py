"""The recovery policy: what to do about one failure, decided over one immutable
``DecisionContext`` (``context``: what a decision reads, built by the engine).

A ``Backoff`` proposes the delay before the next attempt (``backoff``, paced by episodic
memory); ``RetryGate``s may refuse it, each with a typed ``Refusal``, the first refusal
winning (``gates``, combined with ``|`` as tenacity's ``stop_any``); when the retry is
refused, ``Fallback``s are tried in order and the first that applies decides
(``fallbacks``: an alternative tool, a partial result, a default, a skip, a wait out of
an outage, the model's own correction, escalation). ``recovery`` puts them together
(``RecoveryPolicy``, ``default_policy``) into a ``Verdict`` (``verdict``), with its
consequences for the calls of the turn's plan that wait on the call (``plan``). The
policy writes no prose: errord.decide.texts words a verdict.
"""

from errord.decide.policy.backoff import (
    Backoff,
    ExponentialBackoff,
    HonourRetryAfter,
    Jitter,
    Pacing,
    pacing,
    seeded_fraction,
)
from errord.decide.policy.context import (
    BreakerPart,
    CallPart,
    DecisionContext,
    PlanPart,
    ToolHistory,
    TurnPart,
    own_request,
    requested_delay,
    time_left,
)
from errord.decide.policy.fallbacks import (
    AwaitHalfOpen,
    AwaitProbe,
    ContinuePartial,
    Escalate,
    FailForNow,
    FailUnrecoverable,
    Fallback,
    ReturnToModel,
    SkipOptional,
    SkipOutOfTime,
    UseAlternative,
    UseDefault,
    model_caused,
    too_slow,
    usable_alternatives,
)
from errord.decide.policy.gates import (
    AnyGate,
    AttemptsExhausted,
    BreakerOpen,
    DeadlineTooClose,
    NotIdempotent,
    PermanentError,
    RetriesNeverFix,
    RetryAfterTooLong,
    RetryGate,
    TotalRetryTimeExceeded,
    TurnRetryBudgetSpent,
    budget_spent,
    since_failed,
)
from errord.decide.policy.plan import (
    PlanProblem,
    Waiting,
    cascade,
    execution_order,
    plan_problems,
    waiting_on,
)
from errord.decide.policy.recovery import (
    RecoveryPolicy,
    can_do_without,
    default_policy,
    with_cascade,
)
from errord.decide.policy.verdict import CorrectionsSpent, Verdict, probe_role

__all__ = [
    "AnyGate",
    "AttemptsExhausted",
    "AwaitHalfOpen",
    "AwaitProbe",
    "Backoff",
    "BreakerOpen",
    "BreakerPart",
    "CallPart",
    "ContinuePartial",
    "CorrectionsSpent",
    "DeadlineTooClose",
    "DecisionContext",
    "Escalate",
    "ExponentialBackoff",
    "FailForNow",
    "FailUnrecoverable",
    "Fallback",
    "HonourRetryAfter",
    "Jitter",
    "NotIdempotent",
    "Pacing",
    "PermanentError",
    "PlanPart",
    "PlanProblem",
    "RecoveryPolicy",
    "RetriesNeverFix",
    "RetryAfterTooLong",
    "RetryGate",
    "ReturnToModel",
    "SkipOptional",
    "SkipOutOfTime",
    "ToolHistory",
    "TotalRetryTimeExceeded",
    "TurnPart",
    "TurnRetryBudgetSpent",
    "UseAlternative",
    "UseDefault",
    "Verdict",
    "Waiting",
    "budget_spent",
    "can_do_without",
    "cascade",
    "default_policy",
    "execution_order",
    "model_caused",
    "own_request",
    "pacing",
    "plan_problems",
    "probe_role",
    "requested_delay",
    "seeded_fraction",
    "since_failed",
    "time_left",
    "too_slow",
    "usable_alternatives",
    "waiting_on",
    "with_cascade",
]
