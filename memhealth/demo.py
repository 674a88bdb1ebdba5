"""`memhealth demo`: a sample project, ingested, driven through a realistic session by the
real hook entry points (each a subprocess with JSON on stdin, as Claude Code runs them),
then the verdict, the injection decisions and a metrics excerpt.

    run_demo(target_dir=None, out=print)   # a temp dir unless told otherwise
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from importlib import resources

from memhealth.installer import init_project, launcher_argv
from memory_core.outbox import heartbeat_reads
from memory_core.store.layout import CONFIG_NAME, DB_NAME, STATE_DIR

SESSION = "demo-" + uuid.UUID(int=0x5EED).hex[:12]
# src/upcaster.py defines EventUpcaster; no memory file, doc or ledger names it: only the code
# index knows it exists
CODE_REPROPOSAL = "Let's write an event upcaster that migrates old event versions when a stream is read"
CODE_COMPONENT = "EventUpcaster"

# (event, payload fields, what a person would call this step)
SCRIPT = [
    ("session-start", {"source": "startup", "model": "claude-opus"}, "session starts"),
    ("prompt", {"prompt": "thanks, that looks right"}, "a prompt with no intent"),
    ("prompt", {"prompt": "Let's build a snapshot compaction subsystem so projections stop "
                          "replaying every stream from event zero"}, "build intent on something that exists"),
    ("prompt", {"prompt": CODE_REPROPOSAL}, "build intent on what only the code knows"),
    ("pre-tool", {"tool_name": "Read", "tool_input": {"file_path": "src/compactor.py"},
                  "tool_use_id": "toolu_01"}, "the agent reads a file"),
    ("post-tool", {"tool_name": "Read", "tool_input": {"file_path": "src/compactor.py"},
                   "tool_use_id": "toolu_01", "tool_response": {"type": "text"}}, "the read returns"),
    ("prompt", {"prompt": "<task-notification>\n<task-id>b7f2</task-id>\n<status>completed</status>\n"
                          "<summary>Background command \"make test\" completed (exit code 0)</summary>\n"
                          "</task-notification>"}, "a machine turn (background task done)"),
    ("prompt", {"prompt": "Should we reconsider the single writer queue and let handlers append "
                          "events directly? Sequence numbers worry me."}, "decision intent"),
    ("prompt", {"prompt": "OK, build that snapshot compaction subsystem now so projections stop "
                          "replaying every stream from event zero"}, "the same build intent again (capped)"),
    ("pre-compact", {"trigger": "auto", "custom_instructions": ""}, "context compaction"),
    ("session-start", {"source": "compact"}, "session resumes after compaction"),
    ("pre-tool", {"tool_name": "Edit", "tool_input": {"file_path": "src/compactor.py", "old_string": "10_000",
                                                       "new_string": "5_000"},
                  "tool_use_id": "toolu_02"}, "first touch of the file after compaction"),
    ("prompt", {"prompt": "why does the projection replay get slower after a restart?",
                # what the assistant answers goes into the transcript: a dead end, stated in
                # passing, that session end's capture proposes and the triage step confirms
                "_reply": "I tried a Redis cache for projection snapshots first and it did not work: every "
                          "replay invalidated it, so I reverted it. The slowdown is the replay from zero."},
     "investigation intent, nothing relevant stored"),
    ("stop", {"stop_hook_active": False, "last_assistant_message": "Done."}, "the turn ends"),
    ("session-end", {"reason": "prompt_input_exit"}, "the session ends"),
]


def _copy_sample(dest: str) -> None:
    sample = resources.files("memhealth") / "sample_project"
    with resources.as_file(sample) as src:
        shutil.copytree(src, dest, dirs_exist_ok=True)


def _git_history(root: str) -> bool:
    if shutil.which("git") is None:
        return False
    env = {**os.environ, "GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@example.invalid",
           "GIT_COMMITTER_NAME": "demo", "GIT_COMMITTER_EMAIL": "demo@example.invalid"}
    steps = [["git", "init", "-q"], ["git", "add", "README.md", "docs", "src"],
             ["git", "commit", "-qm", "Add snapshot compactor and architecture notes"],
             ["git", "add", "-A"], ["git", "commit", "-qm", "Record the single writer queue decision"]]
    for step in steps:
        if subprocess.run(step, cwd=root, env=env, capture_output=True, timeout=30).returncode != 0:
            return False
    return True


def _transcript_line(kind: str, text: str, cwd: str) -> str:
    record = {"type": kind, "sessionId": SESSION, "uuid": str(uuid.uuid4()), "cwd": cwd,
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
              "message": {"role": "user" if kind == "user" else "assistant",
                          "content": text if kind == "user" else [{"type": "text", "text": text}]}}
    return json.dumps(record) + "\n"


def _run_hook(cmd: list[str], event: str, body: dict, cwd: str) -> tuple[float, dict | None, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd + ["hook", event], input=json.dumps(body).encode(), cwd=cwd,
                          capture_output=True, timeout=120)
    ms = (time.perf_counter() - t0) * 1000
    context = None
    if proc.stdout.strip():
        context = json.loads(proc.stdout)
    return ms, context, proc.stderr.decode("utf-8", "replace").strip()


def run_demo(target_dir: str | None = None, out=print) -> int:
    base = target_dir or tempfile.mkdtemp(prefix="memhealth-demo-")
    root = os.path.join(os.path.abspath(base), "ledgerline")
    if os.path.exists(os.path.join(root, STATE_DIR)):
        shutil.rmtree(root)
    os.makedirs(root, exist_ok=True)
    _copy_sample(root)
    has_git = _git_history(root)
    # Claude Code keeps transcripts outside the project (~/.claude/projects/<slug>/); the demo
    # keeps its own beside the sample, starting with one earlier session.
    transcripts = os.path.join(root, ".claude-transcripts")
    shutil.move(os.path.join(root, "transcripts"), transcripts)
    transcript = os.path.join(transcripts, f"{SESSION}.jsonl")
    open(transcript, "w").close()

    cmd = launcher_argv()
    out(f"memhealth demo: sample project \"ledgerline\" in {root}")
    out("")
    # hooks run by the same absolute launcher as cmd; a throwaway project stays out of the
    # user's registry, so `serve --all` never serves it
    actions = init_project(root, register=False)
    _write_demo_config(root, transcripts)
    out(f"[1/5] init: {len(actions)} actions — .memhealth/ created, hooks merged into .claude/settings.local.json")

    ingest = subprocess.run(cmd + ["ingest", "--project", root], capture_output=True, text=True, timeout=300)
    summary = (ingest.stdout.strip() or ingest.stderr.strip()).splitlines()
    out(f"[2/5] ingest{' (with git history)' if has_git else ''}: "
        f"{summary[0].removeprefix('memhealth ingest: ') if summary else 'no output'}")
    for line in summary[1:]:  # its notes, one a line
        out(f"      {line.strip()}")
    failures = [] if ingest.returncode == 0 else [f"ingest exited {ingest.returncode}: {ingest.stderr.strip()[-300:]}"]
    out("")
    out("[3/5] a session, through the real hook entry points (one process per hook):")
    width = max(len(label) for *_x, label in SCRIPT)
    first_injection = first_cue = from_code = None
    for event, fields, label in SCRIPT:
        body = {"session_id": SESSION, "transcript_path": transcript, "cwd": root,
                "hook_event_name": event, "permission_mode": "default",
                **{k: v for k, v in fields.items() if not k.startswith("_")}}
        if event == "post-tool":  # what Claude Code sends after a Read (observed with the real CLI)
            path = os.path.join(root, fields["tool_input"]["file_path"])
            with open(path, encoding="utf-8") as fh:
                content = fh.read()
            body["tool_response"] = {"type": "text", "file": {
                "filePath": path, "content": content, "numLines": content.count("\n"), "startLine": 1,
                "totalLines": content.count("\n")}}
        if event == "prompt":
            with open(transcript, "a", encoding="utf-8") as fh:
                fh.write(_transcript_line("user", fields["prompt"], root))
        ms, context, err = _run_hook(cmd, event, body, root)
        if event == "prompt":
            with open(transcript, "a", encoding="utf-8") as fh:
                fh.write(_transcript_line("assistant", fields.get("_reply", "Understood."), root))
        shown = ""
        if context:
            text = context["hookSpecificOutput"]["additionalContext"]
            shown = text.splitlines()[0][:70] if text else ""
            if event == "prompt" and fields["prompt"] == CODE_REPROPOSAL:
                from_code = text
            elif event == "prompt" and first_injection is None:
                first_injection = text
            if event == "pre-tool" and first_cue is None:
                first_cue = text
        elif err:
            shown = f"stderr: {err[:70]}"
        if err:  # a hook writes stderr only when something went wrong
            failures.append(f"hook {event}: {err[:300]}")
        out(f"  {event:<13} {label:<{width}}  {ms:6.0f} ms  {shown}")
    if not _wait_for_capture(root):
        failures.append("the capture worker spawned by session-end did not finish within 60 s")
    out("")
    _print_injections(root, out, first_injection)
    out("")
    failures += _print_from_code(root, out, from_code)
    out("")
    _print_cues(root, out, first_cue)
    out("")
    failures += _capture_and_triage(cmd, root, transcript, out)
    out("")
    gate = subprocess.run(cmd + ["gate", "--project", root], capture_output=True, text=True, timeout=300)
    out("[5/5] the health gate now (`memhealth gate`):")
    for line in (gate.stdout or gate.stderr).rstrip().splitlines():
        out(f"  {line}")
    if gate.returncode not in (0, 1):  # 1 is a RED verdict, which the demo shows as it is
        failures.append(f"gate exited {gate.returncode}: {gate.stderr.strip()[-300:]}")
    out("")
    _print_metrics(root, out)
    out("")
    out(f"Explore it: cd {root} && {' '.join(cmd)} report")
    if failures:
        out("")
        out(f"The demo did not run cleanly ({len(failures)} problem(s)):")
        for failure in failures:
            out(f"  - {failure}")
        return 1
    return 0


DEAD_END_TITLE = "Redis projection cache"
REPROPOSAL = "Let's add a Redis projection cache so replays get faster"


def _capture_and_triage(cmd: list[str], root: str, transcript: str, out) -> list[str]:
    """What session end's capture proposed, the dead end confirmed through `memhealth triage`,
    and a later session re-proposing it: the DEAD-END block as Claude receives it."""
    failures: list[str] = []
    listing = subprocess.run(cmd + ["triage", "--json", "--project", root], capture_output=True, text=True,
                             timeout=120)
    try:
        pending = json.loads(listing.stdout)["candidates"] if listing.returncode == 0 else []
    except (ValueError, KeyError, TypeError):
        pending = []
    out(f"[4/5] capture and triage: session end proposed {len(pending)} candidate(s) from the transcript "
        "(`memhealth triage`):")
    for item in pending:
        out(f"  #{item['id']} {item['kind']:<10} {item['statement'][:90]}")
    dead_end = next((item for item in pending if item["kind"] == "dead_end"), None)
    if dead_end is None:
        return [f"capture proposed no dead end (triage exited {listing.returncode}: {listing.stderr.strip()[-200:]})"]
    # triage as a person does it: a short title naming the thing, then confirm
    for words in (["retitle", str(dead_end["id"]), DEAD_END_TITLE], ["confirm", str(dead_end["id"])]):
        step = subprocess.run(cmd + ["triage", *words, "--project", root], capture_output=True, text=True,
                              timeout=120)
        out("  $ memhealth triage " + " ".join(f'"{w}"' if " " in w else w for w in words))
        for line in (step.stdout or step.stderr).strip().splitlines():
            out(f"    {line}")
        if step.returncode != 0:
            return [f"triage {words[0]} exited {step.returncode}: {step.stderr.strip()[-300:]}"]
    later = SESSION[:-4] + "0002"  # a later session, which never saw the first one's words
    later_transcript = transcript.replace(SESSION, later)
    with open(later_transcript, "w", encoding="utf-8") as fh:
        fh.write(_transcript_line("user", REPROPOSAL, root).replace(SESSION, later))
    base = {"session_id": later, "transcript_path": later_transcript, "cwd": root, "permission_mode": "default"}
    out("")
    out("A later session re-proposes it:")
    text = ""
    for event, fields in (("session-start", {"source": "startup"}), ("prompt", {"prompt": REPROPOSAL})):
        ms, context, err = _run_hook(cmd, event, {**base, "hook_event_name": event, **fields}, root)
        if err:
            failures.append(f"hook {event}: {err[:300]}")
        text = context["hookSpecificOutput"]["additionalContext"] if context else ""
        shown = f"\"{REPROPOSAL}\"" if event == "prompt" else (text.splitlines() or [""])[0][:70]
        out(f"  {event:<13} {ms:6.0f} ms  {shown}")
    if "DEAD-END" not in text:
        return failures + ["the re-proposal did not get the DEAD-END block"]
    out("The DEAD-END block, as Claude received it:")
    import textwrap

    for line in text.splitlines()[:8]:
        for part in textwrap.wrap(line, 100, subsequent_indent="    ") or [""]:
            out(f"  | {part}")
    return failures


def _print_from_code(root: str, out, text: str | None) -> list[str]:
    """The re-proposal caught from the code: no memory file names the component, the code
    index does, and the block cites the definition and the commit it was read at."""
    import textwrap

    memory = os.path.join(root, "memory")
    named = [n for n in sorted(os.listdir(memory)) if CODE_COMPONENT.lower() in
             open(os.path.join(memory, n), encoding="utf-8").read().lower().replace(" ", "")]
    out(f"A re-proposal caught from the code ({len(named)} memory files name {CODE_COMPONENT}: only "
        "the code index knows it), as Claude received it:")
    if not text or f'"{CODE_COMPONENT}" already exists in the code' not in text:
        return [f"the re-proposal of {CODE_COMPONENT} got no DO-NOT-REBUILD from the code"]
    for line in text.splitlines()[1:6]:
        for part in textwrap.wrap(line, 100, subsequent_indent="    ") or [""]:
            out(f"  | {part}")
    return [f"a memory file names {CODE_COMPONENT}: {', '.join(named)}"] if named else []


def _wait_for_capture(root: str, limit_s: float = 60.0) -> bool:
    """SessionEnd hands its work to a detached worker: let it finish before the gate reads
    the store, so the demo's output does not depend on a race."""
    from memory_core.store.db import connect

    conn = connect(os.path.join(root, STATE_DIR, DB_NAME))
    try:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            total, running = heartbeat_reads.runs_and_running(conn, "capture")
            if total and not running:
                return True
            time.sleep(0.05)
        return False
    finally:
        conn.close()


def _write_demo_config(root: str, transcripts: str) -> None:
    """Point the ingesters at the sample's layout, under the existing [ingest] header."""
    path = os.path.join(root, STATE_DIR, CONFIG_NAME)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    keys = ('# set by `memhealth demo` for the sample layout\n'
            'docs = ["README.md", "docs"]\nmemory = ["memory", ".memhealth/memory"]\nledgers = ["ledgers/decisions.ndjson"]\n'
            f"transcripts = [{json.dumps(transcripts)}]\n")
    text = text.replace("[ingest]\n", "[ingest]\n" + keys, 1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _print_injections(root: str, out, first_injection: str | None) -> None:
    from memory_core.outbox.decision_reads import every_decision
    from memory_core.store.db import connect

    conn = connect(os.path.join(root, STATE_DIR, DB_NAME))
    rows = every_decision(conn)
    conn.close()
    out(f"Injection decisions (one row per prompt, {len(rows)} prompts):")
    for outcome, intent, length, detail in rows:
        d = json.loads(detail or "{}")
        arith = ""
        if "idf_sum" in d:
            arith = f"matched {d['matched']} tokens, idf sum {d['idf_sum']:.2f} (threshold {d['threshold']})"
        elif "marker" in d:
            arith = f"machine turn {d['marker']}"
        elif d.get("reason"):
            arith = d["reason"]
        out(f"  {outcome:<16} {intent or '-':<14} {length:>4} chars  {arith}")
    if first_injection:
        out("")
        out("The first injection, as Claude received it (framed with its provenance):")
        import textwrap

        for line in first_injection.splitlines()[:8]:
            for part in textwrap.wrap(line, 100, subsequent_indent="    ") or [""]:
                out(f"  | {part}")


def _print_cues(root: str, out, first_cue: str | None) -> None:
    """Cue deliveries from the audit (`memhealth cues audit`): what fired where, what was
    skipped and why; then the first cued delivery as Claude received it."""
    from memory_core.outbox.delivery_reads import every_evaluation
    from memory_core.store.db import connect

    conn = connect(os.path.join(root, STATE_DIR, DB_NAME))
    audit = every_evaluation(conn)
    conn.close()
    fired = sum(1 for row in audit if row[3] == "fired")
    out(f"Cue evaluations (`memhealth cues audit`; {len(audit)} rows, {fired} fired):")
    for event, trigger, name, outcome, reason, epoch, detail in audit:
        verdict = outcome if outcome == "fired" else f"skipped: {reason}"
        out(f"  epoch {epoch or 0}  {event:<13} {trigger:<7} {name[:34]:<34} {verdict:<18} {detail[:40]}")
    if first_cue:
        out("")
        out("The first cued delivery, before the tool acted (first touch of the file):")
        import textwrap

        for line in first_cue.splitlines()[:6]:
            for part in textwrap.wrap(line, 100, subsequent_indent="    ") or [""]:
                out(f"  | {part}")


def _print_metrics(root: str, out) -> None:
    from memory_core.store.db import connect

    conn = connect(os.path.join(root, STATE_DIR, DB_NAME))
    out("Metrics excerpt (what `memhealth serve` exposes on /metrics):")
    from memory_core.outbox.rollup_reads import rollups_among

    for metric, labels, value in rollups_among(conn, ["memhealth_hook_invocations_total",
                                                      "memhealth_injection_decisions_total",
                                                      "memhealth_cue_deliveries_total"]):
        pairs = ",".join(f'{k}="{v}"' for k, v in json.loads(labels).items())
        out(f"  {metric}{{{pairs}}} {value:g}")
    conn.close()
