"""The store: one SQLite file per project — connection, schema and migrations, the write
transaction, meta keys, the project's on-disk layout, the store's identity, and the registry
of projects on this machine."""
