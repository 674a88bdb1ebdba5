"""Errors raised by the application layer.

    MemhealthError           base: the CLI prints str(e) as one line and exits non-zero
     ├── ConfigError         a config key has a bad value, or is unknown
     ├── ProjectNotFound     no `.memhealth/` at or above the directory
     └── SettingsError       a Claude Code settings file cannot be parsed or written
"""


class MemhealthError(Exception):
    reason = "error"
    exit_code = 1


class ConfigError(MemhealthError):
    reason = "config"
    exit_code = 2


class ProjectNotFound(MemhealthError):
    reason = "no_project"
    exit_code = 2


class SettingsError(MemhealthError):
    reason = "settings"
    exit_code = 2
