"""The ``[client]`` table of a settings file: how the operator commands reach the daemon.

    [client]
    tls_ca_file = "tls/ca.pem"          # trust the daemon's certificate if these CAs signed it
    tls_cert_file = "tls/client.pem"    # present this certificate (a daemon with
    tls_key_file = "tls/client.key"     # tls_client_ca_file requires one) and its key

Setting any of them makes the commands speak TLS, as their flags ``--tls-ca``,
``--tls-cert`` and ``--tls-key`` do (flags win). The daemon ignores the table.
Relative paths are relative to the file's directory (errord.config.settings_file
reads the table).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path

from errord.errors import InvalidSettings, SettingProblem

TABLE = "client"


@dataclass(frozen=True)
class ClientSettings:
    """The TLS files of the operator commands; all None for plaintext."""

    tls_ca_file: Path | None = None
    """PEM CA certificates that signed the daemon's certificate; None for the system's."""
    tls_cert_file: Path | None = None
    """PEM client certificate, for a daemon that requires one (its tls_client_ca_file)."""
    tls_key_file: Path | None = None
    """The unencrypted PEM private key of ``tls_cert_file``."""

    def __post_init__(self) -> None:
        problems = list(self._problems())
        if problems:
            raise InvalidSettings(problems)

    def _problems(self) -> Iterator[SettingProblem]:
        """Each invalid setting (``client.setting``)."""
        if self.tls_cert_file is not None and self.tls_key_file is None:
            yield SettingProblem("tls_cert_file", f"needs {TABLE}.tls_key_file too", TABLE)
        if self.tls_key_file is not None and self.tls_cert_file is None:
            yield SettingProblem("tls_key_file", f"needs {TABLE}.tls_cert_file too", TABLE)

    @property
    def tls(self) -> bool:
        """Whether the commands speak TLS."""
        return any(getattr(self, setting.name) is not None for setting in fields(self))

    def override(self, **values: Path | None) -> ClientSettings:
        """A copy with every value that is not None replaced."""
        return replace(self, **{key: value for key, value in values.items() if value is not None})
