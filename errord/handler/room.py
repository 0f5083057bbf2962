"""Room: what a report's events must fit before they are submitted.

A report of a turn that ended is refused (TurnClosed). A turn holds at most
``max_turn_events`` trace events, so that one caller cannot grow a turn's trace, state
and summary without end; EndTurn still closes a full turn. Reports make state for at
most ``max_tools`` tools and scopes (statistics, a breaker, a rate-limit window, held in
memory whole): past it, a report naming a new one without a manifest is refused. The
bounds are checked in the step that submits the report's events, which reserve what
they count: no await between, so concurrent reports cannot pass a bound together.
"""

from __future__ import annotations

from collections.abc import Sequence

from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model.events import EventDetail
from errord.decide.model.scope import tool_and_scope
from errord.errors import TurnClosed
from errord.limits import MAX_TOOLS, LimitExceeded, Limits
from errord.state.projections import Projections
from errord.state.turns import TurnState


class Room:
    """The room a turn's events and the tools with state have left."""

    def __init__(
        self,
        state: Projections,
        max_turn_events: int = Limits.max_turn_events,
        max_tools: int = MAX_TOOLS,
    ) -> None:
        self._state = state
        self.max_turn_events = max_turn_events
        """Trace events one turn may hold: a report that would pass it is refused."""
        self.max_tools = max_tools
        """Tools reports may make state for: past it, a report of a new tool (no manifest,
        no state) is refused."""
        self.tools_refused = 0
        """Reports refused since start because they named a new tool past ``max_tools``."""

    def tools_tracked(self) -> int:
        """Tools with state, counted as max_tools counts them (in one step)."""
        return self._state.tools_tracked()

    def check_open(self, turn_id: str) -> TurnState | None:
        """The turn's state; raises TurnClosed when it ended."""
        turn = self._state.turns.view(turn_id)
        if turn is not None and turn.ended_at is not None:
            raise TurnClosed(
                f"turn {turn_id!r} ended at {turn.ended_at.isoformat()}; "
                "report the failures of a new turn under a new turn_id"
            )
        return turn

    def check_events(
        self, turn_id: str, turn: TurnState | None, events: Sequence[EventDetail]
    ) -> None:
        """Raise LimitExceeded when ``events`` would take the turn past max_turn_events."""
        held = turn.events if turn is not None else 0
        if held + sum(event.turn_id == turn_id for event in events) > self.max_turn_events:
            raise LimitExceeded(
                f"turn {turn_id!r} holds {held} of the {self.max_turn_events} trace events "
                "one turn may (max_turn_events); end it, and report further failures under "
                "a new turn_id"
            )

    def check_tool(self, key: str, manifests: ManifestSnapshot) -> None:
        """Raise LimitExceeded when the tool's key (errord.decide.model.scope) is new (no
        manifest in ``manifests``, no state) and max_tools tools and scopes have state
        already: a tool's manifest does not make room for its scopes."""
        tracked = self.tools_tracked()
        if tracked < self.max_tools or key in manifests or self._state.has_tool(key):
            return
        self.tools_refused += 1
        tool, scope = tool_and_scope(key)
        named = f"tool {tool!r} in scope {scope!r}" if scope else f"tool {tool!r}"
        raise LimitExceeded(
            f"{named} is refused: it has no manifest and no recorded report, and errord "
            f"already tracks {tracked} tools and scopes, the most max_tools allows; give it "
            "a manifest, use fewer scopes, or raise max_tools"
        )
