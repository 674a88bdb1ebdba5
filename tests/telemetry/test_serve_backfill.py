"""Serve's vector backfill: with embeddings configured, chunks an ingest indexed as text and
left without a vector get one on serve's schedule (serve.backfill_interval_s), within
[ingest].budget_s, and /healthz says how it went. A dead embedding server is a recorded
degradation, never a dead schedule."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from memhealth.config import load
from memhealth.project import Project
from memory_core.index import vectors
from memory_core.index.embed import forget_process_state
from memory_core.store.db import connect, vec_unavailable_reason
from telemetry.serve import Serve
from tests.conftest import run_cli
from tests.support.ollama_standin import OllamaStandin, closed_url

pytestmark = pytest.mark.skipif(bool(vec_unavailable_reason()), reason=vec_unavailable_reason() or "")


def _text_only_store(project, n: int = 5) -> None:
    for i in range(n):
        (project / f"note{i}.md").write_text(f"# Note {i}\n\nthe checkpoint guard, part {i}\n", encoding="utf-8")
    assert run_cli("ingest", "docs", "--project", str(project)).returncode == 0  # BM25 only


def _cfg(project, url: str, interval: float = 0.2):
    cfg = load(str(project / ".memhealth"))
    cfg["embedding"].update(url=url, dim=8, bulk_timeout_s=5.0)
    cfg["serve"]["backfill_interval_s"] = interval
    return cfg


def _health(app) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{app.port}/healthz", timeout=5) as resp:
        return json.loads(resp.read())


def _wait(predicate, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.1)
    return predicate()


def test_serve_backfills_the_vectors_an_ingest_left(project):
    _text_only_store(project)
    with OllamaStandin("healthy", dim=8) as ollama:
        app = Serve(Project(str(project)), _cfg(project, ollama.url), port=0, probe=None, export=False).start()
        try:
            db = str(project / ".memhealth" / "memory.db")

            def full():
                conn = connect(db)
                try:
                    with_vector, total = vectors.coverage(conn)
                finally:
                    conn.close()
                return total and with_vector == total

            assert _wait(full), "serve did not backfill"
            health = _wait(lambda: (h := _health(app))["vectors"]["runs"] >= 2 and h)
        finally:
            app.stop()
    assert health["vectors"]["last_error"] is None
    assert health["vectors"]["last"] is None  # the run after the backfill found nothing to do


def test_a_dead_embedding_server_is_a_recorded_degradation_and_the_schedule_goes_on(project):
    forget_process_state()  # the breaker and log-once sets, as a new serve process has them
    _text_only_store(project, 2)
    app = Serve(Project(str(project)), _cfg(project, closed_url()), port=0, probe=None, export=False).start()
    try:
        health = _wait(lambda: (h := _health(app))["vectors"]["runs"] >= 2 and h)
    finally:
        app.stop()
    assert health["vectors"]["last"]["state"] == "degraded" and health["vectors"]["errors"] == 0
    conn = connect(str(project / ".memhealth" / "memory.db"))
    try:
        logged = conn.execute("SELECT component, reason FROM degradations").fetchall()
    finally:
        conn.close()
    # once per reason (unreachable, then the open circuit), not once per scheduled run
    assert logged and {c for c, _r in logged} == {"embedding"} and len(logged) == len(set(logged))
    assert health["vectors"]["runs"] >= 2
    conn = connect(str(project / ".memhealth" / "memory.db"))
    try:
        assert vectors.coverage(conn)[0] == 0
    finally:
        conn.close()


def test_no_backfill_thread_without_embeddings_or_with_interval_zero(project):
    cfg = load(str(project / ".memhealth"))
    app = Serve(Project(str(project)), cfg, port=0, probe=None, export=False).start()
    try:
        assert "memhealth-vectors" not in [t.name for t in app._threads]
    finally:
        app.stop()
    app = Serve(Project(str(project)), _cfg(project, closed_url(), interval=0), port=0, probe=None,
                export=False).start()
    try:
        assert "memhealth-vectors" not in [t.name for t in app._threads]
    finally:
        app.stop()
