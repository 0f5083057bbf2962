"""The ``[client]`` table of a settings file: how the operator commands reach the daemon.

    [client]
    tls_ca_file = "tls/ca.pem"          # trust the daemon's certificate if these CAs signed it
    tls_cert_file = "tls/client.pem"    # present this certificate (a daemon with
    tls_key_file = "tls/client.key"     # tls_client_ca_file requires one) and its key

Setting any of them makes the commands speak TLS, as their flags ``--tls-ca``,
``--tls-cert`` and ``--tls-key`` do (flags win). The daemon ignores the table.
Relative paths are relative to the file's directory.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from errord.errors import ConfigError

TABLE = "client"
_HEADER = re.compile(r"^\s*\[\s*(?P<name>[^\[\]]+?)\s*\]")


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
            raise ConfigError("\n".join(problems))

    def _problems(self) -> Iterator[str]:
        """Each invalid setting, as "client.setting: problem"."""
        if self.tls_cert_file is not None and self.tls_key_file is None:
            yield f"{TABLE}.tls_cert_file: needs {TABLE}.tls_key_file too"
        if self.tls_key_file is not None and self.tls_cert_file is None:
            yield f"{TABLE}.tls_key_file: needs {TABLE}.tls_cert_file too"

    @property
    def tls(self) -> bool:
        """Whether the commands speak TLS."""
        return any(getattr(self, setting.name) is not None for setting in fields(self))

    @classmethod
    def from_table(cls, path: Path, text: str, table: Any) -> ClientSettings:
        """The ``[client]`` table of the TOML file ``path`` (whose ``text`` locates each
        setting); ConfigError lines read "file:line: client.setting: problem"."""
        if not isinstance(table, Mapping):
            line = line_in_table(text, TABLE, "")
            raise ConfigError(
                f"{path}:{line}: {TABLE}: expected a table, got {type(table).__name__}"
            )
        known = {setting.name for setting in fields(cls)}
        values, problems = {}, []
        for key, value in table.items():
            where = f"{path}:{line_in_table(text, TABLE, key)}: {TABLE}.{key}"
            if key not in known:
                problems.append(f"{where}: unknown setting (known: {', '.join(sorted(known))})")
            elif not isinstance(value, str) or not value:
                problems.append(f"{where}: expected a file path, got {value!r}")
            else:
                values[key] = path.parent / Path(value).expanduser()
        if not problems:
            try:
                return cls(**values)
            except ConfigError as error:  # each line "client.setting: problem"
                for problem in str(error).splitlines():
                    key = problem.split(":", 1)[0].removeprefix(f"{TABLE}.")
                    problems.append(f"{path}:{line_in_table(text, TABLE, key)}: {problem}")
        raise ConfigError("\n".join(problems))

    def override(self, **values: Path | None) -> ClientSettings:
        """A copy with every value that is not None replaced."""
        return replace(self, **{key: value for key, value in values.items() if value is not None})


def line_in_table(text: str, table: str, key: str) -> int:
    """The 1-based line where ``key`` of ``table`` is set in TOML ``text`` (under ``[table]``,
    or as ``table.key`` before any header), else the table's header, else 1. An empty key
    finds ``table = ...`` itself."""
    name = rf"[\"']?{re.escape(key)}[\"']?\s*"
    in_table = re.compile(rf"^\s*{name}=")
    dotted = rf"\.\s*{name}" if key else ""
    top_level = re.compile(rf"^\s*{re.escape(table)}\s*{dotted}=")
    current, header = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        match = _HEADER.match(line)
        if match:
            current = match["name"]
            header = header or (number if current == table else 0)
        elif (current == table and key and in_table.match(line)) or (
            not current and top_level.match(line)
        ):
            return number
    return header or 1
