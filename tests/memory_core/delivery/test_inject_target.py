"""Where the work goes: a build request naming another system as its target ("add multipart
uploads to the S3 backup script") is not a re-proposal of the project's component that
shares its words, with or without an embedding model; a re-proposal whose target is the
project ("into the client") still is. And an identifier the entry lists, written in the
prompt, agrees in meaning by name, however far the prompt's prose is from the entry's.

The prompts here are written for these tests, not drawn from the evaluation sets."""

from __future__ import annotations

import json

import pytest

from memory_core.delivery.target import foreign_target, phrases
from tests.conftest import clean_env, payload, rows, run_hook
from tests.support import dnr_eval


def _seen(vocab):
    return lambda words: {w: (3 if w in vocab else 0) for w in words}


@pytest.mark.parametrize("prompt, head, unseen", [
    ("add retry support to the nightly billing script", "script", ["billing", "nightly"]),
    ("build HTTP/2 support for our Kubernetes cluster's ingress", "cluster", ["ingress", "kubernetes"]),
    ("add gzip compression in the Android app's image loader", "app", ["android", "loader"]),
    ("set up proxy routing inside the staging database", "database", ["staging"]),
])
def test_a_target_that_is_another_system_is_named_with_the_words_the_project_never_wrote(prompt, head, unseen):
    vocab = {"retry", "support", "http", "compression", "gzip", "image", "proxy", "routing", "database",
             "script", "cluster", "app", "the"}
    found = foreign_target(prompt, _seen(vocab))
    assert found is not None and found["head"] == head and found["unseen"] == unseen, found


@pytest.mark.parametrize("prompt", [
    "build HTTP/2 support into the client",                        # the project's own part
    "add a cap on connections for the connection pool",
    "add retries for flaky upstream responses",                     # no system head
    "write our own gzip decoder, the server sends gzip by default",  # no preposition before it
    "add a per-host limit to the script",                           # a system head the project writes
])
def test_a_target_the_project_writes_or_no_system_at_all_names_nothing(prompt):
    vocab = {"client", "http", "support", "connections", "connection", "pool", "cap", "retries",
             "responses", "gzip", "decoder", "server", "limit", "host", "per", "script"}
    assert foreign_target(prompt, _seen(vocab)) is None


def test_phrases_stop_at_a_clause_and_keep_a_possessor():
    assert phrases("raise the pool limits of the Postgres container in docker-compose, it runs out") == [
        ("the Postgres container", ["postgres", "container"]), ("docker-compose", ["docker-compose"]),
        ("the pool limits", ["pool", "limits"])]  # the object of the verb, read last
    assert phrases("implement login for the mobile app's sign-in screen") == [
        ("the mobile app's sign-in screen", ["mobile", "app's", "sign-in", "screen"]), ("login", ["login"])]


def test_a_hundred_thousand_character_prompt_is_read_in_linear_time():
    import time

    def cost(n):
        text = ("to the " + "x" * n + " script ") * 3
        t0 = time.perf_counter()
        foreign_target(text, _seen(set()))
        return time.perf_counter() - t0

    small, large = cost(1_000), cost(100_000)
    assert large < small * 400  # 100x the input: linear, not quadratic (10,000x)


NEAR_MISS = "add multipart uploads to the nightly S3 backup script so old archives are kept"
REPROPOSAL = "write streaming multipart file uploads into the client with a custom boundary"


@pytest.fixture(scope="module")
def httpx(tmp_path_factory):
    return dnr_eval.build_project("httpx", str(tmp_path_factory.mktemp("target")))


def _hook(root, prompt, session, **env):
    run = run_hook("prompt", payload("prompt", root, prompt=prompt, session_id=session), cwd=root,
                   env=clean_env(**env), timeout=60)
    assert run.returncode == 0 and run.stderr == b"", run.stderr
    [(outcome, detail)] = rows(root, "SELECT outcome, detail FROM decisions WHERE session_id = ? AND hook = 'prompt'",
                               (session,))
    return run, outcome, json.loads(detail)


def test_bm25_only_a_near_miss_aimed_at_another_system_is_held_and_says_why(httpx):
    run, outcome, detail = _hook(httpx, NEAR_MISS, "t-near")
    assert run.stdout == b"" and outcome == "below_relevance"
    assert detail["reason"] == "the prompt's target is another system"
    assert detail["target"] == {"phrase": "the nightly S3 backup script", "head": "script",
                                "unseen": ["backup", "nightly", "s3", "script"], "held": 1}
    assert detail["dnr"][0]["name"] == "multipart uploads" and detail["dnr"][0]["idf_sum"] > 0  # the arithmetic
    # the same prompt with the check off: the rare-word cascade alone names the entry
    run, outcome, detail = _hook(httpx, NEAR_MISS, "t-near-off", MEMHEALTH_INJECTION_FOREIGN_TARGET="off")
    assert outcome == "injected" and 'DO-NOT-REBUILD? "multipart uploads"' in run.context()
    assert "target" not in detail


def test_bm25_only_a_reproposal_aimed_at_the_project_is_delivered(httpx):
    run, outcome, detail = _hook(httpx, REPROPOSAL, "t-repro")
    assert outcome == "injected" and 'DO-NOT-REBUILD? "multipart uploads"' in run.context()
    assert "target" not in detail


# the entry lists `files=` among its identifiers; the prompt writes it in a sentence about
# something else entirely, so its prose is far from the entry's
BY_NAME = "implement files= on the client for sending a dict of open binary handles as multipart"


def test_an_identifier_the_entry_lists_agrees_by_name_below_the_cosine_threshold(tmp_path, model_server):
    from tests.support.model_server import configure_project

    root = dnr_eval.build_project("httpx", str(tmp_path))
    configure_project(root, model_server.url)
    # the threshold raised above any cosine: only the identifier can carry the block
    [got] = dnr_eval.evaluate(root, [{"id": "n", "label": "reproposal", "prompt": BY_NAME}],
                              {"meaning_threshold": 0.99, "meaning_timeout_s": 10.0},
                              {"embedding": {"timeout_s": 60.0}, "hooks": {"timeout_s": 600}}, session="by-name")
    assert got["dnr"] == ["multipart uploads"], json.dumps(got["detail"])
    [item] = got["detail"]["meaning"]["items"]
    assert item["agrees"] is True and item["by"] == "identifier" and item["cosine"] < 0.99
    assert got["detail"]["dnr"][0]["identifiers"] == ["files"]


@pytest.mark.parametrize("prompt, said", [
    ("add a regression test checking that the retry policy keeps the method", {"object": "regression test"}),
    ("write a how-to page for the docs on cookie persistence", {"object": "how-to page"}),
    ("benchmark how the connection pool behaves under a thousand requests", {"verb": "benchmark"}),
    ("add a deprecation warning to the proxy settings when a scheme is missing", {"object": "deprecation warning"}),
    ("implement a cache in front of the existing retry policy", {"says": "the existing retry policy"}),
])
def test_work_about_what_exists_is_read_as_such(prompt, said):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) == said


@pytest.mark.parametrize("prompt", [
    "build a test client that calls the app in-process",     # a test client is a component
    "write streaming multipart file uploads into the client",
    "implement SOCKS proxy support",
    "create a pluggable layer under the client so tests can answer requests",
])
def test_building_a_component_is_not_work_about_one(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None


def test_a_file_name_or_someone_elses_thing_is_another_system():
    assert foreign_target("add a --verbose flag to our deploy.sh so it prints each step", _seen({"verbose"})) == {
        "phrase": "our deploy.sh", "head": "file", "unseen": ["deploy", "sh"]}
    assert foreign_target("write a patch for aiohttp's TCPConnector limits", _seen({"limits"}))["head"] == "owner"
    # the owner is the project's own name: its thing, not someone else's
    assert foreign_target("add retries to httpx's transport", _seen({"httpx", "transport", "retries"})) is None


@pytest.mark.parametrize("prompt, said", [
    ("for our blog post on retries: which status codes should a client treat as transient?",
     {"filed": "for our blog post on retries"}),
    ("write a pytest for the `Timeout` object that checks pool=None is accepted", {"object": "pytest"}),
    ("should we have shipped the retry policy as a plugin instead?", {"asks": "have shipped"}),
])
def test_more_forms_of_work_about_what_exists(prompt, said):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) == said


def test_talk_as_a_verb_files_nothing():
    from memory_core.delivery.about import about_work

    assert about_work("let the client talk to socks5:// proxies: write our own handshake") is None


def test_their_system_a_file_in_backticks_and_build_agents_are_other_systems():
    seen = _seen({"library", "pool", "limits", "json", "bodies", "tls", "build", "ca", "bundle"})
    assert foreign_target("their library (aiohttp) has its own pool limits", seen)["owner"] == "their"
    assert foreign_target("in `backup.py` the JSON bodies we dump are huge", seen)["head"] == "file"
    assert foreign_target("add the CA bundle on the build agents so TLS works", seen)["head"] == "agent"


def test_a_lead_before_a_colon_a_built_file_and_a_warehouse_are_other_systems():
    seen = _seen({"static", "files", "serve", "cache", "header", "multipart", "uploads", "path", "table",
                  "event", "hooks", "name", "config"})
    assert foreign_target("traefik config: serve static files with a cache header", seen)["phrase"] == "traefik config"
    assert foreign_target("write `sync.py` with a multipart uploads path", seen)["head"] == "file"
    assert foreign_target("event_hooks is a table in our analytics warehouse", seen)["head"] == "warehouse"


def test_a_qualifier_any_thing_may_have_names_no_system():
    # "own" and "new" are in no project's text as names: "our own proxy configuration" is the
    # project's proxy configuration again, not another system's
    seen = _seen({"proxy", "configuration", "command", "line", "client"})
    assert foreign_target("should we write our own proxy configuration that reads NO_PROXY", seen) is None
    assert foreign_target("should we write a new command line client with a --verbose flag", seen) is None


# Round 8, written from the false fires left on the tuning sets (1-10): an instrument the
# project never names, a phrase made only of words it never writes, a question about how a
# thing behaves. The sentences are new; the forms are the sets'.

@pytest.mark.parametrize("prompt, phrase", [
    ("schedule the cache warm-up with systemd timers every hour", "systemd timers"),
    ("retry the failed uploads using Temporal instead of a loop", "Temporal"),
    ("ship the request logs via Fluentd to the log store", "Fluentd"),
])
def test_an_instrument_the_project_never_names_is_another_system(prompt, phrase):
    seen = _seen({"cache", "warm", "up", "hour", "retry", "failed", "uploads", "loop", "request", "logs",
                  "log", "store", "instead"})
    found = foreign_target(prompt, seen)
    assert found is not None and found["phrase"] == phrase and found["head"] == "instrument", found


@pytest.mark.parametrize("prompt", [
    "add retries with exponential backoff on 503",   # backoff is the project's word
    "stream the body with iter_content in chunks",   # an identifier it writes
    "build the pool with a per-host limit",          # a determiner, then its own words
    "write a middleware that only allows requests with whitelisted Content-Type headers",  # what it has
    "the client can't reach hosts through Privoxy: build the proxy tunnel into the transport",  # a route
])
def test_an_instrument_the_project_writes_names_nothing(prompt):
    seen = _seen({"retries", "backoff", "stream", "body", "iter_content", "iter", "content", "chunks",
                  "build", "pool", "per", "host", "limit", "client", "hosts", "proxy", "tunnel", "transport"})
    assert foreign_target(prompt, seen) is None


def test_a_phrase_of_words_the_project_never_writes_is_another_system_whatever_its_head():
    seen = _seen({"proxy", "settings", "keytool", "certificate", "bundle", "ca", "verification"})
    found = foreign_target("CA bundle verification: the Gradle JVM needs our proxy settings", seen)
    assert found == {"phrase": "the Gradle JVM", "head": "jvm", "unseen": ["gradle", "jvm"]}, found
    # one unseen word alone is not a system: "for the UI" may be the project's, said once
    assert foreign_target("add a retry counter for the UI", _seen({"retry", "counter"})) is None


@pytest.mark.parametrize("prompt, asks", [
    ("does a redirect that changes the host keep the Authorization header? I see it sent twice",
     "does a redirect that changes the host keep the Authorization header?"),
    ("is the connection pool shared between threads when the client is global?",
     "is the connection pool shared between threads when the client is global?"),
    ("do these event hooks run before or after raise_for_status?", "do these event hooks run before or after raise_for_status?"),
])
def test_a_question_about_how_a_thing_behaves_is_about_what_exists(prompt, asks):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) == {"asks": asks}


@pytest.mark.parametrize("prompt", [
    "can you write a retry wrapper that backs off on 503?",      # a request, put as a question
    "should we build our own connection pool?",                   # a proposal, put as a question
    "is there a way to add a per-host connection limit?",          # whether it exists: worth a block
    "does it make sense to write a new digest auth class?",
    "does the client retry on 503? if not, add a Retry wrapper with backoff",  # then asks for it
])
def test_a_request_or_a_proposal_put_as_a_question_is_not_held(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None


# Round 9, written from set 12's false fires (long prompts as typed deep in a session): a
# prompt that says it asks for no change, a question that asks for nothing to be built, a
# bug fix, a file of the docs or the tests, a path or a file of another tree. New sentences.

@pytest.mark.parametrize("prompt", [
    "how does the pool pick a connection when two hosts share an IP? not asking for a change.",
    "the retry wrapper logs twice on 503, I think. Just answer: is that expected?",
    "compare the redirect handling with curl's --location; discussion only, no code",
])
def test_a_prompt_that_says_it_asks_for_no_change_is_about_what_exists(prompt):
    from memory_core.delivery.about import about_work

    assert "disclaims" in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "We vendor the client in a Go service. When the upstream closes early, is the body half read? I see EOFs.",
    "my cookie jar has two entries for the same domain after a redirect; which one wins?",
])
def test_a_question_that_asks_for_nothing_to_be_built_is_about_what_exists(prompt):
    from memory_core.delivery.about import about_work

    assert "asks" in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "the pool leaks a socket on cancel; could you write our own pool that doesn't?",   # a build, asked
    "digest auth is missing. Can we get a DigestAuth class? implement it like the basic one",
    "how hard would it be to implement our own SOCKS handshake?",                     # a proposal
])
def test_a_question_that_also_asks_for_a_build_is_not_held(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None


@pytest.mark.parametrize("prompt, said", [
    ("fix: the multipart boundary is quoted twice when a filename has a comma", {"filed": "fix:"}),
    ("the redirect loop counter resets on 303. Track down why and fix it, with a regression check",
     {"verb": "fix"}),
    ("when the charset is unknown, raise a clear error naming the header instead of a KeyError",
     {"object": "clear error"}),
    ("the German translation of the proxies page is stale; sync it with the English one",
     {"subject": "the German translation"}),
    ("draft the advisory for the cookie leak across hosts, the patch comes later", {"object": "advisory"}),
    ("add one changelog bullet for the timeout fix under Unreleased", {"object": "one changelog bullet"}),
])
def test_a_bug_fix_or_a_document_about_a_component_is_about_what_exists(prompt, said):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) == said


@pytest.mark.parametrize("prompt, path", [
    ("put a property check for chunked decoding in tests/test_chunked_fuzz.py", "tests/test_chunked_fuzz.py"),
    ("the retries section of docs/advanced/retries.md still shows the old Retry import; update it",
     "docs/advanced/retries.md"),
])
def test_a_file_of_the_docs_or_the_tests_is_about_what_exists(prompt, path):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) == {"path": path}


def test_a_path_of_another_tree_is_another_system_and_the_projects_own_is_not():
    seen = _seen({"client", "connection", "pool", "limits", "httpx", "transports", "default", "py", "proxy"})
    found = foreign_target("the mobile build keeps its connection pool in android/net/pool/; cap it at 8", seen)
    assert found is not None and found["phrase"] == "android/net/pool/" and found["head"] == "path", found
    assert foreign_target("rewrite the connection pool in httpx/_transports/default.py", seen) is None
    # a source tree's generic folders name no other system
    assert foreign_target("write our own connection pool in src/pool.py", _seen({"connection", "pool", "py"})) is None


def test_a_build_verbs_object_is_what_is_built_not_where():
    # "a daemon" the project never wrote of may be its own thing built again; a modifier it
    # never writes still makes it another system's
    seen = _seen({"queues", "unix", "socket", "depth", "small", "listing"})
    assert foreign_target("write a small daemon listing queues over a unix socket", seen) is None
    assert foreign_target("write a Rust daemon listing queues over a unix socket", seen)["head"] == "daemon"
    assert foreign_target("add queue depth to the daemon", seen)["head"] == "daemon"  # a place, not an object


# Round 10, written from sets 13-15 (read after their fresh measurement): re-proposals the
# earlier rounds held (a path or a file only mentioned, a subject that is context, a plan
# with a docs step), and the forms of the near misses they let through. New sentences.

@pytest.mark.parametrize("prompt", [
    # a file the project keeps, or a path said as context, is not where the work goes
    "register the new `pool` entry point in pyproject.toml and write our own connection pool",
    "scripts/sync_mirror.py runs out of memory on big files. Give the client a streaming download mode",
    "the page at http://legacy-site.example/ sends no charset; build encoding detection into the response",
])
def test_a_path_or_a_project_file_said_as_context_does_not_hold_a_re_proposal(prompt):
    seen = _seen({"register", "new", "pool", "entry", "point", "connection", "client", "streaming", "download",
                  "mode", "memory", "big", "files", "page", "charset", "encoding", "detection", "response"})
    from memory_core.delivery.about import about_work

    assert foreign_target(prompt, seen) is None and about_work(prompt) is None


@pytest.mark.parametrize("prompt", [
    "The compliance audit wants digest auth for the old endpoints. Let's write DigestAuth ourselves",
    "The warehouse scanner's config page needs digest. Write a digest auth handler for the client",
    "Plan. Step 1: document the proxy use case. Step 2: write our own SOCKS5 handshake in the client.",
])
def test_context_or_a_docs_step_before_a_build_request_does_not_hold_it(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None


@pytest.mark.parametrize("prompt, key", [
    ("cleanup: drop the unused timeout kwarg from the pool helpers", "filed"),
    ("upgrade guide v1 -> v2: what moved for the retry policy? write the section", "filed"),
    ("how the client build the auth header for digest, which algorithm by default? explain me", "asks"),
    ("why the project never build its own cookie jar, only the stdlib one? curious", "asks"),
    ("would you write the retry loop the same way again, or differently? just thoughts", "disclaims"),
    ("onboarding doc needs a paragraph on when to subclass StreamingResponse. No code change.", "disclaims"),
    ("- nginx: proxy cache for the mirror / - no change in library", "disclaims"),
    ("the Kotlin port wants a MockTransport like ours for its tests; nothing changes on our side", "disclaims"),
    ("write me a commit message for the fix that keeps the Host header on redirects", "object"),
])
def test_more_forms_of_work_about_what_exists_in_rounds_ten(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "why not build our own cookie jar instead of the stdlib one?",     # a proposal
    "how about we write our own retry loop?",
    "write our own proxy support, no change in the public API",        # a constraint, not a disclaimer
])
def test_a_proposal_or_a_constraint_is_not_about_what_exists(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None


def test_context_before_a_request_that_says_where_is_not_the_target():
    seen = _seen({"digest", "auth", "handler", "client", "requests", "websocket", "support", "write", "add"})
    prompt = "The warehouse scanner's admin page wants digest. Write a digest auth handler for the client"
    assert foreign_target(prompt, seen) is None
    # a request that points back at the context is aimed where the context is
    back = "The warehouse scanner's admin page wants websockets. Add WebSocket support to it"
    assert foreign_target(back, seen) is not None


# Round 11, written from sets 11, 16 and 17 (read after their fresh measurement) and the last
# fires of set 12: re-proposals held by a new file's name or a numbered variant of a word,
# and the forms of the near misses let through. New sentences.

def test_a_new_file_in_the_projects_folder_is_placed_by_the_folder_not_its_new_name():
    seen = _seen({"httpx", "client", "cookie", "jar", "new", "write", "pool"})
    assert foreign_target("write a new cookie jar from scratch in httpx/_jarlib.py", seen) is None
    assert foreign_target("write our own cookie jar under httpx/_jar_next/", seen) is None
    # a folder the project never writes of is still another tree, and so is a bare file
    assert "fastly" in foreign_target("write a cookie jar in tools/fastly/jar.py", seen)["unseen"]
    assert foreign_target("write a cookie jar in tools/jar/", seen)["head"] == "path"
    assert foreign_target("add the cookie jar to our `edgeworker.py`", seen)["head"] == "file"


@pytest.mark.parametrize("prompt", [
    "write a new SOCKS5 client from scratch for the client",
    "implement cookiesv2 handling in the client: a jar per host",
])
def test_a_numbered_variant_of_a_word_the_project_writes_is_that_word(prompt):
    assert foreign_target(prompt, _seen({"socks", "client", "cookies", "jar", "host", "handling"})) is None


def test_a_word_the_project_never_writes_stays_unseen_with_a_number_on_it():
    found = foreign_target("write a client for the Zeromq4 service", _seen({"client", "service"}))
    assert found is not None and "zeromq4" in found["unseen"], found


@pytest.mark.parametrize("prompt, head", [
    ("the Swift port needs cookie persistence: write the jar there", "port"),
    ("write their retry module for the uploader", "module"),
    ("kaggle: stream the response body into a dataframe, no server", "label"),
])
def test_a_port_their_object_or_a_lead_naming_where_it_runs_is_another_system(prompt, head):
    seen = _seen({"cookie", "persistence", "jar", "retry", "uploader", "stream", "response", "body", "port"})
    found = foreign_target(prompt, seen)
    assert found is not None and found["head"] == head, found


@pytest.mark.parametrize("prompt", [
    "listen on port 8443 and write our own TLS handshake",      # a port number is no system
    "context: the pool leaks. write our own connection pool",   # a message's heading names no place
    "feat: signed cookie sessions, write ours",
])
def test_a_port_number_or_a_messages_heading_is_not_another_system(prompt):
    seen = _seen({"listen", "tls", "handshake", "pool", "leaks", "connection", "signed", "cookie", "sessions"})
    assert foreign_target(prompt, seen) is None


@pytest.mark.parametrize("prompt, key", [
    # a build verb in code is no request: a keyword argument, an identifier, a fenced block
    ("write a regression test for cookie expiry, raise_on_status=True", "object"),
    ("```\nsession.mount('https://', adapter, port=8443)\n```\ndoes the mount see the port? which adapter wins?",
     "asks"),
    # an object pointing back at the sign keeps it; a title names the work
    ("migration note: draft one for the removed verify default", "filed"),
    ("deprecation of the proxies argument - write the warning text", "title"),
    ("cfg: bump the pool limit for the staging client", "filed"),
    # a disclaimer in other words, a setting turned up, a pin
    ("would a second pool per host help? only asking", "disclaims"),
    ("should the client retry on 503 by itself? discuss; I'm not asking you to implement it", "disclaims"),
    ("bump certifi in the lock file and leave the TLS verification code alone", "disclaims"),
    ("raise the read timeout to 30 s for the nightly export", "verb"),
    ("pin anyio below 5 in the test extra", "verb"),
])
def test_more_forms_of_work_about_what_exists_in_round_eleven(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "raise a TooManyRedirects of our own when the hops run out, write it in the client",
    "deprecation warning: first write our own retry policy, then warn on the old one",
    "benchmark of the pool: later. now write our own connection pool",
])
def test_a_raised_error_or_a_build_request_after_a_sign_is_not_held(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None, about_work(prompt)


# Round 12, written from sets 18-20 (read after their fresh measurement): re-proposals held
# by context (a tests path, a long preamble, "for that", a perfect tense, a failure named
# after "with", a ticket key), and the near misses' forms. New sentences.

@pytest.mark.parametrize("prompt", [
    "The docs build in docs/conf.py: Sam has it. For 0.30, let's write our own cookie jar from scratch",
    "Triage notes: one, the login page, two, the footer, three, the search box, four, the export, five, "
    "the avatars, six, the mailer, seven, the cron, eight, the logs, nine: write our own retry policy",
])
def test_a_docs_path_or_a_long_preamble_before_a_build_request_does_not_hold_it(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None, about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "Users on slow hotel networks want resumable downloads. Let's add range requests to the client for that",
    "App developer here: our service calls five hosts. Write a connection pool layer in httpx/_pool.py from scratch",
    "let's build a way to run work after the page has gone out to the user: our own background tasks",
    "Wednesday's standup: Ana takes the flaky test; mine is to write an event hooks system. Start with mine",
    "KV-88: let's write our own multipart encoder for the client",
    "the workers die with MemoryError on big bodies; write streaming downloads into the client",
])
def test_context_before_a_build_request_does_not_hold_it_in_round_twelve(prompt):
    from memory_core.delivery.about import about_work

    seen = _seen({"range", "requests", "client", "connection", "pool", "workers", "die",
                  "httpx", "background", "tasks", "event", "hooks", "system", "multipart", "encoder",
                  "streaming", "downloads", "big", "bodies", "page", "user", "work", "way"})
    assert about_work(prompt) is None and foreign_target(prompt, seen) is None, (about_work(prompt),
                                                                               foreign_target(prompt, seen))


@pytest.mark.parametrize("prompt, key", [
    ("1. bisect the pool leak 2. write the failing test in tests/test_pool_leak.py 3. fix it", "path"),
    ("write docs/how-to/cookies.md: persisting a jar across runs with the client", "path"),
    ("the changelog entry is done. write the two-line upgrade snippet for docs/upgrading.md", "path"),
    ("Trace each send of the transport with a span, wrapped from outside; no behaviour change", "disclaims"),
    ("log which proxy was picked per request, behind the logger; its behaviour stays exactly as it is",
     "disclaims"),
    ("Planning thread, not a ticket: could we one day write our own DNS resolver?", "disclaims"),
    ("a user asks whether we'd ever write a second pool for unix sockets; pros and cons please", "asks"),
    ("Add a plain-language FAQ entry on uploads to the docs. Docs only, no feature work.", "disclaims"),
    ("fix the hang in the mock transport and add one changelog line; no new transport classes", "disclaims"),
    ("Make the warning name the new argument order. The templates class otherwise unchanged.", "disclaims"),
    ("warn when both data= and json= are passed, and keep today's behaviour exactly", "disclaims"),
    ("mirror_sync.py: pool_maxsize 10 -> 25, that script only", "tweak"),
    ("soak conftest only: the client with raise_app_exceptions=False", "filed"),
    ("release notes for 0.30: the cookie jar's new domain matching; write it up", "filed"),
])
def test_more_forms_of_work_about_what_exists_in_round_twelve(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt, head", [
    ("Nadia's side project (a Flask app) needs a cookie jar; write her jar module there", "owner"),
    ("write his retry helper for the scraper", "helper"),
])
def test_someone_elses_project_or_object_is_another_system(prompt, head):
    found = foreign_target(prompt, _seen({"cookie", "jar", "module", "retry", "helper", "scraper", "side", "app"}))
    assert found is not None and (found["head"] == head or found.get("owner") == "their"), found


def test_a_noun_that_is_also_a_build_verb_is_no_request_after_a_noun():
    from memory_core.delivery.about import about_work

    # "port" and "log" after a noun are nouns: the question still asks for nothing
    assert "asks" in about_work("does the socks proxy port matter? what does the debug log show?")
    assert about_work("we should port the cookie jar to the client") is None   # a verb after a modal


# Round 13, written from sets 21-23 (read after their fresh measurement): maintainers'
# replies and triage, pasted material, session follow-ups. New sentences.

@pytest.mark.parametrize("prompt, key", [
    ("draft a polite reply to the reporter explaining how the pool timeout works", "object"),
    ("Reply with the limits example from the docs and close the issue", "verb"),
    ("write an email to the vendor asking for their accepted cookie format", "object"),
    ("answer the question in the thread: read the redirect code path and write the reply only", "filed"),
    ("add tracing around the redirect loop so each hop is a span", "object"),
    ("add structured logging around the cookie jar, names only, never values", "object"),
    ("the flaky test compares bytes to str; fix the assertion. The cookie jar itself is correct.", "disclaims"),
    ("make the PAC file send .onion hosts to the local proxy; the proxy support in the library is untouched",
     "disclaims"),
    ("write the config snippet for their load balancer and nothing in httpx", "disclaims"),
    ("a user writes 'I'd build my own retry layer if the pool let me'. Reply with the Limits example", "verb"),
    ("how would you design the cookie jar if you were starting today? just talking", "asks"),
])
def test_more_forms_of_work_about_what_exists_in_round_thirteen(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    # a paste before the ask is not its lead; a gerund after "by" is a request
    "```\nssl.SSLError: bad handshake\n```\nImplement our own TLS verification in the client",
    "The audit found unsigned cookies. Fix it by writing our own signed-cookie session middleware",
    "the old jar is fine for tests but let's write a new cookie jar for the client",
])
def test_a_paste_a_gerund_request_or_a_contrast_is_not_about_what_exists(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None, about_work(prompt)


def test_a_crate_is_another_languages_package():
    found = foreign_target("add a connection pool to that crate", _seen({"connection", "pool"}))
    assert found is not None and found["head"] == "crate", found


# Round 14, written from sets 24-26 (read after their fresh measurement). New sentences.

def test_a_path_in_the_projects_own_top_folder_is_the_projects_however_new():
    seen = _seen({"client", "cookie", "jar", "pool"})
    tree = frozenset({"httpx", "docs", "tests"})
    assert foreign_target("write our own cookie jar under httpx/_jarstore/", seen, tree) is None
    assert foreign_target("write a cookie jar in vendor/jarstore/", seen, tree)["head"] == "path"


@pytest.mark.parametrize("prompt", [
    "Standup, Tuesday: Kim is on the Azure pipeline. Mine: the pool is slow, so I'll write our own pool in the client",
    "Rather than point them at a recipe, I'll add a cookie jar to the client",
])
def test_a_speaker_taking_the_work_on_mid_sentence_is_the_request(prompt):
    seen = _seen({"pool", "slow", "client", "cookie", "jar", "recipe", "mine", "standup", "tuesday"})
    assert foreign_target(prompt, seen) is None


@pytest.mark.parametrize("prompt, key", [
    ("that's their base image; our SOCKS proxy support is fine.", "disclaims"),
    ("write the two rewrite rules for their nginx; it's their redirect loop, nothing in httpx.", "disclaims"),
    ("handle a BOM in the JSON decoder, plus a test; JSON bodies otherwise stay as they are", "disclaims"),
    ("would retries still fire if someone implemented their own transport with a cache? it's for the FAQ",
     "asks"),
    ("when did we decide the mock transport keeps no history? someone wants call counts", "asks"),
    ("if we ever write chunked uploads from a generator, does the length header go away?", "asks"),
    ("would it be a mistake to write a custom convertor for dates, or parse in the endpoint?", "asks"),
    ("IT wants a PAC file for the fleet; draft it, nothing changes in requests", "disclaims"),
    ("log the exception class before the 500 goes out, never the traceback", "verb"),
    ("add a debug log when a streamed body is closed before it was read", "object"),
    ("docs/cookies.md never says the jar is per client; add that with an example", "path"),
    ("our demo app: GZipMiddleware(minimum_size=500) instead of the default", "filed"),
    ("guesses welcome: is the pool per host? opinions wanted", "disclaims"),
])
def test_more_forms_of_work_about_what_exists_in_round_fourteen(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt, head", [
    ("Perl port (ports/p5-http) wants a cookie jar like ours; their module only", "port"),
    ("the networking course's lab 3: students write a cookie jar", "course"),
])
def test_a_named_port_or_a_courses_lab_is_another_system(prompt, head):
    found = foreign_target(prompt, _seen({"cookie", "jar", "module", "students", "lab"}))
    assert found is not None and found["head"] == head, found


def test_a_participle_or_a_plural_opening_a_prompt_names_no_system():
    seen = _seen({"pages", "charset", "body", "encoding", "detector"})
    assert foreign_target("Scraped pages without a charset come out garbled. Write our own encoding detector", seen) is None


def test_the_projects_own_tree_is_its_roots_name_and_top_folders(tmp_path):
    from memory_core.delivery.cascade import _own_tree

    root = tmp_path / "shopfront"
    (root / "shop").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "README.md").write_text("x")
    assert _own_tree(str(root)) == {"shopfront", "shop"}
    assert _own_tree(str(tmp_path / "missing")) == {"missing"}   # an unreadable root names only itself
    assert _own_tree(None) == frozenset()


# Round 15, written from sets 27-29 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt", [
    # "give X a Y" asks for a build; "to log" is what users do, not the request
    "Users keep asking how to log every call. Let's give the client a hooks mechanism of its own",
    "draft the commit message for what I'm about to write: 'Add a cookie jar with domain matching'",
    "I tried the framework on a side project and it went well. So my proposal: add a cookie jar to the client",
    "The audit found unsigned cookies; fix them by writing our own signed cookie jar",
])
def test_a_build_request_said_in_these_ways_is_not_held(prompt):
    from memory_core.delivery.about import about_work

    seen = _seen({"users", "log", "client", "hooks", "mechanism", "cookie", "jar", "domain", "side", "framework",
                  "proposal", "audit", "cookies", "signed"})
    assert about_work(prompt) is None and foreign_target(prompt, seen) is None, (about_work(prompt),
                                                                               foreign_target(prompt, seen))


def test_what_a_build_is_modelled_on_is_not_where_it_goes():
    seen = _seen({"pool", "caps", "client", "httpx", "limit"})
    assert foreign_target("pool caps for the client, modelled on urllib3's PoolManager(maxsize=)", seen) is None


@pytest.mark.parametrize("prompt, key", [
    ("docs upkeep: make the heading and the example agree on the retry default, that page only", "disclaims"),
    ("add a debug log line when a cookie is dropped; the jar itself stays as it is", "disclaims"),
    ("would you build a cookie jar into the core if http.cookiejar went away?", "asks"),
    ("a cookie jar in the core, one day? roadmap only, nothing gets written this year", "disclaims"),
    ("add a footnote on prior knowledge to the HTTP/2 page", "object"),
    ("the jar picks the wrong domain; fix the lookup and add a fixture with both domains", "verb"),
    ("could you add a note there about chunk boundaries?", "object"),
    ("would writing a SOCKS4 path make sense, or is it covered already?", "asks"),
    ("newbie question, not a PR: is handle_request the whole contract?", "disclaims"),
    ("if someone were to implement a transport from scratch, what must it return?", "asks"),
    ("one table row for people coming from requests, in docs/compatibility.md only", "disclaims"),
    ("Draft a deprecation notice for the old encoding fallback. Behaviour unchanged for now.", "disclaims"),
    ("a student asked why we built lifespan as a context manager. Give me a two-paragraph explanation",
     "asks"),
    ("Give me a short answer I can paste back to him; none of it touches the library", "disclaims"),
])
def test_more_forms_of_work_about_what_exists_in_round_fifteen(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


# Round 16, written from sets 30-32 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt, key", [
    # a piece of the page a sign named: "add the line", "write the table"
    ("docs/cookies.md: the jar section never says cookies are per client. add the line", "path"),
    ("upgrade guide for the 1.0 users: Limits() replaces pool_size=; write the table of old -> new", "filed"),
    # a causative on what the sign named changes it; "make one from scratch" would build
    ("the timeout warning text: make it name the setting; one sentence in the warning", "filed"),
    # small changes to what exists, and disclaimers of proposing
    ("tweak the cookie jar example so it sets a domain", "verb"),
    ("the cookie jar example sets a domain now; nothing new", "disclaims"),
    ("could we build retries with a backoff on the transport? asking how people do it", "disclaims"),
    ("should a cookie jar be written per client? not proposing it, just the trade-offs", "disclaims"),
    # what others do is described, the request writes a rubric
    ("students implement a cookie jar in Rust; write the grading rubric", "object"),
])
def test_more_forms_of_work_about_what_exists_in_round_sixteen(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "make it persist: a cookie jar of our own in the client that writes cookies to disk",
    "let users write cookies to disk: add a persistent cookie jar to the client",
])
def test_a_causative_that_rebuilds_or_a_capability_for_users_is_a_request(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None, about_work(prompt)


def test_an_exercise_named_by_a_compound_lead_is_practice_and_a_to_do_is_not():
    seen = _seen({"cookie", "jar", "students", "week", "client"})
    found = foreign_target("networking course assignment: students write a cookie jar in C", seen)
    assert found is not None and found["head"] == "assignment", found
    assert foreign_target("homework for me this week: add a cookie jar to the client", seen) is None


@pytest.mark.parametrize("prompt", [
    # the context's target is not the request's, once a later clause places the work here
    "Plan: (1) review Ana's PR, (2) pair with Nadia on the billing cron, (3) the proxy is SOCKS only, so add socks5 to our client",
    "the Lambda integration made me notice: the client has no cookie store; let's write a cookie jar in httpx/_jar.py",
])
def test_a_later_clause_that_places_the_work_here_is_the_request(prompt):
    seen = _seen({"plan", "review", "pr", "pair", "proxy", "socks", "socks5", "client", "cookie", "store", "jar",
                  "notice", "only"})
    assert foreign_target(prompt, seen, frozenset({"httpx", "docs"})) is None, foreign_target(prompt, seen)


def test_a_later_clause_that_places_nothing_keeps_the_contexts_target():
    seen = _seen({"cookie", "jar", "digest", "issue", "repro"})
    found = foreign_target("the Salesforce SDK gets the cookie jar wrong; write an upstream issue with a repro", seen)
    assert found is not None, found


# Round 17, written from sets 33-35 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt, key", [
    ("add a counter of dropped cookies to the exporter; metrics only", "disclaims"),
    ("the upgrade memo: the billing job moves off the client to aiohttp; nothing in httpx itself changes", "disclaims"),
    ("a user's kiosk app wants a retry badge; point them at the transport's retries, nothing to add here", "disclaims"),
    ("if someone asked you to build a cookie jar into curl, which parser would you pick?", "asks"),
    ("would you start a cookie jar from libcurl's? just your opinion", "disclaims"),
    ("is there ever a reason to write your own cookie jar when http.cookiejar exists?", "asks"),
    ("instrument the upload calls: an event hook that logs elapsed", "verb"),
    ("tell them the jar already handles domains", "verb"),
    ("typing: an overload so cast=int returns int; add a test case", "object"),
    ("the issue asks for a cookie jar example; add a short snippet to the page", "object"),
    ("downstream note: they want to write a cookie jar per tenant in their plugin", "filed"),
])
def test_more_forms_of_work_about_what_exists_in_round_seventeen(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


def test_we_need_a_thing_is_a_request_after_a_sign():
    from memory_core.delivery.about import about_work

    assert about_work("review notes: we need a cookie jar with domain matching in the client") is None
    assert about_work("review notes: we need a test for the jar's domain matching")  # the lead stands


@pytest.mark.parametrize("prompt, head", [
    ("build the scraper on one Session, with a cookie jar", "scraper"),
])
def test_a_scraper_is_a_system_of_its_own(prompt, head):
    found = foreign_target(prompt, _seen({"session", "cookie", "jar"}))
    assert found is not None and found["head"] == head, found


def test_what_a_build_goes_on_top_of_and_a_plan_to_write_are_not_the_target():
    seen = _seen({"user", "forum", "wants", "cookie", "jar", "client", "httpx"})
    prompt = "a user on the forum wants one, so I'm planning to write a cookie jar on top of the Netscape state machine"
    assert foreign_target(prompt, seen) is None, foreign_target(prompt, seen)


# Round 18, written from sets 36-38 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt", [
    # a heading or a ticket as the lead, a document the plan is written in: no target
    "sprint goal PLT-S7: a cookie jar of our own in the client, domain matching included",
    "standup: today I start on a cookie jar for the client",
    "Buried in the H1 roadmap under 'state': we write a cookie jar in the client",
    # a built object's head decides; a path with underscores is one path
    "so I'd like to add a pluggable backend interface to the client",
    "I'd like a cookie jar for the client in httpx/_cookie_store.py",
    # the request's own place is the project, whatever the context's purpose was
    "For the billing pipelines the client forgets cookies, so I'd like to write a cookie jar into httpx",
    # "on top of" is a base; a plan to write is taken on
    "a user wants it, so I'm planning to write a cookie jar on top of the stdlib state machine",
])
def test_a_request_in_these_forms_is_not_held_round_eighteen(prompt):
    seen = _seen({"cookie", "jar", "client", "domain", "matching", "today", "start", "state", "pluggable", "interface",
                  "backend", "user", "wants", "forgets", "stdlib", "httpx", "write"})
    assert foreign_target(prompt, seen, frozenset({"httpx", "docs"})) is None, foreign_target(prompt, seen)


@pytest.mark.parametrize("prompt, head", [
    ("the Go team's router needs a cookie jar like ours; write it in their jar/store.go", "file"),
    ("set the cookie path in the Nomad job spec for the fetcher", "job"),
    ("Woodpecker CI (.woodpecker.yml): add a step that serves the cookie docs", "ci"),
])
def test_their_file_a_job_spec_and_a_ci_lead_are_another_system(prompt, head):
    found = foreign_target(prompt, _seen({"cookie", "jar", "path", "fetcher", "step", "docs", "serves", "router",
                                          "set", "store", "go"}))
    assert found is not None and found["head"] == head, found


@pytest.mark.parametrize("prompt, key", [
    ("design review: give me five sharp questions about the cookie jar's domain rules", "filed"),
    ("they want prose, not code: write that description of the jar's lookup order", "object"),
    ("give me three questions to ask about the jar", "object"),
])
def test_more_forms_of_work_about_what_exists_in_round_eighteen(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "our own cookie policy for the client: a callback so it can answer a domain check, built in",
    "feat(cookies): a jar of our own\n\nwrite the code this commit message describes",
    "is it fine if I put a cookie jar in httpx/_jar.py with domain matching? writing it tonight",
])
def test_a_request_in_these_forms_is_not_work_about_what_exists(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None, about_work(prompt)


# Round 19, written from sets 39-41 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt, key", [
    ("for the platform guild: does anyone know a reason to build cookie handling into the CDN? no implementation",
     "asks"),
    ("Would it have been simpler to put the jar on the transport? nobody is proposing to move it", "asks"),
    ("a reader's Flask tutorial (not ours) asks how to write a cookie jar; reply in their thread", "asks"),
    ("the vendor's Kotlin SDK mangles our cookies; draft a support ticket to their team", "object"),
    ("upgrade guide for the billing owners: cookies= is deprecated, write the before/after, guide text only",
     "disclaims"),
    ("add a cookie jar with two domains to the example", "place"),
    ("what would a jar look like in a CSV exporter? I'm asking, not requesting a change", "disclaims"),
])
def test_more_forms_of_work_about_what_exists_in_round_nineteen(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "The Kestrel billing service keeps losing sessions, so let's add a cookie jar to httpx itself",
    "For the Marlow dashboard we need cookies kept, so let's build a cookie jar into httpx",
    "we'll add a cookie jar of our own to the client, socks5h:// resolution for remote DNS included",
])
def test_the_request_puts_the_work_into_the_project_by_its_name(prompt):
    seen = _seen({"cookie", "jar", "client", "sessions", "keeps", "losing", "cookies", "kept", "need", "resolution",
                  "included", "httpx"})
    assert foreign_target(prompt, seen, frozenset({"httpx", "docs"})) is None, foreign_target(prompt, seen)


def test_a_ticket_lead_files_the_request_and_a_proper_names_acronym_still_names_a_system():
    from memory_core.delivery.about import about_work

    assert about_work("Support ticket CK-12: cookies vanish on redirect. I want a cookie jar built in") is None
    found = foreign_target("TLS roots: the Jenkins JVM needs our CA in its store", _seen({"tls", "roots", "ca", "store"}))
    assert found is not None and found["phrase"] == "the Jenkins JVM", found


# Round 20, written from sets 42-44 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt, key", [
    ("Ops ticket OPS-77: export NO_PROXY in the unit file; it's infra, not our proxy code", "disclaims"),
    ("two asks: add GZipMiddleware to the stack in shop/app.py, and a minimum size. just configuring what ships",
     "disclaims"),
    ("log every ReadTimeout in their job; our timeout configuration stays exactly as it is", "disclaims"),
    ("wrap the call in their worker and log the host; no change to httpx.", "disclaims"),
    ("Design doc PLT-DD-3, section 'Risks': the jar is per client. Draft the paragraph", "object"),
    ("explain why the jar is per client; their crawler is not in this repo", "disclaims"),
])
def test_more_forms_of_work_about_what_exists_in_round_twenty(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


def test_a_first_person_conditional_is_a_plan_and_a_hypothetical_one_is_asked():
    from memory_core.delivery.about import about_work

    assert about_work("if I write a cookie jar for the client, is httpx/_jar.py a good home for it?") is None
    assert "asks" in (about_work("if we ever write a cookie jar, would domains be matched per client?") or {})


@pytest.mark.parametrize("prompt", [
    "write a cookie jar command in the repo so techs can inspect cookies",
    "implement a cookie jar in a new httpx/_jar_ng/ package",
])
def test_the_repo_and_a_package_in_the_projects_tree_are_the_projects(prompt):
    seen = _seen({"cookie", "jar", "command", "techs", "inspect", "cookies", "package"})
    assert foreign_target(prompt, seen, frozenset({"httpx", "docs"})) is None, foreign_target(prompt, seen)


def test_their_package_is_another_system():
    found = foreign_target("the data team's R package needs a cookie jar; write it for their package",
                           _seen({"cookie", "jar", "package", "data", "team", "r"}))
    assert found is not None and found["head"] == "package", found


# Round 21, written from sets 45-47 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt, key", [
    ("Upgrade guide for the billing team: cookies= moves to a jar; write the before/after and the rollback step",
     "filed"),
    ("would it ever be better to build the cookie jar in the gateway than in the client? for the meeting", "asks"),
    ("config tweak: add COOKIE_DOMAIN to .env.example, read in settings.py, which already uses Config", "disclaims"),
    ("translate the cookie jar page into Spanish for the integrators", "verb"),
])
def test_more_forms_of_work_about_what_exists_in_round_twenty_one(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


def test_code_as_the_object_under_a_sign_keeps_the_sign_and_a_new_thing_overrides_it():
    from memory_core.delivery.about import about_work

    assert about_work("config tweak: add JAR_TTL to the settings") is not None
    assert about_work("config tweak: add a cookie jar of our own to the client") is None


@pytest.mark.parametrize("prompt", [
    "design a cookie jar with domain matching, shipped in the box",
    "the Kestrel front end sits on another domain, so let's add our own cookie jar to the package",
])
def test_in_the_box_and_the_package_said_bare_are_not_another_system(prompt):
    seen = _seen({"cookie", "jar", "domain", "matching", "shipped", "front", "end", "sits", "another"})
    assert foreign_target(prompt, seen, frozenset({"httpx", "docs"})) is None, foreign_target(prompt, seen)


# Round 22, written from sets 48-50 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt, key", [
    ("RFC thread: someone wants signed URLs instead of our cookie jar; write the comparison. Nothing in httpx is "
     "built or changed", "disclaims"),
    ("add a Set-Cookie check in a small middleware around our mount. The jar code in httpx is not touched",
     "disclaims"),
    ("auditors want to see which cookie was dropped; add log lines only", "disclaims"),
    ("I found Cookies already takes domain='example.org'. Please add a short docs example showing that, with "
     "path='/shop'. No change to the cookie classes.", "disclaims"),
])
def test_more_forms_of_work_about_what_exists_in_round_twenty_two(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


def test_a_quoted_value_after_an_equals_sign_opens_no_quotation():
    from memory_core.delivery.about import _prose

    text = "it takes disposition='inline'. Please add a docs example with media_type='application/pdf', thanks"
    assert "Please add a docs example" in _prose(text)


def test_so_lets_after_a_reason_is_the_request():
    seen = _seen({"cookie", "jar", "domain", "matching", "sidecar", "sets", "cookies"})
    prompt = "Marlow's sidecar sets cookies per host, so let's build a cookie jar with domain matching"
    assert foreign_target(prompt, seen) is None, foreign_target(prompt, seen)
    found = foreign_target("Marlow's sidecar drops cookies; write the reply for their team", seen)
    assert found is not None, found


# Round 23, written from sets 51-59 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt", [
    "profile the retry loop under the soak test and post the flamegraph to OPS-88, change nothing",
    "cache the /assets path at the CDN for five minutes; RetryPolicy stays in the client as it is",
    "the lab notebook needs a cell that retries the upload three times, httpx as it is",
    "add a structured log line in our 429 handler in app/limits.py, starlette no change",
    "the retry budget for the egress gateway goes in the Terraform module; nothing in the Python client changes",
    "put the retry annotations on the ingress in deploy/ingress.yaml, Kubernetes manifests only",
    "Helm values for the retry sidecar: three attempts and a 2 s cap, YAML only",
    "the edge must pass Retry-After through; edit infra/cdn/edge.vcl only",
    "the gateway has to back off on 503; no retry code in httpx",
    "reproduce the retry storm against a local server first; no rewrite of the retry policy please",
    "he wants retries with jitter like ours in his Kotlin client, write it there, not ours",
    "diff their patched retry class against upstream and list each change; our retry policy is not edited",
    "how would the retry policy interact with a mounted sub-app? would we need to build anything? just discuss",
    "could you explain why the retry policy gives back a Response? a colleague asked me whether to build one like it",
])
def test_a_scope_the_speaker_sets_outside_the_projects_code_is_work_about_what_exists(prompt):
    from memory_core.delivery.about import about_work

    assert "disclaims" in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "write our own retry policy with jitter in httpx/_retry.py",
    "add a new retry policy class to the client, not a wrapper around urllib3",
    "the team asked me to build a retry policy of our own; write it in httpx/_retry.py",
    "rewrite the retry policy from scratch and keep the public API as it is",
    "implement a retry policy for the client, change the transport as needed",
])
def test_a_build_request_that_sets_no_outside_scope_is_still_a_request(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None, about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "Issue #12 'retries ignore Retry-After'. Write the failing test first, tests/test_retry.py::test_retry_after, "
    "and label it confirmed",
    "write the failing test tests/test_retry.py::test_backoff_cap first, then triage",
    "docs nit: the retry page says backoff starts at 0.5 s but not why, add one sentence pls",
])
def test_a_word_of_when_or_a_courtesy_after_the_object_is_not_its_head(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is not None, prompt
    assert about_work("write the retry policy first, then its tests") is None
    assert about_work("nit: replace the retry policy with a fresh implementation pls") is None


def test_a_path_in_a_later_sentence_does_not_place_an_earlier_build():
    from memory_core.delivery.about import about_work

    prompt = ("As agreed this morning: I'll write an httpx.Retry class with total, backoff and status fields. "
              "You write the tests first in tests/test_retry_class.py.")
    assert about_work(prompt) is None, about_work(prompt)
    assert about_work("write the failing test for retries in tests/test_retry.py") is not None


@pytest.mark.parametrize("prompt", [
    "Triage of #7100 'no retries on 503'. The contributor proposes retries from zero: a budget, backoff and "
    "jitter. Let's build it in requests/retrying.py.",
    "Maintainer reply on #4411: 'yes, a retry policy would help.' I'll implement it in httpx/_retry.py tonight.",
])
def test_a_build_of_what_a_sign_named_placed_in_the_source_is_a_request(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None, about_work(prompt)
    assert about_work("Triage of #7100: the retry docs are thin. Let's write it in docs/retries.md.") is not None


def test_what_the_work_falls_back_to_is_not_its_place():
    seen = _seen({"retry", "policy", "jitter", "backoff", "header", "response"})
    prompt = "implement a retry policy from scratch: read Retry-After and fall back to a backoff calculator library"
    assert foreign_target(prompt, seen) is None, foreign_target(prompt, seen)
    assert foreign_target("add a retry policy to the calculator library", seen) is not None


def test_below_and_above_end_a_built_object():
    seen = _seen({"retry", "transport", "layer", "client", "handle", "request", "mock"})
    prompt = "write a pluggable retry layer below Client with `handle_request`, like we said"
    assert foreign_target(prompt, seen) is None, foreign_target(prompt, seen)


def test_lets_after_a_reason_starts_the_request():
    seen = _seen({"retry", "policy", "middleware", "starlette", "calls", "api", "origin", "responses"})
    prompt = ("The notebook front end calls the model API from another origin and ops want retries. Rather than "
              "relying on anything shipped, let's write our own retry middleware set in starlette/middleware/")
    assert foreign_target(prompt, seen) is None, foreign_target(prompt, seen)
    found = foreign_target("The kiosk front end drops retries, so add a retry policy to the kiosk app", seen)
    assert found is not None, found


# Round 24, written from sets 60-65 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt, key", [
    ("advisory triage for a token-bucket bypass in a gateway: would we need to build a rate limiter into the "
     "client, or do the pool limits already cap it? no code until the severity is agreed", "disclaims"),
    ("It's a card game for the meetup: players throttle requests by hand. Write the rules card; nothing goes "
     "into httpx.", "disclaims"),
    ("Teaching question, not a code request: would you start the rate limiter lesson from the client's limits "
     "or from a raw socket?", "disclaims"),
    ("the rate limiter walkthrough for the founders' evening: slides and a handout only", "disclaims"),
    ("set RATE_LIMIT=50 in the deploy step of the pipeline; pipeline config only", "disclaims"),
    ("rate-limit-only tweak for the Homebrew tap: bump the resource block; formula only", "disclaims"),
    ("Changelog-only task: note that the rate limiter's burst option goes away in 3.0", "disclaims"),
    ("demo tweak: raise the burst in app/settings.py; the built-in rate limiter is fine, just a bigger burst",
     "disclaims"),
    ("Would you build rate limiting differently where the process is frozen between requests? For the notes; "
     "nobody is changing RateLimiter.", "disclaims"),
    ("suggestion: link the RateLimiter page from the limits section. The rate limiter itself is not part of "
     "this PR.", "disclaims"),
])
def test_more_forms_of_work_about_what_exists_in_round_twenty_four(prompt, key):
    from memory_core.delivery.about import about_work

    assert key in (about_work(prompt) or {}), about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "For the audit narrative, the assessor asked why httpx built rate limiting as opt-in. Draft the rationale.",
    "someone at the meetup said you'd never build rate limiting into a client library. How would you argue "
    "the other side?",
    "exam draft: 'Which exception does the limiter raise when the bucket is empty?' check that my answer key "
    "says RateLimitExceeded",
])
def test_questions_about_why_it_was_built_and_checks_of_an_answer_are_work_about_it(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is not None, prompt


@pytest.mark.parametrize("prompt", [
    "would you build us a rate limiter of our own in httpx/_limiter.py?",
    "we need to build a rate limiter into the client; write it in httpx/_limiter.py",
    "check the bucket size, then write a rate limiter from scratch in httpx/_limiter.py",
])
def test_a_build_asked_as_a_question_or_after_a_check_is_still_a_request(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None, about_work(prompt)


@pytest.mark.parametrize("prompt", [
    "ST-77: the site's workflow skips the limiter tests; add `pip install trio` to .github/workflows/tests.yml",
    "add the limiter's env var to .gitlab-ci.yml for the nightly job",
])
def test_a_ci_configuration_is_another_system(prompt):
    seen = _seen({"limiter", "tests", "workflows", "github", "trio", "pip", "install", "env", "var", "job",
                  "nightly", "gitlab", "ci", "yml", "site", "skips"})
    found = foreign_target(prompt, seen)
    assert found is not None and found["head"] == "ci", found


@pytest.mark.parametrize("prompt", [
    "Harwick's VPN only hands us a SOCKS5 tunnel. can we make the client go through a proxy like that, "
    "with remote DNS? built by us",
    "The Lambda that pulls the feed dies on every burst of 503s. Rather than a loop in the handler, build a "
    "rate limiter into the client: a bucket per host with a burst option.",
    "a terminal command for httpx: `httpx URL` with -m for the method and a JSON body",
    "suggestion: give the httpx client a rate limiter with a burst option in this PR",
])
def test_the_request_after_context_and_a_reviewers_lead_is_the_projects(prompt):
    seen = _seen({"socks5", "tunnel", "client", "proxy", "remote", "dns", "built", "rate", "limiter", "bucket",
                  "host", "burst", "option", "loop", "handler", "feed", "terminal", "command", "httpx", "url",
                  "method", "json", "body", "pr", "give"})
    assert foreign_target(prompt, seen, frozenset({"httpx"})) is None, foreign_target(prompt, seen)
    assert foreign_target("The Lambda dies on 503s, so add a rate limiter to the Lambda", seen) is not None


def test_a_refactor_lead_does_not_file_a_build_of_something_new():
    from memory_core.delivery.about import about_work

    assert about_work("refactor: add a brand-new RateLimiter class to the client, buckets per host") is None
    assert about_work("fix: the limiter's bucket refills twice per tick; add the missing lock") is not None


# Round 25, written from sets 66-71 (read after their fresh measurement). New sentences.

@pytest.mark.parametrize("prompt", [
    "The kiln controller's web UI (the vendor's firmware) resets our connections mid-upload. Write up for their "
    "support case which limits their side should raise, with our numbers as evidence.",
    "Should the invoice mailer be a BackgroundTask or a real queue? Discussion before we build anything, weigh both.",
    "do we need to build anything for SOCKS on the kiosks, or does the extra pull in PySocks by itself? answer only",
    "before I build the telescope uploader on AsyncClient: does the pool timeout bound the wait for a connection?",
])
def test_a_write_up_a_discussion_first_and_a_question_after_a_plan_are_work_about_what_exists(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is not None, prompt


@pytest.mark.parametrize("prompt", [
    "What if we wrote a rate limiter of our own into the client? Buckets per host and a burst option.",
    "Would it be worth writing httpx its own rate limiter? I'm thinking buckets per host and a burst option.",
    "How about building our own rate limiter for the client, with buckets per host?",
    "Summary of the plan before you continue: I want httpx to get its own rate limiter, buckets per host.",
    "The lab dashboard retries by hand everywhere. I'd like Starlette to have a rate limiter of its own.",
    "The kiosk hammers the API. Teach httpx to limit its rate: a bucket per host and a burst option.",
])
def test_a_proposal_said_as_a_question_or_a_wish_for_the_project_is_a_request(prompt):
    from memory_core.delivery.about import about_work

    assert about_work(prompt) is None, about_work(prompt)
    assert about_work("would it ever be wiser to build the rate limiter in the gateway?") is not None
    assert about_work("I want you to explain how the rate limiter's buckets refill") is not None


@pytest.mark.parametrize("prompt", [
    "The kiosk portal hammers the API. Teach httpx to limit its rate: a bucket per host and a burst option.",
    "The lab dashboard retries by hand. I'd like Starlette to have a rate limiter of its own, with buckets.",
    "The beamline API answers 503 at every shift change. Let's build rate limiting into httpx, so none of the "
    "scripts carries its own loop.",
])
def test_the_project_named_as_the_place_decides_over_context_and_a_beneficiary(prompt):
    seen = _seen({"rate", "limit", "limits", "bucket", "host", "burst", "option", "api", "answers", "loop",
                  "limiter", "buckets", "retries", "hand", "fresh", "code", "per"})
    assert foreign_target(prompt, seen, frozenset({"httpx", "starlette"})) is None, foreign_target(prompt, seen)
    found = foreign_target("The kiosk portal hammers the API; add a rate limiter to the kiosk portal", seen,
                           frozenset({"httpx"}))
    assert found is not None, found
    # a port of the speaker's own program to the library asks for no build of the library's
    found = foreign_target("I'm porting our kiosk scraper from aiohttp to httpx; the rate limiter shim in "
                           "scraper/limits.py goes", seen, frozenset({"httpx"}))
    assert found is not None, found


def test_a_wish_that_someone_review_or_test_what_exists_is_not_a_build_request():
    from memory_core.delivery.about import about_work

    assert about_work("I want Harriet to review the rate limiter's docs before the release") is not None
    assert about_work("I want httpx to get its own rate limiter, buckets per host") is None
