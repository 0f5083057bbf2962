"""Every command the README and docs/ show runs as shown, in order, and answers as shown.

Each page's ``$`` commands go, one after the other, to one bash in a directory of the test's
own where ``.venv`` is the checkout's venv, so that ``.venv/bin/...``, ``export PATH=...``,
``cd``-free relative paths and ``kill $!`` work as they do for a reader. Files a page says to
save (``save this as `NAME` ``) are saved. What the test changes, and only that: the ports
a page names become free ports of the test's own, and a command right after one that
started a daemon in the background is tried again until the daemon answers, as a reader
waits for it; a command that streams until interrupted (WatchTrace) gets Ctrl-C once it
has printed what the page shows.

An answer matches what the page shows when every ``"key": value`` the page shows is in
it, and every other line the page shows is one of its lines; ``...`` stands for anything,
and numbers inside strings (delays, times, ids) may differ.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = next(
    parent for parent in Path(__file__).resolve().parents if (parent / "pyproject.toml").exists()
)
DOC_PORTS = ("50051", "50444", "50443", "50061", "9464")
"""The ports the pages name: each becomes a free port of the test's own."""
COMMAND_TIMEOUT = 120.0
"""How long one command may take, or a daemon started in the background to answer: only a
bound on a hang, never a measure."""
DOC_PORT = re.compile(r"\b(?:" + "|".join(DOC_PORTS) + r")\b")
DONE = "@@@done"
PAIR = re.compile(r'"(\w+)":\s*("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|true|false|null)')
STRUCTURE = re.compile(r'^(?:[{}\[\],]*|"\w+": [\[{]|\.\.\.|\^C)$')
ERROR_LINE = re.compile(r"^(?:ERROR:|errord: |Failed to )")


@dataclass
class Step:
    """A command with the output the page shows for it, or a file the page says to save."""

    command: str = ""
    shown: list[str] = field(default_factory=list)
    save_as: str = ""
    content: str = ""

    @property
    def background(self) -> bool:
        return self.command.rstrip().endswith("&")

    @property
    def streams(self) -> bool:
        return "^C" in self.shown

    @property
    def fails(self) -> bool:
        return any(ERROR_LINE.match(line.strip()) for line in self.shown)


def steps(page: Path) -> list[Step]:
    """The commands of ``page``'s indented blocks, and the files its fenced blocks are saved as."""
    found: list[Step] = []
    lines = iter(page.read_text().splitlines())
    prose: list[str] = []
    current: Step | None = None
    for line in lines:
        if line.startswith("```"):
            body = list(_until_fence(lines))
            name = re.search(r"[Ss]ave (?:it|this) as `([\w.]+)`", " ".join(prose))
            if line.startswith("```python") and name:
                found.append(Step(save_as=name[1], content="\n".join(body) + "\n"))
            prose, current = [], None
        elif line.startswith("    $ "):
            command = line.removeprefix("    $ ")
            while not _complete(command):
                command += "\n" + next(lines)
            current = Step(command=command)
            found.append(current)
            prose = []
        elif line.startswith("    ") and current is not None:
            current.shown.append(line[4:])
        elif line.strip():
            prose.append(line)
            current = None
    return found


def _until_fence(lines: Iterator[str]) -> Iterator[str]:
    for line in lines:
        if line.startswith("```"):
            return
        yield line


def _complete(command: str) -> bool:
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command)
    except ValueError:  # a quote still open
        return False
    return True


def matches(shown: list[str], output: str) -> list[str]:
    """What the page shows that the output does not have."""
    pairs = PAIR.findall(output)
    lines = {line.strip() for line in output.splitlines()}
    missing = []
    for line in (line.strip() for line in shown):
        if STRUCTURE.match(line) or (ERROR_LINE.match(line) and line.endswith(":")):
            continue
        wanted = PAIR.findall(line)
        if wanted:
            missing += [f'"{key}": {value}' for key, value in wanted if not _has(pairs, key, value)]
        elif not any(_pattern(line).fullmatch(actual) for actual in lines):
            missing.append(line)
    return missing


def _has(pairs: list[tuple[str, str]], key: str, value: str) -> bool:
    pattern = _pattern(value) if value.startswith('"') else re.compile(re.escape(value))
    return any(k == key and pattern.fullmatch(v) for k, v in pairs)


def _pattern(text: str) -> re.Pattern[str]:
    """``text`` with ``...`` standing for anything and its numbers for any number."""
    pieces = []
    for piece in re.split(r"(\.\.\.|[0-9a-f]{32}|\d+)", text):
        if piece == "...":
            pieces.append(".*")
        elif re.fullmatch(r"[0-9a-f]{32}", piece):
            pieces.append("[0-9a-f]{32}")
        elif piece.isdigit():
            pieces.append(r"\d+")
        else:
            pieces.append(re.escape(piece))
    return re.compile("".join(pieces))


def free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


class Shell:
    """One bash, fed a page's commands one by one, as a reader types them."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            ["bash"],
            cwd=directory,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.background: set[int] = set()
        """The daemons the page started with ``&``."""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def run(self, command: str, *, until: Step | None = None) -> tuple[int, str]:
        """The exit status and output of ``command``; with ``until``, Ctrl-C once the output
        holds what that step shows (the status is then None's stand-in, -1)."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{command}\necho {DONE} $?\n")
        self.process.stdin.flush()
        output: list[str] = []
        deadline = time.monotonic() + COMMAND_TIMEOUT
        interrupted = False
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if (
                    until is not None
                    and not interrupted
                    and not matches(until.shown, "".join(output))
                ):
                    self.interrupt_foreground()
                    interrupted = True
                continue
            if line.startswith(DONE):
                return (-1 if interrupted else int(line.split()[1])), "".join(output)
            output.append(line)
        raise AssertionError(f"no end of {command!r} after {COMMAND_TIMEOUT} s: {''.join(output)}")

    def interrupt_foreground(self) -> None:
        """Ctrl-C: SIGINT to the command bash is running now (never to its background jobs)."""
        for pid in _children(self.process.pid):
            if pid not in self.background:
                for process in [pid, *_descendants(pid)]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(process, signal.SIGINT)

    def close(self) -> None:
        """Stop whatever the page left running, then bash."""
        for pid in _descendants(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.kill()
        self.process.wait(COMMAND_TIMEOUT)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _descendants(pid: int) -> list[int]:
    found = []
    for child in _children(pid):
        found += [child, *_descendants(child)]
    return found


def walk_through(page: Path, directory: Path, daemon_port: str | None = None) -> None:
    """Run every step of ``page`` in ``directory``; fail on the first that answers otherwise
    than the page shows."""
    (directory / ".venv").symlink_to(ROOT / ".venv")
    ports = {port: free_port() for port in DOC_PORTS}
    if daemon_port:
        ports["50051"] = daemon_port
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "clients" / "python" / "src")
    env["ERRORD_ADDRESS"] = f"127.0.0.1:{ports['50051']}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    shell = Shell(directory, env)
    try:
        after_background = False
        for step in steps(page):
            if step.save_as:
                (directory / step.save_as).write_text(step.content)
                continue
            command = DOC_PORT.sub(lambda port: ports[port[0]], step.command)
            status, output = _run_step(shell, step, command, patient=after_background)
            if step.background:
                shell.background.add(int(shell.run("echo $!")[1]))
            where = f"{page.name}: $ {step.command}\n--- it printed:\n{output}"
            if not step.streams and not step.background:
                assert (status != 0) == step.fails, f"exit status {status}: {where}"
            assert not matches(step.shown, output), (
                f"missing {matches(step.shown, output)}: {where}"
            )
            after_background = step.background
    finally:
        shell.close()


def _run_step(shell: Shell, step: Step, command: str, *, patient: bool) -> tuple[int, str]:
    """Run ``command``; when ``patient``, again until it answers as the page shows (a
    daemon started in the background is starting)."""
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while True:
        status, output = shell.run(command, until=step if step.streams else None)
        answered = (status != 0) == step.fails and not matches(step.shown, output)
        if not patient or answered or time.monotonic() > deadline:
            return status, output
        time.sleep(0.2)


def start_daemon(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The daemon of the README's first set-up command (``.venv/bin/errord serve``), on a
    port and database of the test's own; its port once it serves."""
    port = free_port()
    with (directory / "serve.log").open("wb") as log:
        daemon = subprocess.Popen(
            [ROOT / ".venv" / "bin" / "errord", "serve", "--listen", f"127.0.0.1:{port}", "--db",
             directory / "errord.db"],
            stdout=log,
            stderr=log,
            env={**os.environ, "PYTHONPATH": str(ROOT / "clients" / "python" / "src")},
        )  # fmt: skip
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while "serving on" not in (directory / "serve.log").read_text():
        assert daemon.poll() is None, "the daemon exited"
        assert time.monotonic() < deadline, "the daemon did not start"
        time.sleep(0.1)
    return daemon, port


@pytest.fixture
def page_daemon(tmp_path: Path) -> Iterator[str]:
    """The port of the daemon the README's first set-up command starts, in a directory of
    the test's own."""
    (tmp_path / "daemon").mkdir()
    daemon, port = start_daemon(tmp_path / "daemon")
    yield port
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(COMMAND_TIMEOUT) == 0


def test_the_readme_five_minute_path_runs_as_shown(tmp_path: Path, page_daemon: str) -> None:
    walk_through(ROOT / "README.md", tmp_path, daemon_port=page_daemon)


def test_the_grpc_walkthrough_runs_as_shown(tmp_path: Path, page_daemon: str) -> None:
    walk_through(ROOT / "docs" / "grpc.md", tmp_path, daemon_port=page_daemon)


def test_the_operations_commands_run_as_shown(tmp_path: Path) -> None:
    walk_through(ROOT / "docs" / "operations.md", tmp_path)


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_shows_the_test_command_ci_runs_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    command = ci[ci.index("# The README's test command, verbatim.") + 1]
    assert f"    {command}" in (ROOT / "README.md").read_text().splitlines()


def test_every_python_command_of_the_docs_is_the_venvs() -> None:
    bare = re.compile(r"(?<![\w/.-])python3? -m (?!venv\b)")
    found = [
        f"{page.name}:{number}: {line.strip()}"
        for page in PAGES
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        if bare.search(line)
    ]
    assert not found


def test_every_link_between_the_pages_leads_to_a_file_and_heading_that_exist() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"https?:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``page``."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}
