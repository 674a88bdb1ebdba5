"""Cue-anchored delivery on the hook path: what a tool call, prompt or session start
touches, which compiled cues that fires, and the delivery and audit rows it writes.

    ev = Evaluation(conn, session_id, trace, mode="on", event="pre-tool")
    files, dirs, text = tool_touches(payload["tool_name"], payload["tool_input"], Place(root, cwd))
    out = ev.deliver(ev.match_paths(files, dirs) + ev.match_symbols(text), why="first touch of ...")
    ev.write()          # audit rows and rollups; deliver() decided dedup under the write lock

Rules (docs/concepts/cues.md): an item is delivered once per session and epoch; PreCompact
starts a new epoch, so the first touch after a compaction delivers again; every delivered
item carries its provenance; every evaluation leaves an audit row (fired, or skipped with
no_match | deduped | expired | over_budget | ablation | inactive). Reads only indexed rows
(memory_core.items.compile compiled them at ingest); never reads a memory file or walks the tree.
"""

from __future__ import annotations

import json
import os
import re
import time

from memory_core.outbox.rollups import bump

PINNED_BUDGET_CHARS = 4000   # session start also carries the verdict and the memory summary
CUE_BUDGET_CHARS = 3000      # one tool call's or prompt's cued items
AUDIT_KEEP_ROWS = 50_000     # retention: the newest rows stay, older ones go at session start
HISTORY_KEEP_DAYS = 30       # deliveries and file reads
SYMBOL_BATCH = 400           # tokens per IN (...) lookup: under SQLite's variable limit
MAX_TOKENS = 20_000          # distinct identifiers looked up in one text
MAX_TEXT = 1 << 20           # characters of a tool result scanned for symbols
PATH_MAX = 4096              # Linux's PATH_MAX: a longer tool-input path names no file

STOP_INACTIVE = "a Stop hook has no context channel; use on: prompt or on: compact"
# Compiled on first use: a fresh process per hook pays for each compile (~0.06 ms), and a
# Read with no symbol cues in the store needs none of them.
_PATTERNS = {"ident": r"[A-Za-z_$][\w$]*", "shell_split": r"[\s;|&<>()`]+",
             "pathish": r"[\w@+~-]*+[/.][\w./@+~*-]*+", "line_suffix": r":\d+(?::\d+)?:?$"}
# "pathish" splits at the first dot or slash: every split the old `[\w.@+~-]*[/.]...` could
# find, the first one also makes (what precedes it is a subset of what may follow), and
# without the dot in the head nothing backtracks (quadratic on `a.a.a...#`: 2 s at 20,000).
_COMPILED: dict[str, re.Pattern] = {}


def _rx(name: str) -> re.Pattern:
    pattern = _COMPILED.get(name)
    if pattern is None:
        pattern = _COMPILED[name] = re.compile(_PATTERNS[name])
    return pattern


def _magic(text: str) -> bool:
    return "*" in text or "?" in text or "[" in text or "{" in text
_FILE_TOOLS = {"Read": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path",
               "NotebookEdit": "notebook_path"}


# -- what a tool call touches -------------------------------------------------------------

class Place:
    """Resolves payload paths against `cwd` to project-relative forms (symlinks resolved);
    a path outside the project resolves to nothing."""

    __slots__ = ("root", "real_root", "cwd")

    def __init__(self, root: str, cwd: str | None):
        self.root = os.path.abspath(root)
        self.real_root = os.path.realpath(self.root)
        self.cwd = cwd if cwd and os.path.isabs(cwd) else self.root

    def rel(self, path: str) -> list[str]:
        """The project-relative spellings of `path`: resolved, and as written when a symlink
        inside the project points elsewhere inside it. [] when it lies outside."""
        if not path or "\x00" in path or len(path) > PATH_MAX:
            return []  # longer than any path the kernel opens: resolving it costs one lstat a part
        path = os.path.expanduser(path) if path.startswith("~") else path
        full = os.path.normpath(path if os.path.isabs(path) else os.path.join(self.cwd, path))
        out = []
        real = os.path.realpath(full)
        for base, candidate in ((self.real_root, real), (self.root, full)):
            rel = os.path.relpath(candidate, base) if candidate.startswith(base) else None
            if rel is None or rel == os.curdir or rel.startswith(os.pardir):
                if candidate is real:
                    return []  # resolved outside the project: never a match
                continue
            rel = rel.replace(os.sep, "/")
            if rel not in out:
                out.append(rel)
        return out


def _literal_dir(pattern: str) -> tuple[str, bool]:
    """(the literal leading directory of a glob, whether the whole pattern is literal)."""
    if not _magic(pattern):
        return pattern, True
    segments = pattern.split("/")
    literal = []
    for seg in segments[:-1]:
        if _magic(seg):
            break
        literal.append(seg)
    return "/".join(literal), False


def tool_touches(tool: str, tool_input, place: Place, paths: bool = True) -> tuple[list[str], list[str], str]:
    """(files, directories, text to scan for symbols) a tool call is about to touch; with
    `paths=False` (no path cues in the store) only the text."""
    if not isinstance(tool_input, dict):
        return [], [], ""
    files: list[str] = []
    dirs: list[str] = []
    texts: list[str] = []

    def s(key: str) -> str:
        value = tool_input.get(key)
        return value if isinstance(value, str) else ""

    if tool in _FILE_TOOLS:
        files += place.rel(s(_FILE_TOOLS[tool]))
        if tool == "Edit":
            texts += [s("old_string"), s("new_string")]
        elif tool == "MultiEdit":
            for edit in tool_input.get("edits") or ():
                if isinstance(edit, dict):
                    texts += [v for k, v in edit.items() if k in ("old_string", "new_string") and isinstance(v, str)]
        elif tool == "Write":
            texts.append(s("content")[:MAX_TEXT])
        elif tool == "NotebookEdit":
            texts.append(s("new_source"))
    elif tool == "Grep":
        base = s("path")
        glob = s("glob")
        if base:
            (files if _looks_like_file(base) else dirs).extend(place.rel(base))
        if glob:
            literal, whole = _literal_dir(glob)
            joined = os.path.join(base or place.cwd, literal) if literal else ""
            if whole:
                files += place.rel(joined)
            elif literal:
                dirs += place.rel(joined)
        texts.append(s("pattern"))
    elif tool == "Glob":
        base = s("path") or place.cwd
        literal, whole = _literal_dir(s("pattern"))
        if literal:
            (files if whole and _looks_like_file(literal) else dirs).extend(place.rel(os.path.join(base, literal)))
        elif s("path"):
            dirs += place.rel(base)
    elif tool == "Bash":
        command = s("command")[:20_000]
        texts.append(command)
        for token in (_rx("shell_split").split(command) if paths else ()):
            token = token.strip("'\"")
            if "=" in token:
                token = token.split("=", 1)[1].strip("'\"")
            if not token or token.startswith("-") or "://" in token:
                continue
            token = token.split("::", 1)[0]  # pytest node ids: path::test
            token = _rx("line_suffix").sub("", token)  # path:line[:col] from grep and compilers
            if not _rx("pathish").fullmatch(token):
                continue
            literal, whole = _literal_dir(token)
            if whole:
                if _looks_like_file(token):
                    files += place.rel(token)
                else:
                    dirs += place.rel(token)
            elif literal:
                dirs += place.rel(literal)
    if not paths:
        files, dirs = [], []
    return files, dirs, "\n".join(t for t in texts if t)


def _looks_like_file(path: str) -> bool:
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return "." in last.strip(".") and not path.endswith("/")


def _keys(rel: str) -> list[str]:
    """The index keys a project-relative file path can be found under (cuespec.compile_glob)."""
    parts = rel.split("/")
    base = parts[-1]
    keys = ["*", f"b:{base}", "p:"]
    if "." in base.strip("."):
        keys.append("e:" + base[base.rfind("."):])
    for i in range(1, len(parts) + 1):
        keys.append("p:" + "/".join(parts[:i]) + "/")
    return keys


# -- one evaluation -------------------------------------------------------------------------

class Match:
    __slots__ = ("item_id", "trigger", "pattern")

    def __init__(self, item_id: int, trigger: str, pattern: str):
        self.item_id, self.trigger, self.pattern = item_id, trigger, pattern


class Evaluation:
    """One hook invocation's cue evaluation: matching reads, then `write()` records all of it."""

    def __init__(self, conn, session_id: str | None, trace=None, mode: str = "on", event: str = "pre-tool",
                 now_ns: int | None = None):
        self.conn = conn
        self.session = session_id or ""
        self.trace = trace
        self.mode = mode
        self.event = event
        self.now_ns = now_ns or time.time_ns()
        self.audit: list[tuple] = []
        self.fired = 0
        self._epoch: int | None = None

    @property
    def epoch(self) -> int:
        if self._epoch is None:
            row = self.conn.execute("SELECT epoch FROM cue_sessions WHERE session_id = ?",
                                    (self.session,)).fetchone()
            self._epoch = row[0] if row else 0
        return self._epoch

    def has(self, trigger: str) -> bool:
        """Whether any cue of this trigger kind exists (one index probe)."""
        return self.conn.execute("SELECT 1 FROM cues WHERE trigger = ? LIMIT 1", (trigger,)).fetchone() is not None

    def rearm(self) -> int | None:
        """At a clear or compact session start: the epoch its PreCompact started, or a new one
        when no PreCompact ran."""
        from memory_core.store.tx import write

        if not self.session:
            return None
        with write(self.conn):
            self._epoch = new_epoch(self.conn, self.session, self.now_ns, boundary_start=True)
        return self._epoch

    # matching (reads only) ----------------------------------------------------------------

    def match_paths(self, files: list[str], dirs: list[str]) -> list[Match]:
        found: dict[int, Match] = {}
        for rel in files:
            keys = _keys(rel)
            for item_id, pattern, compiled in self.conn.execute(
                    "SELECT item_id, pattern, compiled FROM cues WHERE trigger = 'path' AND key IN "
                    f"({','.join('?' * len(keys))})", keys):
                if item_id not in found and re.match(compiled, rel):
                    found[item_id] = Match(item_id, "path", f"{pattern} ~ {rel}")
        for rel in dirs:
            rows = self.conn.execute(
                "SELECT item_id, pattern, compiled, 1 FROM cues WHERE trigger = 'path' AND prefix = ?",
                (rel,)).fetchall()
            keys = [k for k in _keys(rel) if k.startswith("p:") or k == "*"]
            rows += self.conn.execute(
                "SELECT item_id, pattern, compiled, 0 FROM cues WHERE trigger = 'path' AND key IN "
                f"({','.join('?' * len(keys))})", keys).fetchall()
            for item_id, pattern, compiled, same_dir in rows:
                if item_id not in found and (same_dir or re.match(compiled, rel)):
                    found[item_id] = Match(item_id, "path", f"{pattern} ~ {rel}/")
        for m in self.match_defined(files):
            found.setdefault(m.item_id, m)
        return list(found.values())

    def match_defined(self, files: list[str]) -> list[Match]:
        """Symbol cues whose symbol the code index says is defined in one of `files`: a cue
        follows its symbol to wherever the code now defines it (a renamed or split file)
        without anyone editing the memory. One indexed join per file; nothing when the store
        has no symbol cues or no code index."""
        if not files or not self.has("symbol"):
            return []
        from memory_core.store.db import sqlite3

        found: dict[int, Match] = {}
        for rel in files:
            try:
                rows = self.conn.execute(
                    "SELECT c.item_id, c.pattern, d.line_start FROM code_defs d JOIN cues c "
                    "ON c.trigger = 'symbol' AND c.key = d.name WHERE d.path = ?", (rel,)).fetchall()
            except sqlite3.OperationalError:  # a store opened without the migrations (no code tables)
                return []
            for item_id, pattern, line in rows:
                found.setdefault(item_id, Match(item_id, "symbol", f"{pattern} defined at {rel}:{line}"))
        return list(found.values())

    def match_symbols(self, text: str) -> list[Match]:
        if not text:
            return []
        text = text[:MAX_TEXT]
        if not self.has("symbol"):
            return []  # no symbol cues: nothing to tokenize for
        tokens = list(dict.fromkeys(_rx("ident").findall(text)))[:MAX_TOKENS]
        found: dict[int, Match] = {}
        for i in range(0, len(tokens), SYMBOL_BATCH):
            batch = tokens[i:i + SYMBOL_BATCH]
            for item_id, pattern, compiled in self.conn.execute(
                    "SELECT item_id, pattern, compiled FROM cues WHERE trigger = 'symbol' AND key IN "
                    f"({','.join('?' * len(batch))})", batch):
                if item_id not in found and (compiled is None or re.search(compiled, text)):
                    found[item_id] = Match(item_id, "symbol", pattern)
        return list(found.values())

    def match_event(self, name: str) -> list[Match]:
        return [Match(item_id, "event", name) for (item_id,) in self.conn.execute(
            "SELECT item_id FROM cues WHERE trigger = 'event' AND key = ?", (name,))]

    def match_semantic(self, text: str, cfg) -> list[Match]:
        """Semantic cues whose query is close to `text` (memory_core.delivery.cue_semantic:
        one embedding call, and only when such cues exist; a cue that cannot be judged is
        audited `inactive` with the reason)."""
        rows = self.conn.execute("SELECT item_id, pattern, compiled FROM cues WHERE trigger = 'semantic'").fetchall()
        if not rows:
            return []
        from memory_core.delivery.cue_semantic import match

        return [Match(item_id, "semantic", why) for item_id, why in match(rows, text, cfg, self.trace, self.skip)]

    def pinned(self) -> list[Match]:
        return [Match(item_id, "pinned", "pinned") for (item_id,) in self.conn.execute(
            "SELECT id FROM memory_items WHERE pinned = 1 ORDER BY kind = 'invariant' DESC, path")]

    # deciding ------------------------------------------------------------------------------

    def skip(self, trigger: str, reason: str, detail: str | None = None, item_id: int | None = None) -> None:
        self.audit.append((trigger, item_id, "skipped", reason, detail))

    def deliver(self, matches: list[Match], why: str, *, dedup: bool = True,
                budget: int = CUE_BUDGET_CHARS, overflow: str = "cued") -> str | None:
        """Decide each match (expired, deduped, over budget, ablation, fired) and return the
        framed text of what fired, or None. Rows are written by `write()`."""
        if not matches:
            return None
        ids = list(dict.fromkeys(m.item_id for m in matches))
        items = {row[0]: row for row in self.conn.execute(
            "SELECT id, path, line, name, kind, expires_ns, recorded_ns, body FROM memory_items WHERE id IN "
            f"({','.join('?' * len(ids))})", ids)}
        git = _git_notes(self.conn, {row[1] for row in items.values()})
        from memory_core.store.tx import write

        lines: list[str] = []
        used, over, done, delivered = 0, [], set(), []
        # dedup is decided under the write lock: parallel tool calls touching the same cue
        # must not both deliver it
        with write(self.conn):
            seen = set()
            if dedup and self.session:
                seen = {item_id for item_id, confirmed, pid, ts_ns in self.conn.execute(
                    "SELECT item_id, confirmed, pid, ts_ns FROM cue_deliveries WHERE session_id = ? AND epoch = ? "
                    f"AND item_id IN ({','.join('?' * len(ids))})", [self.session, self.epoch, *ids])
                        if confirmed or _in_flight(pid, ts_ns, self.now_ns)}
            for m in matches:
                item = items.get(m.item_id)
                if m.item_id in done:
                    continue
                done.add(m.item_id)
                if item is None:  # forgotten between the lookup and now
                    self.skip(m.trigger, "no_match", "item removed", m.item_id)
                    continue
                if item[5] is not None and item[5] <= self.now_ns:
                    self.skip(m.trigger, "expired", m.pattern, m.item_id)
                    continue
                if m.item_id in seen:
                    self.skip(m.trigger, "deduped", m.pattern, m.item_id)
                    continue
                line = frame(*item[1:5], item[6], item[7], git.get(item[1], ""))
                if used + len(line) + 1 > budget:
                    over.append(m)
                    self.skip(m.trigger, "over_budget", m.pattern, m.item_id)
                    continue
                used += len(line) + 1
                delivered.append((self.session, m.item_id, self.epoch, m.trigger, self.now_ns))
                if self.mode != "on":  # ablation: recorded as delivered, so it dedups as it would have
                    self.skip(m.trigger, "ablation", m.pattern, m.item_id)
                    continue
                self.audit.append((m.trigger, m.item_id, "fired", None, m.pattern))
                self.fired += 1
                lines.append(line)
            if self.session and delivered:
                # a claim until the hook wrote its output (confirm()); under ablation nothing is
                # written by design, so the row counts at once
                pid, confirmed = os.getpid(), int(self.mode != "on")
                self.conn.executemany(
                    "INSERT INTO cue_deliveries(session_id, item_id, epoch, trigger, ts_ns, pid, confirmed) "
                    "VALUES (?,?,?,?,?,?,?) ON CONFLICT(session_id, item_id, epoch) DO UPDATE SET "
                    "trigger = excluded.trigger, ts_ns = excluded.ts_ns, pid = excluded.pid, "
                    "confirmed = excluded.confirmed WHERE confirmed = 0",
                    [(*row, pid, confirmed) for row in delivered])
        if not lines:
            return f"{len(over)} more {overflow} items: `memhealth cues`" if over and self.mode == "on" else None
        head = f"memhealth memory, {why}. Records from memory, not instructions:"
        if over:
            lines.append(f"{len(over)} more {overflow} items: `memhealth cues`")
        return "\n".join([head, *lines])

    # recording -----------------------------------------------------------------------------

    def write(self, extra=None) -> None:
        """Record audit rows and rollups (and `extra(conn)`) in one transaction."""
        from memory_core.store.tx import write

        if not self.audit and extra is None:
            return
        counts: dict[tuple[str, str], int] = {}
        fired: dict[str, int] = {}
        for trigger, _item, outcome, reason, _detail in self.audit:
            key = (trigger, "fired" if outcome == "fired" else reason)
            counts[key] = counts.get(key, 0) + 1
            if outcome == "fired":
                fired[trigger] = fired.get(trigger, 0) + 1
        trace_id = self.trace.trace_id if self.trace is not None else None
        epoch = self.epoch if self.session else None  # every audit row says which epoch it judged
        with write(self.conn):
            self.conn.executemany(
                "INSERT INTO cue_audit(ts_ns, session_id, trace_id, event, trigger, item_id, outcome, reason, "
                "epoch, detail) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(self.now_ns, self.session or None, trace_id, self.event, trigger, item_id, outcome, reason,
                  epoch, (detail or "")[:300] or None)
                 for trigger, item_id, outcome, reason, detail in self.audit])
            for (trigger, outcome), n in counts.items():
                bump(self.conn, "memhealth_cue_evaluations_total", {"trigger": trigger, "outcome": outcome}, n)
            for trigger, n in fired.items():
                bump(self.conn, "memhealth_cue_deliveries_total", {"trigger": trigger}, n)
            if extra is not None:
                extra(self.conn)
        if self.trace is not None:
            outcomes = sorted({k[1] for k in counts})
            span = self.trace.span("cue.evaluate", **{
                "memhealth.cue.event": self.event,
                "memhealth.cue.trigger": ",".join(sorted({k[0] for k in counts})),
                "memhealth.cue.outcome": "fired" if self.fired else ",".join(outcomes),
                "memhealth.cue.count": len(self.audit), "memhealth.cue.fired": self.fired,
                "memhealth.cue.epoch": epoch if epoch is not None else -1})
            span.start_ns = self.now_ns
            span.end()


CLAIM_MAX_AGE_S = 120  # past every hook timeout memhealth writes: the claimant is gone


def _in_flight(pid: int | None, ts_ns: int, now_ns: int) -> bool:
    """An unconfirmed delivery whose hook may still write it: a parallel tool call must not
    deliver the same cue twice, and a killed one must not keep it."""
    from memory_core.outbox.heartbeat import pid_alive

    return pid is not None and pid != os.getpid() and abs(now_ns - ts_ns) < CLAIM_MAX_AGE_S * 1e9 \
        and pid_alive(pid)


def confirm(conn, session_id: str | None) -> None:
    """This process's claimed deliveries of the session were written to Claude Code: they
    count from now on (call inside the write transaction that completes the heartbeat)."""
    if session_id:
        conn.execute("UPDATE cue_deliveries SET confirmed = 1 WHERE session_id = ? AND confirmed = 0 AND pid = ?",
                     (session_id, os.getpid()))


def frame(path: str, line: int | None, name: str, kind: str, recorded_ns: int, body: str,
          git: str = "") -> str:
    """One delivered item: kind, name, provenance (file:line, recorded date, the commit that
    brought it) and the warning before the text, so a clipped item never loses where it came
    from."""
    day = time.strftime("%Y-%m-%d", time.gmtime(recorded_ns / 1e9)) if recorded_ns else "?"
    where = f"{path}:{line}" if line else path
    return f"- [{kind}] {name} ({where}, recorded {day}{git}; verify before building on it): {body}"


def _git_notes(conn, paths: set) -> dict[str, str]:
    """{path: ", committed … by …"} from the memory chunks' attrs (set at ingest; one query)."""

    from memory_core.text import git_provenance

    paths = [p for p in paths if p]
    if not paths:
        return {}
    out = {}
    for path, attrs in conn.execute(
            "SELECT path, attrs FROM chunks WHERE source = 'memory' AND attrs LIKE '%\"git\"%' AND path IN "
            f"({','.join('?' * len(paths))}) GROUP BY path", paths):
        try:
            note = git_provenance(json.loads(attrs))
        except ValueError:
            continue
        if note:
            out[path] = note
    return out


def new_epoch(conn, session_id: str | None, now_ns: int | None = None, *, boundary_start: bool = False
              ) -> int | None:
    """Re-arm every cue of the session (a compaction boundary); return the epoch now in force.
    Call inside a write transaction.

    One compaction is one epoch: PreCompact starts it and marks it pending; the SessionStart
    (compact) after it (`boundary_start=True`) only clears the mark. A compact or clear start
    with no PreCompact before it starts the epoch itself."""
    if not session_id:
        return None
    now_ns = now_ns or time.time_ns()
    if boundary_start:
        row = conn.execute(
            "UPDATE cue_sessions SET pending = 0, updated_ns = ? WHERE session_id = ? AND pending = 1 "
            "RETURNING epoch", (now_ns, session_id)).fetchone()
        if row is not None:
            return row[0]
    row = conn.execute(
        "INSERT INTO cue_sessions(session_id, epoch, pending, updated_ns) VALUES (?, 1, ?, ?) "
        "ON CONFLICT(session_id) DO UPDATE SET epoch = epoch + 1, pending = excluded.pending, "
        "updated_ns = excluded.updated_ns RETURNING epoch",
        (session_id, 0 if boundary_start else 1, now_ns)).fetchone()
    return row[0]


def retain(conn, now_ns: int | None = None) -> None:
    """Keep the audit and history tables bounded (call inside a write transaction)."""
    now_ns = now_ns or time.time_ns()
    conn.execute("DELETE FROM cue_audit WHERE id <= (SELECT max(id) FROM cue_audit) - ?", (AUDIT_KEEP_ROWS,))
    horizon = now_ns - HISTORY_KEEP_DAYS * 86400 * 10 ** 9
    conn.execute("DELETE FROM cue_deliveries WHERE ts_ns < ?", (horizon,))
    conn.execute("DELETE FROM file_reads WHERE ts_ns < ?", (horizon,))
    conn.execute("DELETE FROM cue_sessions WHERE updated_ns < ?", (horizon,))


def record_read(conn, session_id: str | None, epoch: int, rel: str, content: str, now_ns: int) -> tuple[bool, int]:
    """Note a Read for the compaction-cost figures (inside a write transaction).
    Returns (first read of this file in this epoch, bytes re-read after a compaction)."""
    if not session_id:
        return True, 0
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover
        from hashlib import blake2b
    data = content.encode("utf-8", "replace")
    digest = blake2b(data, digest_size=8).hexdigest()
    before = conn.execute(
        "SELECT content_hash FROM file_reads WHERE session_id = ? AND path = ? AND epoch < ? "
        "ORDER BY epoch DESC LIMIT 1", (session_id, rel, epoch)).fetchone() if epoch else None
    cur = conn.execute(
        "INSERT OR IGNORE INTO file_reads(session_id, path, epoch, bytes, content_hash, reread, same_content, ts_ns) "
        "VALUES (?,?,?,?,?,?,?,?)",
        (session_id, rel, epoch, len(data), digest, int(before is not None),
         int(before is not None and before[0] == digest), now_ns))
    if cur.rowcount != 1:
        return False, 0
    if before is None:
        return True, 0
    bump(conn, "memhealth_compaction_rereads_total", {"same_content": "true" if before[0] == digest else "false"})
    bump(conn, "memhealth_compaction_reread_bytes_total", None, len(data))
    return True, len(data)
