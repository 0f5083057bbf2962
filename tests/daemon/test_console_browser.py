"""The console in a real browser: Debian's Chromium, headless, driven by Playwright.

A daemon (a process, its console on a loopback port) decides a scripted set of turns;
the browser signs in with the operator token and reads the tools page, the turn list
and a turn's story, whose events must be the recorded trace's, in order. A screenshot
of each page is saved (in the run's temporary directory, or in the directory
ERRORD_CONSOLE_SCREENSHOTS names: ``ERRORD_CONSOLE_SCREENSHOTS=docs/images`` made the
ones docs/operations.md shows). Then hostile text (markup,
script, javascript: links, a megabyte in a message, an argument and a tool name) is shown
as text: no dialog opens, nothing is logged to the console, and the page answers.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from errord_client import ErrordClient, pb
from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page, sync_playwright

from tests.console_helpers import (
    HOSTILE,
    MEGABYTE,
    console_url,
    record_hostile_turns,
    scripted_turns,
)
from tests.helpers import DaemonProcess, start_process
from tests.system_packages import binary

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PATIENCE_MS = 30_000
"""How long the browser may wait for a page or a row: a bound on a hang, never a measure."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    chromium = binary("chromium", "chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where each page's screenshot goes."""
    chosen = os.environ.get("ERRORD_CONSOLE_SCREENSHOTS")
    if chosen:
        Path(chosen).mkdir(parents=True, exist_ok=True)
        return Path(chosen)
    return tmp_path_factory.mktemp("console-screenshots")


@pytest.fixture
def console_daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    running = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--console-listen", "127.0.0.1:0",
    )  # fmt: skip
    yield running
    running.terminate(signal.SIGKILL)


class Watched:
    """What a page did that it must not: dialogs opened, errors logged, exceptions."""

    def __init__(self, page: Page) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")


def signed_in(browser: Browser, url: str, token: str) -> Page:
    """A page of a new browser context, signed in through the console's form."""
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.set_default_timeout(PATIENCE_MS)
    response = page.goto(f"{url}/tools")
    assert response is not None
    assert response.status == 401
    page.fill("#token", token)
    with page.expect_navigation():
        page.click("section.login button")
    assert page.url == f"{url}/tools"
    return page


def test_the_console_shows_the_tools_the_turns_and_a_turns_story_in_order(
    browser: Browser, console_daemon: DaemonProcess, screenshots: Path
) -> None:
    url = console_url(console_daemon)
    with ErrordClient(console_daemon.address, token=console_daemon.token) as errord:
        story_turn = scripted_turns(errord)
        recorded = errord.get_turn_trace(story_turn)
    page = signed_in(browser, url, console_daemon.token)
    watched = Watched(page)

    page.goto(f"{url}/tools")
    rows = page.locator("tr.tool-row")
    assert rows.count() == 2
    hotels = page.locator('tr.tool-row[data-tool="hotel_search"]')
    assert hotels.locator(".badge").inner_text() in ("open", "half-open")
    assert "circuit breaker is" in hotels.locator(".alerts").inner_text()
    assert hotels.locator("svg.chart rect.bar").count() >= 2  # failure rate and duration
    flights = page.locator('tr.tool-row[data-tool="flight_search"]')
    assert flights.locator(".badge").inner_text() == "closed"
    page.screenshot(path=str(screenshots / "console-tools.png"), full_page=True)

    page.goto(f"{url}/turns")
    listed = page.locator("tr.turn-row").evaluate_all("rows => rows.map(r => r.dataset.turn)")
    assert listed[0] == "outage-2"  # the most recently active first
    assert story_turn in listed
    page.screenshot(path=str(screenshots / "console-turns.png"), full_page=True)
    page.goto(f"{url}/turns?tool=flight_search")
    assert page.locator("tr.turn-row").evaluate_all("r => r.map(x => x.dataset.turn)") == [
        story_turn
    ]

    page.goto(f"{url}/turns")
    with page.expect_navigation():
        page.locator(f'tr.turn-row[data-turn="{story_turn}"] td.turn a').click()
    shown = page.locator("li.event").evaluate_all(
        "items => items.map(item => [item.id, item.className])"
    )
    assert [anchor for anchor, _ in shown] == [f"e{event.sequence}" for event in recorded]
    assert [kind.removeprefix("event kind-") for _, kind in shown] == [
        event.WhichOneof("event") for event in recorded
    ]
    first_failure = page.locator("li.kind-failure").first
    assert "RETRY after" in first_failure.locator("h2").inner_text()
    assert "default:code:TIMEOUT" in first_failure.locator("code.rule").inner_text()
    assert first_failure.locator("pre.llm").inner_text().startswith("Tool Execution Failed")
    assert first_failure.locator("dd.user-message").inner_text()
    assert page.locator("svg.timeline circle.mark").count() == len(recorded)
    page.screenshot(path=str(screenshots / "console-turn.png"), full_page=True)
    assert not watched.dialogs
    assert not watched.errors


def test_the_turn_list_is_live(browser: Browser, console_daemon: DaemonProcess) -> None:
    """A turn decided while the list is open appears at its top, without a reload."""
    url = console_url(console_daemon)
    page = signed_in(browser, url, console_daemon.token)
    watched = Watched(page)
    page.goto(f"{url}/turns")
    assert page.locator("tr.turn-row").count() == 0
    with ErrordClient(console_daemon.address) as errord:
        errord.report_failure(
            turn_id="live-1", call_id="c1", tool="search", attempt=1,
            code=pb.ERROR_CODE_TIMEOUT, message="timed out",
        )  # fmt: skip
    page.wait_for_selector('tr.turn-row[data-turn="live-1"]')
    assert page.locator("tr.turn-row").first.get_attribute("data-turn") == "live-1"
    assert not watched.errors


def test_hostile_text_is_shown_as_text_and_runs_nothing(browser: Browser, tmp_path: Path) -> None:
    """Markup, script and javascript: links in a tool's name, an error message, an argument
    and a turn id reach the page as text; a megabyte of each is cut, the page answers."""
    db = tmp_path / "errord.db"
    turns = record_hostile_turns(db)
    daemon = start_process(
        "--listen", "127.0.0.1:0", "--db", str(db), "--console-listen", "127.0.0.1:0"
    )
    try:
        url = console_url(daemon)
        with ErrordClient(daemon.address) as errord:  # and through gRPC, within its bounds
            errord.report_failure(
                turn_id=HOSTILE["turn"], call_id="c9", tool=HOSTILE["tool"], attempt=1,
                message=HOSTILE["message"], arguments={"query": HOSTILE["argument"]},
            )  # fmt: skip
        page = signed_in(browser, url, daemon.token)
        watched = Watched(page)
        stories = [f"/turn?{urlencode({'id': turn})}" for turn in turns]
        for path in ["/tools", "/turns", *stories]:
            response = page.goto(url + path)
            assert response is not None
            assert response.status == 200, path
            assert page.evaluate("document.querySelectorAll('script').length") == 1
            assert page.evaluate("document.querySelectorAll('img, iframe, object').length") == 0
            handlers = page.evaluate(
                "[...document.querySelectorAll('*')]"
                ".filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length"
            )
            assert handlers == 0, path
            links = page.evaluate(
                "[...document.querySelectorAll('[href], [src]')]"
                ".map(e => e.getAttribute('href') || e.getAttribute('src'))"
            )
            assert [link for link in links if not link.startswith(("/", "#"))] == [], path
            text = page.locator("main").inner_text()
            assert "<script>alert(" in text, path
            assert page.evaluate("1 + 1") == 2  # the page answers
        page.goto(url + stories[0])
        assert "<img src=x onerror=alert(" in page.locator("pre.message").first.inner_text()
        assert re.search(r"… [\d,]+ more characters", page.locator("main").inner_text())
        page.screenshot(path=str(tmp_path / "console-hostile.png"))
        whole = page.request.get(f"{url}/event?seq=2")
        assert whole.headers["content-type"].startswith("application/json")
        assert len(whole.body()) > MEGABYTE
        assert not watched.dialogs
        assert not watched.errors
    finally:
        daemon.terminate(signal.SIGKILL)
