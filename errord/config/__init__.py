"""Daemon settings: embedded defaults, a TOML file, command-line flags (last wins).

Each setting, its default, its range and what it changes are documented in
docs/configuration.md (and beside its field in errord.config.settings); the file is
decoded by msgspec (errord.config.settings_file), every invalid setting named at once
(errord.config.problems). The ``[client]`` table says how the operator commands reach
the daemon (errord.client_config).
"""

from errord.config.problems import LOG_FORMATS, LOG_LEVELS
from errord.config.settings import Settings, default_db_path

__all__ = ["LOG_FORMATS", "LOG_LEVELS", "Settings", "default_db_path"]
