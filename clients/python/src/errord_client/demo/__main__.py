"""``python -m errord_client.demo``: the executor against a running errord, narrated."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from errord_client.client import DEFAULT_TARGET
from errord_client.demo.walkthrough import how_to_start, manifests_directory, run_demo
from errord_client.operator_token import operator_token


def parser() -> argparse.ArgumentParser:
    """The demo's command line."""
    command = argparse.ArgumentParser(
        prog="python -m errord_client.demo",
        description="Run scripted flaky tools through an Executor against a running errord "
        "and print each of errord's decisions as the executor follows it. errord needs "
        f"the demo's manifests: {how_to_start()}",
    )
    command.add_argument(
        "--target",
        metavar="HOST:PORT",
        default=os.environ.get("ERRORD_ADDRESS", DEFAULT_TARGET),
        help="errord's address (default: $ERRORD_ADDRESS, else %(default)s)",
    )
    command.add_argument(
        "--token",
        metavar="T",
        default=os.environ.get("ERRORD_TOKEN"),
        help="the token of errord's operator, which the demo needs to watch its turns: "
        "errord's token_file, else the operator.token it made beside its database "
        "(default: $ERRORD_TOKEN)",
    )
    command.add_argument(
        "--token-file",
        metavar="FILE",
        help="read --token from this file (errord's operator.token)",
    )
    command.add_argument(
        "--manifests",
        action="store_true",
        help="print the directory of the demo's tool manifests, for errord serve "
        "--manifests, and exit",
    )
    return command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo (or print where its manifests are); the exit status."""
    options = parser().parse_args(argv)
    if options.manifests:
        print(manifests_directory())
        return 0
    token = options.token
    if options.token_file:
        try:
            token = operator_token(options.token_file)
        except OSError as error:
            print(
                f"cannot read --token-file {options.token_file}: {error.strerror}", file=sys.stderr
            )
            return 2
    return asyncio.run(run_demo(options.target, token=token, say=_say))


def _say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
