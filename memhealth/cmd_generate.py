"""`memhealth generate`: write (or check) the dashboards, rules, promtool tests and routing
derived from the metric catalog (telemetry/artifacts/)."""

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
        sub, "generate", help="write the Grafana dashboards, alert rules, Alertmanager routing and reference docs",
        description="Generate dashboards/*.json, alerts/memhealth.rules.yaml, "
                    "alerts/tests/*.yaml (promtool unit tests), alerts/alertmanager.yml, "
                    "compose/alertmanager.yml and the team topology's compose/team/alertmanager.yml "
                    "and compose/team/alert-budget.env from telemetry/catalog.py and telemetry/slo.py. "
                    "With --check nothing is written: exit 1 and list every stale, missing or "
                    "unexpected file (what CI runs). Pass the same URL options to --check as "
                    "to the run that wrote the files. With --team (or --central-host) the team "
                    "topology's credentials are written too, into compose/team/secrets/ "
                    "(git-ignored; mode 0700, every file 0600): a private CA and the central "
                    "certificate, one password or token per network edge, and the central "
                    "Prometheus's and Alertmanager's web configs holding their bcrypt hashes. "
                    "Existing credentials are kept unless --rotate-secrets; --check never "
                    "reads or writes them.")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="repository root to write into (default: this source checkout)")
    p.add_argument("--check", action="store_true",
                   help="compare instead of writing; exit 1 listing stale files")
    # defaults resolved in run(): registering a command must not import the generator
    p.add_argument("--runbook-url", metavar="URL", default=None,
                   help="absolute URL of alerts/runbook.md that alerts link to (default: the "
                        "project repository's copy, telemetry.artifacts.RUNBOOK_URL)")
    p.add_argument("--watchdog-url", metavar="URL", default=None,
                   help="dead man's switch the Watchdog pings, outside serve (a healthchecks-"
                        "style ping URL; default: a placeholder to replace)")
    p.add_argument("--serve-down-url", metavar="URL", default=None,
                   help="where MemhealthTargetDown goes, outside serve (e.g. a healthchecks "
                        "/fail URL; default: a placeholder to replace)")
    p.add_argument("--team", metavar="NAME", action="append", default=None,
                   help="a team of the team topology (repeat for each): the central Alertmanager "
                        "routes alerts whose `team` label is NAME to NAME-page and NAME-ticket, "
                        "each with its own page budget (default: team-a and team-b, examples)")
    p.add_argument("--central-host", metavar="NAME", action="append", default=None,
                   help="a name or IP address developers' machines reach the central side by "
                        "(repeat): put in the central certificate beside the compose service names")
    p.add_argument("--secrets-dir", metavar="DIR", default=None,
                   help="where the team credentials go (default: compose/team/secrets under --out)")
    p.add_argument("--pager-url", metavar="TEAM=URL", action="append", default=None,
                   help="where a team's budgeted pages and digests go (repeat per team): written to "
                        "secrets/pagers.env for the alert budget, never to a committed file")
    p.add_argument("--rotate-secrets", action="store_true",
                   help="replace every team credential (every agent needs the new password and CA)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import sys

    from memhealth.errors import UsageError
    from telemetry import artifacts as generate

    out = args.out or _checkout_root()
    if out is None:
        raise UsageError("not running from a source checkout: pass --out DIR")
    try:
        options = generate.Options(args.runbook_url or generate.RUNBOOK_URL,
                                   args.watchdog_url or generate.WATCHDOG_URL,
                                   args.serve_down_url or generate.SERVE_DOWN_URL,
                                   tuple(args.team) if args.team else generate.TEAMS)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    pagers = _pagers(args.pager_url, options.teams)  # refused before anything is written
    from memhealth.reference import reference_docs

    docs = reference_docs()  # the CLI, config, metrics and gate-check reference pages
    total = len(generate.artifacts(options)) + len(docs)
    if args.check:
        problems = generate.stale(out, options, extra=docs)
        for line in problems:
            print(f"stale: {line}", file=sys.stderr)
        if problems:
            print(f"generate --check: {len(problems)} stale file(s); run `memhealth generate` "
                  "and commit the result", file=sys.stderr)
            return 1
        print(f"generate --check: {total} file(s) up to date")
        return 0
    changed = generate.write(out, options, extra=docs)
    for rel in changed:
        print(f"wrote {rel}")
    print(f"generate: {len(changed)} file(s) changed, {total - len(changed)} "
          f"unchanged in {out}")
    if args.team or args.central_host or args.rotate_secrets or args.secrets_dir or args.pager_url:
        _secrets(args, out, pagers)
    return 0


def _pagers(values: list[str] | None, teams: tuple[str, ...]) -> dict[str, str] | None:
    """{team: URL} from --pager-url TEAM=URL; UsageError for an unknown team or a bad URL."""
    import urllib.parse

    from memhealth.errors import UsageError

    if not values:
        return None
    out = {}
    for value in values:
        team, _, url = value.partition("=")
        parts = urllib.parse.urlsplit(url)
        if team not in teams:
            raise UsageError(f"--pager-url {team}=…: {team!r} is not one of the teams "
                             f"({', '.join(teams)}); pass --team {team or 'NAME'}")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"--pager-url {team}=…: expected an absolute http(s) URL")
        out[team] = url
    return out


def _secrets(args, out: str, pagers: dict[str, str] | None) -> None:
    """The team credentials: what is missing (or everything, rotating), never printed."""
    from telemetry.team_secrets import SECRET_FILES, write_secrets

    directory = args.secrets_dir or os.path.join(out, "compose", "team", "secrets")
    written = write_secrets(directory, tuple(args.central_host or ()), rotate=args.rotate_secrets,
                            pagers=pagers)
    for name in written:
        print(f"wrote secret {os.path.join(directory, name)} (0600): {SECRET_FILES[name]}")
    print(f"generate: {len(written)} secret file(s) written, {len(SECRET_FILES) - len(written)} kept "
          f"in {directory}")
