"""``errord replay``: a manifests directory tried on the recorded trace, offline.

Reads the database file directly (a read-only snapshot: the daemon may be running),
re-decides every recorded failure with the manifests of ``--manifests`` and the
settings of ``--config`` (errord.assembly), and prints what would change, grouped and
counted, with a few examples of each change. A progress bar goes to stderr when it is
a terminal. The manifests are read as the daemon of ``--config`` would read them, under
its manifests root (errord.manifests.root); without one, under the directory's real
parent.

Exit codes: 0 nothing would change; 1 something would (usable in CI before a manifest
change is deployed); 66 (EX_NOINPUT) the database cannot be read; 78 (EX_CONFIG) the
manifests or the settings are invalid, each problem printed as ``errord check`` does.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from errord_client.v1 import errord_pb2 as pb

from errord.assembly import assemble
from errord.cli.output import Output, scoped, seconds
from errord.config import Settings
from errord.errors import ConfigError, ManifestError, StoreError
from errord.replay import ReplayScope, replay_database
from errord.replay.compare import DEFAULT_EXAMPLES
from errord.wire.replay import summary_to_proto

EXIT_NOTHING_CHANGES = 0
EXIT_CHANGES = 1
EXIT_NOINPUT = 66
"""sysexits EX_NOINPUT: the trace database cannot be read."""
EXIT_CONFIG = 78
"""sysexits EX_CONFIG: the manifests tried, or the settings, are invalid."""

KIND_TITLES = {
    "action": "actions",
    "classification": "classifications",
    "alternative": "alternatives",
    "delay": "delays",
    "admission": "admissions",
}
"""The heading of each kind of change, in the order they are printed."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``errord replay``."""
    defaults = Settings()
    replay = commands.add_parser(
        "replay",
        help="try a manifests directory on the recorded trace: what would change",
        description="Re-decide every recorded failure with the manifests of --manifests, on "
        "a read-only snapshot of the database, and print what would change. Exit 0 when "
        "nothing would, 1 when something would, 66 when the database cannot be read, 78 when "
        "the manifests are invalid.",
    )
    replay.add_argument(
        "--manifests", type=Path, required=True, metavar="DIR", help="the manifests to try"
    )
    replay.add_argument(
        "--db",
        type=Path,
        metavar="PATH",
        help=f"the trace database (default: the db setting of --config, else {defaults.db})",
    )
    replay.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="TOML settings file: its db and the settings decisions use (default: none)",
    )
    replay.add_argument(
        "--since",
        type=_moment,
        metavar="TIME",
        help="compare only failures recorded at or after this ISO 8601 time (UTC unless it "
        "says); the state before it is rebuilt all the same (default: the whole trace)",
    )
    replay.add_argument("--tool", default="", help="compare only this tool's failures")
    replay.add_argument(
        "--examples",
        type=int,
        default=DEFAULT_EXAMPLES,
        metavar="N",
        help="example decisions shown per change (default: %(default)s)",
    )
    replay.add_argument(
        "--json", action="store_true", help="print the ReplaySummary as proto3 JSON"
    )


def run_replay(args: argparse.Namespace) -> int:
    """``errord replay``; its exit status."""
    try:
        settings = Settings.from_toml(args.config) if args.config else Settings()
        settings = settings.override(db=args.db)
    except ConfigError as error:
        print(f"errord: {error}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        assembly = assemble(settings, args.manifests)
    except ManifestError as error:
        print(error, file=sys.stderr)
        count = len(error.problems)
        print(f"{args.manifests}: {count} problem{'s' if count != 1 else ''}", file=sys.stderr)
        return EXIT_CONFIG
    bar = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    scope = ReplayScope(args.since, args.tool, max(0, args.examples))
    try:
        summary = replay_database(
            settings.db, assembly.engine, assembly.manifests, scope, bar.show if bar else None
        )
    except StoreError as error:
        print(f"errord: {error}", file=sys.stderr)
        return EXIT_NOINPUT
    finally:
        if bar is not None:
            bar.clear()
    answer = summary_to_proto(summary)
    Output(args.json).show(answer, summary_text(answer))
    return EXIT_CHANGES if summary.changed else EXIT_NOTHING_CHANGES


def summary_text(summary: pb.ReplaySummary) -> str:
    """What would change, grouped and counted, then a few examples of each change."""
    lines = [
        f"replayed {summary.events:,} trace events: {summary.failures:,} failures re-decided, "
        f"{summary.changed:,} decided otherwise, {summary.outcomes:,} outcomes folded "
        f"({summary.rate:,.0f} decisions/s)"
    ]
    if not summary.changed:
        lines.append("nothing would change")
    for kind, title in KIND_TITLES.items():
        changes = [change for change in summary.changes if change.kind == kind]
        if changes:
            lines.append(f"{title}:")
            lines += [f"  {c.before} -> {c.after}: {c.count:,}" for c in changes]
    lines += [
        f"retry wait: {seconds(summary.retry_wait_before):,.3f} s -> "
        f"{seconds(summary.retry_wait_after):,.3f} s",
        f"breaker openings: {summary.breaker_openings_before:,} -> "
        f"{summary.breaker_openings_after:,}",
        f"escalations: {summary.escalations_before:,} -> {summary.escalations_after:,}",
    ]
    for change in summary.changes:
        if change.examples:
            lines.append(f"examples of {change.kind} {change.before} -> {change.after}:")
        for example in change.examples:
            lines += [
                f"  turn {example.turn_id}, call {example.call_id}, "
                f"{scoped(example.tool, example.scope)} attempt {example.attempt}",
                f"    before: {example.reason_before}",
                f"    after:  {example.reason_after}",
            ]
    return "\n".join(lines)


class ProgressBar:
    """A bar of how far the replay has gone, redrawn on one line of a terminal."""

    WIDTH = 30

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def show(self, replayed: int, total: int) -> None:
        done = replayed / total if total else 1.0
        filled = round(done * self.WIDTH)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self._stream.write(f"\rreplaying [{bar}] {done:4.0%} {replayed:,}/{total:,} events")
        self._stream.flush()

    def clear(self) -> None:
        self._stream.write("\r\x1b[K")
        self._stream.flush()


def _moment(text: str) -> datetime:
    """``--since``: an ISO 8601 date or time, UTC unless it says."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 time such as 2026-01-31T12:00:00Z, got {text!r}"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
