"""The errord command: ``serve``, ``check DIR``, ``replay`` (errord.cli.replay, which has
its own exit codes), ``token`` (the operator token, for grpcurl), and for a running daemon
``trace``,
``tail``, ``breakers``, ``breaker``, ``stats``, ``memory``, ``health`` and ``reload``.

The commands for a running daemon share ``--target ADDR`` (a unix socket path,
``unix:PATH`` or ``host:port``; default: the ``listen`` setting of ``--config``,
else the embedded default), ``--tls-ca FILE``, ``--tls-cert FILE`` and
``--tls-key FILE`` (TLS, as grpcurl's ``-cacert``, ``-cert`` and ``-key``;
default: the ``[client]`` table of ``--config``, else plaintext),
``--token-file FILE`` (sent as ``authorization: Bearer TOKEN``), ``--timeout
SECONDS`` and ``--json`` (proto3 JSON).

Exit codes (sysexits where one fits): 0 success; 1 ``check`` found problems (or
no manifest file), the daemon failed at run time, or a command for a running
daemon failed: the daemon refused the call or does not answer (its status code
and message on stderr), ``health`` found a service not SERVING, ``reload`` was
refused, or the ``--config``, ``--token-file`` or TLS files given cannot be
read; 2 usage errors (``--tls-cert`` without ``--tls-key``, or the reverse); 69
(EX_UNAVAILABLE) ``serve`` cannot bind its address; 73 (EX_CANTCREAT) ``serve``
cannot open, create or write its database; 78 (EX_CONFIG) ``serve`` refused
invalid settings, manifests, token or TLS files, so systemd does not restart it
in a loop; 130 a command interrupted by Ctrl-C, except ``tail``, which Ctrl-C
ends with 0. A command whose reader goes away (``errord tail | head``) ends
quietly with 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from errord import __version__
from errord.cli import commands as ops
from errord.cli import replay
from errord.cli.arguments import (
    add_tls_options,
    forced_seconds,
    positive_seconds,
    target_address,
    trace_sequence,
)
from errord.cli.connection import (
    CALL_TIMEOUT,
    CommandError,
    Daemon,
    configured,
    listen_target,
    read_token,
)
from errord.cli.output import Output
from errord.cli.tls import ClientTLS
from errord.client_config import ClientSettings
from errord.config import LOG_FORMATS, LOG_LEVELS, Settings
from errord.errors import ConfigError, ErrordError, ListenError, ManifestError, StoreError
from errord.ops import logs
from errord.ops.logs import LogFormat

EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 69
"""sysexits EX_UNAVAILABLE: the address to serve on cannot be bound."""
EXIT_CANTCREAT = 73
"""sysexits EX_CANTCREAT: the trace database cannot be opened, created or written."""
EXIT_CONFIG = 78
"""sysexits EX_CONFIG: invalid settings, manifests, token or TLS files."""
EXIT_INTERRUPTED = 130
SERVE_EXIT_CODES = {
    ConfigError: EXIT_CONFIG,
    ListenError: EXIT_UNAVAILABLE,
    StoreError: EXIT_CANTCREAT,
}
"""How ``serve`` exits on each error that stops it at start."""

Subcommands = argparse._SubParsersAction  # argparse has no public name for add_subparsers()'s type


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="errord", description="Tool-failure recovery decisions for LLM-agent executors."
    )
    root.add_argument("--version", action="version", version=f"errord {__version__}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")

    defaults = Settings()
    serve = commands.add_parser(
        "serve",
        help="run the daemon (embedded defaults without flags)",
        description="Run the daemon. Flags override the --config file, which overrides the "
        "embedded defaults shown.",
    )
    serve.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file")
    serve.add_argument(
        "--listen", metavar="ADDR", help=f"host:port or unix:PATH (default: {defaults.listen})"
    )
    serve.add_argument(
        "--db", type=Path, metavar="PATH", help=f"SQLite trace database (default: {defaults.db})"
    )
    serve.add_argument(
        "--manifests", type=Path, metavar="DIR", help="tool manifest directory (default: none)"
    )
    serve.add_argument("--log-level", choices=LOG_LEVELS, help=f"(default: {defaults.log_level})")
    serve.add_argument(
        "--log-format", choices=LOG_FORMATS, help=f"(default: {defaults.log_format})"
    )
    serve.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="serve Prometheus /metrics over HTTP here (default: none)",
    )
    serve.add_argument(
        "--console-listen",
        metavar="ADDR",
        help="serve the read-only web console here: host:port or unix:PATH (default: none)",
    )

    token = commands.add_parser(
        "token",
        help="print the operator token of the daemon of --config (for grpcurl -H)",
        description="Print the token operator calls need: the token_file of --config, else "
        "the operator token the daemon made beside its database.",
    )
    token.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file")

    check = commands.add_parser("check", help="validate a directory of tool manifests")
    check.add_argument("directory", type=Path, metavar="DIR")
    replay.add_parser(commands)

    _add_operator_commands(commands)
    return root


def _add_operator_commands(commands: Subcommands[argparse.ArgumentParser]) -> None:
    """The subcommands for a running daemon: each is an ``_operator`` call and its arguments."""
    trace = _operator(commands, "trace", "a turn's trace, one line per event", ops.trace)
    trace.add_argument("turn", metavar="TURN", help="the turn id")

    tail = _operator(commands, "tail", "print trace events as they happen, until Ctrl-C", ops.tail)
    tail.add_argument(
        "turn", nargs="?", default="", metavar="TURN", help="only this turn (default: every turn)"
    )
    tail.add_argument(
        "--after",
        type=trace_sequence,
        default=0,
        metavar="SEQUENCE",
        help="first the recorded events after this sequence (the #N of a line), then new ones "
        "(default: 0, new events only)",
    )

    _operator(commands, "breakers", "every tool's circuit breaker", ops.breakers)

    stats = _operator(commands, "stats", "a running daemon's per-tool statistics", ops.stats)
    stats.add_argument("tool", nargs="?", default="", help="one tool (default: every tool)")
    stats.add_argument(
        "--scope", default="", help="only this scope of the tool (default: each of its scopes)"
    )

    memory = _operator(
        commands, "memory", "what episodic memory holds of a tool's errors", ops.memory
    )
    memory.add_argument("tool")
    _scope_argument(memory)
    memory.add_argument(
        "--message", help="only the error this message is, by its signature (default: every error)"
    )

    _operator(
        commands, "fleet", "the fleet's hosts, their last word, and what is shared now", ops.fleet
    )

    _operator(
        commands, "health", "whether the daemon and each errord service are serving", ops.health
    )

    reload = _operator(
        commands, "reload", "reload the daemon's manifests (as systemctl reload)", ops.reload
    )
    reload.add_argument("--by", default="", help="who and why, for the trace (default: nobody)")

    _add_breaker_commands(commands)


def _scope_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scope",
        default="",
        help="the tool's scope, as the executor names it (an MCP server, a host, a tenant; "
        "default: the tool's own)",
    )


def _add_breaker_commands(commands: Subcommands[argparse.ArgumentParser]) -> None:
    """``breaker list``, ``breaker reset TOOL`` and ``breaker open TOOL``."""
    breaker = commands.add_parser("breaker", help="list, reset or force open circuit breakers")
    actions = breaker.add_subparsers(dest="action", required=True, metavar="ACTION")
    _operator(actions, "list", "every tool's breaker (as errord breakers)", ops.breakers)
    reset = _operator(actions, "reset", "close a breaker and zero its counters", ops.breaker_reset)
    reset.add_argument("tool")
    _scope_argument(reset)
    reset.add_argument("--by", default="", help="who and why, for the trace (default: nobody)")
    force = _operator(actions, "open", "force a breaker open for maintenance", ops.breaker_open)
    force.add_argument("tool")
    _scope_argument(force)
    force.add_argument(
        "--for",
        dest="seconds",
        type=forced_seconds,
        default=0.0,
        metavar="SECONDS",
        help="then half-open as after a cooldown (default: 0, open until reset)",
    )
    force.add_argument("--by", default="", help="who and why, for the trace (default: nobody)")


def _operator(
    commands: Subcommands[argparse.ArgumentParser], name: str, summary: str, operate: ops.Operate
) -> argparse.ArgumentParser:
    """Declare a subcommand for a running daemon, with the options every such command takes."""
    command = commands.add_parser(
        name, help=summary, description=f"{summary[:1].upper()}{summary[1:]}."
    )
    command.set_defaults(operate=operate)
    command.add_argument(
        "--target",
        type=target_address,
        metavar="ADDR",
        help="the daemon's address: a unix socket path, unix:PATH or host:port (default: the "
        f"listen setting of --config, else {Settings().listen})",
    )
    command.add_argument("--address", type=target_address, dest="target", help=argparse.SUPPRESS)
    command.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="TOML settings file giving the default --target (its listen) and TLS files (its "
        "[client] table)",
    )
    add_tls_options(command)
    command.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="send 'authorization: Bearer TOKEN' with the token this file holds (default: "
        "the token_file of --config, else the operator token beside the daemon's database, "
        "when readable)",
    )
    command.add_argument(
        "--timeout",
        type=positive_seconds,
        default=CALL_TIMEOUT,
        metavar="SECONDS",
        help="how long each call may take; tail follows without a limit (default: %(default)g)",
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="print the response as proto3 JSON, tail one object per line (default: text)",
    )
    return command


def settings_from(args: argparse.Namespace) -> Settings:
    base = Settings.from_toml(args.config) if args.config else Settings()
    return base.override(
        listen=args.listen,
        db=args.db,
        manifests=args.manifests,
        log_level=args.log_level,
        log_format=args.log_format,
        metrics_listen=args.metrics_listen,
        console_listen=args.console_listen,
    )


def run_serve(args: argparse.Namespace) -> int:
    from errord.app import serve  # the server stack is not needed by `check`

    try:
        settings = settings_from(args)
    except ConfigError as error:
        print(f"errord: {error}", file=sys.stderr)
        return EXIT_CONFIG
    logs.configure(settings.logging_level, LogFormat(settings.log_format))
    try:
        asyncio.run(serve(settings))
    except ManifestError as error:
        print(f"errord: invalid tool manifests, refusing to start:\n{error}", file=sys.stderr)
        return EXIT_CONFIG
    except ErrordError as error:
        print(f"errord: {error}", file=sys.stderr)
        return next(
            (code for kind, code in SERVE_EXIT_CODES.items() if isinstance(error, kind)),
            EXIT_PROBLEMS,
        )
    return 0


def run_token(args: argparse.Namespace) -> int:
    """Print the operator token; 1 when it cannot be read (no daemon made one there yet)."""
    try:
        print(read_token(configured(args.config).operator_token_path))
    except ErrordError as error:  # CommandError, or the ConfigError of --config
        print(f"errord: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    return 0


def run_check(args: argparse.Namespace) -> int:
    from errord.manifests.checks import alternatives_without_manifest
    from errord.manifests.files import load_manifest_dir, not_read, overlooked

    try:
        manifests = load_manifest_dir(args.directory)
    except ManifestError as error:
        print(error, file=sys.stderr)
        count = len(error.problems)
        print(f"{args.directory}: {count} problem{'s' if count != 1 else ''}", file=sys.stderr)
        return EXIT_PROBLEMS
    for warning in overlooked(args.directory):
        print(warning, file=sys.stderr)
    if not manifests:
        if not_read(args.directory):
            return EXIT_PROBLEMS  # what was meant as manifests would be left out
        # The daemon serves an empty directory too, so `check && reload` must pass.
        print(f"{args.directory}: no tools; each runs on the default policy")
        return 0
    for warning in alternatives_without_manifest(manifests):
        print(warning, file=sys.stderr)
    names = ", ".join(manifest.name for manifest in manifests)
    count = len(manifests)
    print(f"{args.directory}: {count} tool{'s' if count != 1 else ''} valid ({names})")
    return 0


def run_operator(args: argparse.Namespace) -> int:
    """Run a subcommand for a running daemon; its failures are one line on stderr."""
    unpaired = _unpaired_tls_flag(args)
    if unpaired:
        print(f"errord: {unpaired}", file=sys.stderr)
        return EXIT_USAGE
    try:
        settings = configured(args.config)
        target = args.target or listen_target(settings.listen)
        flags = ClientSettings(args.tls_ca, args.tls_cert, args.tls_key)
        tls = ClientTLS.chosen(flags, settings.client, args.config)
        token, source = operator_token(args.token_file, settings)
        with Daemon(
            target, token=token, token_source=source, timeout=args.timeout, tls=tls
        ) as daemon:
            status: int = args.operate(daemon, args, Output(args.json))
            return status
    except ErrordError as error:  # CommandError, TLSFileError, or the ConfigError of --config
        print(f"errord: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _discard_stdout()
        return 0


def operator_token(token_file: Path | None, settings: Settings) -> tuple[str | None, str]:
    """The token the commands send, and where it was read: ``--token-file``'s, else the
    ``token_file`` of ``--config``, else the operator token the daemon of these settings
    made beside its database, when this user may read it (else none, and "")."""
    if token_file is not None:
        return read_token(token_file), f"--token-file {token_file}"
    if settings.token_file is not None:
        return read_token(settings.token_file), f"the token_file of --config, {settings.token_file}"
    path = settings.operator_token_path
    where = (
        "the operator_token_file of --config"
        if settings.operator_token_file is not None
        else f"beside the database {settings.db}"
    )
    try:
        return read_token(path), f"{path}, {where}"
    except CommandError:  # not made yet, or another user's: the daemon will say what it needs
        return None, ""


def _unpaired_tls_flag(args: argparse.Namespace) -> str | None:
    """What is wrong when only one of ``--tls-cert`` and ``--tls-key`` is given."""
    if args.tls_cert is not None and args.tls_key is None:
        return f"--tls-cert {args.tls_cert} needs --tls-key, its private key"
    if args.tls_key is not None and args.tls_cert is None:
        return f"--tls-key {args.tls_key} needs --tls-cert, the certificate it is the key of"
    return None


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "serve":
        return run_serve(args)
    if args.command == "check":
        return run_check(args)
    if args.command == "replay":
        return replay.run_replay(args)
    if args.command == "token":
        return run_token(args)
    return run_operator(args)


if __name__ == "__main__":
    sys.exit(main())
