"""The code index: real code in five languages, committed to real git repositories in tmp
directories, indexed by the `code` ingest source and read back through memory_core.index.code."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from memhealth.config import defaults
from memory_core.index import code as code_index
from memory_core.ingest import code as code_source
from memory_core.ingest import code_refs, run_ingest
from memory_core.store.db import sqlite3
from memory_core.store.schema import ensure_schema
from tests.conftest import run_cli

PY_GZIP = '''"""Middleware that compresses responses with gzip."""

import gzip


class GZipMiddleware:
    """Compress a response body with gzip when the client accepts it."""

    def __init__(self, app, minimum_size=500):
        self.app = app

    async def __call__(self, scope, receive, send):
        """Wrap send."""
        return await self.app(scope, receive, send)


def _private_helper(x):
    return x
'''

PY_USER = '''from app.middleware.gzip import GZipMiddleware

APP = GZipMiddleware(None)
'''

JS_ROUTER = '''/**
 * Router: maps paths to handlers.
 */

// A route table with parameters.
export class Router {
  /** Add a route. */
  add(path, handler) { this.routes.push([path, handler]); }
}

export function createRouter() { return new Router(); }

class InternalCache {}
'''

TS_STORE = '''/** A key-value store. */
export interface Store {
  get(key: string): string | undefined;
}

/** Identifiers of stored things. */
export type StoreId = string;

export enum Backend { Memory, Disk }

function localOnly(): void {}
'''

GO_RATE = '''// Package rate limits how often something may happen.
package rate

// Limiter allows events up to a rate.
type Limiter struct {
	burst int
}

// Allow reports whether an event may happen now.
func (l *Limiter) Allow() bool { return l.burst > 0 }

// NewLimiter returns a Limiter.
func NewLimiter(burst int) *Limiter { return &Limiter{burst: burst} }

func helper() {}
'''

RS_LIB = '''//! Token buckets for rate limiting.

/// A bucket of tokens.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    tokens: u32,
}

/// Something that can be limited.
pub trait Limited {
    fn cost(&self) -> u32;
}

impl TokenBucket {
    /// Take one token.
    pub fn take(&mut self) -> bool { self.tokens > 0 }
    fn refill(&mut self) {}
}

struct Private;
'''


def git(root, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          env=env, timeout=60).stdout.decode()


def write(root, rel, text):
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def commit(root, message="change"):
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, "app/middleware/__init__.py", '"""HTTP middleware for the app."""\n')
    write(root, "app/middleware/gzip.py", PY_GZIP)
    write(root, "app/main.py", PY_USER)
    write(root, "web/router.js", JS_ROUTER)
    write(root, "web/store.ts", TS_STORE)
    write(root, "rate/rate.go", GO_RATE)
    write(root, "bucket/src/lib.rs", RS_LIB)
    write(root, "bucket/README.md", "# bucket\n\n[![ci](x.svg)](x)\n\nToken buckets, in Rust.\n")
    write(root, "tests/test_gzip.py", "class TestGZip:\n    def test_it(self):\n        pass\n")
    commit(root, "initial")
    return root


@pytest.fixture
def conn(tmp_path):
    c = sqlite3.connect(str(tmp_path / "memory.db"), isolation_level=None, timeout=10)
    ensure_schema(c)
    yield c
    c.close()


def index(conn, root, cfg=None, **kw):
    """One run of the code source; returns (report dict, paths parsed)."""
    parsed: list[str] = []
    report = run_ingest(conn, str(root), cfg or defaults(), sources=["code"], **kw)
    return report.to_dict()["sources"]["code"], parsed


def index_counting(conn, root, cfg=None):
    parsed: list[str] = []
    run = code_source.Run(conn, str(root), cfg or defaults(), 60.0)
    rep = code_source.SourceReport()
    code_source.ingest_code(run, rep, parse_hook=parsed.append)
    return rep, parsed


def defs(conn, path):
    return {r[0]: r[1:] for r in conn.execute(
        "SELECT qualname, kind, line_start, line_end, exported, component FROM code_defs "
        "WHERE path = ?", (path,))}


def test_definitions_in_five_languages_have_their_kind_span_signature_and_doc(conn, repo):
    rep, _ = index(conn, repo)
    assert rep["errors"] == 0 and rep["code"]["failed"] == 0
    assert rep["code"]["commit"] == git(repo, "rev-parse", "HEAD").strip()

    py = defs(conn, "app/middleware/gzip.py")
    assert py["GZipMiddleware"] == ("class", 6, 14, 1, 1)
    assert py["GZipMiddleware.__call__"][0] == "method"
    assert py["_private_helper"][3] == 0  # exported: a leading underscore is private
    (gz,) = code_index.definitions(conn, "GZipMiddleware")
    assert gz["path"] == "app/middleware/gzip.py" and gz["line_start"] == 6
    assert gz["signature"] == "class GZipMiddleware"
    assert gz["summary"] == "Compress a response body with gzip when the client accepts it."
    (call,) = code_index.definitions(conn, "__call__")
    assert call["signature"] == "async def __call__(self, scope, receive, send)"
    assert call["doc"] == "Wrap send."
    (mod,) = code_index.definitions(conn, "gzip")
    assert mod["kind"] == "module" and mod["doc"] == "Middleware that compresses responses with gzip."
    (pkg,) = code_index.definitions(conn, "middleware")
    assert pkg["kind"] == "package" and pkg["component"]

    js = defs(conn, "web/router.js")
    assert js["Router"][:2] == ("class", 6) and js["Router"][3:] == (1, 1)
    assert js["Router.add"][0] == "method"
    assert js["InternalCache"][3:] == (0, 0)  # an ES module that exports: unexported is internal
    (router,) = code_index.definitions(conn, "Router")
    assert router["doc"] == "A route table with parameters."
    (rmod,) = code_index.definitions(conn, "router")
    assert rmod["doc"] == "Router: maps paths to handlers."

    ts = defs(conn, "web/store.ts")
    assert ts["Store"][0] == "interface" and ts["Store"][3:] == (1, 1)
    assert ts["StoreId"][0] == "type" and ts["Backend"][0] == "enum"
    assert ts["localOnly"][3] == 0

    go = defs(conn, "rate/rate.go")
    assert go["Limiter"] == ("struct", 5, 7, 1, 1)
    assert go["Limiter.Allow"][0] == "method" and go["helper"][3] == 0
    (allow,) = code_index.definitions(conn, "Allow")
    assert allow["signature"] == "func (l *Limiter) Allow() bool"
    assert allow["doc"] == "Allow reports whether an event may happen now."
    (rate,) = code_index.definitions(conn, "rate")
    assert rate["kind"] == "package" and rate["doc"] == "Package rate limits how often something may happen."

    rs = defs(conn, "bucket/src/lib.rs")
    assert rs["TokenBucket"][:2] == ("struct", 5) and rs["TokenBucket"][3:] == (1, 1)
    assert rs["TokenBucket.take"][0] == "method" and rs["TokenBucket.refill"][3] == 0
    assert rs["Private"][3:] == (0, 0)
    (bucket,) = code_index.definitions(conn, "TokenBucket")
    assert bucket["doc"] == "A bucket of tokens."  # the #[derive] between is skipped
    assert code_index.definition_at(conn, "bucket/src/lib.rs", 16)["qualname"] == "TokenBucket.take"
    assert code_index.definition_at(conn, "bucket/src/lib.rs", 2)["kind"] == "package"


def test_components_are_documented_modules_public_classes_exported_types_and_readme_folders(conn, repo):
    index(conn, repo)
    names = {(c["name"], c["kind"]) for c in code_index.components(conn)}
    assert {("GZipMiddleware", "class"), ("Router", "class"), ("Store", "interface"),
            ("StoreId", "type"), ("Backend", "enum"), ("Limiter", "struct"), ("rate", "package"),
            ("TokenBucket", "struct"), ("Limited", "trait"), ("middleware", "package"),
            ("bucket", "package"), ("gzip", "module")} <= names
    # never a function, a private type, or a test's class
    assert not {n for n, k in names if k in ("function", "method")}
    assert ("Private", "struct") not in names and ("InternalCache", "class") not in names
    assert ("TestGZip", "class") not in names
    (readme,) = [c for c in code_index.components(conn) if c["name"] == "bucket"]
    assert readme["doc"] == "Token buckets, in Rust." and readme["path"] == "bucket/README.md"


def test_rank_counts_the_other_files_that_mention_a_name(conn, repo):
    index(conn, repo)
    (gz,) = code_index.definitions(conn, "GZipMiddleware")
    assert gz["rank"] == 1  # app/main.py; its own file does not count
    ranks = [c["rank"] for c in code_index.components(conn)]
    assert ranks == sorted(ranks, reverse=True) and ranks[0] >= 1
    assert set(conn.execute("SELECT path, n FROM code_refs WHERE name = 'GZipMiddleware'")) == {
        ("app/middleware/gzip.py", 1), ("app/main.py", 2)}


def test_an_unchanged_blob_is_never_parsed_again_and_a_change_parses_only_itself(conn, repo):
    _rep, parsed = index_counting(conn, repo)
    assert len(parsed) == 8  # the README is read, not parsed
    _rep, parsed = index_counting(conn, repo)
    assert parsed == []
    # a new commit that touches other files only: still nothing reparsed but the change
    write(repo, "docs.txt", "not code")
    commit(repo, "docs")
    _rep, parsed = index_counting(conn, repo)
    assert parsed == []
    write(repo, "rate/rate.go", GO_RATE.replace("func helper() {}", "func helper() {}\n\n// Wait blocks.\nfunc Wait() {}"))
    head = commit(repo, "wait")
    rep, parsed = index_counting(conn, repo)
    assert parsed == ["rate/rate.go"]
    assert code_index.indexed_commit(conn) == head
    (wait,) = code_index.definitions(conn, "Wait")
    assert wait["doc"] == "Wait blocks." and wait["line_start"] == 18


@pytest.mark.parametrize("grep_max", [500, 0], ids=["git-grep", "token-pass"])
def test_a_name_defined_for_the_first_time_is_found_in_files_that_did_not_change(conn, repo, grep_max,
                                                                                 monkeypatch):
    monkeypatch.setattr(code_refs, "GREP_MAX_NAMES", grep_max)
    write(repo, "app/client.py", "def use():\n    return Compressor() + Compressor()\n")
    commit(repo)
    index(conn, repo)
    assert code_index.definitions(conn, "use")[0]["rank"] == 0
    write(repo, "app/compress.py", '"""Compression."""\n\nclass Compressor:\n    """Compresses."""\n')
    commit(repo, "compressor")
    rep, parsed = index_counting(conn, repo)
    assert parsed == ["app/compress.py"]
    (c,) = code_index.definitions(conn, "Compressor")
    assert c["rank"] == 1
    assert conn.execute("SELECT n FROM code_refs WHERE name = 'Compressor' AND path = 'app/client.py'"
                        ).fetchone() == (2,)


def test_a_deleted_file_loses_its_rows_and_a_renamed_one_is_found_in_its_new_place(conn, repo):
    index(conn, repo)
    git(repo, "mv", "rate/rate.go", "rate/limiter.go")
    git(repo, "rm", "-q", "web/store.ts")
    commit(repo, "move")
    index(conn, repo)
    assert code_index.definitions(conn, "Store") == []
    assert code_index.file_status(conn, "web/store.ts") is None
    assert [d["path"] for d in code_index.definitions(conn, "Limiter")] == ["rate/limiter.go"]
    assert conn.execute("SELECT count(*) FROM code_refs WHERE path = 'web/store.ts'").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM code_refs WHERE name = 'StoreId'").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM code_fts WHERE code_fts MATCH 'store'").fetchone() == (0,)


def test_a_file_that_fails_to_parse_is_recorded_and_the_rest_is_indexed(conn, repo):
    write(repo, "app/broken.py", "def ok():\n    pass\n\ndef broken(:\n    pass\n")
    commit(repo, "broken")
    rep, _ = index(conn, repo)
    assert rep["code"]["failed"] == 1 and rep["errors"] == 0
    status = code_index.file_status(conn, "app/broken.py")
    assert status["status"] == "failed" and "line 4" in status["error"]
    assert code_index.failed_files(conn) == [("app/broken.py", status["error"])]
    assert code_index.definitions(conn, "GZipMiddleware")  # the others went on
    # fixed in the next commit: parsed again, status ok
    write(repo, "app/broken.py", "def ok():\n    pass\n")
    commit(repo, "fix")
    index(conn, repo)
    assert code_index.file_status(conn, "app/broken.py")["status"] == "ok"
    assert code_index.failed_files(conn) == []


def test_symlinks_vendored_generated_and_oversized_files_are_not_parsed(conn, repo):
    write(repo, "vendor/lib/dep.py", "class Vendored:\n    pass\n")
    write(repo, "node_modules/x/index.js", "export class FromNpm {}\n")
    write(repo, ".github/scripts/ci.py", "class Hidden:\n    pass\n")
    write(repo, "api/gen.go", "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n\ntype Gen struct{}\n")
    write(repo, "web/app.min.js", "function a(){}" * 10)
    write(repo, "big/huge.py", "x = 1\n" * 400)
    os.symlink("gzip.py", os.path.join(str(repo), "app/middleware/link.py"))
    commit(repo, "extras")
    cfg = defaults()
    cfg["ingest"]["code_max_bytes"] = 2000
    parsed = []
    run = code_source.Run(conn, str(repo), cfg, 60.0)
    rep = code_source.SourceReport()
    code_source.ingest_code(run, rep, parse_hook=parsed.append)
    for name in ("Vendored", "FromNpm", "Hidden", "Gen", "a"):
        assert code_index.definitions(conn, name) == [], name
    assert not {"vendor/lib/dep.py", "node_modules/x/index.js", "app/middleware/link.py",
                "api/gen.go", "web/app.min.js", "big/huge.py"} & set(parsed)
    assert code_index.file_status(conn, "app/middleware/link.py") is None
    assert code_index.file_status(conn, "vendor/lib/dep.py") is None
    assert code_index.file_status(conn, "api/gen.go")["status"] == "skipped"
    assert code_index.file_status(conn, "web/app.min.js")["status"] == "skipped"
    huge = code_index.file_status(conn, "big/huge.py")
    assert huge["status"] == "skipped" and "larger than 2000 bytes" in huge["error"]
    assert rep.extra["vendored"] >= 4


def test_globs_and_excludes_choose_what_is_indexed(conn, repo):
    cfg = defaults()
    cfg["ingest"]["code"] = ["app", "web/*.ts"]
    cfg["ingest"]["code_exclude"] = ["app/main.py"]
    index(conn, repo, cfg)
    paths = {p for (p,) in conn.execute("SELECT path FROM code_files")}
    assert paths == {"app/middleware/__init__.py", "app/middleware/gzip.py", "web/store.ts"}
    cfg["ingest"]["code"] = []
    rep, _ = index(conn, repo, cfg)
    assert any("disabled" in n for n in rep["notes"])


def test_outside_a_git_repository_the_source_notes_it_and_indexes_nothing(conn, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    write(plain, "a.py", "class A:\n    pass\n")
    rep, _ = index(conn, plain)
    assert rep["errors"] == 0 and any("not a git repository" in n for n in rep["notes"])
    assert code_index.indexed_commit(conn) is None


def test_a_budget_stop_resumes_where_it_left_off(conn, repo):
    for i in range(30):
        write(repo, f"many/m{i}.py", f'"""Module {i}."""\n\nclass C{i}:\n    pass\n')
    commit(repo, "many")
    cfg = defaults()
    first = run_ingest(conn, str(repo), cfg, sources=["code"], budget_s=0.0001).to_dict()
    assert first["budget_exhausted"] is True
    assert code_index.indexed_commit(conn) is None  # not complete: the commit is not claimed
    done_first = conn.execute("SELECT count(*) FROM code_files").fetchone()[0]
    assert 0 < done_first < 38
    _rep, parsed = index_counting(conn, repo)
    assert len(parsed) == 38 - done_first
    assert code_index.indexed_commit(conn) == git(repo, "rev-parse", "HEAD").strip()
    assert code_index.definitions(conn, "C29")[0]["component"]


def test_a_query_file_adds_a_language(tmp_path):
    queries = tmp_path / "queries"
    queries.mkdir()
    (queries / "lua.scm").write_text(
        "; memhealth.extensions: .lua=lua\n; memhealth.exported: name-public\n"
        "(function_declaration name: (identifier) @name) @definition.function\n")
    langs = code_source.load_languages(str(queries))
    assert set(langs) == {".lua"}
    from tree_sitter_language_pack import get_parser

    parsed = code_source.extract(b"-- Greets.\nfunction greet(n)\n  return n\nend\n", "g.lua",
                                 langs[".lua"], "lua", get_parser("lua"))
    assert [(d.name, d.kind, d.line_start, d.doc) for d in parsed.defs[1:]] == [
        ("greet", "function", 2, "Greets.")]


def test_the_shipped_queries_compile_for_every_grammar_they_name():
    langs = code_source.load_languages()
    assert {".py", ".js", ".ts", ".tsx", ".go", ".rs"} <= set(langs)
    for ext, lang in langs.items():
        assert lang.query(lang.grammars[ext]) is not None, ext


@pytest.mark.parametrize("name,words", [
    ("GZipMiddleware", "g zip middleware gzip gzipmiddleware"),
    ("rate_limiter", "rate limiter ratelimiter"),
    ("HTTPServer", "http server httpserver"),
    ("parse", "parse"),
])
def test_identifiers_split_into_the_words_a_prompt_uses(name, words):
    assert code_source.name_words(name) == words


def test_memhealth_ingest_code_reports_the_index_in_json(repo):
    proc = run_cli("init", "--project", str(repo), "--no-templates")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("ingest", "code", "--json", "--project", str(repo))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    code = data["sources"]["code"]["code"]
    assert code["files"] == 9 and code["parsed"] == 9 and code["complete"] is True


def test_the_collector_exports_the_index_counts(conn, repo, tmp_path):
    from prometheus_client import CollectorRegistry

    from telemetry.collector import StoreCollector

    write(repo, "app/broken.py", "def broken(:\n    pass\n")
    commit(repo, "broken")
    index(conn, repo)
    registry = CollectorRegistry()
    registry.register(StoreCollector(str(tmp_path / "memory.db")))
    get = registry.get_sample_value
    assert get("memhealth_code_files", {"status": "ok"}) == 9
    assert get("memhealth_code_files", {"status": "failed"}) == 1
    assert get("memhealth_code_files", {"status": "skipped"}) == 0
    (defs,) = conn.execute("SELECT count(*) FROM code_defs").fetchone()
    (comps,) = conn.execute("SELECT count(*) FROM code_defs WHERE component = 1").fetchone()
    assert get("memhealth_code_definitions") == defs and get("memhealth_code_components") == comps
    indexed_ns = int(conn.execute("SELECT value FROM meta WHERE key = 'code.indexed_ns'").fetchone()[0])
    assert get("memhealth_code_index_last_timestamp_seconds") == indexed_ns / 1e9


def test_the_ingest_code_span_carries_what_the_run_did(conn, repo):
    from memory_core.outbox.spans import command_trace

    with command_trace(conn, "memhealth ingest") as trace:
        run_ingest(conn, str(repo), defaults(), sources=["code"], trace=trace)
    (attrs,) = conn.execute("SELECT attributes FROM spans WHERE name = 'ingest code'").fetchone()
    attrs = json.loads(attrs)
    assert attrs["memhealth.ingest.code.parsed"] == 9
    assert attrs["memhealth.ingest.code.failed"] == 0
    assert attrs["memhealth.ingest.code.commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert attrs["memhealth.ingest.code.defs_added"] == conn.execute(
        "SELECT count(*) FROM code_defs").fetchone()[0]


def test_the_gate_notes_a_fresh_commit_and_names_a_few_failed_files(conn, repo):
    from probes.code_index import code_index_check
    from probes.evidence import Evidence

    cfg = defaults()
    assert code_index_check(Evidence(str(repo), conn, cfg)).status == "red"  # never indexed
    index(conn, repo)
    r = code_index_check(Evidence(str(repo), conn, cfg))
    assert r.status == "green" and "definition(s)" in r.detail
    write(repo, "app/broken.py", "def broken(:\n    pass\n")
    commit(repo, "broken")
    r = code_index_check(Evidence(str(repo), conn, cfg))
    assert r.status == "note" and "1 commit(s) behind HEAD" in r.detail and r.fix == "memhealth ingest code"
    assert r.audience == "operator"
    index(conn, repo)
    r = code_index_check(Evidence(str(repo), conn, cfg))
    assert r.status == "note" and "1 file(s) failed to parse" in r.detail
    assert "app/broken.py (syntax error at line 1" in r.detail or "app/broken.py (missing" in r.detail
    # the same HEAD, a day past the ingest budget: still only the failed file (nothing to read)
    later = Evidence(str(repo), conn, cfg, now=time.time() + 30 * 86400)
    assert code_index_check(later).status == "note"
    cfg["ingest"]["code"] = []
    assert code_index_check(Evidence(str(repo), conn, cfg)).detail.startswith("code index off")


def _snapshot(c):
    return (sorted(c.execute("SELECT name, path, n FROM code_refs")),
            sorted(c.execute("SELECT path, qualname, kind, round(rank, 6), component FROM code_defs")),
            sorted(c.execute("SELECT name FROM code_names")))


@pytest.mark.parametrize("targeted_max", [200, 0], ids=["touched-names", "every-name"])
def test_incremental_runs_end_where_a_cold_index_of_the_same_commit_does(conn, repo, tmp_path,
                                                                         targeted_max, monkeypatch):
    monkeypatch.setattr(code_source, "TARGETED_MAX_FILES", targeted_max)
    index(conn, repo)
    # a new name used by an unchanged file, a deleted file, a rename, a name defined twice
    write(repo, "app/compress.py", '"""Compression."""\n\nclass Compressor:\n    """Compresses."""\n')
    write(repo, "app/main.py", PY_USER + "\nfrom app.compress import Compressor\nRouter = None\n")
    git(repo, "rm", "-q", "web/store.ts")
    git(repo, "mv", "rate/rate.go", "rate/limit.go")
    commit(repo, "mixed")
    index(conn, repo)
    write(repo, "web/extra.js", "export class Router {}\nexport class Compressor {}\n")
    git(repo, "rm", "-q", "app/middleware/gzip.py")
    commit(repo, "more")
    index(conn, repo)
    fresh = sqlite3.connect(str(tmp_path / "fresh.db"), isolation_level=None)
    ensure_schema(fresh)
    index(fresh, repo)
    assert _snapshot(conn) == _snapshot(fresh)
    assert code_index.definitions(conn, "GZipMiddleware") == []
    assert {d["path"] for d in code_index.definitions(conn, "Compressor")} == {"app/compress.py", "web/extra.js"}


def test_head_state_finds_the_repository_from_a_subdirectory_and_none_outside_one(repo, tmp_path):
    """The gate spawns git only where git finds a repository: from a subdirectory of one
    (a `.git` above), in a linked worktree (a `.git` file), never in a plain directory."""
    from probes.code_index import head_state, in_repository

    head = git(repo, "rev-parse", "HEAD").strip()
    assert head_state(str(repo / "app" / "middleware"))[0] == head
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    assert (linked / ".git").is_file() and head_state(str(linked))[0] == head
    plain = tmp_path / "plain" / "deep"
    plain.mkdir(parents=True)
    assert not in_repository(str(plain)) and head_state(str(plain)) is None
