"""What the tests of the documentation share: running a page as a reader runs it.

A page is run one of two ways. Its ``$`` commands (the README, docs/, the client's README)
are walked through: they go, one after the other, to one bash in a directory of the test's
own where ``.venv`` is the checkout's venv, so that ``.venv/bin/...``, ``export PATH=...``,
``cd``-free relative paths and ``kill $!`` work as they do for a reader. Files a page says
to save (``save this as `NAME` ``) are saved. What the walk changes, and only that: the
ports a page names become free ports of the test's own, and a command right after one that
started a daemon in the background is tried again until the daemon answers, as a reader
waits for it; a command that streams until interrupted (WatchTrace) gets Ctrl-C once it
has printed what the page shows. A command's answer matches what the page shows when every
``"key": value`` the page shows is in it, and every other line the page shows is one of its
lines; ``...`` stands for anything, and numbers inside strings (delays, times, ids) may
differ.

Or its example is run (an adapter's page): the fenced blocks the page says to save are
saved, errord runs as the page starts it (its ``errord serve`` command, in the test's
directory, but on a free port), and the page's one ``python`` block runs with the
checkout's client, the page's port being errord's. What it prints must be the block right
after it, line by line: a line ``...`` stands for any lines, and ``...`` inside a line for
anything.

Either way, what the page leaves in its directory (the files it saved, the databases, logs
and settings of the daemons it started) is what a reader's checkout would show git, and
the checkout's .gitignore must cover all of it (``untracked``).

And an adapter's extra is installed on its own into a fresh virtualenv.
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
import sys
import threading
import time
import venv
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers import ROOT, spawn, start_process, subprocess_env

COMMAND_TIMEOUT = 120.0
"""How long one command may take, or a daemon started in the background to answer: only a
bound on a hang, never a measure."""
INSTALL_TIMEOUT = 600.0
"""How long creating a virtualenv or installing an extra into it may take."""
PAGE_PORT = "50051"
"""The port errord listens on in the pages."""
DOC_PORTS = (PAGE_PORT, "50052", "50444", "50443", "50061", "9464", "9465")
"""The ports the walked-through pages name: each becomes a free port of the test's own."""
DOC_PORT = re.compile(r"\b(?:" + "|".join(DOC_PORTS) + r")\b")
DONE = "@@@done"
PAIR = re.compile(r'"(\w+)":\s*("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|true|false|null)')
STRUCTURE = re.compile(r'^(?:[{}\[\],]*|"\w+": [\[{]|\.\.\.|\^C)$')
ERROR_LINE = re.compile(r"^(?:ERROR:|errord: |Failed to )")
FENCED = re.compile(r"^```(\w+)\n(.*?)^```$", flags=re.MULTILINE | re.DOTALL)
SAVE_AS = re.compile(r"[Ss]ave (?:it|this)\s+as\s+`([\w./-]+)`")
SERVE = re.compile(r"^ {4}(?:\$ )?(?:\.venv/bin/)?errord serve (.+?)(?: 2>\S+)?(?: &)?$", re.M)
"""A page's command that starts errord, and its arguments (its log and ``&`` left out)."""
LINK = re.compile(r"\]\(([^)\s]+)\)")


# A page's $ commands, walked through


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
            name = SAVE_AS.search(" ".join(prose))
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


def missing(shown: list[str], output: str) -> list[str]:
    """What the page shows that the command's output does not have."""
    pairs = PAIR.findall(output)
    lines = {line.strip() for line in output.splitlines()}
    absent = []
    for line in (line.strip() for line in shown):
        if STRUCTURE.match(line) or (ERROR_LINE.match(line) and line.endswith(":")):
            continue
        wanted = PAIR.findall(line)
        if wanted:
            absent += [f'"{key}": {value}' for key, value in wanted if not _has(pairs, key, value)]
        elif not any(_pattern(line).fullmatch(actual) for actual in lines):
            absent.append(line)
    return absent


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
                    and not missing(until.shown, "".join(output))
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


def walk_through(page: Path, directory: Path, daemon: PageDaemon | None = None) -> None:
    """Run every step of ``page`` in ``directory``, the page's daemon being ``daemon`` when
    given; fail on the first that answers otherwise than the page shows."""
    (directory / ".venv").symlink_to(ROOT / ".venv")
    ports = {port: free_port() for port in DOC_PORTS}
    if daemon is not None:
        ports[PAGE_PORT] = daemon.port
    state_home = daemon.state_home if daemon is not None else directory / "state"
    env = subprocess_env(
        ERRORD_ADDRESS=f"127.0.0.1:{ports[PAGE_PORT]}",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        XDG_STATE_HOME=str(state_home),
    )
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
            assert not missing(step.shown, output), (
                f"missing {missing(step.shown, output)}: {where}"
            )
            after_background = step.background
    finally:
        shell.close()
    # The venv and the daemon's state home stand for what a reader has outside the checkout.
    besides = {".venv"}
    if state_home.is_relative_to(directory):
        besides.add(state_home.relative_to(directory).parts[0])
    left = untracked(directory, besides)
    assert not left, f"{page.name} leaves files git does not ignore: {left}"


def _run_step(shell: Shell, step: Step, command: str, *, patient: bool) -> tuple[int, str]:
    """Run ``command``; when ``patient``, again until it answers as the page shows (a
    daemon started in the background is starting)."""
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while True:
        status, output = shell.run(command, until=step if step.streams else None)
        answered = (status != 0) == step.fails and not missing(step.shown, output)
        if not patient or answered or time.monotonic() > deadline:
            return status, output
        time.sleep(0.2)


@dataclass(frozen=True)
class PageDaemon:
    """The daemon of the README's first set-up command, as a walk-through reaches it."""

    port: str
    state_home: Path
    """Its XDG_STATE_HOME: its database and operator token are in ``errord/`` there."""


@contextlib.contextmanager
def errord_serve(directory: Path) -> Iterator[PageDaemon]:
    """The daemon of the README's first set-up command (``.venv/bin/errord serve``), on a
    port of the test's own, its state (database, operator token) where its embedded
    defaults put it in a home of ``directory``'s: while it serves. It must then stop
    cleanly on SIGTERM."""
    directory.mkdir()
    state_home = directory / "state"
    errord = str(ROOT / ".venv" / "bin" / "errord")
    env = subprocess_env(XDG_STATE_HOME=str(state_home))
    daemon = spawn([errord, "serve", "--listen", "127.0.0.1:0"], env)
    yield PageDaemon(daemon.address.rsplit(":", 1)[1], state_home)
    assert daemon.terminate(signal.SIGTERM) == 0, daemon.stderr


# A page's example, run


@dataclass(frozen=True)
class Block:
    """A fenced block of a page."""

    kind: str
    """Its language: ``python``, ``yaml``, ``text``, ``console``."""
    text: str
    saved_as: str
    """The file the prose before it says to save it as; empty when it says none."""


def fenced_blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order."""
    text = page.read_text()
    found, start = [], 0
    for fence in FENCED.finditer(text):
        names = SAVE_AS.findall(text, start, fence.start())
        found.append(Block(fence[1], fence[2], names[-1] if names else ""))
        start = fence.end()
    return found


def prints_as_shown(shown: str, printed: str) -> bool:
    """Whether ``printed`` is ``shown``, a line ``...`` standing for any lines and ``...``
    inside a line for anything."""
    pattern = "".join(
        r"(?:.*\n)*?" if line == "..." else ".*".join(map(re.escape, line.split("..."))) + r"\n"
        for line in shown.splitlines()
    )
    return re.fullmatch(pattern, printed) is not None


def run_example(page: Path, directory: Path) -> None:
    """Run ``page``'s example in ``directory`` as the page says, against errord as a process
    serving the manifest directory the page starts it with; fail unless the example ends
    well and prints the block right after it."""
    found = fenced_blocks(page)
    [example] = [block for block in found if block.kind == "python"]
    shown = found[found.index(example) + 1]
    for block in found:
        if block.saved_as and block is not example:
            saved = directory / block.saved_as
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(block.text)
    match = SERVE.search(page.read_text())
    assert match, f"{page.name} should start errord (errord serve ...)"
    serve = shlex.split(match[1])
    options = dict(zip(serve[::2], serve[1::2], strict=True))
    assert {"--manifests", "--listen", "--db"} <= options.keys(), (
        f"{page.name} should start errord with its manifests, an address and a database "
        f"of its own: {match[0].strip()}"
    )
    (directory / options["--manifests"]).mkdir(parents=True, exist_ok=True)
    (directory / options["--db"]).parent.mkdir(parents=True, exist_ok=True)
    page_port = options["--listen"].rsplit(":", 1)[1]
    served = {**options, "--listen": "127.0.0.1:0"}
    daemon = start_process(*(part for pair in served.items() for part in pair), cwd=directory)
    try:
        port = daemon.address.rsplit(":", 1)[1]
        script = directory / example.saved_as
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(example.text.replace(page_port, port))
        ran = subprocess.run(
            [sys.executable, example.saved_as],
            cwd=directory,
            env=subprocess_env(ERRORD_ADDRESS=daemon.address),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    finally:
        daemon.terminate(signal.SIGTERM)
    left = untracked(directory)
    assert not left, f"{page.name} leaves files git does not ignore: {left}"
    assert ran.returncode == 0, ran.stderr
    assert prints_as_shown(shown.text, ran.stdout), (
        f"printed:\n{ran.stdout}\nshown:\n{shown.text}\n{ran.stderr}"
    )


# What a page leaves behind


def untracked(directory: Path, besides: Collection[str] = (), within: str = "") -> list[str]:
    """What ``directory`` holds, but ``besides``, that git would show as untracked were it the
    checkout (or its directory ``within``): each file or directory the checkout's .gitignore
    files do not cover."""
    prefix = f"{within.strip('/')}/" if within else ""
    entries = [
        prefix + (f"{entry.name}/" if entry.is_dir() and not entry.is_symlink() else entry.name)
        for entry in sorted(directory.iterdir())
        if entry.name not in besides
    ]
    if not entries:
        return []
    checked = subprocess.run(
        ["git", "-c", "core.excludesFile=", "check-ignore", "--no-index", "-n", "-v", "--stdin"],
        cwd=ROOT,
        input="\n".join(entries) + "\n",
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert checked.returncode in (0, 1), checked.stderr
    return [line.split("\t", 1)[1] for line in checked.stdout.splitlines() if line.startswith("::")]


# Links


def broken_links(page: Path) -> list[str]:
    """The links of ``page`` to a file that does not exist, or to a heading its page does
    not have (links to the web are not followed)."""
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"https?:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{page.name}: {target}")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{page.name}: {target} (no such heading)")
    return broken


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``page``."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


# An extra, installed on its own


def run_outside(
    directory: Path, *command: str | Path, timeout: float = COMMAND_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """``command`` to its end in ``directory``, its output captured, without ``PYTHONPATH``:
    a virtualenv's python run so sees only what was installed into it."""
    return subprocess.run(
        command,
        cwd=directory,
        env={key: value for key, value in os.environ.items() if key != "PYTHONPATH"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def install_extra(extra: str, directory: Path) -> Path:
    """A fresh virtualenv in ``directory`` with ``./clients/python[EXTRA]`` installed into it,
    as a reader installs it: its python."""
    venv.create(directory, with_pip=True)
    python = directory / "bin" / "python"
    requirement = f"./clients/python[{extra}]"
    pip = (python, "-m", "pip", "install", "--quiet", requirement)
    installed = run_outside(ROOT, *pip, timeout=INSTALL_TIMEOUT)
    assert installed.returncode == 0, installed.stderr
    return python
