"""The Prometheus rules and the Grafana dashboard shipped in docs/monitoring/.

``promtool check rules`` passes them; every query of both names only metrics errord
exports (read from a real daemon's /metrics), and each names one at least; and each rule
fires in a real Prometheus server (Debian's) scraping a daemon driven into its condition
by real reports (a copy of the rules with ``for: 0s``, scraped and evaluated every
second). The store's rule is driven on a small tmpfs filled up, skipped where none can
be mounted.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from errord_client import ErrordClient, pb

from tests.helpers import ROOT, DaemonProcess, scrape, start_fleet_daemon, start_process
from tests.redis_server import RedisServer
from tests.system_packages import binary

RULES = ROOT / "docs" / "monitoring" / "errord-rules.yml"
DASHBOARD = ROOT / "docs" / "monitoring" / "errord-dashboard.json"
METRIC = re.compile(r"\berrord_[a-z_]+\b")
PATIENCE = 120.0
"""Seconds an alert may take to fire: a bound on a hang, never a measure."""
TMPFS_BYTES = 4 * 1024 * 1024


def rule_queries() -> dict[str, str]:
    return {
        rule["alert"]: rule["expr"]
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
    }


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    ]
    queries += [variable["definition"] for variable in dashboard["templating"]["list"]]
    return queries


def exported_metrics(daemon: DaemonProcess) -> set[str]:
    """The metric names a daemon's /metrics serves (histograms with their series')."""
    return {
        line.split("{")[0].split(" ")[0]
        for line in scrape(daemon).splitlines()
        if line.startswith("errord_")
    }


@pytest.fixture
def reporting_daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    """A daemon with metrics that decided a failure and an outcome of a tool: every
    family it exports has a series."""
    running = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"),
        "--metrics-listen", "127.0.0.1:0",
    )  # fmt: skip
    with ErrordClient(running.address) as errord:
        errord.report_failure(
            turn_id="t", call_id="c", tool="search", attempt=1, code=pb.ERROR_CODE_TIMEOUT,
            message="timed out", elapsed=1.0,
        )  # fmt: skip
        errord.report_outcome(
            turn_id="t", call_id="c", tool="search", attempt=2, success=True, duration=0.5
        )
    yield running
    running.terminate(signal.SIGKILL)


def test_the_rules_pass_promtool() -> None:
    promtool = binary("promtool", "prometheus")
    checked = subprocess.run(
        [str(promtool), "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(rule_queries())} rules found" in checked.stdout


def test_every_query_of_the_rules_and_the_dashboard_names_metrics_errord_exports(
    reporting_daemon: DaemonProcess,
) -> None:
    exported = exported_metrics(reporting_daemon)
    assert "errord_tool_duration_seconds_bucket" in exported
    queries = [*rule_queries().values(), *dashboard_queries()]
    assert len(queries) > 20
    for query in queries:
        named = set(METRIC.findall(query))
        assert named, f"names no metric of errord: {query}"
        assert named <= exported, f"{sorted(named - exported)} not exported: {query}"


def test_the_dashboard_is_importable_json() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["title"] == "errord"
    assert dashboard["__inputs"][0]["type"] == "datasource"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"])
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${DS_PROMETHEUS}"


@dataclass
class Prometheus:
    """A Prometheus server scraping one errord, with a copy of the rules; stopped after."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def query(self, path: str, **params: str) -> Any:
        address = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(address, timeout=10) as answer:
            return json.loads(answer.read())["data"]

    def firing(self) -> set[tuple[str, str]]:
        """(alert, tool) of each alert firing; the tool '' for the daemon's."""
        alerts = self.query("/api/v1/alerts")["alerts"]
        return {
            (alert["labels"]["alertname"], alert["labels"].get("tool", ""))
            for alert in alerts
            if alert["state"] == "firing"
        }

    def wait_for(self, wanted: set[tuple[str, str]]) -> None:
        deadline = time.monotonic() + PATIENCE
        while not wanted <= (firing := self.firing()):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"not firing: {sorted(wanted - firing)}; firing: {sorted(firing)}\n"
                    f"{self.log.read_text()[-3000:]}"
                )
            time.sleep(0.5)

    def wait_for_series(self, query: str) -> None:
        """Until Prometheus holds a sample of ``query``: the series existed at a scrape."""
        deadline = time.monotonic() + PATIENCE
        while not self.query("/api/v1/query", query=query)["result"]:
            assert time.monotonic() < deadline, f"never scraped: {query}"
            time.sleep(0.5)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def metrics_address(daemon: DaemonProcess) -> str:
    [line] = [line for line in daemon.lines if "metrics on http://" in line]
    return line.split("metrics on http://", 1)[1].split("/", 1)[0]


def start_prometheus(directory: Path, daemon: DaemonProcess) -> Prometheus:
    """Debian's Prometheus on a port of its own, scraping ``daemon`` every second, with the
    rules' copy evaluated every second and every ``for:`` zero."""
    server = binary("prometheus", "prometheus")
    directory.mkdir()
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule["for"] = "0s"
    (directory / "rules.yml").write_text(yaml.safe_dump(rules))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(directory / "rules.yml")],
        "scrape_configs": [
            {"job_name": "errord", "static_configs": [{"targets": [metrics_address(daemon)]}]}
        ],
    }
    (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = directory / "prometheus.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                str(server),
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    running = Prometheus(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + PATIENCE
    while True:
        try:
            if running.query("/api/v1/targets")["activeTargets"][0]["health"] == "up":
                return running
        except (OSError, IndexError, KeyError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"Prometheus did not scrape errord:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)


@pytest.fixture
def stop_after() -> Iterator[list[subprocess.Popen[bytes] | DaemonProcess]]:
    started: list[subprocess.Popen[bytes] | DaemonProcess] = []
    yield started
    for process in started:
        if isinstance(process, DaemonProcess):
            process.terminate(signal.SIGKILL)
        else:
            process.kill()
            process.wait(30)


def fail(errord: ErrordClient, tool: str, call: str, code: pb.ErrorCode, **extra: Any) -> None:
    errord.report_failure(
        turn_id=f"turn-{tool}", call_id=call, tool=tool, attempt=1, code=code,
        message="it failed", **extra,
    )  # fmt: skip


def test_each_tool_and_daemon_rule_fires_in_a_real_prometheus(
    tmp_path: Path, stop_after: list[subprocess.Popen[bytes] | DaemonProcess]
) -> None:
    manifests = tmp_path / "tools.d"
    manifests.mkdir()
    (manifests / "search.yaml").write_text("tools:\n  - name: search\n")
    (tmp_path / "errord.toml").write_text(
        'listen = "127.0.0.1:0"\ndb = "errord.db"\nmetrics_listen = "127.0.0.1:0"\n'
        'manifests = "tools.d"\nmax_tools = 5\n'
    )
    daemon = start_process("--config", str(tmp_path / "errord.toml"))
    stop_after.append(daemon)
    with ErrordClient(daemon.address) as errord:
        fail(errord, "breaking", "c0", pb.ERROR_CODE_INVALID_INPUT)  # its series, no opening yet
        fail(errord, "schema", "c0", pb.ERROR_CODE_SCHEMA_VIOLATION)
        prometheus = start_prometheus(tmp_path / "prometheus", daemon)
        stop_after.append(prometheus.process)
        prometheus.wait_for_series('errord_tool_breaker_opens_total{tool="breaking"}')
        prometheus.wait_for_series('errord_tool_errors_by_code_total{code="SCHEMA_VIOLATION"}')

        for call in range(10):  # ten executions of ten, failed: above 5 %
            fail(errord, "failing", f"c{call}", pb.ERROR_CODE_INVALID_INPUT)
        for call in range(3):  # a mean of 6 s: above 5 s
            errord.report_outcome(
                turn_id="turn-slow", call_id=f"c{call}", tool="slow", attempt=1,
                success=True, duration=6.0,
            )  # fmt: skip
        for call in range(5):  # five transient failures of five calls: the breaker opens
            fail(errord, "breaking", f"t{call}", pb.ERROR_CODE_UNAVAILABLE, http_status=503)
        fail(errord, "schema", "c1", pb.ERROR_CODE_SCHEMA_VIOLATION)
        for turn in range(10):  # ten calls of ten whose result the executor lost
            calls = [pb.ToolCallRef(call_id="c0", tool="search")]
            errord.reconcile_results(f"turn-lost-{turn}", calls)
        fail(errord, "fifth", "c0", pb.ERROR_CODE_TIMEOUT)  # five tools of max_tools' five
        (manifests / "broken.yaml").write_text("tools:\n  - name: [not a name\n")
        daemon.process.send_signal(signal.SIGHUP)

        prometheus.wait_for(
            {
                ("ErrordToolFailureRate", "failing"),
                ("ErrordToolSlow", "slow"),
                ("ErrordBreakerTripped", "breaking"),
                ("ErrordBreakerOpened", "breaking"),
                ("ErrordToolResultsRepaired", "search"),
                ("ErrordResponseValidationFailures", "schema"),
                ("ErrordManifestReloadRefused", ""),
                ("ErrordToolLimitNear", ""),
            }
        )


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_the_store_rule_fires_when_the_disk_is_full(
    tmp_path: Path,
    small_disk: Path,
    stop_after: list[subprocess.Popen[bytes] | DaemonProcess],
) -> None:
    daemon = start_process(
        "--listen", "127.0.0.1:0", "--db", str(small_disk / "errord.db"),
        "--metrics-listen", "127.0.0.1:0",
    )  # fmt: skip
    stop_after.append(daemon)
    prometheus = start_prometheus(tmp_path / "prometheus", daemon)
    stop_after.append(prometheus.process)
    with ErrordClient(daemon.address) as errord:
        fail(errord, "search", "before", pb.ERROR_CODE_TIMEOUT)
        free = shutil.disk_usage(small_disk).free
        (small_disk / "ballast").write_bytes(b"\0" * max(0, free - 64 * 1024))
        refused = None
        for number in range(100_000):
            try:
                fail(errord, "search", f"c{number}", pb.ERROR_CODE_TIMEOUT)
            except grpc.RpcError as error:
                refused = error.code()
                break
        assert refused is grpc.StatusCode.UNAVAILABLE
        prometheus.wait_for({("ErrordStoreNotWritable", "")})


def test_the_fleet_rule_fires_when_redis_is_gone(
    tmp_path: Path,
    redis_server: RedisServer,
    stop_after: list[subprocess.Popen[bytes] | DaemonProcess],
) -> None:
    """A daemon of a fleet whose Redis is killed: ErrordFleetAlone fires."""
    daemon = start_fleet_daemon(
        tmp_path / "a", "a", redis_server.url, settings={"metrics_listen": "127.0.0.1:0"}
    )
    stop_after.append(daemon)
    prometheus = start_prometheus(tmp_path / "prometheus", daemon)
    stop_after.append(prometheus.process)
    prometheus.wait_for_series('errord_fleet_state{state="in_sync"} == 1')
    redis_server.kill()
    prometheus.wait_for({("ErrordFleetAlone", "")})
