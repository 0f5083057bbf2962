"""Daemon settings: embedded defaults, a TOML file, command-line flags (last wins)."""

from errord.config.settings import LOG_FORMATS, LOG_LEVELS, Settings, default_db_path

__all__ = ["LOG_FORMATS", "LOG_LEVELS", "Settings", "default_db_path"]
