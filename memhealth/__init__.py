"""memhealth: the application layer (CLI, hook entry points, config, installer, demo)."""

__version__ = "0.1.0"
