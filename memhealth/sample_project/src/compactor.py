"""Snapshot compactor: folds a stream's events into a snapshot every 10,000 events."""

SNAPSHOT_EVERY = 10_000


def should_snapshot(events_since_last: int) -> bool:
    return events_since_last >= SNAPSHOT_EVERY
