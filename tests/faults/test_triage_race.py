"""Two triage decisions on one candidate at once: exactly one wins, the other exits non-zero
naming the change, and the store and the record file agree (a rejected candidate never
leaves a `status: confirmed` file that ingest would index as memory). Both succeed only
when they ran one after the other: a confirm, then the reject of the confirmed record."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import clean_env, memhealth_cmd, rows
from tests.memory_core.records.test_triage import SESSION, capture, listing

PAIRS = 5  # rounds of candidates; each round races confirm against reject on every one


def test_confirm_and_reject_racing_on_one_candidate_leave_one_consistent_outcome(project, tmp_path):
    outcomes = []
    for round_ in range(PAIRS):
        # new words each round: a rejected statement is never proposed again
        lines = [(role, text.replace("the writer", f"writer {round_}").replace("DELETE", f"DELETE {round_}")
                  .replace("yesterday", f"day {round_}")) for role, text in SESSION]
        capture(project, tmp_path / f"s{round_}.jsonl", lines, session=f"s{round_}")
        for item in [i for i in listing(project) if i["state"] == "pending"]:
            cid = str(item["id"])
            procs = [subprocess.Popen(memhealth_cmd() + ["triage", action, cid], cwd=str(project), env=clean_env(),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                     for action in ("confirm", "reject")]
            codes = [p.wait(60) for p in procs]
            errs = [p.stderr.read().decode() for p in procs]
            for p in procs:
                p.stdout.close()
                p.stderr.close()
            assert 0 in codes, (cid, codes, errs)
            for code, err in zip(codes, errs, strict=True):
                if code != 0:  # the loser says why, in one line
                    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
                    assert "decided it meanwhile" in err or "not pending" in err, err
            ((state, record_path),) = rows(project, "SELECT state, record_path FROM capture_candidates WHERE id = ?",
                                          (int(cid),))
            records = project / ".memhealth" / "memory" / "records"
            files = [f for f in os.listdir(records) if f"-{cid}-" in f] if records.exists() else []
            if state == "rejected":
                assert files == [] and record_path is None, (cid, files)
            else:
                assert state == "confirmed" and files == [os.path.basename(record_path)], (cid, state, files)
            # both succeed only one after the other: a confirm, then the reject of the confirmed
            assert codes != [0, 0] or state == "rejected", (cid, codes, state)
            outcomes.append(state)
    assert len(outcomes) >= 4 * PAIRS
    # nothing rejected is memory: no chunk of a rejected candidate's record exists
    rejected = {cid for (cid,) in rows(project, "SELECT id FROM capture_candidates WHERE state = 'rejected'")}
    indexed = [p for (p,) in rows(project, "SELECT DISTINCT path FROM chunks WHERE source = 'memory'")]
    assert not [p for p in indexed for cid in rejected if f"-{cid}-" in p], indexed
