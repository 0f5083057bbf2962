"""What this host tells its fleet: its own evidence, word by word, as it is committed.

Every committed batch passes through ``Outbox.committed`` (a type test per event, and
nothing more while no event is a breaker change, a rate-limit window or an episode):
a breaker change becomes a ``BreakerWord``, a window a ``WindowWord``, an error whose
episodes changed a ``MemoryWord`` (its tallies read from the committed projection when
the words are sent, so that a burst of reports of one error is one word). Words wait
in ``pending``, one per thing (the newest wins), until the link sends them: breakers and
windows at once, memory with the next of those or within a quarter of a second (evidence
that decays over an hour need not race, and every decision's error would otherwise be a
message of its own). The link also asks for the whole of it (``everything``) each time
it (re)joins the fleet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from errord.decide.memory import MemoryKey, MemoryStats
from errord.decide.model import BreakerChange, BreakerPhase, BreakerState, RateWindow
from errord.decide.model.events import (
    BreakerChanged,
    FailureEvent,
    MemoryForgotten,
    OutcomeEvent,
    RateLimited,
    TraceEvent,
)
from errord.fleet.records import (
    MAX_MESSAGE,
    Body,
    BreakerWord,
    MemoryWord,
    WindowWord,
    Word,
    encode,
)
from errord.state.memory import episode_keys

OwnBreakers = Callable[[], dict[str, BreakerState]]
OwnWindows = Callable[[], dict[str, RateWindow]]
OwnMemory = Callable[[], dict[MemoryKey, MemoryStats]]
CommittedMemory = Callable[[MemoryKey], MemoryStats | None]


def breaker_word(key: str, breaker: BreakerState, *, forced: bool = False) -> BreakerWord:
    """A host's own breaker as its fleet reads it."""
    probe = breaker.probe
    return BreakerWord(
        key=key,
        phase=breaker.phase,
        opened_at=breaker.opened_at,
        half_opens_at=breaker.half_opens_at,
        successes=breaker.successes,
        forced=forced or (breaker.phase is BreakerPhase.OPEN and breaker.half_opens_at is None),
        probe_until=probe.until if probe is not None else None,
    )


def window_word(key: str, window: RateWindow) -> WindowWord:
    return WindowWord(key=key, opened_at=window.opened_at, until=window.until, asked=window.asked)


class Outbox:
    """This host's words not sent yet, by the thing each is about."""

    def __init__(
        self,
        breakers: OwnBreakers,
        windows: OwnWindows,
        memory: OwnMemory,
        committed_memory: CommittedMemory,
    ) -> None:
        self._breakers = breakers
        self._windows = windows
        self._memory = memory
        self._committed_memory = committed_memory
        self.pending: dict[str, Body] = {}
        """By field (``field_of``), the newest word of each thing."""
        self._errors: set[MemoryKey] = set()
        """Errors whose memory changed: read when the words are taken."""
        self.on_word: Callable[[], None] = lambda: None
        """Called when a breaker or window word is added: the link's sender wakes. Memory's
        words wait for its next round: they steer decisions, never admit or refuse one."""
        self.own_breakers: list[BreakerWord] = []
        """This host's breaker words since the view last took them (it counts itself)."""

    def committed(self, events: Sequence[TraceEvent]) -> None:
        """Called after each commit; never waits."""
        added = False
        for event in events:
            detail = event.detail
            kind = type(detail)
            if kind is BreakerChanged:
                assert isinstance(detail, BreakerChanged)
                forced = detail.change is BreakerChange.FORCED_OPEN
                word = breaker_word(detail.tool_key, detail.breaker, forced=forced)
                self.pending[field_of(word)] = word
                self.own_breakers.append(word)
                added = True
            elif kind is RateLimited:
                assert isinstance(detail, RateLimited)
                window = window_word(detail.tool_key, detail.window)
                self.pending[field_of(window)] = window
                added = True
            elif kind is FailureEvent or kind is OutcomeEvent:
                self._errors.update(episode_keys(detail))
            elif kind is MemoryForgotten:
                assert isinstance(detail, MemoryForgotten)
                self._errors.update(detail.errors)
        if added:  # memory waits for the sender's next round (MEMORY_EVERY at most)
            self.on_word()

    @property
    def waiting(self) -> bool:
        """True while words wait to be sent."""
        return bool(self.pending or self._errors)

    def take(self) -> list[Body]:
        """The words waiting, memory's read now; none wait after."""
        for error in self._errors:
            stats = self._committed_memory(error)
            word = memory_word(error, stats)
            self.pending[field_of(word)] = word
        self._errors.clear()
        words = list(self.pending.values())
        self.pending.clear()
        return words

    def everything(self) -> Iterator[Body]:
        """This host's whole evidence: every breaker that ever changed, every window that
        still holds, every error memory holds. Nothing waits after."""
        self.pending.clear()
        self._errors.clear()
        for key, breaker in self._breakers().items():
            yield breaker_word(key, breaker)
        for key, window in self._windows().items():
            yield window_word(key, window)
        for error, stats in self._memory().items():
            yield memory_word(error, stats)


def memory_word(error: MemoryKey, stats: MemoryStats | None) -> MemoryWord:
    tallies = dict(stats.tallies) if stats is not None and stats.tallies else None
    return MemoryWord(key=error.tool, signature=error.signature, tallies=tallies)


def field_of(body: Body) -> str:
    """The field of a host's hash that holds the word about ``body``'s thing."""
    if isinstance(body, MemoryWord):
        return f"m {body.key}\x00{body.signature}"
    if isinstance(body, BreakerWord):
        return f"b {body.key}"
    if isinstance(body, WindowWord):
        return f"w {body.key}"
    raise ValueError(f"{type(body).__name__} is not kept in a host's hash")


SEND_BATCH = 500
"""Words one message carries at most."""
MESSAGE_SLACK = 1_024
"""Bytes of a message beside its words' own: its sender's name, the batch's framing."""


def chunks(words: list[Word]) -> Iterator[list[tuple[Word, bytes]]]:
    """``words`` with their encodings, in chunks whose message stays within MAX_MESSAGE
    and SEND_BATCH words."""
    chunk: list[tuple[Word, bytes]] = []
    size = 0
    for word in words:
        raw = encode(word)
        if chunk and (size + len(raw) > MAX_MESSAGE - MESSAGE_SLACK or len(chunk) >= SEND_BATCH):
            yield chunk
            chunk, size = [], 0
        chunk.append((word, raw))
        size += len(raw)
    if chunk:
        yield chunk
