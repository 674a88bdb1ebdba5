"""`memhealth ablation`: the pre-registered ablation protocol (Memory as Infrastructure §8).

`start injection-off|gate-off --days N` fixes the schedule before any outcome is seen
(alternating 24-hour days, printed), `status` says which arm is in force, `stop` ends it
early. Hooks read the schedule from the store (memhealth.handlers.apply_ablation); the
comparison is `memhealth report --ablation`.
"""

from __future__ import annotations

import time

from memhealth.cliutil import (
    UsageError,
    add_json_option,
    add_parser,
    add_project_option,
    positive_int,
)
from memhealth.errors import MemhealthError


def register(sub):
    p = add_parser(
        sub, "ablation", help="pre-registered ablation: injection-off or gate-off on alternating days",
        description="Pre-register an ablation (Memory as Infrastructure §8): `start injection-off|gate-off --days N` "
                    "fixes alternating 24-hour days between the ablated arm and the baseline, from now "
                    "(or --start, which may only be later), and prints them; on ablated days the hooks "
                    "run with [injection].mode or [gate].mode = \"off\" and telemetry stays on. "
                    "`status` prints the schedule and the arm in force; `stop` ends it early. "
                    "Compare the arms with `memhealth report --ablation`.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = add_parser(actions, "start", help="register a schedule of alternating days, from now",
                       description="Fix the schedule before any outcome is seen, and print it.")
    start.add_argument("arm", choices=("injection-off", "gate-off"), help="what the ablated days switch off")
    start.add_argument("--days", type=positive_int, required=True, metavar="N",
                       help="length of the schedule in days, 2 or more")
    start.add_argument("--first", choices=("ablated", "baseline"), default="ablated",
                       help="the arm of day 0 (default: ablated)")
    start.add_argument("--start", default=None, metavar="ISO",
                       help="when day 0 begins, UTC (YYYY-MM-DD or YYYY-MM-DDTHH:MM); never in the past")
    status = add_parser(actions, "status", help="print the schedule and the arm in force",
                        description="Print the registered schedule and the arm in force now.")
    stop = add_parser(actions, "stop", help="end the registered schedule early",
                      description="End the schedule now; the days so far stay for the report.")
    for action in (start, status, stop):
        add_json_option(action, "the schedule")
        add_project_option(action)
    p.set_defaults(func=run)
    return p


def _when(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ns / 1e9))


def _parse_start(text: str, now_ns: int) -> int:
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--start {text!r}: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    ns = int(when.timestamp()) * 10 ** 9
    if ns < now_ns - 60 * 10 ** 9:
        # a schedule registered after its first days happened is not pre-registered
        raise UsageError(f"--start {text}: in the past; an ablation is registered before it starts")
    return max(ns, now_ns)


def render(sched: dict, now_ns: int) -> str:
    from memory_core.delivery import ablation

    arm = ablation.arm_at(sched, now_ns)
    section = sched["section"]
    lines = [f"ablation {sched['arm']}: {len(sched['days'])} days, {_when(sched['start_ns'])} .. "
             f"{_when(sched['end_ns'])} (registered {_when(sched['registered_ns'])})"]
    if sched.get("stopped_ns"):
        lines.append(f"stopped {_when(sched['stopped_ns'])}")
    if arm is not None:
        lines.append(f"now: {arm} ([{section}].mode = {'off' if arm == 'ablated' else 'as configured'})")
    elif ablation.active(sched, now_ns):
        lines.append("now: not started yet")
    else:
        lines.append("now: over")
    for day in sched["days"]:
        mark = " <- now" if day["start_ns"] <= now_ns < day["end_ns"] and arm is not None else ""
        lines.append(f"  day {day['day'] + 1:>3}  {_when(day['start_ns'])}  {day['arm']}{mark}")
    lines.append("compare the arms: memhealth report --ablation")
    return "\n".join(lines)


class AblationRefused(MemhealthError):
    """A start over a running schedule, or a stop with none running: exit 1, nothing changed."""


def run(args) -> int:
    from memhealth.cliutil import emit_json, open_project
    from memory_core.delivery import ablation
    from memory_core.store.db import write

    now_ns = time.time_ns()
    if args.action == "start":
        start_ns = _parse_start(args.start, now_ns) if args.start else now_ns
        try:
            sched = ablation.plan(args.arm, args.days, start_ns, now_ns, args.first)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    with open_project(args) as ctx:
        if args.action == "stop":
            with write(ctx.conn):
                broken = ablation.clear_broken(ctx.conn, now_ns)
            if broken:
                print("memhealth ablation: the unreadable schedule was moved aside (meta ablation.broken.*); "
                      "none registered now")
                return 0
        current = ablation.load(ctx.conn)
        if args.action == "start":
            if ablation.active(current, now_ns):
                raise AblationRefused(f"{current['arm']} is registered until "
                                      f"{_when(ablation.until_ns(current))}; `memhealth ablation stop` first")
            with write(ctx.conn):
                ablation.register(ctx.conn, sched)
            current = sched
        elif args.action == "stop":
            if not ablation.active(current, now_ns):
                raise AblationRefused("nothing running")
            with write(ctx.conn):
                current = ablation.stop(ctx.conn, current, now_ns)
        if current is None:
            if args.json:
                emit_json({"schedule": None})
            else:
                print("memhealth ablation: none registered "
                      "(start one: memhealth ablation start injection-off|gate-off --days N)")
            return 0
        if args.json:
            emit_json({"schedule": {**current, "now": ablation.arm_at(current, now_ns),
                                    "active": ablation.active(current, now_ns)}})
        else:
            print(render(current, now_ns))
    return 0
