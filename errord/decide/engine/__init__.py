"""The engine (placeholder)."""

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
)

__all__ = [
    "ARGUMENT_CODES",
    "DEFAULT_TURN_DEADLINE",
    "NO_HISTORY",
    "RECOVERIES",
    "UNWORDED",
    "ActivityViews",
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
]
