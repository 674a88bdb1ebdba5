"""`memhealth generate`: write (or check) the dashboards, rules, runbook, routing and compose
files derived from the metric catalog (telemetry/generate.py)."""

from __future__ import annotations

import os

from memhealth.cliutil import add_parser


def _checkout_root() -> str | None:
    """The source checkout this memhealth runs from, when it is one (artifacts live there)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    marker = os.path.join(root, "telemetry", "catalog.py")
    return root if os.path.exists(os.path.join(root, "pyproject.toml")) and os.path.exists(marker) else None


def register(sub):
    p = add_parser(
        sub, "generate", help="write the Grafana dashboards, alert rules, runbook and compose files",
        description="Generate dashboards/*.json and provisioning, alerts/memhealth.rules.yaml, "
                    "alerts/runbook.md, alerts/tests/*.yaml (promtool unit tests), "
                    "alerts/alertmanager.yml and compose/ from telemetry/catalog.py. With "
                    "--check nothing is written: exit 1 and list every stale, missing or "
                    "unexpected file (what CI runs).")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="repository root to write into (default: this source checkout)")
    p.add_argument("--check", action="store_true",
                   help="compare instead of writing; exit 1 listing stale files")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import sys

    from memhealth.errors import UsageError
    from telemetry import generate

    out = args.out or _checkout_root()
    if out is None:
        raise UsageError("not running from a source checkout: pass --out DIR")
    if args.check:
        problems = generate.stale(out)
        for line in problems:
            print(f"stale: {line}", file=sys.stderr)
        if problems:
            print(f"generate --check: {len(problems)} stale file(s); run `memhealth generate` "
                  "and commit the result", file=sys.stderr)
            return 1
        print(f"generate --check: {len(generate.artifacts())} file(s) up to date")
        return 0
    changed = generate.write(out)
    for rel in changed:
        print(f"wrote {rel}")
    print(f"generate: {len(changed)} file(s) changed, {len(generate.artifacts()) - len(changed)} "
          f"unchanged in {out}")
    return 0
