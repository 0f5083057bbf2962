"""Argument types and shared options of errord's commands: each type refuses a bad value
with a message argparse prints beside the option's name."""

from __future__ import annotations

import argparse
from pathlib import Path

from errord.cli.connection import grpc_target
from errord.decide.manifest import MAX_COOLDOWN


def add_tls_options(command: argparse.ArgumentParser) -> None:
    """``--tls-ca``, ``--tls-cert`` and ``--tls-key``, as grpcurl's ``-cacert``, ``-cert``
    and ``-key``."""
    default = "(default: the [client] table of --config, else plaintext)"
    command.add_argument(
        "--tls-ca",
        type=Path,
        metavar="FILE",
        help=f"speak TLS; the daemon's certificate must be signed by a CA in this PEM file "
        f"{default}",
    )
    command.add_argument(
        "--tls-cert",
        type=Path,
        metavar="FILE",
        help="speak TLS and present this PEM client certificate, with --tls-key (without "
        f"--tls-ca, the system's CAs are trusted) {default}",
    )
    command.add_argument(
        "--tls-key", type=Path, metavar="FILE", help="the PEM private key of --tls-cert"
    )


def target_address(text: str) -> str:
    """``--target``: as gRPC takes it, a bare path made ``unix:PATH``."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a unix socket path, unix:PATH or host:port")
    return grpc_target(text)


def trace_sequence(text: str) -> int:
    """``tail --after``: a trace sequence, 0 or more."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a trace sequence number, got {text!r}")
    return int(text)


def positive_seconds(text: str) -> float:
    """Seconds for ``--timeout``: positive and finite."""
    problem = argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    try:
        seconds = float(text)
    except ValueError:
        raise problem from None
    if not 0 < seconds < float("inf"):
        raise problem
    return seconds


def forced_seconds(text: str) -> float:
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
