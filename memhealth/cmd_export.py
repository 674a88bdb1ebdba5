"""`memhealth export`: ship the telemetry outbox (spans and metrics) to an OTLP collector."""

from __future__ import annotations


def register(sub):
    p = sub.add_parser(
        "export", help="ship recorded spans and metrics to an OTLP collector",
        description="Convert the span rows hooks recorded into OpenTelemetry spans (original ids, "
                    "parents and timestamps) and send them, with the catalog metrics, over OTLP "
                    "(telemetry.otlp_protocol/otlp_endpoint, or the standard OTEL_* variables). "
                    "A watermark makes delivery at-least-once; a dead collector costs at most "
                    "telemetry.export_timeout_s and the backlog ships next time.")
    p.add_argument("--project", default=".", metavar="DIR", help="project root (default: .)")
    p.add_argument("--once", action="store_true",
                   help="export the backlog once and exit (default: repeat every serve.export_interval_s)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)
    return p


def _line(result) -> str:
    if result.disabled:
        return f"export: disabled by OTEL_SDK_DISABLED; backlog {result.backlog} span(s)"
    head = "export: ok" if result.ok else f"export: FAILED ({result.error})"
    return (f"{head}; sent {result.spans_sent} span(s), {result.metrics_sent} metric(s); "
            f"backlog {result.backlog}; dropped {result.dropped} expired, {result.malformed} malformed; "
            f"{result.seconds:.2f}s")


def run(args) -> int:
    import json
    import sys
    import threading

    from memhealth.config import load
    from memhealth.project import Project
    from memory_core.db import connect
    from telemetry.export import OtlpExporter

    project = Project.find(args.project)
    cfg = load(project.state_dir)
    conn = connect(project.db_path)
    exporter = OtlpExporter(cfg)
    try:
        if args.once:
            result = exporter.run_once(conn)
            print(json.dumps(result.as_dict()) if args.json else _line(result))
            return 0 if result.ok else 1
        stop = threading.Event()
        interval = cfg["serve"]["export_interval_s"]
        while not stop.is_set():
            result = exporter.run_once(conn)
            print(json.dumps(result.as_dict()) if args.json else _line(result), flush=True)
            try:
                stop.wait(interval)
            except KeyboardInterrupt:
                break
        sys.stdout.flush()
        return 0
    finally:
        exporter.shutdown()
        conn.close()
