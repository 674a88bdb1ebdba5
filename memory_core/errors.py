"""Errors raised by the memory core.

    MemoryCoreError              base: catch this at a boundary (hook, CLI)
     ├── StoreError              the database cannot be opened, migrated or written
     │    ├── StoreLocked        another writer held the lock past busy_timeout
     │    ├── StoreCorrupt       not a database, or malformed
     │    ├── StoreReadOnly      the file or its directory is not writable
     │    ├── StoreFull          the disk (or the file-size limit) is full
     │    ├── StoreIO            the operating system failed a read or write
     │    ├── StoreWalDeleted    memory.db-wal was deleted under open connections
 │    ├── StoreShmDeleted    memory.db-shm was deleted under a process that holds it
 │    ├── StoreLink          memory.db, -wal or -shm is a symbolic link (never followed)
 │    └── StoreNotFile       memory.db is a directory or another non-file
     ├── VectorUnavailable       sqlite-vec cannot be loaded by this interpreter
     ├── DimensionMismatch       a vector of the wrong width was offered to the store
     ├── EmbedError              (memory_core.index.embed) an embedding call failed; .reason says
     │                           how: unreachable, timeout, model_missing, busy, wrong width…
     ├── HttpError               (memory_core.index.http) a transport failure, .kind says which;
     │                           memory_core.index.embed turns every one into an EmbedError
     └── UnknownSource           (memory_core.ingest) a source name that is not a source; exit 2

Every writer, in every layer, goes through memory_core.store.tx.write: a failed write raises the
same StoreError subclass whoever wrote the row.
"""


class MemoryCoreError(Exception):
    """Base class for every error the memory core raises on purpose."""

    reason = "error"  # a short failure family, used as a heartbeat reason and metric label


class StoreError(MemoryCoreError):
    reason = "store"


class StoreLocked(StoreError):
    reason = "db_locked"


class StoreCorrupt(StoreError):
    reason = "db_corrupt"


class StoreReadOnly(StoreError):
    reason = "db_readonly"


class StoreFull(StoreError):
    reason = "db_full"


class StoreIO(StoreError):
    reason = "db_io"


class StoreWalDeleted(StoreError):
    """The -wal file was deleted while processes had the database open; `.fix` says how to
    put it back from a process that still holds it."""

    reason = "wal_deleted"
    fix = ""


class StoreShmDeleted(StoreError):
    """The -shm (the WAL index) was deleted while a process still maps it: a new connection
    would build a second index beside it, and the last to close checkpoints from its own
    view, dropping the other's rows. `.fix` names the process."""

    reason = "shm_deleted"
    fix = ""


class StoreLink(StoreError):
    """One of the store's files is a symbolic link: SQLite would follow it (into another
    project's store, or nowhere); `.fix` names the link to remove."""

    reason = "db_symlink"
    fix = ""


class StoreNotFile(StoreError):
    """memory.db exists but is not a regular file (a directory, a FIFO); `.fix` says how to
    move it aside."""

    reason = "db_not_file"
    fix = ""


class VectorUnavailable(MemoryCoreError):
    reason = "vector_unavailable"


class DimensionMismatch(MemoryCoreError):
    reason = "dimension_mismatch"
