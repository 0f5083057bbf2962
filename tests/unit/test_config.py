"""Settings: embedded defaults, TOML files with located errors, flags on top."""

from __future__ import annotations

from pathlib import Path

import pytest

from errord.config import Settings, default_db_path
from errord.decide.health.alerts import AlertThresholds
from errord.decide.manifest import BreakerPolicy
from errord.errors import ConfigError, InvalidSettings, SettingProblem


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "errord.toml"
    path.write_text(text)
    return path


def test_defaults_listen_on_loopback_without_manifests() -> None:
    settings = Settings()
    assert (settings.listen, settings.manifests) == ("127.0.0.1:50051", None)


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({"STATE_DIRECTORY": "/var/lib/errord:/var/lib/other"}, "/var/lib/errord/errord.db"),
        ({"XDG_STATE_HOME": "/home/u/.state"}, "/home/u/.state/errord/errord.db"),
        ({"HOME": "/home/u"}, "/home/u/.local/state/errord/errord.db"),
    ],
)
def test_the_database_lives_in_the_state_directory(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], expected: str
) -> None:
    for name in ("STATE_DIRECTORY", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert default_db_path() == Path(expected)


def test_a_toml_file_sets_everything_and_paths_are_relative_to_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'listen = "unix:/run/errord.sock"\ndb = "state/e.db"\n'
        'manifests = "tools.d"\nmanifests_root = "."\nshutdown_grace_seconds = 2\n'
        'log_level = "debug"\nreflection = false\n',
    )
    assert Settings.from_toml(path) == Settings(
        listen="unix:/run/errord.sock",
        db=tmp_path / "state/e.db",
        manifests=tmp_path / "tools.d",
        manifests_root=tmp_path / ".",
        shutdown_grace_seconds=2,
        log_level="debug",
        reflection=False,
    )


def test_flags_override_the_file(tmp_path: Path) -> None:
    settings = Settings.from_toml(write(tmp_path, 'listen = "127.0.0.1:1"\n'))
    assert settings.override(listen="127.0.0.1:2", db=None).listen == "127.0.0.1:2"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('listen = "127.0.0.1:1"\nport = 5\n', ":2: unknown setting 'port' (known: listen, db,"),
        ("\n\nlog_level = 3\n", ":3: log_level: expected str, got int"),
        ('reflection = "yes"\n', ":1: reflection: expected bool, got str"),
        ("shutdown_grace_seconds = true\n", ":1: shutdown_grace_seconds: expected int or float"),
        ("shutdown_quiet_seconds = -1\n", ":1: shutdown_quiet_seconds: must be a finite number"),
        ("shutdown_grace_seconds = nan\n", ":1: shutdown_grace_seconds: must be a finite number"),
        (
            '\nlisten = "localhost"\n',
            ":2: listen: expected host:port or unix:PATH, got 'localhost'",
        ),
        ('listen = "[::1]:70000"\n', ":1: listen: port 70000 is above 65535"),
        ('log_level = "loud"\n', ":1: log_level: expected one of debug, info, warning, error"),
        ("listen = \n", "Invalid value (at line 1, column 10)"),
        (
            "\nbreaker_cooldown_seconds = 0\n",
            ":2: breaker_cooldown_seconds: must be positive",
        ),
        ("breaker_failure_threshold = 0\n", ":1: breaker_failure_threshold: must be at least 1"),
        ("breaker_success_threshold = 1.5\n", ":1: breaker_success_threshold: expected int"),
        ("alert_failure_rate = 5\n", ":1: alert_failure_rate: must be between 0 and 1"),
        ("alert_window_seconds = 30\n", ":1: alert_window_seconds: must be between 60 and 3600"),
        (
            'metrics_listen = "unix:/run/m"\n',
            ":1: metrics_listen: expected host:port; the metrics endpoint is HTTP over TCP",
        ),
        ("socket_group = true\n", ":1: socket_group: expected str or int, got bool"),
        ('\nsocket_group = ""\n', ":2: socket_group: expected a group name or a number from 0"),
        ("socket_group = -1\n", ":1: socket_group: expected a group name or a number from 0"),
        ("token_file = 5\n", ":1: token_file: expected str, got int"),
        ('tls_cert_file = "c.pem"\n', ":1: tls_cert_file: needs tls_key_file too"),
        ('\ntls_key_file = "k.pem"\n', ":2: tls_key_file: needs tls_cert_file too"),
        (
            'tls_client_ca_file = "ca.pem"\n',
            ":1: tls_client_ca_file: needs tls_cert_file and tls_key_file",
        ),
        (
            'listen = "unix:/run/errord.sock"\ntls_key_file = "k.pem"\ntls_cert_file = "c.pem"\n',
            ":3: tls_cert_file: TLS is for TCP; listen is a unix socket",
        ),
    ],
)
def test_bad_settings_name_the_file_line_and_setting(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as failed:
        Settings.from_toml(path)
    assert str(failed.value).startswith(str(path))
    assert message in str(failed.value)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.toml: cannot read: No such file"):
        Settings.from_toml(tmp_path / "missing.toml")


def test_breaker_defaults_and_alert_thresholds_come_from_the_file(tmp_path: Path) -> None:
    settings = Settings.from_toml(
        write(
            tmp_path,
            "breaker_failure_threshold = 3\nbreaker_cooldown_seconds = 60\n"
            "breaker_success_threshold = 1\nalert_failure_rate = 0.1\n"
            "alert_mean_duration_seconds = 2.5\nalert_window_seconds = 600\n"
            'alert_min_executions = 4\nmetrics_listen = "127.0.0.1:9464"\n',
        )
    )
    assert settings.breaker_defaults() == BreakerPolicy(3, 60.0, 1)
    assert settings.alert_thresholds() == AlertThresholds(0.1, 2.5, 600, 4)
    assert settings.metrics_listen == "127.0.0.1:9464"


def test_access_settings_come_from_the_file_with_paths_relative_to_it(tmp_path: Path) -> None:
    settings = Settings.from_toml(
        write(
            tmp_path,
            'socket_group = "errord"\ntoken_file = "secrets/token"\n'
            'tls_cert_file = "tls/cert.pem"\ntls_key_file = "/etc/errord/key.pem"\n'
            'tls_client_ca_file = "tls/ca.pem"\n',
        )
    )
    assert settings.socket_group == "errord"
    assert settings.token_file == tmp_path / "secrets/token"
    assert settings.tls_cert_file == tmp_path / "tls/cert.pem"
    assert settings.tls_key_file == Path("/etc/errord/key.pem")
    assert settings.tls_client_ca_file == tmp_path / "tls/ca.pem"
    assert Settings.from_toml(write(tmp_path, "socket_group = 1000\n")).socket_group == 1000


def test_under_systemd_the_default_listen_is_a_socket_in_the_runtime_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RUNTIME_DIRECTORY", raising=False)
    assert Settings().listen == "127.0.0.1:50051"
    monkeypatch.setenv("RUNTIME_DIRECTORY", "/run/errord")
    assert Settings().listen == "unix:/run/errord/errord.sock"


def test_every_problem_of_a_file_is_listed_at_once_in_the_order_of_its_lines(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        'tls_cert_file = "c.pem"\nbreaker_window = 10\nlog_level = 3\nport = 5\n'
        "breaker_min_calls = 20\nmax_tools = 0\n\n[client]\ntls_ca_file = 3\n",
    )
    with pytest.raises(ConfigError) as refused:
        Settings.from_toml(path)
    assert str(refused.value).splitlines() == [
        f"{path}:{problem}"
        for problem in [
            "1: tls_cert_file: needs tls_key_file too",
            "3: log_level: expected str, got int",
            f"4: unknown setting 'port' (known: {', '.join(Settings.__dataclass_fields__)})",
            "5: breaker_min_calls: must be at least 1 and at most window",
            "6: max_tools: must be from 1 to 1000000",
            "9: client.tls_ca_file: expected a file path, got 3",
        ]
    ]


def test_settings_made_in_code_name_each_invalid_setting() -> None:
    """Flags and tests make settings without a file: each problem is the setting's."""
    with pytest.raises(InvalidSettings) as refused:
        Settings(listen="localhost", alert_window_seconds=30, turn_retry_budget=-1)
    assert refused.value.problems == (
        SettingProblem("listen", "expected host:port or unix:PATH, got 'localhost'"),
        SettingProblem("alert_window_seconds", "must be between 60 and 3600"),
        SettingProblem("turn_retry_budget", "must not be negative"),
    )
    assert str(refused.value).splitlines()[0] == (
        "listen: expected host:port or unix:PATH, got 'localhost'"
    )


def test_a_path_in_the_file_expands_the_home_directory(tmp_path: Path) -> None:
    settings = Settings.from_toml(write(tmp_path, 'manifests = "~/tools.d"\n'))
    assert settings.manifests == Path("~/tools.d").expanduser()
