"""`memhealth triage` through the real CLI: candidates become memory, or never come back."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time

from tests.conftest import clean_env, memhealth_cmd, payload, rows, run_cli, run_hook
from tests.memhealth.test_capture_worker import wait_for, work_status


def turn(role: str, text: str, n: int, session: str = "s1") -> str:
    content = text if role == "user" else [{"type": "text", "text": text}]
    return json.dumps({"type": role, "sessionId": session, "uuid": f"{session}-{n}",
                       "timestamp": f"2026-11-30T10:00:{n:02d}Z", "message": {"role": role, "content": content}})


SESSION = [
    ("user", "The WAL checkpoint stalls the writer again. Look into it."),
    ("assistant", "I tried a passive checkpoint every second and it still stalled the writer."),
    ("user", "No, don't switch the journal mode back to DELETE."),
    ("assistant", "We decided to run checkpoints from a dedicated thread instead of the writer."),
    ("assistant", "I reverted the busy-timeout change from yesterday."),
]


def capture(project, transcript, lines, session="s1") -> None:
    with open(transcript, "w", encoding="utf-8") as fh:
        fh.write("\n".join(turn(r, t, i, session) for i, (r, t) in enumerate(lines, 1)) + "\n")
    before = len(work_status(project))
    run_hook("session-end", payload("SessionEnd", project, session_id=session,
                                    transcript_path=str(transcript)), cwd=str(project))
    wait_for(lambda: work_status(project)[before:] == ["done"])


def listing(project) -> list[dict]:
    proc = run_cli("triage", "--json", cwd=str(project))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["version"] == 1
    return data["candidates"]


def by_kind(items) -> dict:
    return {i["kind"]: i for i in items}


def test_list_confirm_makes_an_indexed_memory_record_with_provenance(project, tmp_path):
    transcript = tmp_path / "s1.jsonl"
    capture(project, transcript, SESSION)
    items = listing(project)
    assert [i["kind"] for i in items] == ["dead_end", "correction", "decision", "dead_end"]
    dead = items[0]
    assert dead["state"] == "pending" and dead["line"] == 2 and dead["session_id"] == "s1"
    assert dead["transcript"] == str(transcript) and dead["ts"] == "2026-11-30T10:00:02Z"
    assert rows(project, "SELECT value FROM meta WHERE key = 'capture.pending'") == [("4",)]

    proc = run_cli("triage", "confirm", str(dead["id"]), cwd=str(project))
    assert proc.returncode == 0, proc.stderr
    rel = proc.stdout.split("→")[1].strip()
    assert rel.startswith(".memhealth/memory/records/dead_end-")
    text = (project / rel).read_text()
    head = text.split("---")[1]
    for line in ("type: dead_end", "status: confirmed", "name: I tried a passive checkpoint every second",
                 f"source: {transcript}:2 (session s1, 2026-11-30T10:00:02Z, assistant)"):
        assert line in head, (line, head)
    assert "recorded: 20" in head
    # indexed at once, as memory, with the memory source's weight
    chunks = rows(project, "SELECT kind, signal_weight, content FROM chunks WHERE source = 'memory' AND path = ?",
                  (rel,))
    assert len(chunks) == 1 and chunks[0][:2] == ("dead_end", 40.0)
    assert "passive checkpoint" in chunks[0][2]
    found = run_cli("search", "passive checkpoint stalled", "--json", cwd=str(project))
    assert rel in found.stdout
    assert rows(project, "SELECT value FROM meta WHERE key = 'capture.pending'") == [("3",)]
    assert rows(project, "SELECT value FROM rollups WHERE metric = 'memhealth_triage_decisions_total' "
                         "AND labels = ?", ('{"decision":"confirmed","kind":"dead_end"}',)) == [(1.0,)]


def test_a_rejected_candidate_is_kept_never_indexed_and_never_proposed_again(project, tmp_path):
    capture(project, tmp_path / "s1.jsonl", SESSION)
    decision = by_kind(listing(project))["decision"]
    assert run_cli("triage", "reject", str(decision["id"]), cwd=str(project)).returncode == 0
    assert rows(project, "SELECT state FROM capture_candidates WHERE id = ?", (decision["id"],)) == [("rejected",)]
    assert rows(project, "SELECT count(*) FROM chunks WHERE content LIKE '%dedicated thread%' "
                         "AND source = 'memory'") == [(0,)]
    # a later session says the same thing (different case and punctuation): not proposed again
    capture(project, tmp_path / "s2.jsonl", [
        ("assistant", "we decided to run checkpoints from a dedicated thread, instead of the writer!"),
        ("assistant", "Decision: the checkpoint thread runs at low priority.")], session="s2")
    again = listing(project)
    assert [i["statement"] for i in again if i["session_id"] == "s2"] == \
        ["Decision: the checkpoint thread runs at low priority."]


def test_retitle_merge_and_errors(project, tmp_path):
    capture(project, tmp_path / "s1.jsonl", SESSION)
    items = listing(project)
    first, second = items[0]["id"], items[3]["id"]
    assert run_cli("triage", "retitle", str(first), "Passive", "checkpoints", "do", "not", "help",
                   cwd=str(project)).returncode == 0
    assert run_cli("triage", "merge", str(second), "INTO", str(first), cwd=str(project)).returncode == 0
    proc = run_cli("triage", "confirm", str(first), cwd=str(project))
    rel = proc.stdout.split("→")[1].strip()
    text = (project / rel).read_text()
    assert "name: Passive checkpoints do not help" in text
    assert "Also said:\n- I reverted the busy-timeout change from yesterday." in text
    assert rows(project, "SELECT state, merged_into FROM capture_candidates WHERE id = ?", (second,)) == \
        [("merged", first)]
    # a decision that cannot apply is exit 1 and changes nothing; a malformed request is exit 2
    nope = run_cli("triage", "confirm", str(first), cwd=str(project))
    assert nope.returncode == 1 and "is confirmed, not pending" in nope.stderr
    assert run_cli("triage", "confirm", "999", cwd=str(project)).returncode == 1
    for bad in (["merge", str(first)], ["frobnicate", "1"], ["confirm", "x"], ["retitle", "1"]):
        usage = run_cli("triage", *bad, cwd=str(project))
        assert usage.returncode == 2 and "usage:" in usage.stderr, bad


def test_apply_file_decides_in_batch_and_a_malformed_file_applies_nothing(project, tmp_path):
    capture(project, tmp_path / "s1.jsonl", SESSION)
    ids = [i["id"] for i in listing(project)]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": ids[0], "action": "confirm"}, {"id": ids[1], "action": "keep"}]))
    proc = run_cli("triage", "--apply", str(bad), cwd=str(project))
    assert proc.returncode == 2 and "entry 2" in proc.stderr
    assert rows(project, "SELECT count(*) FROM capture_candidates WHERE state = 'pending'") == [(4,)]
    good = tmp_path / "good.json"
    good.write_text(json.dumps([
        {"id": ids[0], "action": "confirm"}, {"id": ids[1], "action": "reject"},
        {"id": ids[2], "action": "retitle", "title": "Checkpoints run on their own thread"},
        {"id": ids[3], "action": "merge", "into": ids[0]}, {"id": 999, "action": "reject"}]))
    proc = run_cli("triage", "--apply", str(good), cwd=str(project))
    assert proc.returncode == 1 and "4 applied, 1 failed" in proc.stdout and "no candidate #999" in proc.stderr
    assert rows(project, "SELECT id, state FROM capture_candidates ORDER BY id")[:4] == [
        (ids[0], "confirmed"), (ids[1], "rejected"), (ids[2], "pending"), (ids[3], "merged")]
    assert rows(project, "SELECT title FROM capture_candidates WHERE id = ?", (ids[2],)) == \
        [("Checkpoints run on their own thread",)]


def test_the_gate_reads_the_queue_the_capture_feeds(project, tmp_path):
    capture(project, tmp_path / "s1.jsonl", SESSION)
    env = clean_env(MEMHEALTH_GATE_CAPTURE_QUEUE_MAX=2)
    gate = run_cli("gate", "--json", cwd=str(project), env=env)
    check = next(c for c in json.loads(gate.stdout)["checks"] if c["name"] == "capture_queue")
    assert check["status"] == "red" and "4 capture items pending (max 2)" in check["detail"]
    for item in listing(project)[:2]:
        run_cli("triage", "reject", str(item["id"]), cwd=str(project))
    gate = run_cli("gate", "--json", cwd=str(project), env=env)
    check = next(c for c in json.loads(gate.stdout)["checks"] if c["name"] == "capture_queue")
    assert check["status"] == "green" and check["detail"] == "2 pending"


class Pty:
    """A child process on a pseudo-terminal: write answers, read until a prompt shows."""

    def __init__(self, argv, cwd):
        import pty

        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                                     env=clean_env(TERM="dumb"), close_fds=True)
        os.close(slave)
        self.seen = ""

    def expect(self, text: str, limit_s: float = 30.0) -> str:
        deadline = time.monotonic() + limit_s
        while text not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} not seen; got {self.seen[-500:]!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{text!r} not seen before EOF; got {self.seen[-500:]!r}")
                self.seen += chunk.decode("utf-8", "replace")
        at = self.seen.index(text) + len(text)
        before, self.seen = self.seen[:at], self.seen[at:]
        return before

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        code = self.proc.wait(30)
        os.close(self.master)
        return code


def test_interactive_triage_in_a_terminal(project, tmp_path):
    capture(project, tmp_path / "s1.jsonl", SESSION)
    ids = [i["id"] for i in listing(project)]
    term = Pty(memhealth_cmd() + ["triage"], cwd=str(project))
    try:
        shown = term.expect("> ")
        assert "[1/4]" in shown and "passive checkpoint" in shown and "[c]onfirm" in shown
        term.send("c")
        assert "confirmed → .memhealth/memory/records/" in term.expect("> ")
        term.send("t")
        term.expect("new title: ")
        term.send("Never go back to DELETE journal mode")
        assert "Never go back to DELETE journal mode" in term.expect("> ")  # shown again, retitled
        term.send("r")
        shown = term.expect("> ")
        assert "rejected" in shown and "[3/4]" in shown
        term.send("x")
        assert "answer c, r, t, m, s or q" in term.expect("> ")
        term.send("s")
        assert "[4/4]" in term.expect("> ")
        term.send("q")
        assert "1 confirmed, 1 rejected, 0 merged, 1 skipped" in term.expect("skipped")
    finally:
        code = term.close()
    assert code == 0
    assert rows(project, "SELECT id, state FROM capture_candidates ORDER BY id") == [
        (ids[0], "confirmed"), (ids[1], "rejected"), (ids[2], "pending"), (ids[3], "pending")]
    assert rows(project, "SELECT title FROM capture_candidates WHERE id = ?", (ids[1],)) == \
        [("Never go back to DELETE journal mode",)]


def test_triage_has_help_text():
    proc = run_cli("triage", "--help")
    assert proc.returncode == 0 and "--apply" in proc.stdout
    assert all(action in proc.stdout for action in ("list", "confirm", "reject", "retitle", "merge"))
    merge = run_cli("triage", "merge", "--help")
    assert merge.returncode == 0 and "merge ID INTO ID" in merge.stdout
