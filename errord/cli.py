"""The errord command: ``serve``, ``check DIR``, and for a running daemon ``stats``,
``breaker`` and ``memory``.

Exit codes: 0 success; 1 ``check`` found problems or the daemon failed at run
time; 2 usage errors; 78 (EX_CONFIG) the daemon refused to start on invalid
settings or manifests, so systemd does not restart it in a loop.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from errord import __version__
from errord.config import Settings
from errord.errors import ConfigError, ErrordError, ManifestError
from errord.manifests.model import MAX_COOLDOWN

EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_CONFIG = 78


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="errord", description="Tool-failure recovery decisions for LLM-agent executors."
    )
    root.add_argument("--version", action="version", version=f"errord {__version__}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the daemon (embedded defaults without flags)")
    serve.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file")
    serve.add_argument("--listen", metavar="ADDR", help="host:port or unix:PATH")
    serve.add_argument("--db", type=Path, metavar="PATH", help="SQLite trace database")
    serve.add_argument("--manifests", type=Path, metavar="DIR", help="tool manifest directory")
    serve.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    serve.add_argument(
        "--metrics-listen", metavar="HOST:PORT", help="serve Prometheus /metrics over HTTP here"
    )

    check = commands.add_parser("check", help="validate a directory of tool manifests")
    check.add_argument("directory", type=Path, metavar="DIR")

    stats = commands.add_parser("stats", help="a running daemon's per-tool statistics")
    stats.add_argument("tool", nargs="?", default="", help="one tool (default: all)")
    _add_connection(stats)

    memory = commands.add_parser("memory", help="what episodic memory holds of a tool's errors")
    memory.add_argument("tool")
    memory.add_argument("--message", help="only the error this message is (its signature)")
    _add_connection(memory)

    breaker = commands.add_parser("breaker", help="list, reset or force open circuit breakers")
    actions = breaker.add_subparsers(dest="action", required=True, metavar="ACTION")
    _add_connection(actions.add_parser("list", help="every tool's breaker"))
    reset = actions.add_parser("reset", help="close a breaker and zero its counters")
    reset.add_argument("tool")
    reset.add_argument("--by", default="", help="who and why, for the trace")
    _add_connection(reset)
    force = actions.add_parser("open", help="force a breaker open for maintenance")
    force.add_argument("tool")
    force.add_argument(
        "--for",
        dest="seconds",
        type=_forced_seconds,
        default=0.0,
        metavar="SECONDS",
        help="then half-open as after a cooldown (default: until reset)",
    )
    force.add_argument("--by", default="", help="who and why, for the trace")
    _add_connection(force)
    return root


def _forced_seconds(text: str) -> float:
    """Seconds for ``breaker open --for``: finite, from 0 (until reset) to a week."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 <= seconds <= MAX_COOLDOWN:
        raise argparse.ArgumentTypeError(
            f"expected 0 (until reset) to {MAX_COOLDOWN:g} seconds, got {text}"
        )
    return seconds


def _add_connection(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--address",
        metavar="ADDR",
        help="the daemon's gRPC address (default: the listen setting of --config, or "
        "127.0.0.1:50051)",
    )
    command.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file")
    command.add_argument("--json", action="store_true", help="print the response as JSON")


def settings_from(args: argparse.Namespace) -> Settings:
    base = Settings.from_toml(args.config) if args.config else Settings()
    return base.override(
        listen=args.listen,
        db=args.db,
        manifests=args.manifests,
        log_level=args.log_level,
        metrics_listen=args.metrics_listen,
    )


def run_serve(args: argparse.Namespace) -> int:
    from errord.app import serve  # the server stack is not needed by `check`

    try:
        settings = settings_from(args)
    except ConfigError as error:
        print(f"errord: {error}", file=sys.stderr)
        return EXIT_CONFIG
    logging.basicConfig(
        level=settings.logging_level,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # At debug level aiosqlite logs every statement with its parameters: whole trace rows.
    logging.getLogger("aiosqlite").setLevel(max(settings.logging_level, logging.INFO))
    try:
        asyncio.run(serve(settings))
    except ManifestError as error:
        print(f"errord: invalid tool manifests, refusing to start:\n{error}", file=sys.stderr)
        return EXIT_CONFIG
    except ErrordError as error:
        print(f"errord: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    return 0


def run_check(args: argparse.Namespace) -> int:
    from errord.manifests.files import load_manifest_dir

    try:
        manifests = load_manifest_dir(args.directory)
    except ManifestError as error:
        print(error, file=sys.stderr)
        count = len(error.problems)
        print(f"{args.directory}: {count} problem{'s' if count != 1 else ''}", file=sys.stderr)
        return EXIT_PROBLEMS
    names = ", ".join(manifest.name for manifest in manifests) or "none"
    print(f"{args.directory}: {len(manifests)} tools valid ({names})")
    return 0


def run_operator(args: argparse.Namespace) -> int:
    from errord_client.v1 import errord_pb2 as pb

    from errord.ops import operator_cli as ops

    try:
        address = args.address or (
            Settings.from_toml(args.config).listen if args.config else Settings().listen
        )
    except ConfigError as error:
        print(f"errord: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    response: Any
    if args.command == "stats":
        stats = pb.GetToolStatsRequest(tool=args.tool)
        response = ops.call(address, lambda stub: stub.GetToolStats, stats)
        text = ops.format_stats(response)
    elif args.command == "memory":
        recall = pb.RecallEpisodesRequest(tool=args.tool, message=args.message or "")
        response = ops.call(address, lambda stub: stub.RecallEpisodes, recall)
        text = ops.format_memory(args.tool, response)
    elif args.action == "list":
        response = ops.call(address, lambda stub: stub.ListBreakers, pb.ListBreakersRequest())
        text = ops.format_breakers(list(response.breakers))
    elif args.action == "reset":
        reset = pb.ResetBreakerRequest(tool=args.tool, by=args.by)
        response = ops.call(address, lambda stub: stub.ResetBreaker, reset)
        text = ops.format_breakers([response.breaker])
    else:
        force = pb.ForceOpenBreakerRequest(tool=args.tool, by=args.by)
        force.duration.FromTimedelta(timedelta(seconds=args.seconds))
        response = ops.call(address, lambda stub: stub.ForceOpenBreaker, force)
        text = ops.format_breakers([response.breaker])
    print(ops.as_json(response) if args.json else text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "serve":
        return run_serve(args)
    if args.command == "check":
        return run_check(args)
    return run_operator(args)


if __name__ == "__main__":
    sys.exit(main())
