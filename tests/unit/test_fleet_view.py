"""The fleet's view (errord.fleet.view), its records' bounds (errord.fleet.records) and the
outbox of a host's own words (errord.fleet.outbox), without Redis: what decisions read
of the other hosts' evidence, and what is ignored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from errord.decide.memory import MemoryKey, MemoryStats, SharedStats, Tally, recall
from errord.decide.model import BreakerChange, BreakerPhase, BreakerState, RateWindow
from errord.decide.model.events import BreakerChanged, RateLimited, TraceEvent
from errord.decide.model.scope import tool_key
from errord.fleet.outbox import Outbox, field_of
from errord.fleet.records import (
    MAX_MESSAGE,
    Batch,
    BreakerWord,
    Ignored,
    MemoryWord,
    Refused,
    WindowWord,
    Word,
    encode,
    message,
    read_batch,
    read_word,
    sender_of,
)
from errord.fleet.view import FLEET_PROBE, FleetView

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
CLOSED = BreakerState()


def view(
    windows: dict[str, RateWindow] | None = None,
    memory: dict[MemoryKey, MemoryStats] | None = None,
) -> FleetView:
    """Host b's view, quorum 2, a two-minute window, in sync, a and c live."""
    fleet = FleetView(
        "b",
        2,
        120.0,
        (windows or {}).get,
        (memory or {}).get,
    )
    fleet.coordinating = True
    fleet.heartbeats({"a": NOW, "c": NOW}, NOW)
    return fleet


seq = iter(range(1, 1_000_000))


def said(host: str, body: BreakerWord | WindowWord | MemoryWord, instance: int = 1) -> Word:
    return Word("test", host, instance, next(seq), NOW, body)


def opened(key: str, at: datetime, length: float = 30.0, **fields: bool | int) -> BreakerWord:
    return BreakerWord(
        key=key,
        phase=BreakerPhase.OPEN,
        opened_at=at,
        half_opens_at=at + timedelta(seconds=length),
        **fields,  # type: ignore[arg-type]
    )


def test_one_hosts_opening_refuses_nothing_and_a_quorum_refuses_until_the_latest_break_ends() -> (
    None
):
    fleet = view()
    fleet.apply(said("a", opened("ledger", NOW)), NOW)
    assert fleet.gate("ledger", CLOSED, NOW) is CLOSED
    fleet.apply(said("c", opened("ledger", NOW + timedelta(seconds=5))), NOW)
    gated = fleet.gate("ledger", CLOSED, NOW + timedelta(seconds=6))
    assert gated.phase is BreakerPhase.OPEN
    assert gated.half_opens_at == NOW + timedelta(seconds=35)
    # Past the break, with no holder known yet: half-open with the probe taken elsewhere.
    later = NOW + timedelta(seconds=36)
    pending = fleet.gate("ledger", CLOSED, later)
    assert pending.phase is BreakerPhase.HALF_OPEN
    assert pending.probe is not None
    assert pending.probe.turn_id == FLEET_PROBE
    fleet.hold("ledger", "a", later + timedelta(seconds=10))
    held = fleet.gate("ledger", CLOSED, later)
    assert held.probe is not None
    assert held.probe.call_id == "a"


def test_the_host_that_holds_the_fleets_probe_runs_its_own_breaker() -> None:
    fleet = view()
    own = BreakerState(phase=BreakerPhase.OPEN, opened_at=NOW, half_opens_at=NOW)
    fleet.apply(said("b", opened("ledger", NOW, 1.0)), NOW)
    fleet.apply(said("c", opened("ledger", NOW, 1.0)), NOW)
    fleet.hold("ledger", "b", NOW + timedelta(seconds=20))
    assert fleet.gate("ledger", own, NOW + timedelta(seconds=2)) is own


@pytest.mark.parametrize(
    "evidence",
    [
        {"forced": True},  # an operator's opening is no outage
        {"successes": 1},  # a host whose probe succeeded is no longer evidence
    ],
)
def test_an_opening_that_is_no_evidence_does_not_count(evidence: dict[str, bool | int]) -> None:
    fleet = view()
    fleet.apply(said("a", opened("ledger", NOW)), NOW)
    fleet.apply(said("c", opened("ledger", NOW, **evidence)), NOW)
    assert fleet.gate("ledger", CLOSED, NOW) is CLOSED


def test_a_silent_hosts_and_an_old_opening_do_not_count() -> None:
    fleet = view()
    fleet.apply(said("a", opened("ledger", NOW - timedelta(seconds=500), 600)), NOW)
    fleet.apply(said("c", opened("ledger", NOW)), NOW)
    assert fleet.gate("ledger", CLOSED, NOW) is CLOSED  # a's opening is past the window
    fleet.apply(said("a", opened("ledger", NOW)), NOW)
    assert fleet.gate("ledger", CLOSED, NOW).phase is BreakerPhase.OPEN
    fleet.heartbeats({"a": NOW - timedelta(seconds=60), "c": NOW}, NOW)
    assert fleet.gate("ledger", CLOSED, NOW) is CLOSED  # a went silent


def test_without_the_link_in_sync_the_hosts_own_breaker_acts_alone() -> None:
    fleet = view()
    fleet.apply(said("a", opened("ledger", NOW)), NOW)
    fleet.apply(said("c", opened("ledger", NOW)), NOW)
    fleet.coordinating = False
    assert fleet.gate("ledger", CLOSED, NOW) is CLOSED


def test_an_older_word_is_never_applied_over_a_newer_one() -> None:
    fleet = view()
    newer = said("a", BreakerWord(key="ledger", phase=BreakerPhase.CLOSED))
    older = Word("test", "a", 1, newer.seq - 1, NOW, opened("ledger", NOW))
    fleet.apply(newer, NOW)
    fleet.apply(older, NOW)
    fleet.apply(said("c", opened("ledger", NOW)), NOW)
    assert fleet.gate("ledger", CLOSED, NOW) is CLOSED
    restarted = Word("test", "a", 2, 1, NOW, opened("ledger", NOW))  # a new instance
    fleet.apply(restarted, NOW)
    assert fleet.gate("ledger", CLOSED, NOW).phase is BreakerPhase.OPEN


def test_the_longest_window_any_host_received_holds() -> None:
    own = RateWindow(opened_at=NOW, until=NOW + timedelta(seconds=1), generation=3)
    fleet = view(windows={"quotes": own})
    assert fleet.window_of("quotes") is own
    fleet.apply(said("a", WindowWord("quotes", NOW, NOW + timedelta(seconds=30), 30.0)), NOW)
    window = fleet.window_of("quotes")
    assert window is not None
    assert (window.until, window.asked, window.generation) == (
        NOW + timedelta(seconds=30),
        30.0,
        3,
    )
    assert fleet.window_of("other") is None
    fleet.refresh(NOW + timedelta(seconds=31))
    assert fleet.window_of("quotes") is own  # a's ended


def test_memory_adds_the_other_hosts_tallies_and_says_how_much_they_brought() -> None:
    error = MemoryKey("search", "sig")
    mine = MemoryStats({"RETRY": Tally(NOW, opened=1.0, succeeded=1.0)}, "fp")
    fleet = view(memory={error: mine})
    theirs = {"RETRY": Tally(NOW, opened=3.0, failed=3.0)}
    fleet.apply(said("a", MemoryWord(key="search", signature="sig", tallies=theirs)), NOW)
    fleet.apply(said("c", MemoryWord(key="search", signature="sig", tallies=theirs)), NOW)
    stats = fleet.memory_of("search", "sig")
    assert isinstance(stats, SharedStats)
    evidence = recall(stats, NOW)["RETRY"]
    assert (evidence.succeeded, evidence.failed, evidence.from_fleet) == (1.0, 6.0, 6.0)
    assert stats.fingerprint == "fp"
    fleet.apply(said("a", MemoryWord(key="search", signature="sig", tallies=None)), NOW)
    assert recall(fleet.memory_of("search", "sig"), NOW)["RETRY"].failed == 3.0  # a forgot
    assert fleet.memory_of("search", "other") is None


def test_a_hosts_own_windows_and_memory_are_not_counted_twice() -> None:
    fleet = view()
    fleet.apply(said("b", WindowWord("quotes", NOW, NOW + timedelta(seconds=30))), NOW)
    tallies = {"RETRY": Tally(NOW, opened=3.0, failed=3.0)}
    fleet.apply(said("b", MemoryWord(key="search", signature="sig", tallies=tallies)), NOW)
    assert fleet.window_of("quotes") is None
    assert fleet.memory_of("search", "sig") is None


def test_values_that_are_not_errords_words_are_refused_by_reason() -> None:
    window = WindowWord("quotes", NOW, NOW + timedelta(seconds=1))
    ok = Word("test", "a", 1, 1, NOW, window)
    foreign = Word("other", "a", 1, 2, NOW, window)
    ahead = Word("test", "a", 1, 3, NOW, WindowWord("quotes", NOW, NOW + timedelta(days=30)))
    impostor = Word("test", "c", 1, 5, NOW, window)  # in a's message
    host, batch = sender_of(message("a", Batch([ok, foreign, ahead, impostor])))
    kept, refused = read_batch(batch, "test", host, NOW)
    assert kept == [ok]
    assert [problem.reason for problem in refused] == [
        Ignored.FOREIGN,
        Ignored.OUT_OF_BOUNDS,
        Ignored.FOREIGN,
    ]
    for value, reason in [
        (b"\xc1", Ignored.MALFORMED),
        ("text", Ignored.MALFORMED),
        (b"\x00" * (MAX_MESSAGE + 1), Ignored.OVERSIZED),
        (encode({"fleet": "test"}), Ignored.MALFORMED),
    ]:
        with pytest.raises(Refused) as problem:
            read_batch(value, "test", "a", NOW)
        assert problem.value.reason is reason
    for value in (b"", b"\x05ab", "text", b"\x02\xff\xfe{}"):
        with pytest.raises(Refused) as unsigned:
            sender_of(value)
        assert unsigned.value.reason is Ignored.MALFORMED
    with pytest.raises(Refused) as in_hash:
        read_word(encode(ok), "test", "c", NOW)  # a's word in c's hash
    assert in_hash.value.reason is Ignored.FOREIGN
    huge = {"RETRY": Tally(NOW, opened=float("inf"))}
    memory = Word("test", "a", 1, 4, NOW, MemoryWord(key="s", signature="x", tallies=huge))
    with pytest.raises(Refused) as infinite:
        read_word(encode(memory), "test", "a", NOW)
    assert infinite.value.reason is Ignored.OUT_OF_BOUNDS


def test_the_outbox_keeps_the_newest_word_of_each_thing_and_its_own_breakers() -> None:
    breakers: dict[str, BreakerState] = {}
    outbox = Outbox(lambda: breakers, dict, dict, lambda error: None)
    woken = []
    outbox.on_word = lambda: woken.append(True)
    first = BreakerState(phase=BreakerPhase.OPEN, opened_at=NOW, half_opens_at=NOW)
    window = RateWindow(opened_at=NOW, until=NOW + timedelta(seconds=2), asked=2.0)
    events = [
        TraceEvent(
            1, NOW, BreakerChanged(tool="ledger", change=BreakerChange.OPENED, breaker=first)
        ),
        TraceEvent(
            2,
            NOW,
            BreakerChanged(tool="ledger", change=BreakerChange.CLOSED, breaker=CLOSED),
        ),
        TraceEvent(3, NOW, RateLimited(tool="quotes", window=window, scope="eu")),
    ]
    outbox.committed(events)
    assert woken
    assert len(outbox.own_breakers) == 2
    words = outbox.take()
    assert [field_of(word) for word in words] == ["b ledger", f"w {tool_key('quotes', 'eu')}"]
    assert isinstance(words[0], BreakerWord)
    assert words[0].phase is BreakerPhase.CLOSED
    assert outbox.take() == []


def test_a_sender_splits_its_words_into_messages_a_receiver_reads_whole() -> None:
    from errord.fleet.outbox import chunks

    tallies = {f"USE_ALTERNATIVE:tool_{n}": Tally(NOW, opened=1.0) for n in range(60)}
    words = [
        Word("test", "a", 1, n, NOW, MemoryWord(key="search", signature=f"s{n}", tallies=tallies))
        for n in range(1, 801)
    ]
    read: list[Word] = []
    for chunk in chunks(words):
        sent = message("a", Batch([word for word, _ in chunk]))
        assert len(sent) <= MAX_MESSAGE
        host, batch = sender_of(sent)
        kept, refused = read_batch(batch, "test", host, NOW)
        assert refused == []
        read += kept
    assert read == words
