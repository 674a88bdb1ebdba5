"""The reading rules of the DO-NOT-REBUILD leg, one at a time on small inputs: identifiers an
entry lists name it, a new member of a category is new work, "debug" is investigate intent
only as a verb. Their effect on real text is pinned in tests/test_inject_realcorpus.py."""

from __future__ import annotations

import json

import pytest

from memhealth.config import load
from memory_core.delivery import inject, naming
from memory_core.delivery.entries import words
from memory_core.delivery.intent import classify
from memory_core.delivery.prompt import Said, identifiers
from memory_core.outbox.spans import Trace
from memory_core.store.db import connect, write


def test_identifiers_are_code_shapes_and_plain_words_are_not():
    got = identifiers("add verify= and --verbose, follow_redirects, ALL_PROXY, HTTPDigestAuth, "
                             "response.json() and Jinja2Templates.TemplateResponse; e.g. Digest over TLS.")
    assert got == {
        "verify": ["verify"], "verbose": ["verbose"], "follow_redirects": ["follow", "redirects"],
        "all_proxy": ["all", "proxy"], "httpdigestauth": ["http", "digest", "auth"],
        "response.json": ["response", "json"],
        "jinja2templates.templateresponse": ["jinja2", "templates", "template", "response"],
        "jinja2templates": ["jinja2", "templates"], "templateresponse": ["template", "response"]}


@pytest.mark.parametrize("prompt, parts, said", [
    ("implement digest authentication for the old server", ["Digest", "Auth"], True),
    ("build support to follow redirects with a cap", ["follow", "redirects"], True),
    ("add a digest of the server auth log", ["Digest", "Auth"], False),   # not in order, not adjacent
    ("authentication with a digest", ["Digest", "Auth"], False),
])
def test_a_compound_identifier_is_spelled_only_by_its_parts_in_order(prompt, parts, said):
    assert naming.spelled(Said(prompt), [p.lower() for p in parts]) is said


MIDDLEWARE_VOCAB = words("built-in middleware CORSMiddleware GZipMiddleware gzip compression signed "
                                 "cookie sessions custom middleware")


@pytest.mark.parametrize("prompt, new", [
    ("add a built-in rate limiting middleware backed by redis", "built rate limiting"),
    ("add a request-id middleware that sets a header", "request id"),
    ("write a custom middleware that times every request", "custom"),
    ("add another middleware for the admin pages", "another"),
    ("add CORS middleware that answers preflight requests", None),          # a listed instance
    ("should we write our own signed cookie session middleware?", None),    # listed, "own" or not
    ("implement gzip compression middleware for large responses", None),
    ("the middleware order matters here", None),                            # nothing qualifies it
])
def test_a_new_member_of_the_category_is_read_from_the_words_qualifying_its_head(prompt, new):
    said = Said(prompt)
    assert naming.new_instance(said, "built-in middleware", MIDDLEWARE_VOCAB, MIDDLEWARE_VOCAB) == new


def test_a_qualifier_another_entry_lists_is_that_entrys_business():
    socks = words("SOCKS proxy support socks5")
    http2 = words("HTTP/2 support h2 ALPN")
    said = Said("implement SOCKS proxy support")
    assert naming.new_instance(said, "HTTP/2 support", http2, socks | http2) is None
    assert naming.new_instance(Said("add websocket support"), "HTTP/2 support", http2, socks | http2) == "websocket"


def test_custom_counts_as_one_more_only_after_a_after_the_verb():
    vocab = words("exception handlers exception_handlers status codes HTTPException")
    assert naming.new_instance(Said("add custom exception handlers keyed by status code"),
                               "exception handlers", vocab, vocab) is None
    bundle = words("TLS verification and CA bundle verify= custom SSL contexts")
    assert naming.new_instance(Said("add an option to pass a custom CA bundle"),
                               "TLS verification and CA bundle", bundle, bundle) is None
    assert naming.new_instance(Said("write a custom exception handler for our 404 page"),
                               "exception handlers", vocab, vocab) == "custom exception"


def test_a_new_one_of_an_entry_named_in_the_singular_is_that_entry_again():
    cli = words("command-line client httpx CLI --verbose")
    said = Said("should we write a new command line client with a --verbose flag")
    assert naming.new_instance(said, "command-line client", cli, cli) is None
    classes = words("response classes HTML JSON streaming file responses")
    assert naming.new_instance(Said("add a new response class for NDJSON"),
                               "response classes", classes, classes) == "new response"


@pytest.mark.parametrize("prompt, intent", [
    ("add custom exception handlers, and a debug traceback page on 500", "build"),
    ("add a debug toolbar to the app", "build"),
    ("debug the flaky websocket test", "investigation"),
    ("help me debug this", "investigation"),
    ("the debug page is blank, can you debug it", "investigation"),
])
def test_debug_is_investigate_intent_only_where_it_can_be_a_verb(prompt, intent):
    assert classify(prompt)[0] == intent


def _store(tmp_path):
    conn = connect(tmp_path / "memory.db")
    entries = [
        ("memory/middleware.md", "built-in middleware",
         "Shipped middleware: CORS, GZip compression, signed-cookie sessions; BaseHTTPMiddleware.",
         "CORSMiddleware, GZipMiddleware, SessionMiddleware"),
        ("memory/responses.md", "response classes",
         "Response classes: HTML, JSON, redirect, streaming and file responses; cookies via set_cookie.",
         "JSONResponse, StreamingResponse, FileResponse"),
        ("memory/redirects.md", "redirect handling",
         "Redirects are not followed unless follow_redirects=True; max_redirects bounds the chain.",
         "follow_redirects=True, TooManyRedirects"),
    ]
    with write(conn):
        for path, name, content, desc in entries:
            conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, content_hash, "
                         "attrs, created_ns) VALUES ('memory', ?, 1, 9, 'subsystem', ?, ?, ?, ?, 1780000000000000000)",
                         (path, name, content, path,
                          json.dumps({"type": "subsystem", "name": name, "path": "src/x.py", "description": desc})))
    return conn


def test_a_new_middleware_silences_an_entry_sharing_only_incidental_words(tmp_path):
    conn = _store(tmp_path)
    cfg = load(None, environ={})
    r = inject.decide(conn, "add a request-id middleware that sets a header on every response",
                      "build", cfg, None, Trace())
    assert r.outcome == "below_relevance" and r.text is None
    assert r.detail["new_instance"] == [{"name": "built-in middleware", "words": "request id"}]
    named = inject.decide(conn, "add CORS middleware for preflight requests", "build", cfg, None, Trace())
    assert named.outcome == "injected" and 'DO-NOT-REBUILD? "built-in middleware"' in named.text


def test_an_identifier_the_entry_lists_is_recorded_as_what_named_it(tmp_path):
    conn = _store(tmp_path)
    cfg = load(None, environ={})
    r = inject.decide(conn, "build follow_redirects support with a cap", "build", cfg, None, Trace())
    assert r.outcome == "injected" and 'DO-NOT-REBUILD? "redirect handling"' in r.text
    assert r.detail["dnr"][0]["identifiers"] == ["follow_redirects"]


def test_an_injected_body_reads_as_sentences_not_a_run_on():
    from memory_core.delivery.blocks import prose as _prose

    text = _prose("the compactor is built; extend it\n\nThe compactor runs every 10,000 events.\n\n- one writer")
    assert text == "the compactor is built; extend it. The compactor runs every 10,000 events. - one writer"
    # a hard-wrapped paragraph is one sentence, not one per line ("events per. stream")
    wrapped = _prose("The compactor runs every 10,000 events per\nstream and folds each\nsnapshot.\n"
                     "- one writer\n- no second compactor\n\n## Notes\nsee docs")
    assert wrapped == ("The compactor runs every 10,000 events per stream and folds each snapshot. "
                       "- one writer. - no second compactor. ## Notes. see docs")
