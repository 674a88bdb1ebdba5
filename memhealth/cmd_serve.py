"""`memhealth serve`: the console at /, /metrics, /healthz and /alerts on loopback, plus
scheduled probes and the OTLP exporter (telemetry/serve.py, telemetry/console/)."""

from __future__ import annotations

from memhealth.cliutil import add_parser, add_project_option


def register(sub):
    p = add_parser(
        sub, "serve", help="serve the console, /metrics, /healthz and /alerts; run probes and the OTLP exporter",
        description="Long-lived telemetry process for one project: the console at GET / (health, "
                    "decisions, memory, triage and the alert budget in a browser), GET /metrics (Prometheus, read "
                    "from the store), GET /healthz (serve's own liveness), POST /alerts "
                    "(Alertmanager webhook -> alert budget -> sinks), the gate on a schedule "
                    "(serve.probe_interval_s) and the OTLP exporter (serve.export_interval_s). "
                    "Binds loopback only unless --allow-remote, which serves a non-loopback address "
                    "only with TLS (--tls-cert, --tls-key) and a bearer token (--token-file): every "
                    "request must then send `Authorization: Bearer <token>`. SIGTERM/SIGINT stop it after one "
                    "final export attempt bounded by telemetry.export_timeout_s. With --all: every "
                    "project `memhealth init` registered on this machine "
                    "($XDG_STATE_HOME/memhealth/projects.json) on one port, each series labelled "
                    "project=<name> (the directory's name, made unique; never its path); projects "
                    "added or removed are noticed without a restart (the registry is re-checked "
                    "at most every 2 s, by one stat). --all serves GET /metrics, GET /healthz, GET /runbook, "
                    "a project list at GET / linking to each project's console under /p/<name>/, and "
                    "POST /alerts routed by each alert's `project` label to that project's alert budget "
                    "(an alert naming no served project is kept in alerts-unrouted.ndjson beside the "
                    "registry); each project's gate and export run on their own thread (at most 4 "
                    "at once each), so a hung project never holds up another's. "
                    "Server settings (listen, intervals) come from MEMHEALTH_SERVE_* or the "
                    "defaults; each project's gate and exporter use its own config. "
                    # -- the HTTP hook transport
                    "For one project, POST /memhealth/hook/<event> runs Claude Code's hook events "
                    "when `memhealth init --transport http` wired them here (each request carries "
                    "the project's secret, .memhealth/hook-secret; without it: 401).")
    add_project_option(p)
    p.add_argument("--all", dest="all_projects", action="store_true",
                   help="serve every registered project on one port (`memhealth init` registers; "
                        "`memhealth init --unregister` removes)")
    p.add_argument("--listen", default=None, metavar="HOST:PORT",
                   help="address to bind (default: serve.listen, 127.0.0.1:9464; port 0 = any free port)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback address; refused unless TLS and a token are set too")
    p.add_argument("--tls-cert", metavar="FILE", default=None,
                   help="serve HTTPS with this PEM certificate (chain) (default: serve.tls_cert)")
    p.add_argument("--tls-key", metavar="FILE", default=None,
                   help="the certificate's PEM private key (default: serve.tls_key)")
    p.add_argument("--token-file", metavar="FILE", default=None,
                   help="require `Authorization: Bearer <token>` on every request, the token read "
                        "from FILE (mode 0600; default: serve.token_file)")
    p.add_argument("--no-probes", action="store_true", help="do not run the gate on a schedule")
    p.add_argument("--no-export", action="store_true", help="do not run the OTLP exporter")
    # -- the HTTP hook transport
    p.add_argument("--detach", action="store_true",
                   help="start serve in the background (its own session; output in .memhealth/serve.log, "
                        "pid in .memhealth/serve.pid), wait until its hook endpoint answers, and exit")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from memhealth.cliutil import open_project
    from memhealth.errors import MemhealthError, UsageError
    from telemetry.serve import Serve, parse_listen

    if args.all_projects:
        if args.project is not None:
            raise UsageError("serve: --all serves every registered project; drop --project")
        return _serve(_multi(args))
    with open_project(args, store=False) as ctx:  # serve opens its own connections per thread
        project, cfg = ctx.project, ctx.cfg
    guard = _guard(args, cfg)
    host, port = parse_listen(args.listen or cfg["serve"]["listen"], allow_remote=args.allow_remote,
                              secured=guard.secured)
    if args.detach:  # -- the HTTP hook transport: serve in the background
        if guard.tls or guard.token_required:
            raise UsageError("serve --detach serves the HTTP hook transport, which Claude Code reaches "
                             "on loopback without a token: drop --tls-cert/--tls-key/--token-file")
        return _detach(args, project, host, port)
    from memhealth.hook_server import HookRunner
    from telemetry.hook_endpoint import HookEndpoint

    app = Serve(project, cfg, host, port, probe=None if args.no_probes else "default",
                export=not args.no_export, hooks=HookEndpoint(project, HookRunner(project)),
                guard=guard)
    try:
        app.start()
    except OSError as exc:
        raise MemhealthError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    shown = f"[{app.host}]" if ":" in app.host else app.host
    print(f"memhealth serve: listening on {app.scheme}://{shown}:{app.port} for {project.root}"
          f"{_secured_note(guard)}", flush=True)
    return _serve(app)


def _guard(args, cfg):
    """TLS and the bearer token from the flags, else serve.tls_cert/tls_key/token_file."""
    from telemetry.serve_auth import Guard

    section = cfg["serve"]
    return Guard.load(args.tls_cert or section["tls_cert"], args.tls_key or section["tls_key"],
                      args.token_file or section["token_file"])


def _secured_note(guard) -> str:
    if not guard.token_required:
        return ""
    return " (every request needs the bearer token)"


def _detach(args, project, host: str, port: int) -> int:
    """serve --detach: start it in the background and wait until its hook endpoint answers."""
    from memhealth.errors import MemhealthError
    from memhealth.hook_server import start_detached

    if port == 0:
        raise MemhealthError("serve --detach needs a fixed port (the hook settings name it), not 0")
    shown = f"[{host}]" if ":" in host else host
    flags = [flag for flag, on in (("--no-probes", args.no_probes), ("--no-export", args.no_export),
                                   ("--allow-remote", args.allow_remote)) if on]
    pid, state, detail = start_detached(project, f"{shown}:{port}", extra=flags)
    if state != "ok":
        raise MemhealthError(f"serve --detach: pid {pid} did not answer at http://{shown}:{port} ({state}: "
                             f"{detail}); see {project.state_dir}/serve.log")
    print(f"memhealth serve: started in the background (pid {pid}) on http://{shown}:{port} for "
          f"{project.root}; log {project.state_dir}/serve.log", flush=True)
    return 0


def _multi(args):
    """serve --all: a MultiServe over the registry, started."""
    from memhealth.config import load
    from memhealth.errors import MemhealthError
    from memhealth.project import Project
    from memory_core.store import registry
    from telemetry.serve import parse_listen
    from telemetry.serve_all import MultiServe

    cfg = load(None)  # defaults and MEMHEALTH_* only: no one project's file decides the port

    def open_entry(entry):
        project = Project(entry.root)
        return project, load(project.state_dir)

    guard = _guard(args, cfg)
    host, port = parse_listen(args.listen or cfg["serve"]["listen"], allow_remote=args.allow_remote,
                              secured=guard.secured)
    path = registry.registry_path()
    app = MultiServe(path, open_entry, cfg, host, port, probe=None if args.no_probes else "default",
                     export=not args.no_export, guard=guard)
    try:
        app.start()
    except OSError as exc:
        raise MemhealthError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    shown = f"[{app.host}]" if ":" in app.host else app.host
    served = len(app.targets())
    print(f"memhealth serve: listening on {app.scheme}://{shown}:{app.port} for {served} project(s) "
          f"registered in {path}{_secured_note(guard)}", flush=True)
    return app


def _serve(app) -> int:
    """Run until SIGTERM/SIGINT, then stop with one bounded final export."""
    import signal
    import sys
    import threading

    stop = threading.Event()
    received: list[int] = []

    def on_signal(signum, _frame):
        received.append(signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stop.wait(0.5):
        pass
    app.stop()
    last = app.export_state.get("last") or {}
    print(f"memhealth serve: stopped ({signal.Signals(received[0]).name}); "
          f"final export {'ok' if last.get('ok', True) else 'failed'}", flush=True)
    sys.stdout.flush()
    return 0
