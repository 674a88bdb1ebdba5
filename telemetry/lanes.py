"""Per-key runs on bounded threads, for `serve --all`'s per-project gate and export.

    lanes = Lanes("probe", workers=4, stall_s=60, max_stalled=8)
    lanes.submit(project, lambda: run(project))   # False: that project busy, or no worker free

A hung run holds its own thread and never another key's turn (telemetry/serve_all.py).
"""

from __future__ import annotations

import threading
import time


class Lanes:
    """Per-project runs with bounded threads: at most one run per key at a time, at most
    `workers` runs counted at once. A run past `stall_s` stops counting (its thread is left to
    finish: Python cannot kill a thread), at most `max_stalled` of those, so a hung project
    holds one thread and never another project's turn, and threads stay within
    workers + max_stalled however many projects hang.

        lanes = Lanes("probe", workers=4, stall_s=60, max_stalled=8)
        lanes.submit(target, lambda: run(target))   # False: busy, or every worker taken
    """

    def __init__(self, name: str, workers: int, stall_s: float, max_stalled: int):
        self.name = name
        self.workers = workers
        self.stall_s = stall_s
        self.max_stalled = max_stalled
        self.stalled = 0
        self._free = workers
        self._running: dict[object, list] = {}  # key -> [started monotonic, stalled?]
        self._cond = threading.Condition()

    def _reap(self, now: float) -> None:
        """Called under the lock: runs past stall_s free their worker slot."""
        for job in self._running.values():
            if not job[1] and now - job[0] > self.stall_s and self.stalled < self.max_stalled:
                job[1] = True
                self.stalled += 1
                self._free += 1

    def submit(self, key, fn) -> bool:
        """Start fn() for key on a thread of its own, unless key is running or no worker is free."""
        with self._cond:
            self._reap(time.monotonic())
            if key in self._running or self._free <= 0:
                return False
            self._free -= 1
            self._running[key] = [time.monotonic(), False]
        thread = threading.Thread(target=self._run, args=(key, fn), name=f"memhealth-{self.name}", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: give the slot back, try next tick
            self._done(key)
            return False
        return True

    def _run(self, key, fn) -> None:
        try:
            fn()
        finally:
            self._done(key)

    def _done(self, key) -> None:
        with self._cond:
            job = self._running.pop(key, None)
            if job is not None:
                if job[1]:
                    self.stalled -= 1
                else:
                    self._free += 1
            self._cond.notify_all()

    def busy(self, key) -> bool:
        with self._cond:
            return key in self._running

    def wait(self, deadline: float) -> None:
        """Until no run is counted (stalled ones are not waited for) or the monotonic deadline."""
        with self._cond:
            while True:
                self._reap(time.monotonic())
                if self._free >= self.workers:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(min(left, 0.1))

    def state(self) -> dict:
        with self._cond:
            return {"running": len(self._running), "stalled": self.stalled, "workers": self.workers}
