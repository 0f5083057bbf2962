"""The errord command: serving, checking manifests, and the operator commands that talk to a
running daemon (their connection, TLS and output). The console script is errord.cli:main."""

from errord.cli.main import main

__all__ = ["main"]
