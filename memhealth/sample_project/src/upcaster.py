"""Event upcasting: events stored under an old schema version are read in the current one."""


class EventUpcaster:
    """Rewrites events stored under an old schema version into the current version as a
    stream is read, so projections only ever see the latest shape of each event."""

    def __init__(self, steps):
        self.steps = dict(steps)  # (event type, from version) -> function returning the next version

    def upcast(self, event: dict) -> dict:
        while (event["type"], event["version"]) in self.steps:
            event = self.steps[(event["type"], event["version"])](event)
        return event
