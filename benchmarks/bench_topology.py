"""What the team topology costs, measured from a real scrape: series per project, samples per
second at the shipped 15 s scrape interval, remote-write bytes per sample, and central disk
per sample. The sizing table in docs/how-to/team-topology.md is this arithmetic.

One developer machine: five projects `memhealth init`ed and ingested, each driven through a
session by the real hooks (session start, prompts with and without intent, a tool call,
stop, session end) and a gate run, so the histogram, decision and gate series exist.
`memhealth serve --all` serves them; a real Prometheus in agent mode running the shipped
compose/team/prometheus-agent.yml scrapes it every 15 s and remote_writes to a real central
Prometheus (remote-write receiver, exemplar storage, the memhealth rules loaded).

Disk: a short run leaves the central TSDB in its head block (chunks not yet compacted), so
the series the central side holds are written as a 2-hour OpenMetrics file at 15 s steps
(each series' real labels and values) and turned into a real TSDB block by
`promtool tsdb create-blocks-from openmetrics`; block bytes over samples is the disk figure.
Values are held for the two hours (an idle developer, most of a day), and, as a second
figure, every counter moves at every scrape (busier than a person).

Traces: each project's outbox is exported once (`memhealth export --once`, spans only, as the
team setup configures it) to a loopback OTLP/HTTP endpoint that counts the bytes it receives:
bytes per hook invocation, what a central Collector and Tempo take in per hook.

    python benchmarks/run.py topology [--quick]
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from common import memhealth_cmd, row  # noqa: E402

PROJECTS = ("api", "web", "infra", "docs-site", "ml")
SCRAPE_S = 15  # the shipped agent config's interval
DAY_S = 86400


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def _wait(what: str, check, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = check()
            if got:
                return got
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def _run(args, env, cwd=None, stdin: bytes | None = None) -> None:
    proc = subprocess.run(memhealth_cmd() + args, env=env, cwd=cwd, input=stdin,
                          capture_output=True, timeout=120)
    if proc.returncode not in (0, 1) or (args[0] != "gate" and proc.returncode):
        raise RuntimeError(f"memhealth {' '.join(args)}: {proc.stderr.decode()[-500:]}")


def _hook(event: str, claude: str, root: str, env, **fields) -> None:
    body = {"session_id": "bench-sess", "cwd": root, "hook_event_name": claude,
            "transcript_path": os.path.join(root, "t.jsonl"), **fields}
    _run(["hook", event], env, cwd=root, stdin=json.dumps(body).encode())


def _project(base: str, name: str, env) -> None:
    """A project as a developer leaves it after one session: init, ingest, hooks."""
    root = os.path.join(base, "src", name)
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as fh:
        fh.write(f"# {name}\n\nThe ingest scheduler writes the ledger snapshot every hour.\n")
    with open(os.path.join(root, "docs", "design.md"), "w", encoding="utf-8") as fh:
        fh.write("# Design\n\n## Retry budget\n\nThe proxy retries twice, then the circuit opens.\n")
    _run(["init", "--project", root], env)
    _run(["ingest", "--project", root], env)
    _hook("session-start", "SessionStart", root, env, source="startup")
    for prompt in ("investigate why the proxy retry budget opens the circuit", "thanks",
                   "should we rebuild the ledger snapshot writer"):
        _hook("prompt", "UserPromptSubmit", root, env, prompt=prompt)
    tool = {"tool_name": "Read", "tool_input": {"file_path": os.path.join(root, "README.md")},
            "tool_use_id": "t1"}
    _hook("pre-tool", "PreToolUse", root, env, **tool)
    _hook("post-tool", "PostToolUse", root, env, tool_response={"content": "ok"}, **tool)
    _hook("stop", "Stop", root, env, stop_hook_active=False, last_assistant_message="done")
    _hook("session-end", "SessionEnd", root, env, reason="exit")


class _OtlpSink:
    """A loopback OTLP/HTTP endpoint that acknowledges every export and counts its bytes as
    they arrive on the wire (what a central Collector receives)."""

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests, self.bytes = 0, 0
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.endswith("/v1/traces"):
                    sink.requests += 1
                    sink.bytes += len(body)
                # an empty ExportTraceServiceResponse is zero bytes of protobuf
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _export(base: str, env) -> tuple[int, int]:
    """Export every project's outbox once, spans only, as the team setup configures it:
    (requests, bytes on the wire)."""
    sink = _OtlpSink()
    try:
        for name in PROJECTS:
            _run(["export", "--once", "--project", os.path.join(base, "src", name)],
                 dict(env, MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=sink.url,
                      MEMHEALTH_TELEMETRY_OTLP_METRICS="false"))
    finally:
        sink.stop()
    return sink.requests, sink.bytes


def _count_rows(base: str, sql: str) -> int:
    from memory_core.store.db import sqlite3

    total = 0
    for name in PROJECTS:
        db = sqlite3.connect(os.path.join(base, "src", name, ".memhealth", "memory.db"))
        try:
            total += db.execute(sql).fetchone()[0]
        finally:
            db.close()
    return total


def _traces(base: str, env) -> dict:
    """Trace bytes of the hooks' session, then of one gate run per project (serve runs the
    gate every serve.probe_interval_s, 60 s, in every project, hooks or not)."""
    invocations = _count_rows(base, "SELECT count(*) FROM heartbeats WHERE hook != 'gate'")
    hook_spans = _count_rows(base, "SELECT count(*) FROM spans")
    hook_requests, hook_bytes = _export(base, env)
    for name in PROJECTS:
        _run(["gate", "--project", os.path.join(base, "src", name)], env)
    gate_spans = _count_rows(base, "SELECT count(*) FROM spans") - hook_spans
    gate_requests, gate_bytes = _export(base, env)
    return {"invocations": invocations, "hook_spans": hook_spans, "hook_bytes": hook_bytes,
            "hook_requests": hook_requests, "gate_spans": gate_spans, "gate_bytes": gate_bytes,
            "gate_requests": gate_requests}


class _Proc:
    def __init__(self, cmd, log: str, env=None):
        self.log = open(log, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.log.close()


def _metric(url: str, name: str) -> float:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith((name + " ", name + "{")))


def _count(url: str, name: str) -> int:
    """How many series of `name` a process exposes on its own /metrics."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        return sum(1 for line in resp.read().decode().splitlines() if line.startswith(name + "{"))


def _query(url: str, expr: str) -> list[dict]:
    return _get(url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))["data"]["result"]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


MOVING = ("_total", "_count", "_sum", "_bucket")


def _block_bytes_per_sample(series: list[dict], tmp: str, promtool: str,
                            busy: bool) -> tuple[float, int]:
    """A 2-hour TSDB block of these series at 15 s steps, made by promtool: bytes per sample.
    Idle: every value held. Busy: every counter, histogram bucket and timestamp moves at
    every scrape (one hook per 15 s in every project: more than a person drives)."""
    steps = 2 * 3600 // SCRAPE_S
    start = (int(time.time()) // 7200 - 24) * 7200  # a whole 2 h block, a day back
    path = os.path.join(tmp, "series.om")
    # untyped: only the samples matter for the block, and OpenMetrics wants one TYPE per family
    with open(path, "w", encoding="utf-8") as fh:
        lines = []
        for s in series:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(s["metric"].items())
                              if k != "__name__")
            name = s["metric"]["__name__"]
            step = 0.0
            if busy and name.endswith(MOVING):
                step = 1.0
            elif busy and name.endswith("_timestamp_seconds"):
                step = float(SCRAPE_S)
            lines.append((f"{name}{{{labels}}}", float(s["value"][1]), step))
        for i in range(steps):
            ts = start + i * SCRAPE_S
            fh.writelines(f"{key} {value + i * step!r} {ts}\n" for key, value, step in lines)
        fh.write("# EOF\n")
    out = os.path.join(tmp, "blocks-busy" if busy else "blocks-idle")
    proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", path, out],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise RuntimeError(proc.stdout[-1000:] + proc.stderr[-1000:])
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(out) for f in files)
    return size / (len(series) * steps), len(series) * steps


def bench(quick: bool) -> list[dict]:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not prometheus or not promtool:
        return [row("topology sizing", float("nan"), "", note="needs prometheus and promtool")]
    import yaml

    run_s = 35 if quick else 95  # 2-6 scrapes at 15 s after the first
    tmp = tempfile.mkdtemp(prefix="memhealth-topology-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_"))}
    env["XDG_STATE_HOME"] = os.path.join(tmp, "xdg")
    procs: list[_Proc] = []
    try:
        for name in PROJECTS:
            _project(tmp, name, env)
        traces = _traces(tmp, env)
        serve = subprocess.Popen(memhealth_cmd() + ["serve", "--all", "--listen", "127.0.0.1:0",
                                                    "--no-export"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(serve.stdout.readline()), daemon=True)
        reader.start()
        reader.join(30)
        if not first or "listening on " not in first[0]:
            serve.kill()
            raise RuntimeError(f"serve --all did not start: {first!r}")
        target = first[0].split("listening on ", 1)[1].split()[0].split("://", 1)[1].rstrip("/")

        # the central Prometheus: the shipped central config's rules, a receiver, exemplars
        cport, aport = _free_port(), _free_port()
        central_url, agent_url = f"http://127.0.0.1:{cport}", f"http://127.0.0.1:{aport}"
        with open(os.path.join(REPO, "compose", "team", "prometheus-central.yml"), encoding="utf-8") as fh:
            central = yaml.safe_load(fh)
        central["rule_files"] = [os.path.join(REPO, "alerts", "memhealth.rules.yaml")]
        del central["alerting"], central["scrape_configs"]
        os.makedirs(os.path.join(tmp, "central"))
        with open(os.path.join(tmp, "central", "prometheus.yml"), "w", encoding="utf-8") as fh:
            yaml.safe_dump(central, fh)
        procs.append(_Proc([prometheus, f"--config.file={tmp}/central/prometheus.yml",
                            f"--storage.tsdb.path={tmp}/central/tsdb",
                            f"--web.listen-address=127.0.0.1:{cport}",
                            "--web.enable-remote-write-receiver",
                            "--enable-feature=exemplar-storage"], f"{tmp}/central/log"))
        # the agent: the shipped config, pointed at this serve and this central
        with open(os.path.join(REPO, "compose", "team", "prometheus-agent.yml"), encoding="utf-8") as fh:
            agent = yaml.safe_load(fh)
        agent["scrape_configs"][0]["static_configs"] = [{"targets": [target]}]
        agent["remote_write"][0]["url"] = central_url + "/api/v1/write"
        os.makedirs(os.path.join(tmp, "agent"))
        with open(os.path.join(tmp, "agent", "prometheus.yml"), "w", encoding="utf-8") as fh:
            yaml.safe_dump(agent, fh)
        _wait("central ready", lambda: _get(central_url + "/api/v1/status/buildinfo"), 30)
        procs.append(_Proc([prometheus, "--enable-feature=agent,expand-external-labels,exemplar-storage",
                            f"--config.file={tmp}/agent/prometheus.yml",
                            f"--storage.agent.path={tmp}/agent/wal",
                            f"--web.listen-address=127.0.0.1:{aport}"], f"{tmp}/agent/log",
                           env=dict(env, MEMHEALTH_TEAM="team-a", MEMHEALTH_MACHINE="bench")))
        _wait("the first forwarded scrape", lambda: _query(
            central_url, 'count(memhealth_build_info{machine="bench"}) == 5'), 60)
        time.sleep(run_s)

        # series per project as the central side holds them (scraped, with the agent's labels)
        per_project = {r["metric"]["project"]: int(float(r["value"][1])) for r in _query(
            central_url, 'count by (project) ({job="memhealth",project!=""})')}
        per_machine = int(float(_query(central_url, 'count({job="memhealth",project=""})')[0]["value"][1]))
        recorded = {r["metric"].get("project"): int(float(r["value"][1])) for r in _query(
            central_url, 'count by (project) ({__name__=~"instance_project.*"})')}
        exemplars = _get(central_url + "/api/v1/query_exemplars?" + urllib.parse.urlencode({
            "query": "memhealth_hook_duration_seconds_bucket", "start": time.time() - 3600,
            "end": time.time()}))["data"]
        samples = _metric(agent_url, "prometheus_remote_storage_samples_total")
        sent = _metric(agent_url, "prometheus_remote_storage_bytes_total")
        ex_sent = _metric(agent_url, "prometheus_remote_storage_exemplars_total")
        failed = _metric(agent_url, "prometheus_remote_storage_samples_failed_total")
        meta_bytes = _metric(agent_url, "prometheus_remote_storage_metadata_bytes_total")
        rule_s = _metric(central_url, "prometheus_rule_group_last_duration_seconds")
        groups = _count(central_url, "prometheus_rule_group_last_duration_seconds")
        every = _query(central_url, '{job="memhealth"}')
        block_bps, block_samples = _block_bytes_per_sample(every, tmp, promtool, busy=False)
        busy_bps, _ = _block_bytes_per_sample(every, tmp, promtool, busy=True)
    finally:
        for p in procs:
            p.stop()
        try:
            serve.terminate()
            serve.wait(15)
            serve.stdout.close()
        except (NameError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(tmp, ignore_errors=True)

    series_p = sorted(per_project.values())
    mean_p = sum(series_p) / len(series_p)
    rw_bps = sent / samples if samples else float("nan")
    rows = [
        row("series per project (memhealth_*, central)", mean_p, "series",
            note=f"min {series_p[0]}, max {series_p[-1]} over {len(series_p)} projects"),
        row("series per machine outside projects", per_machine, "series",
            note="up, scrape_*, serve's process_* and python_*"),
        row("recorded series per project (central rules)", sum(recorded.values()) / max(len(recorded), 1),
            "series", note=f"instance_project:* for {len(recorded)} projects"),
        row("samples/s per project at 15 s", mean_p / SCRAPE_S, "samples/s"),
        row("remote-write bytes per sample", rw_bps, "B/sample",
            note=f"{int(samples)} samples, {int(sent)} bytes snappy-compressed protobuf, "
                 f"{int(ex_sent)} exemplars, {int(failed)} failed; metadata {int(meta_bytes)} B"),
        row("central block bytes per sample, idle", block_bps, "B/sample",
            note=f"promtool block of {len(every)} real series x 2 h at 15 s ({block_samples} samples), "
                 "values held"),
        row("central block bytes per sample, busy", busy_bps, "B/sample",
            note="the same, every counter, bucket and timestamp moving at every scrape"),
        row("central rule evaluation per round, 5 projects", rule_s * 1000, "ms",
            note=f"sum of prometheus_rule_group_last_duration_seconds over {groups} groups"),
        row("OTLP trace bytes per hook invocation", traces["hook_bytes"] / traces["invocations"], "B",
            note=f"{traces['invocations']} hook runs, {traces['hook_spans']} spans "
                 f"({traces['hook_spans'] / traces['invocations']:.1f} per run), "
                 f"{traces['hook_bytes']} bytes of protobuf in {traces['hook_requests']} requests"),
        row("OTLP trace bytes per gate run", traces["gate_bytes"] / len(PROJECTS), "B",
            note=f"{traces['gate_spans'] / len(PROJECTS):.1f} spans per run; serve --all runs one "
                 "per project every 60 s"),
        row("exemplar series on the central side", len(exemplars), "series",
            note="hook-duration buckets whose trace ids crossed"),
    ]
    return rows


if __name__ == "__main__":
    for r in bench(quick="--quick" in sys.argv):
        print(json.dumps(r))
