"""Rate-limit windows, per tool and scope, as the trace recorded them.

A RateLimited event carries the window a rate-limited failure opened or lengthened
(errord.decide.health.rate_limits), computed when it was decided. Folding takes the last one:
a restart, and a replay of the trace, end where the decisions left each window. A window
that has ended is kept (it says when the tool was last rate-limited); it holds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from errord.decide.model import RateWindow
from errord.decide.model.events import RateLimited, TraceEvent
from errord.state.projection import EachEvent


class RateWindowFold(EachEvent[str, RateWindow]):
    """Folds rate-limit windows, keyed by tool and scope (errord.decide.model.scope)."""

    name = "rate_window"
    version = 1
    key_type = str
    state_type = RateWindow

    def keys(self, event: TraceEvent) -> Sequence[str]:
        detail = event.detail
        return (detail.tool_key,) if type(detail) is RateLimited else ()

    def apply(self, key: str, state: RateWindow | None, event: TraceEvent) -> RateWindow:
        detail = event.detail
        assert isinstance(detail, RateLimited), "keys() names a tool only for RateLimited"
        return detail.window
