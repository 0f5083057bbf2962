"""Stream slots: each kind within its limit, each peer within its share of it; a peer is
a TCP address without its port, and on a unix socket no share applies."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from errord.errors import LimitExceeded
from errord.limits import Limits
from errord.wire.streams import Streams, StreamSlots, peer_address


@pytest.mark.parametrize(
    ("peer", "address"),
    [
        ("ipv4:10.0.0.7:51234", "10.0.0.7"),
        ("ipv4:127.0.0.2:1", "127.0.0.2"),
        ("ipv6:%5B::1%5D:50260", "::1"),
        ("ipv6:[fe80::1%25eth0]:443", "fe80::1%eth0"),
        ("unix:", None),
        ("unix:/run/errord/errord.sock", None),
        ("unix-abstract:errord", None),
        ("", None),
    ],
)
def test_a_peer_is_its_tcp_address_without_the_port(peer: str, address: str | None) -> None:
    assert peer_address(peer) == address


def test_a_peer_holds_its_share_and_leaves_the_rest_to_others() -> None:
    slots = StreamSlots("WatchTrace", "max_watchers", 4, share=0.5)
    with ExitStack() as held:
        for _ in range(2):
            held.enter_context(slots.slot("10.0.0.1"))
        with pytest.raises(LimitExceeded) as refused:
            held.enter_context(slots.slot("10.0.0.1"))
        assert str(refused.value) == (
            "10.0.0.1 holds 2 of the 4 WatchTrace streams errord serves at once, as many as "
            "one peer may (peer_stream_share x max_watchers); close one, or watch again later"
        )
        for _ in range(2):
            held.enter_context(slots.slot("10.0.0.2"))
        with pytest.raises(LimitExceeded) as full:
            held.enter_context(slots.slot("10.0.0.3"))
        assert str(full.value) == (
            "4 WatchTrace streams are open, the most errord serves at once (max_watchers); "
            "close one, or watch again later"
        )
        assert (slots.taken, slots.refused) == (4, 2)
    assert (slots.taken, slots.held_by("10.0.0.1"), slots.held_by("10.0.0.2")) == (0, 0, 0)
    with slots.slot("10.0.0.3"):
        assert slots.held_by("10.0.0.3") == 1


def test_a_slot_is_given_back_when_its_stream_ends_with_an_error() -> None:
    slots = StreamSlots("health Watch", "max_health_watches", 2, share=0.5)
    with pytest.raises(RuntimeError), slots.slot("10.0.0.1"):
        raise RuntimeError("the stream failed")
    with slots.slot("10.0.0.1"):
        assert slots.taken == 1


def test_callers_without_a_peer_address_take_no_share_only_the_limit() -> None:
    """A unix socket's callers all look alike: the share does not apply to them."""
    slots = StreamSlots("WatchTools", "max_tool_watchers", 3, share=0.5)
    with ExitStack() as held:
        for _ in range(3):
            held.enter_context(slots.slot(None))
        with pytest.raises(LimitExceeded, match=r"\(max_tool_watchers\)"):
            held.enter_context(slots.slot(None))


def test_a_peer_may_always_hold_one_and_the_whole_share_of_one() -> None:
    assert StreamSlots("reflection", "max_reflection_streams", 1, share=0.5).per_peer == 1
    assert StreamSlots("reflection", "max_reflection_streams", 7, share=0.5).per_peer == 3
    assert StreamSlots("reflection", "max_reflection_streams", 7, share=1.0).per_peer == 7


def test_each_kind_has_its_limit_and_grpc_counts_them_beside_the_calls() -> None:
    limits = Limits(
        max_concurrent_rpcs=100,
        max_health_watches=10,
        max_watchers=20,
        max_tool_watchers=30,
        max_reflection_streams=4,
        peer_stream_share=0.25,
    )
    streams = Streams.within(limits)
    assert {kind: (slots.limit, slots.per_peer) for kind, slots in streams.by_kind().items()} == {
        "health_watch": (10, 2),
        "watch_trace": (20, 5),
        "watch_tools": (30, 7),
        "reflection": (4, 1),
    }
    assert limits.grpc_concurrent_rpcs == 164
