"""`npm ci` in clients/typescript installs without a warning on the Node.js the package says
it runs on: every locked package's `engines` admits that Node (no EBADENGINE), and every
package with an install script is one package.json's `allowScripts` decided on (no
'install scripts not yet covered by allowScripts')."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.helpers import ROOT

PACKAGE = ROOT / "clients" / "typescript"
NODE = (20, 20, 0)
"""The Node.js the TypeScript client is tested with (its README: 20.20)."""


def version(text: str) -> tuple[int, ...]:
    parts = [int(part) for part in re.findall(r"\d+", text)[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def admits(node: tuple[int, ...], comparator: str) -> bool:
    """Whether ``node`` satisfies one comparator of an npm range (``>=20``, ``^18.19.0``)."""
    parsed = re.fullmatch(r"(>=|>|<=|<|\^|~|=)?\s*v?([\d.x*]+)", comparator)
    assert parsed is not None, f"an npm range this test cannot read: {comparator!r}"
    operator, wanted = parsed.groups()
    floor = version(wanted)
    if operator == "^":
        return node >= floor and node[0] == floor[0]
    if operator == "~":
        return node >= floor and node[:2] == floor[:2]
    return {
        ">=": node >= floor,
        ">": node > floor,
        "<=": node <= floor,
        "<": node < floor,
    }.get(operator or "=", node[: len(wanted.split("."))] == floor[: len(wanted.split("."))])


def satisfies(node: tuple[int, ...], npm_range: str) -> bool:
    npm_range = re.sub(r"(>=|>|<=|<|\^|~|=)\s+", r"\1", npm_range)  # ">= 20" is ">=20"
    return any(
        all(admits(node, comparator) for comparator in alternative.split())
        for alternative in npm_range.split("||")
    )


def lock() -> dict[str, Any]:
    locked: dict[str, Any] = json.loads((PACKAGE / "package-lock.json").read_text())
    return locked


def test_the_range_reader_reads_npm_ranges() -> None:
    assert satisfies((20, 20, 0), ">=20")
    assert not satisfies((20, 20, 0), ">=22")
    assert satisfies((20, 20, 0), "^18.19.0 || >=20.6.0")
    assert not satisfies((20, 5, 0), "^18.19.0 || >=20.6.0")
    assert satisfies((20, 20, 0), ">=14.17")
    assert satisfies((20, 20, 0), ">= 20")
    assert not satisfies((20, 20, 0), ">= 22 <23")


def test_every_locked_package_runs_on_the_node_the_package_is_tested_with() -> None:
    packages = lock()["packages"]
    assert satisfies(NODE, packages[""]["engines"]["node"])
    refused = {
        name: entry["engines"]["node"]
        for name, entry in packages.items()
        if name and "node" in entry.get("engines", {})
        if not satisfies(NODE, entry["engines"]["node"])
    }
    assert refused == {}


def test_every_package_with_an_install_script_is_allowed_or_denied_by_name() -> None:
    decided = json.loads((PACKAGE / "package.json").read_text()).get("allowScripts", {})
    scripted = {
        name.rpartition("node_modules/")[2]
        for name, entry in lock()["packages"].items()
        if entry.get("hasInstallScript")
    }
    assert scripted - {name.rpartition("@")[0] or name for name in decided} == set()
