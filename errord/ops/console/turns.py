"""The turns page: the recent turns, the most recently active first, filtered by tool,
action, user and time, and live as they happen.

A page is read from the turns' state rows in the order of their last change
(errord.state.store.reader): an index walk, whatever the trace holds. The time filter
bounds that walk by sequence (a binary search for the sequences recorded at ``since``
and ``until``). The other filters read each turn's state (the tools its calls ran, the
actions decided), and the user filter its first report: a page stops after SCAN_BUDGET
turns read, with a cursor to search on from there, so that a filter matching nothing
in a million turns costs what reading SCAN_BUDGET does, and says how far it searched.

The live list asks for the turns changed since the newest it shows (``turns_since``):
one index lookup every few seconds, nothing at all while nobody watches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from errord.decide.model import Action, CallStatus
from errord.state.store.reader import NEWEST, TraceReader, TurnRecord

PAGE_SIZE: Final = 50
SCAN_BUDGET: Final = 5_000
"""Turns one page reads at most while filtering (each an index step and a decoding; with
the user filter, an index lookup more)."""
LIVE_LIMIT: Final = 50
"""Turns one refresh of the live list brings at most."""
ACTIONS: Final = tuple(action.value for action in Action)


class BadQuery(ValueError):
    """A query parameter that cannot be read; the message names it."""


@dataclass(frozen=True, slots=True)
class TurnQuery:
    """Which turns a page lists, from the page's query parameters."""

    tool: str = ""
    action: Action | None = None
    user: str = ""
    since: datetime | None = None
    until: datetime | None = None
    before: tuple[int, str] | None = None
    """The cursor of the last turn of the page before: list those older than it."""

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> TurnQuery:
        """Raises BadQuery naming the parameter that is wrong."""
        action = params.get("action", "").strip()
        if action and action not in ACTIONS:
            raise BadQuery(f"action: expected one of {', '.join(ACTIONS)}, got {action!r}")
        return cls(
            tool=params.get("tool", "").strip(),
            action=Action(action) if action else None,
            user=params.get("user", "").strip(),
            since=_time(params, "since"),
            until=_time(params, "until"),
            before=_cursor(params.get("before", "")),
        )

    @property
    def filtered(self) -> bool:
        return bool(self.tool or self.action or self.user)

    def params(self) -> dict[str, str]:
        """The query as the page's links carry it, without the cursor."""
        found = {
            "tool": self.tool,
            "action": self.action.value if self.action else "",
            "user": self.user,
            "since": _time_text(self.since),
            "until": _time_text(self.until),
        }
        return {name: value for name, value in found.items() if value}


def _time(params: Mapping[str, str], name: str) -> datetime | None:
    text = params.get(name, "").strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace(" ", "T"))
    except ValueError:
        raise BadQuery(
            f"{name}: expected a time such as 2025-06-01T14:02 (UTC unless it says), got {text!r}"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _time_text(moment: datetime | None) -> str:
    if moment is None:
        return ""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


def _cursor(text: str) -> tuple[int, str] | None:
    if not text:
        return None
    sequence, colon, turn_id = text.partition(":")
    if not colon or not sequence.isdigit() or int(sequence) > NEWEST:
        raise BadQuery(
            f"before: expected SEQUENCE:TURN, as the page's own links give, got {text!r}"
        )
    return int(sequence), turn_id


def cursor_text(cursor: tuple[int, str]) -> str:
    return f"{cursor[0]}:{cursor[1]}"


@dataclass(frozen=True, slots=True)
class TurnRow:
    """One turn as the list shows it."""

    record: TurnRecord
    last_at: datetime | None
    """When the batch that last changed it was recorded."""
    user: str
    tools: tuple[str, ...]
    actions: tuple[tuple[str, int], ...]
    """Each action decided on its calls, with how many times, the most frequent first."""
    statuses: tuple[tuple[str, int], ...]
    """Its calls' statuses, with how many calls have each."""

    @property
    def turn_id(self) -> str:
        return self.record.turn_id

    @property
    def ended(self) -> bool:
        return self.record.state.ended_at is not None

    @property
    def troubled(self) -> bool:
        """True when a call ended without its result (failed, skipped, timed out)."""
        bad = {CallStatus.FAILED.value, CallStatus.SKIPPED.value, CallStatus.TIMED_OUT.value}
        return any(status in bad for status, _ in self.statuses)


@dataclass(frozen=True, slots=True)
class TurnsPage:
    rows: tuple[TurnRow, ...]
    query: TurnQuery
    next_before: tuple[int, str] | None
    """Where the next (older) page begins; None when the walk reached the oldest turn."""
    searched_to: datetime | None = None
    """When the page stopped at SCAN_BUDGET turns read without filling: the last change
    of the oldest turn it read."""
    top: int = 0
    """The newest sequence the page knows of: the live list asks for changes after it."""
    scanned: int = 0
    """Turns the page read."""


UserHash = Callable[[str], str]
"""What the daemon records for a user id (its SHA-256 with the salt, when it hashes them)."""


def find_turns(
    reader: TraceReader,
    query: TurnQuery,
    hashing: UserHash | None = None,
    *,
    limit: int = PAGE_SIZE,
    budget: int = SCAN_BUDGET,
) -> TurnsPage:
    """In the console's thread: a page of turns matching ``query``."""
    since = reader.sequence_at(query.since) if query.since else 0
    until = reader.sequence_at(query.until) if query.until else NEWEST
    top = reader.last_sequence()
    matches = _matcher(reader, query, hashing)
    rows: list[TurnRow] = []
    scanned = 0
    for record in reader.turns(before=query.before, since=since, until=until):
        scanned += 1
        if matches(record):
            rows.append(turn_row(reader, record))
            if len(rows) == limit:
                return TurnsPage(tuple(rows), query, record.cursor, None, top, scanned)
        if scanned >= budget:
            searched_to = reader.time_of(record.sequence)
            return TurnsPage(tuple(rows), query, record.cursor, searched_to, top, scanned)
    return TurnsPage(tuple(rows), query, None, None, top, scanned)


def turns_since(
    reader: TraceReader, query: TurnQuery, after: int, hashing: UserHash | None = None
) -> TurnsPage:
    """The turns matching ``query`` changed after sequence ``after``, newest first: what
    the live list adds to its top."""
    matches = _matcher(reader, query, hashing)
    top = reader.last_sequence()
    records = reader.turns_since(after, LIVE_LIMIT) if top > after else []
    rows = tuple(turn_row(reader, record) for record in records if matches(record))
    return TurnsPage(rows, query, None, None, max(top, after), len(records))


def _matcher(
    reader: TraceReader, query: TurnQuery, hashing: UserHash | None
) -> Callable[[TurnRecord], bool]:
    users = {query.user, hashing(query.user)} if hashing and query.user else {query.user}

    def matches(record: TurnRecord) -> bool:
        state = record.state
        if query.tool and not any(
            progress.tool == query.tool or any(d.tool == query.tool for d in progress.decisions)
            for progress in state.progress.values()
        ):
            return False
        if query.action and not any(
            decision.action is query.action
            for progress in state.progress.values()
            for decision in progress.decisions
        ):
            return False
        return not query.user or reader.user_of(record.turn_id) in users

    return matches


def turn_row(reader: TraceReader, record: TurnRecord) -> TurnRow:
    state = record.state
    tools: dict[str, None] = {}
    actions: Counter[str] = Counter()
    for progress in state.progress.values():
        tools[progress.tool] = None
        for decision in progress.decisions:
            tools[decision.tool] = None
            actions[decision.action.value] += 1
    statuses = Counter(progress.status.value for progress in state.progress.values())
    return TurnRow(
        record,
        reader.time_of(record.sequence),
        reader.user_of(record.turn_id),
        tuple(tools),
        tuple(actions.most_common()),
        tuple(sorted(statuses.items())),
    )
