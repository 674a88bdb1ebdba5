"""Finding memory: the FTS5 index and its kept document frequencies, vectors and the
embedding client, and hybrid search over both."""
