"""The ablation protocol's schedule (Memory as Infrastructure §8): which arm is in force when, decided at start.

    sched = plan("injection-off", days=6, start_ns=now)   # alternating 24 h days, ablated first
    register(conn, sched)                                  # inside a write transaction
    arm_at(sched, now_ns)                                  # "ablated" | "baseline" | None

The schedule is one JSON value in the store's meta table (ABLATION_KEY), written once and
never re-planned: pre-registration means the days are fixed before any outcome is seen. Each
day carries its own [start_ns, end_ns) so the hook path (memhealth.handlers) decides the
effective mode with one meta lookup and a comparison, without importing this module.
A stopped or finished schedule stays (the report compares its arms) until the next start
moves it to ABLATION_HISTORY_PREFIX + its registration time.
"""

from __future__ import annotations

import json

from memory_core.errors import MemoryCoreError

ABLATION_KEY = "ablation.schedule"
ABLATION_HISTORY_PREFIX = "ablation.history."
DAY_NS = 86400 * 10 ** 9
MAX_DAYS = 366
# arm name -> the config section whose `mode` the ablated days turn "off"
ARMS = {"injection-off": "injection", "gate-off": "gate"}


def plan(arm: str, days: int, start_ns: int, registered_ns: int, first: str = "ablated") -> dict:
    """Alternating 24-hour days from `start_ns`, `first` on day 0. Alternation rather than a
    coin per day: with a handful of days a coin can leave one arm empty."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; expected one of {', '.join(ARMS)}")
    if not 2 <= days <= MAX_DAYS:
        raise ValueError(f"--days must be 2..{MAX_DAYS}: both arms need at least one day")
    if first not in ("ablated", "baseline"):
        raise ValueError("first must be ablated or baseline")
    other = "baseline" if first == "ablated" else "ablated"
    return {"arm": arm, "section": ARMS[arm], "registered_ns": registered_ns, "start_ns": start_ns,
            "end_ns": start_ns + days * DAY_NS, "stopped_ns": None,
            "days": [{"day": i, "arm": first if i % 2 == 0 else other,
                      "start_ns": start_ns + i * DAY_NS, "end_ns": start_ns + (i + 1) * DAY_NS}
                     for i in range(days)]}


class AblationError(MemoryCoreError):
    """The stored schedule is not one this version can follow; `memhealth ablation stop`
    clears it."""

    reason = "ablation"


FIX = "`memhealth ablation stop` clears it (it is kept in the history under ablation.broken)"


def _int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def problem(sched) -> str | None:
    """Why a parsed value is not a schedule (every field the hooks, status and report read),
    or None. A section that is no arm's would read "ablated" while nothing is switched off."""
    if not isinstance(sched, dict):
        return f"a {type(sched).__name__}, not a schedule object"
    if sched.get("arm") not in ARMS:
        return f"unknown arm {sched.get('arm')!r} (expected one of {', '.join(ARMS)})"
    if sched.get("section") != ARMS[sched["arm"]]:
        return f"section {sched.get('section')!r} is not the {sched['arm']} arm's ({ARMS[sched['arm']]!r})"
    for key in ("registered_ns", "start_ns", "end_ns"):
        if not _int(sched.get(key)):
            return f"{key} is {sched.get(key)!r}, not a time in nanoseconds"
    if sched.get("stopped_ns") is not None and not _int(sched["stopped_ns"]):
        return f"stopped_ns is {sched['stopped_ns']!r}, not a time in nanoseconds"
    days = sched.get("days")
    if not isinstance(days, list) or not days:
        return "no days"
    for day in days:
        if not isinstance(day, dict) or day.get("arm") not in ("ablated", "baseline") or not _int(day.get("day")) \
                or not _int(day.get("start_ns")) or not _int(day.get("end_ns")):
            return f"day {day!r} is not {{day, arm: ablated|baseline, start_ns, end_ns}}"
    return None


def parse(value: str) -> dict:
    """The schedule in a stored value; AblationError naming what is wrong."""
    try:
        sched = json.loads(value)
    except ValueError as exc:
        raise AblationError(f"the stored ablation schedule is unreadable (not JSON: {exc}); {FIX}") from None
    why = problem(sched)
    if why:
        raise AblationError(f"the stored ablation schedule is unreadable ({why}); {FIX}")
    return sched


def load(conn, key: str = ABLATION_KEY) -> dict | None:
    """The schedule stored under `key`, or None when there is none; AblationError when the
    stored value is not a schedule (never read as "none registered")."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    if row is None or not row[0]:
        return None
    return parse(row[0])


def clear_broken(conn, now_ns: int) -> bool:
    """Move an unreadable stored schedule aside (inside a write transaction); True if one was."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (ABLATION_KEY,)).fetchone()
    if row is None:
        return False
    try:
        parse(row[0])
        return False
    except AblationError:
        pass
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (f"ablation.broken.{now_ns:020d}", row[0]))
    conn.execute("DELETE FROM meta WHERE key = ?", (ABLATION_KEY,))
    return True


def history(conn) -> list[dict]:
    """Earlier schedules, oldest first."""
    out = []
    for (key,) in conn.execute("SELECT key FROM meta WHERE key LIKE ? ORDER BY key",
                               (ABLATION_HISTORY_PREFIX.replace("_", "\\_") + "%",)):
        try:
            sched = load(conn, key)
        except AblationError:
            continue  # an earlier schedule that cannot be compared is left out, not fatal
        if sched is not None:
            out.append(sched)
    return out


def until_ns(sched: dict) -> int:
    """When the schedule stops being in force: its end, or the stop if earlier."""
    stopped = sched.get("stopped_ns")
    return min(sched["end_ns"], stopped) if stopped else sched["end_ns"]


def arm_at(sched: dict | None, now_ns: int) -> str | None:
    """The arm in force at `now_ns`: "ablated", "baseline", or None outside the schedule."""
    if sched is None or now_ns >= until_ns(sched):
        return None
    for day in sched["days"]:
        if day["start_ns"] <= now_ns < day["end_ns"]:
            return day["arm"]
    return None


def active(sched: dict | None, now_ns: int) -> bool:
    """Registered and not yet over: a start in the future counts (it is pre-registered)."""
    return sched is not None and now_ns < until_ns(sched)


def register(conn, sched: dict) -> None:
    """Store `sched` as the schedule (call inside a write transaction); a previous one moves
    to the history so its arms stay comparable."""
    old = load(conn)
    if old is not None:
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                     (f"{ABLATION_HISTORY_PREFIX}{old['registered_ns']:020d}", json.dumps(old)))
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (ABLATION_KEY, json.dumps(sched)))


def stop(conn, sched: dict, now_ns: int) -> dict:
    """Mark `sched` stopped at `now_ns` (inside a write transaction); return it."""
    sched = {**sched, "stopped_ns": now_ns}
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (json.dumps(sched), ABLATION_KEY))
    return sched
