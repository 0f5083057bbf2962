"""Debian's packages that some tests run: Chromium (the console in a real browser) and
Prometheus (the alerting rules in a real server).

A test finds each binary where Debian puts it or on the PATH; when it is missing and the
tests run as root where apt-get is, it is installed (``apt-get install -y``, after an
``apt-get update`` if the first try finds no package), once per run, so that the README's
test command brings what it needs on a fresh machine as .ci/run does. Only when neither
works is the test skipped, with the reason.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

INSTALL_TIMEOUT = 900.0
"""How long installing one package may take: a bound on a hang, never a measure."""


def binary(name: str, package: str) -> Path:
    """The binary ``name`` of Debian's ``package``, installed if missing and possible;
    skips the test, saying why, when it cannot be had."""
    found = _find(name)
    if found is not None:
        return found
    problem = _install(package)
    found = _find(name)
    if found is None:
        pytest.skip(f"{name} is missing and cannot be installed ({package}): {problem}")
    return found


def _find(name: str) -> Path | None:
    for candidate in (Path("/usr/bin") / name, shutil.which(name)):
        if candidate is not None and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


@functools.cache
def _install(package: str) -> str:
    """Install ``package`` with apt-get; what went wrong, or '' when nothing did."""
    if os.geteuid() != 0:
        return f"not root: run apt-get install -y {package}"
    if shutil.which("apt-get") is None:
        return "no apt-get on this machine"
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    problem = ""
    for update_first in (False, True):
        if update_first:
            _run(["apt-get", "update", "-q"], environment)
        problem = _run(["apt-get", "install", "-y", "-q", package], environment)
        if not problem:
            return ""
    return problem


def _run(command: list[str], environment: dict[str, str]) -> str:
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=environment,
            timeout=INSTALL_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"{' '.join(command)} took over {INSTALL_TIMEOUT:g} s"
    if done.returncode != 0:
        return f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}"
    return ""
