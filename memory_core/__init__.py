"""memhealth's memory core: the per-project SQLite store and what reads and writes it.

Kept import-light: the hook path imports `memory_core.store.db` on every prompt.
"""
