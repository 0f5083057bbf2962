"""The console's parts without a daemon: what the trace reader reads and by which index,
the turn list's paging and filters, sessions, the settings, and the templates' escaping."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from errord.config import Settings
from errord.decide.model import Action
from errord.decide.model.events import EventDetail, TurnBegan
from errord.errors import ConfigError
from errord.ops.console.access import ConsoleAccess, safe_next
from errord.ops.console.rendering import clip, render
from errord.ops.console.turns import BadQuery, TurnQuery, find_turns
from errord.state.store import reader
from errord.state.store.reader import TraceReader
from tests.console_helpers import SCRIPT, decided_failure, record, succeeded

START = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


async def recorded(path: Path, turns: int = 30) -> Path:
    """``turns`` turns, one a minute from START, each a failure of tool_<n % 3>, its user
    user-<n % 2>; every fifth one FAILed."""
    db = path / "errord.db"
    for number in range(turns):
        at = START + timedelta(minutes=number)
        turn = f"turn-{number:02d}"
        action = Action.FAIL if number % 5 == 0 else Action.RETRY
        events: list[EventDetail] = [
            TurnBegan(turn_id=turn, implicit=False),
            decided_failure(
                turn, "c1", f"tool_{number % 3}", at, action=action, user_id=f"user-{number % 2}"
            ),
            succeeded(turn, "c1", f"tool_{number % 3}", f"user-{number % 2}"),
        ]
        await record(db, [events], at)
    return db


async def test_every_read_of_the_console_follows_an_index(tmp_path: Path) -> None:
    db = await recorded(tmp_path, turns=3)
    names = [name for name in dir(reader) if name.startswith("_") and name.isupper()]
    assert len(names) >= 8
    with sqlite3.connect(db) as connection:
        for name in names:
            sql = getattr(reader, name)
            plan = connection.execute(f"EXPLAIN QUERY PLAN {sql}", (1,) * sql.count("?"))
            steps = [row[3] for row in plan]
            assert all(step.startswith("SEARCH") for step in steps), (name, steps)


async def test_turns_come_newest_first_each_once_page_after_page(tmp_path: Path) -> None:
    source = TraceReader(await recorded(tmp_path))
    seen: list[str] = []
    query = TurnQuery()
    while True:
        page = find_turns(source, query, limit=7)
        seen += [row.turn_id for row in page.rows]
        if page.next_before is None:
            break
        query = TurnQuery(before=page.next_before)
    assert seen == [f"turn-{number:02d}" for number in reversed(range(30))]
    source.close()


async def test_the_filters_pick_turns_by_tool_action_user_and_time(tmp_path: Path) -> None:
    source = TraceReader(await recorded(tmp_path))

    def found(query: TurnQuery) -> set[int]:
        return {int(row.turn_id[-2:]) for row in find_turns(source, query).rows}

    assert found(TurnQuery(tool="tool_1")) == set(range(1, 30, 3))
    assert found(TurnQuery(action=Action.FAIL)) == set(range(0, 30, 5))
    assert found(TurnQuery(user="user-1")) == set(range(1, 30, 2))
    hashed = found(TurnQuery(user="someone"))
    assert hashed == set()
    window = TurnQuery(since=START + timedelta(minutes=10), until=START + timedelta(minutes=13))
    assert found(window) == {10, 11, 12}
    assert found(TurnQuery(tool="tool_1", action=Action.FAIL)) == {10, 25}
    source.close()


async def test_a_filter_stops_at_its_budget_and_says_how_far_it_searched(
    tmp_path: Path,
) -> None:
    source = TraceReader(await recorded(tmp_path))
    page = find_turns(source, TurnQuery(tool="nothing"), budget=10)
    assert page.rows == ()
    assert page.scanned == 10
    assert page.searched_to == START + timedelta(minutes=20)
    assert page.next_before is not None
    rest = find_turns(source, TurnQuery(tool="tool_0", before=page.next_before), budget=100)
    assert next(row.turn_id for row in rest.rows) == "turn-18"
    assert rest.searched_to is None
    source.close()


def test_a_query_that_cannot_be_read_names_its_parameter() -> None:
    with pytest.raises(BadQuery, match=r"^action: expected one of RETRY"):
        TurnQuery.from_params({"action": "NAP"})
    with pytest.raises(BadQuery, match=r"^since: expected a time"):
        TurnQuery.from_params({"since": "yesterday"})
    with pytest.raises(BadQuery, match=r"^before: expected SEQUENCE:TURN"):
        TurnQuery.from_params({"before": "12"})
    query = TurnQuery.from_params({"until": "2025-06-01T14:02", "before": "7:a:b"})
    assert query.until == datetime(2025, 6, 1, 14, 2, tzinfo=UTC)  # UTC unless it says
    assert query.before == (7, "a:b")


def test_a_session_is_the_tokens_signature_of_its_expiry_and_ends() -> None:
    now = [1_000_000.0]
    access = ConsoleAccess("s3cret", clock=lambda: now[0])
    cookie = {"errord_console": access.session()}
    assert "s3cret" not in cookie["errord_console"]
    assert access.in_session(cookie)
    assert not ConsoleAccess("other", clock=lambda: now[0]).in_session(cookie)
    version, expires, signature = cookie["errord_console"].split(".")
    longer = {"errord_console": f"{version}.{int(expires) + 3600}.{signature}"}
    assert not access.in_session(longer)
    now[0] += 12 * 3600
    assert not access.in_session(cookie)
    assert access.bearer({"Authorization": "Bearer s3cret"}) is True
    assert access.bearer({"Authorization": "Bearer nope"}) is False
    assert access.bearer({}) is None
    assert ConsoleAccess("s3cret", secure=True).cookie_name == "__Host-errord_console"


def test_after_signing_in_the_browser_goes_only_to_a_page_of_the_console() -> None:
    assert safe_next("/turns?tool=a") == "/turns?tool=a"
    for elsewhere in ("https://evil.example/", "//evil.example/", "/\\evil.example", "x"):
        assert safe_next(elsewhere) == "/"


def test_the_console_settings_are_checked() -> None:
    assert Settings(console_listen="unix:/run/errord/console.sock").console_listen
    with pytest.raises(ConfigError, match=r"^console_listen: expected host:port or unix:PATH"):
        Settings(console_listen="9465")
    with pytest.raises(ConfigError, match=r"^console_trace_url: expected an http"):
        Settings(console_trace_url="javascript:alert(1)//{trace_id}")
    with pytest.raises(ConfigError, match=r"^console_trace_url: unknown field \{span\}"):
        Settings(console_trace_url="https://tracing.example/{span}")
    Settings(console_trace_url="https://tracing.example/trace/{trace_id}?turn={turn_id}")
    # TLS with a unix socket for gRPC: for the console on TCP
    Settings(
        listen="unix:/tmp/errord.sock",
        console_listen="127.0.0.1:9465",
        tls_cert_file=Path("cert.pem"),
        tls_key_file=Path("key.pem"),
    )
    with pytest.raises(ConfigError, match=r"^tls_cert_file: TLS is for TCP"):
        Settings(
            listen="unix:/tmp/errord.sock",
            tls_cert_file=Path("cert.pem"),
            tls_key_file=Path("key.pem"),
        )


async def test_a_page_shows_markup_as_text(tmp_path: Path) -> None:
    db = tmp_path / "errord.db"
    turn = f"t {SCRIPT}"
    await record(db, [[decided_failure(turn, "c1", f"tool{SCRIPT}", START, message=SCRIPT)]], START)
    source = TraceReader(db)
    html = render("turns.html", page=find_turns(source, TurnQuery()), actions=())
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#39;script&#39;)&lt;/script&gt;" in html
    source.close()
    assert clip("x" * 10, 4) == ("xxxx", 6)
