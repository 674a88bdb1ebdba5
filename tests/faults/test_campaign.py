"""The fault campaign (benchmarks/fault_campaign.py) in CI: a fixed sample of one run per fault
class, rotating over the hook events, must end with every run recorded correctly, so a
regression in any class fails here. The oracle itself is shown to fail: a run judged against
a wrong expectation, or with its row taken away, is not called correct."""

from __future__ import annotations

import importlib.util
import os

from memory_core.store.db import sqlite3
from tests.conftest import REPO


def _load():
    spec = importlib.util.spec_from_file_location("fault_campaign", os.path.join(REPO, "benchmarks", "fault_campaign.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fc = _load()


def test_the_campaign_sample_leaves_nothing_misclassified_silent_or_lost(tmp_path):
    results = fc.campaign(sample=True, keep=str(tmp_path / "camp"))
    classes = {r["class"] for r in results}
    expected = {"control", "kill_stdin_open", "kill_locked", "kill_before_finish", "kill_mid_transaction",
                "kill_after_commit", "kill_mid_spill", "lock_past_busy_timeout", "fsize_limit", "readonly_state_dir",
                "symlink_spill", "symlink_db", "symlink_wal", "store_reset", "shm_deleted", "wal_deleted",
                "db_is_directory", "db_corrupt", "clock_skew", "embedding_dead", "embedding_404", "embedding_500", "stdout_closed", "stdin_binary", "stdin_array",
                "stdin_empty", "stdin_truncated", "stdin_deeply_nested", "stdin_non_utf8", "long_input",
                "ablation_unreadable", "config_crlf", "fifo_in_docs"}
    if fc.can_mount():
        expected.add("disk_full")
    assert classes == expected, classes ^ expected
    assert {r["event"] for r in results} == set(fc.EVENTS)
    bad = [f"{r['verdict']}: {r['class']} {r['event']} ({r['variant']}): {r['why']}" for r in results
           if r["verdict"] != "correct"]
    assert not bad, "\n".join(bad)


def _cell(tmp_path):
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(fc.SITECUSTOMIZE)
    return fc.Cell(str(tmp_path), "c", str(inject))


def test_the_oracle_calls_a_wrong_expectation_misclassified_or_silent(tmp_path):
    c = _cell(tmp_path)
    baseline = set(fc._red(c.gate()))  # a fresh project: ingestion never ran
    prior, decided = c.heartbeats(), c.decisions()
    run = c.hook("prompt")
    verdict = c.gate()
    assert fc.judge(c, run, fc.ok(), verdict, baseline, prior, decided) == ("correct", "")
    word, why = fc.judge(c, run, fc.Oracle("error", "db_locked"), verdict, baseline, prior, decided)
    assert word == "misclassified" and "want error/db_locked" in why
    # a finding the gate does not show: nothing says it failed
    word, _ = fc.judge(c, run, fc.Oracle("ok", detail=("store reset",)), verdict, baseline, prior, decided)
    assert word == "silent"
    # a clean run beside a RED the baseline lacks is a false alarm
    word, why = fc.judge(c, run, fc.ok(), verdict, set(), prior, decided)
    assert word == "misclassified" and "ingest_freshness" in why


def test_the_oracle_calls_a_missing_row_or_decision_lost(tmp_path):
    c = _cell(tmp_path)
    first = c.hook("prompt")
    prior, decided = c.heartbeats(), c.decisions()
    run = c.hook("prompt")
    verdict = c.gate()
    conn = sqlite3.connect(c.db, isolation_level=None)
    conn.execute("DELETE FROM decisions WHERE trace_id = (SELECT trace_id FROM heartbeats WHERE pid = ?)", (run.pid,))
    conn.close()
    assert fc.judge(c, run, fc.ok(), verdict, set(), prior, decided) == ("lost", "the prompt's decision row is missing")
    conn = sqlite3.connect(c.db, isolation_level=None)
    conn.execute("DELETE FROM heartbeats WHERE pid = ?", (first.pid,))
    conn.close()
    assert fc.judge(c, run, fc.ok(), verdict, set(), prior, decided)[0] == "lost"
