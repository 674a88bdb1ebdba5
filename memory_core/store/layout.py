"""Where a project's state lives: the `.memhealth/` layout, named once for every layer.

    os.path.join(root, STATE_DIR, DB_NAME)     # .memhealth/memory.db

The lowest layer owns these names so the hook runner, the checks and the installer agree
on them without importing each other.
"""

STATE_DIR = ".memhealth"
DB_NAME = "memory.db"
CONFIG_NAME = "config.toml"
SPILL_NAME = "spill.ndjson"  # rows a process could not write to the store wait here
JOURNAL_NAME = "journal.ndjson"  # one "started" line per hook, appended before anything can block
HOOK_SECRET_NAME = "hook-secret"  # HTTP hook requests carry it (memory_core.store.secret)
BOUNDARIES_NAME = "boundaries.ndjson"  # session boundaries a SessionEnd could not store (locked)
STORE_ID_NAME = "store-id"  # the identity of the store this directory had (a reset is noticed)
MEMORY_DIR = "memory"        # .memhealth/memory/: memory files the project keeps
RECORDS_DIR = "records"      # .memhealth/memory/records/: confirmed anti-recurrence records
LEDGERS_DIR = "ledgers"      # .memhealth/ledgers/: append-only ledgers (decisions.ndjson)

# Directories never walked as the project's own (an explicit config entry may still name one):
# dependency trees and build output. Hidden directories are skipped too.
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "dist",
                       "build", "target", "vendor"})
