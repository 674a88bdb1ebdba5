"""Errors raised by the application layer.

    MemhealthError           base: the CLI prints str(e) as one line and exits non-zero
     ├── UsageError          the command line is wrong (a bad value, an empty query): exit 2
     ├── ConfigError         a config key has a bad value, or is unknown: exit 2
     ├── ProjectNotFound     no `.memhealth/` at or above the directory: exit 2
     ├── SettingsError       a Claude Code settings file cannot be parsed or written: exit 2
     └── Invalid             (memhealth.hooks) a hook's input cannot be used; recorded, never raised
                             out of a hook

The CLI also turns every other package's base into one line: memory_core.errors.MemoryCoreError,
probes.errors.ProbeError, telemetry.errors.TelemetryError (see memhealth.cli.CAUGHT).
"""


class MemhealthError(Exception):
    reason = "error"
    exit_code = 1


class UsageError(MemhealthError):
    reason = "usage"
    exit_code = 2


class ConfigError(MemhealthError):
    reason = "config"
    exit_code = 2


class ProjectNotFound(MemhealthError):
    reason = "no_project"
    exit_code = 2


class SettingsError(MemhealthError):
    reason = "settings"
    exit_code = 2
