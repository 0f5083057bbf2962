"""The engine: one decision put together from the stages before it, pure and synchronous.

``engine`` holds the ``Engine``: it classifies a report, steps the tool's breaker, reads
episodic memory, builds the decision's context (``context_parts``), lets the policy
decide, words the verdict and says what to record (``recording``: the decision, its
episodes, the breaker's transitions, a rate-limit window, as trace events). It reads
the state its caller hands it (``views``), which the caller commits; no gRPC, no SQL
and no awaits in here.
"""

from errord.decide.engine.context_parts import ARGUMENT_CODES, NO_HISTORY
from errord.decide.engine.engine import (
    DEFAULT_TURN_DEADLINE,
    UNWORDED,
    CallCheck,
    Decided,
    Engine,
    new_decision_id,
)
from errord.decide.engine.recording import RECOVERIES
from errord.decide.engine.views import (
    ActivityViews,
    BreakerGate,
    BreakerViews,
    CallHistory,
    MemoryViews,
    Reads,
    ToolActivity,
    TurnHistory,
    WindowViews,
    no_activity,
    no_breakers,
    no_memory,
    no_windows,
    ungated,
)

__all__ = [
    "ARGUMENT_CODES",
    "DEFAULT_TURN_DEADLINE",
    "NO_HISTORY",
    "RECOVERIES",
    "UNWORDED",
    "ActivityViews",
    "BreakerGate",
    "BreakerViews",
    "CallCheck",
    "CallHistory",
    "Decided",
    "Engine",
    "MemoryViews",
    "Reads",
    "ToolActivity",
    "TurnHistory",
    "WindowViews",
    "new_decision_id",
    "no_activity",
    "no_breakers",
    "no_memory",
    "no_windows",
    "ungated",
]
