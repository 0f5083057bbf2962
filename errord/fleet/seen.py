"""What an operator sees of the fleet from one host: the hosts and their last word, the
tools the fleet refuses (on which hosts, who holds the probe), and the windows it holds
(``errord fleet``, GetFleet); and a word in a line, for a host's card."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from errord.fleet.records import Body, BreakerWord, MemoryWord, WindowWord
from errord.fleet.status import BreakerSeen, FleetSnapshot, HostSeen, WindowSeen

if TYPE_CHECKING:
    from errord.fleet.link import FleetLink


def fleet_snapshot(link: FleetLink, now: datetime) -> FleetSnapshot:
    """The fleet as ``link``'s host sees it at ``now``."""
    view = link.view
    live = view.live_hosts(now)
    hosts = [
        HostSeen(link.host, True, now, True, link.last_word, link.last_word_at),
        *(
            HostSeen(
                card.host,
                False,
                card.seen_at,
                card.host in live,
                card.last_word,
                card.last_word_at,
            )
            for card in sorted(link.cards.values(), key=lambda card: card.host)
            if card.host != link.host
        ),
    ]
    breakers = []
    for key, heard in sorted(view.breakers.items()):
        open_on = tuple(
            sorted(
                host
                for host, each in heard.items()
                if host in live
                and isinstance(each.word, BreakerWord)
                and view.counts(each.word, now)
            )
        )
        if not open_on:
            continue
        regime = view.regimes.get(key)
        hold = view.holds.get(key)
        breakers.append(
            BreakerSeen(
                key,
                open_on,
                regime is not None,
                regime.half_opens_at if regime is not None else None,
                hold.host if hold is not None else "",
                hold.until if hold is not None else None,
            )
        )
    windows = [
        WindowSeen(key, host, each.word.until)
        for key, heard in sorted(view.windows.items())
        for host, each in sorted(heard.items())
        if isinstance(each.word, WindowWord) and each.word.until > now
    ]
    return FleetSnapshot(
        link.status, tuple(hosts), tuple(breakers), tuple(windows), view.shared_errors
    )


def said(body: Body) -> str:
    """What a word says, in a line (a host's last word)."""
    if isinstance(body, BreakerWord):
        return f"the breaker of {body.key} {body.phase.value.lower().replace('_', '-')}"
    if isinstance(body, WindowWord):
        return f"a rate-limit window of {body.key} until {body.until.isoformat()}"
    if isinstance(body, MemoryWord):
        return f"memory of an error of {body.key}"
    return "joined"
