"""Decision lineage threads: `memhealth triage confirm ID --supersedes OTHER` links
two confirmed decisions on one subject (both record files carry the link), and the
decision-lineage block shows the thread newest first. Candidates are captured by the real
SessionEnd hook and worker, decided through the real CLI, and the block comes from a real
prompt-hook subprocess."""

from __future__ import annotations

import json

from tests.conftest import payload, rows, run_cli, run_hook
from tests.memory_core.records.test_triage import capture, listing

OLD = "We decided to run the WAL checkpoints from a dedicated thread instead of the writer."
NEW = "Decision: the WAL checkpoints run in the compactor between batches, not on a dedicated thread."
DEAD = "I tried a passive checkpoint every second and it still stalled the writer."


def front(project, rel: str) -> str:
    return (project / rel).read_text(encoding="utf-8").split("---")[1]


def confirmed(project, *args) -> str:
    proc = run_cli("triage", "confirm", *args, cwd=str(project))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split("→")[1].split(" (")[0].strip()


def test_supersedes_links_both_records_and_the_block_shows_the_thread_newest_first(project, tmp_path):
    capture(project, tmp_path / "s1.jsonl", [("assistant", OLD), ("assistant", DEAD)])
    capture(project, tmp_path / "s2.jsonl", [("assistant", NEW)], session="s2")
    items = {i["statement"]: i["id"] for i in listing(project)}
    old, new, dead = items[OLD], items[NEW], items[DEAD]

    old_rel = confirmed(project, str(old))
    proc = run_cli("triage", "confirm", str(new), "--supersedes", str(old), cwd=str(project))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(f"(supersedes #{old})")
    new_rel = proc.stdout.split("→")[1].split(" (")[0].strip()
    assert f"supersedes: {old}\n" in front(project, new_rel)
    assert f"superseded_by: {new}\n" in front(project, old_rel)
    # the ingester keeps the links; a retitle of the old record keeps them too
    assert run_cli("triage", "retitle", str(old), "Checkpoints on a dedicated thread", cwd=str(project)).returncode == 0
    assert f"superseded_by: {new}\n" in front(project, old_rel)
    (attrs,) = rows(project, "SELECT attrs FROM chunks WHERE path = ?", (old_rel,))[0]
    assert json.loads(attrs)["superseded_by"] == str(new) and json.loads(attrs)["candidate"] == str(old)

    # a prompt re-opening the old decision gets the thread, the current decision first
    run = run_hook("prompt", payload("prompt", project, session_id="p1",
                                     prompt="Should we move the WAL checkpoints back to a dedicated thread?"),
                   cwd=str(project))
    assert run.returncode == 0, run.stderr
    context = run.context()
    lines = context.splitlines()
    assert "  thread, newest first:" in lines, context
    at = lines.index("  thread, newest first:")
    assert lines[at + 1].startswith(f"  1. #{new} ") and "current" in lines[at + 1], context
    assert lines[at + 2].startswith(f'  2. #{old} "Checkpoints on a dedicated thread"'), context
    assert f"superseded by #{new}" in lines[at + 2]
    assert context.count("Decision lineage:") == 1  # one block for the thread, not one per record
    (detail,) = rows(project, "SELECT detail FROM decisions ORDER BY id DESC LIMIT 1")[0]
    assert json.loads(detail)["lineage"][0]["thread"] == [new, old]

    # what cannot be a thread is refused, nothing changed (exit 1); a misplaced flag is usage (2)
    assert run_cli("triage", "confirm", str(dead), "--supersedes", str(new), cwd=str(project)).returncode == 1
    assert run_cli("triage", "reject", str(dead), "--supersedes", str(new), cwd=str(project)).returncode == 2
    assert rows(project, "SELECT state FROM capture_candidates WHERE id = ?", (dead,)) == [("pending",)]


def test_a_decision_already_superseded_cannot_be_superseded_again(project, tmp_path):
    capture(project, tmp_path / "s1.jsonl", [("assistant", OLD), ("assistant", NEW),
                                             ("assistant", "We decided to use a checkpoint thread pool instead.")])
    a, b, c = [i["id"] for i in listing(project)]
    confirmed(project, str(a))
    confirmed(project, str(b), "--supersedes", str(a))
    proc = run_cli("triage", "confirm", str(c), "--supersedes", str(a), cwd=str(project))
    assert proc.returncode == 1 and f"already superseded by #{b}" in proc.stderr
    assert rows(project, "SELECT state FROM capture_candidates WHERE id = ?", (c,)) == [("pending",)]
    # batch files take the link too
    batch = tmp_path / "d.json"
    batch.write_text(json.dumps([{"id": c, "action": "confirm", "supersedes": b}]), encoding="utf-8")
    assert run_cli("triage", "--apply", str(batch), cwd=str(project)).returncode == 0
    (path,) = rows(project, "SELECT record_path FROM capture_candidates WHERE id = ?", (b,))[0]
    assert f"superseded_by: {c}\n" in front(project, path)
