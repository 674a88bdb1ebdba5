"""`memhealth export`: ship the telemetry outbox (spans and metrics) to an OTLP collector."""

from __future__ import annotations

from memhealth.cliutil import add_json_option, add_parser, add_project_option


def register(sub):
    p = add_parser(
        sub, "export", help="ship recorded spans and metrics to an OTLP collector",
        description="Convert the span rows hooks recorded into OpenTelemetry spans (original ids, "
                    "parents and timestamps) and send them, with the catalog metrics, over OTLP "
                    "(telemetry.otlp_protocol/otlp_endpoint, or the standard OTEL_* variables). "
                    "A watermark makes delivery at-least-once; a dead collector costs at most "
                    "telemetry.export_timeout_s and the backlog ships next time.")
    add_project_option(p)
    p.add_argument("--once", action="store_true",
                   help="export the backlog once and exit (default: repeat every serve.export_interval_s)")
    add_json_option(p)
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
    from memhealth.cliutil import open_project
    from telemetry.export import OtlpExporter

    with open_project(args) as ctx:
        return _export(args, ctx.cfg, ctx.conn, OtlpExporter(ctx.cfg))


def _export(args, cfg, conn, exporter) -> int:
    import sys
    import threading

    from memhealth.cliutil import emit_json

    try:
        if args.once:
            result = exporter.run_once(conn)
            emit_json(result.as_dict()) if args.json else print(_line(result))
            return 0 if result.ok else 1
        stop = threading.Event()
        interval = cfg["serve"]["export_interval_s"]
        while not stop.is_set():
            result = exporter.run_once(conn)
            emit_json(result.as_dict()) if args.json else print(_line(result), flush=True)
            try:
                stop.wait(interval)
            except KeyboardInterrupt:
                break
        sys.stdout.flush()
        return 0
    finally:
        exporter.shutdown()
