"""Alertmanager webhooks into the alert budget: parse and validate a v4 body, decide each
alert with the project's budget policy (probes/budget.py), append every decision to the
sink file, forward pages and digests to the webhook. Shared by `memhealth serve` and
`serve --all` (which routes each alert to its project's intake by the `project` label).

    intake = AlertIntake(project, cfg, problems)
    status, reply = intake.receive(body)     # 200 with the decisions; 400 kept as rejected
"""

from __future__ import annotations

import json
import os
import threading
import time

from memory_core.store.db import connect

MAX_ALERT_BODY = 4 * 1024 * 1024

RAW_PREFIX_BYTES = 1024  # a rejected body is kept as its head and a hash, never whole


def bounded(body: bytes) -> dict:
    """What the sink keeps of a rejected body: a prefix, its length and a hash (the whole
    body would let five requests write 20 MB)."""
    from hashlib import sha256

    return {"raw": body[:RAW_PREFIX_BYTES].decode("utf-8", "replace"), "raw_bytes": len(body),
            "raw_sha256": sha256(body).hexdigest()}


def decision_dict(decision) -> dict:
    """A budget Decision (dataclass, slotted class, dict) as a JSON-ready dict."""
    if isinstance(decision, dict):
        return dict(decision)
    for attr in ("to_dict", "as_dict"):
        if callable(getattr(decision, attr, None)):
            return dict(getattr(decision, attr)())
    import dataclasses

    if dataclasses.is_dataclass(decision):
        return dataclasses.asdict(decision)
    slots = getattr(type(decision), "__slots__", ())
    if slots:
        return {name: getattr(decision, name, None) for name in slots}
    return dict(vars(decision))


def validate_webhook(payload) -> list[dict]:
    """The alerts of an Alertmanager webhook payload; ValueError says what is wrong."""
    if not isinstance(payload, dict):
        raise ValueError(f"body is a JSON {type(payload).__name__}, expected an object")
    alerts = payload.get("alerts")
    if not isinstance(alerts, list):
        raise ValueError("body has no 'alerts' list (Alertmanager webhook v4)")
    for i, alert in enumerate(alerts):
        if not isinstance(alert, dict):
            raise ValueError(f"alerts[{i}] is not an object")
        for field in ("labels", "annotations"):  # what the budget policy reads as a mapping
            if not isinstance(alert.get(field, {}), dict):
                raise ValueError(f"alerts[{i}].{field} is not an object")
    return alerts


def parse_webhook(body: bytes) -> tuple[dict, list[dict], str | None]:
    """(payload, alerts, receiver) of an Alertmanager webhook body; ValueError says what is
    wrong (not JSON, not UTF-8, not the v4 shape)."""
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(str(exc)) from None
    alerts = validate_webhook(payload)
    receiver = payload.get("receiver") if isinstance(payload.get("receiver"), str) else None
    return payload, alerts, receiver


# store failures a retry cannot cure: the alerts are kept in the sink and the delivery is
# answered 200 (in serve --all, one broken project must not make every webhook a 500)
STORE_BROKEN = frozenset({"db_corrupt", "db_not_file", "db_symlink", "db_missing", "shm_deleted"})
MAX_ALERTS_PER_REQUEST = 2000  # one delivery past this is refused (413), recorded bounded
SINK_MAX_BYTES = 4 * 1024 * 1024  # the sink rotates to <sink>.1 past this: at most twice this on disk


class Sink:
    """Append-only NDJSON file (0600), one decision per line, safe across handler threads;
    past SINK_MAX_BYTES it moves to `<path>.1` (the one older generation kept)."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()

    def append(self, record: dict) -> None:
        line = (json.dumps(record, default=str, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, line)
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if size > SINK_MAX_BYTES:
                try:
                    os.replace(self.path, self.path + ".1")
                except OSError:
                    pass


def route_webhooks(entries: list[str], problems: list[str]) -> dict[str, str]:
    """{route: URL} from ROUTE=URL entries; an entry that is not one (or not http(s)) is left
    out and said in `problems` (serve's /healthz), never a crash of the intake."""
    from urllib.parse import urlsplit

    out: dict[str, str] = {}
    for entry in entries:
        route, sep, url = entry.partition("=")
        parts = urlsplit(url.strip())
        if not sep or not route.strip() or parts.scheme not in ("http", "https") or not parts.netloc:
            problems.append(f"[alerts].route_webhooks entry {entry[:80]!r}: expected ROUTE=https://URL; ignored")
            continue
        out[route.strip()] = url.strip()
    return out


class AlertIntake:
    """One project's side of POST /alerts: the budget policy on its store, its NDJSON sink
    and its forwarding webhook. Single-project serve has one; serve --all one per project,
    each fed the alerts whose `project` label names it.

        intake = AlertIntake(project, cfg, problems)
        code, reply = intake.receive(body)               # a whole webhook body
        code, reply = intake.decide(alerts, now, receiver, payload, body)   # parsed, this project's share
    """

    def __init__(self, project, cfg, problems: list[str]):
        self.project = project
        self.cfg = cfg
        self.sink = Sink(self._sink_path(cfg["alerts"]["sink_file"], problems))
        self.route_urls = route_webhooks(cfg["alerts"].get("route_webhooks", []), problems)
        self._lock = threading.Lock()
        self._conn = None
        self._opened = None

    def _sink_path(self, sink_file: str, problems: list[str]) -> str:
        """The sink inside .memhealth/, or the default when config names a path outside it: a
        committed config.toml is untrusted for paths (`../../x` must not write outside)."""
        state = os.path.realpath(self.project.state_dir)
        path = os.path.realpath(sink_file if os.path.isabs(sink_file) else os.path.join(self.project.root, sink_file))
        if os.path.commonpath([state, path]) != state or path == state:
            problems.append(f"[alerts].sink_file {sink_file!r} is outside .memhealth/: refused, "
                            f"using .memhealth/alerts.ndjson")
            return os.path.join(self.project.state_dir, "alerts.ndjson")
        return path

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.project.db_path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def receive(self, body: bytes) -> tuple[int, dict]:
        """Handle one webhook POST; (HTTP status, response JSON). Never loses the body."""
        now = time.time()
        try:
            payload, alerts, receiver = parse_webhook(body)
        except ValueError as exc:
            self.sink.append({"ts": now, "decision": "rejected", "error": str(exc)[:300], **bounded(body)})
            return 400, {"error": str(exc)[:300]}
        return self.decide(alerts, now, receiver, payload, body)

    def decide(self, alerts: list[dict], now: float, receiver: str | None, payload: dict,
               body: bytes) -> tuple[int, dict]:
        """Decide, record and forward these alerts (one webhook's, or its share for this
        project); a policy failure keeps them in the sink and answers 500."""
        if len(alerts) > MAX_ALERTS_PER_REQUEST:  # 14,000 in one body held the write lock 9.4 s
            error = (f"{len(alerts)} alerts in one delivery, over the cap of {MAX_ALERTS_PER_REQUEST}: "
                     "refused (lower the group's size in Alertmanager: group_by, max_alerts)")
            self.sink.append({"ts": now, "decision": "rejected", "error": error, "alerts": len(alerts),
                              **bounded(body)})
            return 413, {"error": error}
        try:
            decisions = self._decide(alerts, now, receiver)
        except Exception as exc:  # the policy failed: keep the alerts, say so
            if getattr(exc, "reason", "") == "alert_payload":  # probes.errors.AlertPayloadError
                self.sink.append({"ts": now, "decision": "rejected", "error": str(exc)[:300], **bounded(body)})
                return 400, {"error": str(exc)[:300]}
            self.sink.append({"ts": now, "decision": "error", "error": f"{type(exc).__name__}: {exc}"[:300],
                              "raw": {**payload, "alerts": alerts}})
            if getattr(exc, "reason", "") in STORE_BROKEN:  # a retry cannot help until someone fixes it
                return 200, {"error": f"this project's store cannot be used ({exc.reason}: "
                                      f"{str(exc)[:200]}); alerts kept in the sink", "store_broken": True}
            return 500, {"error": "alert budget policy failed; alerts kept in the sink"}
        records = []
        for decision in decisions:
            record = decision_dict(decision)
            record.setdefault("ts", now)
            self.sink.append(record)
            records.append(record)
        self._forward(records)
        return 200, {"decisions": len(records)}

    def _decide(self, alerts: list[dict], now: float, receiver: str | None) -> list:
        budget_py = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                 "probes", "budget.py")
        if not os.path.exists(budget_py):
            # no budget policy built into this install: record every alert as noted
            return [{"decision": "noted", "route": a.get("labels", {}).get("severity", "default"),
                     "alertname": a.get("labels", {}).get("alertname", ""), "status": a.get("status")}
                    for a in alerts]
        from probes import budget

        with self._lock:
            # the clock is read under the lock: Alertmanager flushes groups in parallel, and a
            # delivery whose `now` predates a page another thread just stored would not count
            # that page against the budget (three pages of two, seen with the team routes)
            now = max(now, time.time())
            if self._conn is not None and self._identity() != self._opened:
                self._conn.close()  # deleted or replaced under serve: never decide on a ghost file
                self._conn = None
            if self._conn is None:
                self._conn = connect(self.project.db_path)
                self._opened = self._identity()
            return budget.decide(self._conn, alerts, now, self.cfg, route=receiver)

    def _forward(self, records: list[dict]) -> None:
        """POST pages and digests to their route's URL ([alerts].route_webhooks), else to
        alerts.webhook_url, one short-lived thread per URL (bounded)."""
        default = self.cfg["alerts"]["webhook_url"]
        by_url: dict[str, list[dict]] = {}
        for r in records:
            if r.get("decision") in ("paged", "digest") or r.get("digest") or r.get("meta"):
                url = self.route_urls.get(str(r.get("route") or ""), default)
                if url:
                    by_url.setdefault(url, []).append(r)
        for url, outgoing in by_url.items():
            self._post(url, outgoing)

    def _post(self, url: str, outgoing: list[dict]) -> None:
        def post():
            import urllib.request

            data = json.dumps({"source": "memhealth", "decisions": outgoing}, default=str).encode()
            req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=float(self.cfg["telemetry"]["export_timeout_s"])):
                    pass
            except Exception as exc:  # any failure to forward is recorded; a daemon thread never raises
                self.sink.append({"ts": time.time(), "decision": "forward_failed", "error": str(exc)[:300],
                                  "count": len(outgoing)})

        threading.Thread(target=post, name="memhealth-webhook", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
