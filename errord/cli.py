"""The errord command: ``errord serve`` and ``errord check DIR``.

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
from pathlib import Path

from errord import __version__
from errord.config import Settings
from errord.errors import ConfigError, ErrordError, ManifestError

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

    check = commands.add_parser("check", help="validate a directory of tool manifests")
    check.add_argument("directory", type=Path, metavar="DIR")
    return root


def settings_from(args: argparse.Namespace) -> Settings:
    base = Settings.from_toml(args.config) if args.config else Settings()
    return base.override(
        listen=args.listen, db=args.db, manifests=args.manifests, log_level=args.log_level
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


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "serve":
        return run_serve(args)
    return run_check(args)


if __name__ == "__main__":
    sys.exit(main())
