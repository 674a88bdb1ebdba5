#!/usr/bin/env python3
"""Run every benchmark module (benchmarks/bench_*.py), print a table, write JSON.

    python benchmarks/run.py                 # all
    python benchmarks/run.py hooks search    # only bench_hooks.py and bench_search.py
    python benchmarks/run.py --quick         # fewer repetitions

Each module exposes `bench(quick: bool) -> list[dict]` returning rows made by
`common.row(...)`. Results go to benchmarks/results/latest.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="module names without bench_ (default: all)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "latest.json"))
    args = parser.parse_args()
    names = sorted(f[6:-3] for f in os.listdir(HERE) if f.startswith("bench_") and f.endswith(".py"))
    if args.only:
        names = [n for n in names if n in args.only]
    rows = []
    for name in names:
        module = importlib.import_module(f"bench_{name}")
        t0 = time.perf_counter()
        got = module.bench(quick=args.quick)
        for r in got:
            r.setdefault("module", name)
        rows.extend(got)
        print(f"# bench_{name}: {len(got)} figures in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    width = max((len(r["name"]) for r in rows), default=10)
    print(f"{'figure':<{width}}  {'value':>12}  {'unit':<10}  {'target':<14}  note")
    for r in rows:
        value = r["value"]
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"{r['name']:<{width}}  {shown:>12}  {r['unit']:<10}  {r['target']:<14}  {r['note']}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump({"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                               "platform": platform.platform()},
                   "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}, fh, indent=2)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
