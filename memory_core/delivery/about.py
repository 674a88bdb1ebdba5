"""Work about what exists: a prompt that tests, documents, measures, fixes, answers for or
asks about a component is not a request to build it again, whatever words it shares with it.

    about_work("add a regression test checking that redirect handling keeps the header")
    # {"object": "regression test"}

Read lexically, before any embedding is asked, beside `target.foreign_target` (the work goes
to another system). The signs: a question about the past or a how-to ("why did we build…",
"how do I build…"), a disclaimer ("no code change", "docs only", "the pool itself is
correct"), a question that asks for nothing to be built, a lead or a subject naming such work
(`docs: …`, "the docs page on Session objects…"), a file of the docs or the tests, a verb of
measuring, documenting or testing, an object that is an artifact about a component ("a
how-to page", "an example app", "a reply"), a setting tweaked ("max_retries 3 -> 5"). A sign
stands unless a later build request overrides it ("The security review wants digest. Let's
write DigestAuth ourselves"). Code, quotations and pastes are not the request.

Every rule came from a false fire in a labeled set, and each round was measured on held-out
sets frozen before it (docs/internals/evaluation.md).
"""

from __future__ import annotations

import re

from memory_core.delivery.target import (
    BUILD_VERBS,
    CLAUSES,
    DETERMINERS,
    GROWS,
    MAX_PHRASE,
    PHRASE_ENDS,
    PREPOSITIONS,
    SENTENCES,
    WORDS,
    placed_paths,
    singular,
)

# Work about a component is not building it again: a test of it, a page of its docs, a
# benchmark, a warning in it ("add a regression test checking that redirect handling keeps
# the header", "write a how-to page for the existing timeout configuration").
ABOUT = frozenset("""
test tests benchmark benchmarks page docs documentation tutorial guide example examples
warning warnings changelog comparison measurement measurements review writeup write-up
note notes faq recipe cookbook section chapter paragraph article post readme slide slides
sentence sentences pytest unittest testcase translation reference advisory error
cleanup tweak nit fixup deprecation migration upgrade bump results numbers findings summary
report text wording conftest fix bugfix answer reply email comment logging tracing metrics log
instrumentation heading headings footnote caption docstring typo link fixture fixtures row notice
rationale justification narrative
explanation overview rubric syllabus worksheet handout quiz case hint annotation stub overload snippet
question description doc
""".split())
# A lead phrase filing the request under a talk or a post ("for my talk on HTTP/2 support:
# which Chrome version dropped server push?"): it asks about the feature, for an audience
TALKS = frozenset({"talk", "presentation", "slides", "blog", "newsletter", "podcast", "meetup", "keynote"})
# An object qualified by one of these is a sample of a component, not the component ("an
# example app that uses TestClient.websocket_connect")
SAMPLES = frozenset({"example", "sample", "demo", "tutorial", "docs", "documentation", "changelog", "commit", "snippet"})
ABOUT_VERBS = frozenset("""
benchmark benchmarks measure measures profile document documents review compare deprecate
test explain pin unpin bump increase decrease lower reply answer triage confirm log
tweak adjust reword rephrase clarify instrument rename point tell translate check verify proofread
""".split())
# A build verb in the past or in a question about using what exists asks about it, not for
# it again: "why did we build the transport API around handle_request?", "should we have
# built BaseHTTPMiddleware at all?", "how do I build a TestClient that runs the lifespan?",
# "why did requests build SOCKS support on PySocks?"
_ASKS_ABOUT = re.compile(
    r"\b(?:did|didn't|(?:have|haven't|had|has|hasn't)(?=[^.!?\n]{0,200}\?))\s+(?:[\w.]+\s+)?"
    r"(?:ever\s+|really\s+|even\s+)?(?:built|added|implemented|designed|written|wrote|created|made|build|add|"
    r"implement|design|write|create|make|shipped|ship|released|chosen|picked|used|gone|done)\b"
    r"|\b(?:when|why)\s+did\s+(?:we|they|you)\b"
    # "if we ever write a streaming upload, does chunked transfer kick in?", "would it be a
    # mistake to write …?": a hypothetical asked about
    r"|\bwould\s+you\s+(?:ever\s+)?(?:build|write|add|implement)\b[^?]{0,200}\bif\b[^?]{0,100}\?"
    r"|\bwould\s+(?:building|writing|adding|implementing)\b[^?]{0,200}\?|\basked\s+(?:me\s+|us\s+)?why\b"
    r"|\bif\s+(?:we|you|someone|somebody|they|i|anyone)\s+(?:ever\s+)?(?:asked|wanted|told|needed)\s+(?:you|us|me|them)\s+"
    r"to\s+(?:build|write|implement|add|make)\b(?=[^?]{0,200}\?)"
    r"|\bis\s+there\s+(?:ever\s+)?(?:a|any)\s+(?:good\s+)?reason\s+to\s+(?:build|write|implement|add|make|roll)\b"
    r"|\b(?:a|any)\s+(?:good\s+)?reason\s+to\s+(?:build|write|implement|add|make|roll)\b(?=[^?]{0,200}\?)"
    r"|\bwould\s+it\s+have\s+been\s+(?:[\w-]+\s+){0,2}to\s+(?:build|write|implement|add|make|put)\b"
    r"|\b(?:asks?|asked|asking|wonders?|wondered|wondering)\s+how\s+to\s+(?:build|write|implement|add|make|create)\b"
    r"|\bif\s+(?:(?:you|someone|somebody|they|anyone)\s+(?:ever\s+)?(?:were\s+to\s+)?|(?:we|i)\s+(?:ever\s+|were\s+to\s+|"
    r"ever\s+were\s+to\s+))(?:wrote|write|built|build|implemented|implement|added|add|made|make)\b(?=[^?]{0,200}\?)"
    r"|\b(?:would|is|was)\s+it\s+(?:ever\s+)?(?:be\s+)?(?:a\s+mistake|overkill|wise|wiser|better|smarter|simpler|cleaner|"
    r"worth\s+it|a\s+bad\s+idea)\s+to\b"
    # "whether we'd ever write a second adapter": a hypothetical weighed, not a request
    r"|\bwhether\s+(?:we|they|you|i|it)(?:'d|\s+would|\s+should|\s+could|\s+will)\s+(?:ever\s+)?"
    r"(?:build|write|add|implement|create|make|ship)\b"
    r"|\bhow\s+(?:do|does|can|should|would|could)\s+(?:i|you|u|one)\s+(?:build|add|implement|create|write|make|use|design)\b"
    r"|\bhow\s+(?:do|does|can|should)\s+we\s+(?:use)\b"
    # "how the client build the auth header?", "why the project never build its own jar?"; not
    # "how about we write…", "why not build…"
    r"|\bhow\s+(?!about\b)(?:[\w.]+\s+){1,2}(?:builds?|implements?|makes?|writes?|creates?|adds?|picks?)\b(?=[^?]{0,200}\?)"
    r"|\bwhy\s+(?!not\b|don't\b|dont\b|wouldn't\b|shouldn't\b|can't\b)(?:[\w.']+\s+){1,4}"
    r"(?:never\s+|not\s+)?(?:build|built|builds|implement|implemented|write|wrote|make|made|create|created|"
    r"add|added|ship|shipped)\b(?=[^?]{0,200}\?)",
    re.I)
# A question about how a thing behaves, its subject a thing ("does a response hook that returns
# None drop the response?"), not a request or a proposal put as one ("can you write …?",
# "should we build …?", "is there a way to …?"), with no build verb in what follows it
_BEHAVES = re.compile(
    r"\s*(?:does|do|did|is|are|was|were|will|would|can|could|has|have)\s+"
    r"(?:the|a|an|this|that|these|those|my|our|your|their|its)\s+[^?\n]{1,240}\?", re.I)
# A prefix that files the request under docs or tests, as a commit subject does ("docs: add a
# section to the lifespan page"), or a lead phrase naming such work before a colon
_FILED = re.compile(r"\s*(?:docs?|tests?|chore|ci|bench|typo|fix|bug|regression|perf|cfg|config)(?:\([\w-]+\))?\s*:", re.I)
# A prompt that says it asks for no change: "not asking for a change", "just answer",
# "discussion only, no code"
_DISCLAIMS = re.compile(
    r"\bnot\s+asking\s+for\s+(?:a\s+|any\s+)?(?:change|code|fix|rewrite)s?\b"
    r"|\b(?:just|only)\s+(?:answer|explain|curious|asking|wondering|tell\s+me|talking|chatting|thinking)\b"
    r"|\b(?:is|are|stays?|remains?)\s+(?:untouched|unchanged)\b"
    r"|\b(?:itself|in\s+(?:the\s+)?[\w.-]+)\s+(?:is|are)\s+(?:fine|correct)\s*(?:[.;!]|$)"
    r"|\bour\s+(?:[\w-]+\s+){1,4}(?:is|are)\s+(?:fine|correct)\s*(?:[.;!]|$)"
    r"|(?:^|[,;.]\s*)nothing\s+(?:else\s+)?in\s+(?:the\s+)?[\w.-]+\s*[.!]?\s*$"
    r"|\b(?:it's|it\s+is|this\s+is|that's)\s+for\s+(?:the\s+|a\s+|our\s+)?(?:faq|docs?|documentation|talk|blog|post|slides|newsletter)\b"
    r"|\bnothing\s+changes\s+(?:on|in|for)\s+(?:the\s+)?[\w.-]+"
    r"|\bopinions?\s+(?:wanted|welcome|please)\b"
    r"|\b(?:stays|remains)(?:\s+as\s+is|\s+the\s+same|\s+for\s+\w+(?:\s+\w+)?)?\s*[.!]?\s*$"
    r"|\b(?:and|but)\s+nothing\s+(?:else\s+)?in\s+(?:the\s+)?[\w.-]+\s*[.!]?\s*$"
    r"|\bnot\s+asking\s+(?:you\s+)?to\s+(?:write|build|implement|code|add|make|change)\b"
    r"|\b(?:discussion|question|explanation)\s+only\b"
    r"|\bno\s+code\b(?=\s*(?:[.,;!)]|$|please|just))"
    r"|\b(?:don't|do\s+not)\s+(?:change|touch|write|implement)\s+(?:anything|any\s+code)\b"
    r"|\bjust\s+(?:thoughts|opinions?|an\s+opinion)\b|\bcurious\s*[.!?]?\s*$"
    r"|\bjust\s+(?:your|my|an?)\s+(?:honest\s+)?(?:opinion|take|thoughts|view)\b"
    r"|\bnothing\s+(?:in|on|about)\s+(?:the\s+)?[\w.-]+(?:\s+itself)?\s+changes\b"
    r"|\bnothing\s+to\s+(?:add|change|build|write|fix|implement)\b"
    r"|\bexplain\s+(?:me|to\s+me|please|pls)\b|\bno\s+code\s+changes?\b"
    r"|\bno\s+changes?\s+(?:in|to)\s+(?:the\s+)?(?:library|lib|package|code|project)\b"
    r"|\bnothing\s+changes\s+(?:on|in|for)\s+our\b"
    r"|\bno\s+behaviou?r(?:al)?\s+changes?\b|\bbehaviou?r\b[^.;]{0,40}\bstays?\s+(?:exactly\s+)?(?:as|the\s+same)\b"
    r"|\b(?:docs?|documentation|tests?|instrumentation|logging|metrics|tracing|examples?|comments?|wording|typing"
    r"|text|guide|prose|page|lines?)"
    r"\s+only\b|\bno\s+feature\s+work\b"
    r"|\bno\s+new\s+(?:[\w-]+\s+){0,2}(?:class(?:es)?|code|features?|modules?|components?)\b"
    r"|\b(?:otherwise|else)\s+unchanged\b|\bkeep\s+(?:today's|the\s+current|current|existing|its|the)\s+behaviou?r\b"
    r"|\bitself\s+(?:stays?|remains?)\s+(?:as\s+it\s+is|as\s+is|the\s+same)\b"
    r"|\b(?:that|this)\s+(?:page|file|doc|section)\s+only\b|\b(?:docs?|tests?)/[\w./-]+\s+only\b"
    r"|\bnone\s+of\s+(?:it|this|that)\s+(?:touches|changes)\b"
    r"|\bbehaviou?r\s+(?:is\s+|stays\s+)?unchanged\b|\basking\s+before\b|\btrying\s+to\s+understand\b"
    r"|\bnot\s+a\s+(?:ticket|task|request|pr|feature\s+request)\b|\b(?:nobody|no\s+one)\s+is\s+(?:writing|building|implementing|proposing|suggesting|planning)\b"
    r"|\bno\s+implementation\b|\(\s*not\s+ours\s*\)|\bnot\s+ours\s*[.;,)]"
    r"|\bnot\s+our\s+(?:[\w-]+\s+){0,3}(?:code|library|package|client|implementation)\b"
    r"|\bjust\s+(?:configuring|using|enabling|wiring\s+up|turning\s+on)\b"
    r"|\bnot\s+in\s+(?:this|our)\s+(?:repo|repository|codebase|project)\b|\b(?:which|that)\s+already\s+uses\b"
    r"|\b(?:stays?|remains?)\s+(?:exactly\s+)?as\s+(?:it\s+is|is|they\s+are)\b"
    r"|\bno\s+changes?\s+(?:in|to)\s+[\w.-]+\s*(?:[.;,!]|$)"
    r"|(?:^|[.!?]\s)\s*no\s+changes?\s+(?:in|to)\s+(?:the\s+)?(?:[\w.-]+\s+){0,3}[\w.-]+\s*[.!]?\s*$"
    r"|\bnothing\s+(?:in\s+[\w.-]+\s+)?(?:is|gets|will\s+be)\s+(?:written|built|implemented|changed|touched)\b"
    r"|\b(?:is|are)\s+not\s+(?:touched|changed)\b"
    r"|(?:^|[,;.]\s*)nothing\s+new\s*[.!]?\s*$|\bnot\s+(?:proposing|suggesting|requesting)\b"
    r"|\basking\s+how\s+(?:people|others|folks|teams|projects|everyone)\b"
    r"|\bleave\s+(?:the\s+|our\s+|its\s+)?[\w/.-]+(?:\s+[\w/.-]+){0,4}\s+alone\b", re.I)
# The speaker bounds the work to something that is not the project's code, or says its code
# does not change: "change nothing", "httpx as it is", "starlette no change", "HCL only",
# "no CA bundle code in requests", "no rewrite of HTTPDigestAuth", "…, not ours", "just discuss";
# or reports a question ("someone asked me whether to build one")
_SCOPE = re.compile(
    r"\bchange\s+nothing\b"
    r"|\b(?:stays?|remains?)\s+(?:in|inside|within)\s+(?:the\s+|our\s+)?[\w.-]+\s+as\s+(?:it\s+is|is)\b"
    r"|(?:^|[,;.]\s*)[\w.-]+(?:\s+[\w.-]+)?\s+(?:as\s+it\s+is|no\s+change)\s*[.!]?\s*$"
    r"|\bnothing\s+(?:in|on|about)\s+(?:the\s+|our\s+)?(?:[\w.-]+\s+){1,3}changes\b"
    r"|\b(?:hcl|ya?ml|terraform|manifests|helm|css|html|javascript|typescript|sql|ansible|vcl|dockerfile|infra)\s+only\b"
    r"|\b[\w./-]+\.(?:vcl|ya?ml|tf|hcl|json|toml|conf|cfg|ini|js|ts|css|html|sh|nomad)\s+only\b"
    r"|\bno\s+(?:[\w-]+\s+){0,3}code\s+in\s"
    r"|\bno\s+(?:rewrite|reimplementation|re-implementation|new\s+implementation)\s+of\b"
    r"|\bnot\s+ours\s*(?:[.;,)!]|$)"
    r"|\b(?:is|are)\s+not\s+(?:edited|modified)\b"
    r"|\b(?:just|only)\s+discuss(?:ing|ion)?\b|\bdiscuss\s+only\b"
    r"|\basked\s+(?:me\s+|us\s+|him\s+|her\s+|them\s+)?(?:whether|if)\s+(?:to|we\s+should|they\s+should|i\s+should)\s+"
    r"(?:build|write|implement|add|make|create)\b"
    # round 24: "no code until the severity is agreed", "nothing goes into httpx", "not a code
    # request", "slides and a handout only", "pipeline config only", "changelog-only task", "the
    # built-in middleware is fine, just one more origin", "nobody is changing X", "X is not part
    # of this PR"
    r"|\bno\s+code\s+(?:until|before|yet)\b|\bnothing\s+(?:goes|gets\s+added)\s+(?:in|into|to)\b"
    r"|\bnot\s+a\s+(?:code|feature|change)\s+request\b"
    r"|\b(?:handouts?|slides|formula|printout|(?:pipeline|ci|workflow)\s+config)\s+only\b"
    r"|\b(?:changelog|docs?|tests?|config|readme|comments?|typing|wording|docstring)-only\b"
    r"|\b(?:is|are)\s+fine\s*,\s*just\b|\b(?:nobody|no\s+one)\s+is\s+(?:changing|touching|editing|rewriting|replacing)\b"
    r"|\b(?:is|are)\s+not\s+part\s+of\s+this\s+(?:pr|change|patch|diff|branch)\b"
    # questions of need, of approach and of argument: "would we need to build X, or …?", "would
    # you build X differently …?", "how would you argue the other side?"
    r"|\bwould\s+we\s+(?:even\s+)?need\s+to\s+(?:build|write|implement|add)\b[^?]{0,200}\?"
    r"|\bwould\s+you\s+(?:build|write|design|implement|structure|start)\b[^?]{0,200}?\b(?:differently|or|instead)\b[^?]{0,200}\?"
    r"|\bhow\s+would\s+you\s+(?:argue|explain|teach|answer|respond|frame|defend)\b"
    # round 25: "discussion before we build anything", "answer only"
    r"|\bbefore\s+(?:we|i|anyone)\s+(?:build|write|implement|change|code)\s+anything\b|\banswer\s+only\b", re.I)
# A proposal said as a question: "What if we wrote our own router?", "Would it be worth writing
# httpx its own encoder?", "How about building …?", "Why don't we write …?"
_PROPOSES = re.compile(r"\bwhat\s+if\s+we\s+(?:wrote|built|added|implemented|made|gave)\b"
                       r"|\bwould\s+it\s+be\s+worth\s+(?:writing|building|adding|implementing|giving)\b"
                       r"|\bhow\s+about\s+(?:we\s+)?(?:writing|building|adding|implementing|write|build|add|implement)\b"
                       r"|\bwhy\s+don't\s+we\s+(?:write|build|add|implement|make)\b", re.I)
_ABOUT_TREES = frozenset({"docs", "doc", "docs_src", "documentation", "tests", "test", "testing",
                          "examples", "example", "benchmarks", "bench"})
_ABOUT_FILES = (".md", ".rst", ".txt", ".ipynb")
_CAMEL_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_OBJECT_ENDS = PHRASE_ENDS | frozenset({"about", "how", "what", "why", "i", "we", "they", "he", "she"})


MAX_CLAUSES = 40          # clauses read for work about what exists; the first build request decides
_PRONOUNS = frozenset({"me", "us", "you", "them", "him", "her"})  # "write me a commit message"


# The speaker says the build is theirs to do now ("what I'm about to write", "we're going to
# implement"): a request, whatever sign came before it
_ABOUT_TO_BUILD = re.compile(r"\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:about|going)\s+to\s+"
                             r"(?:write|build|implement|add|create|rewrite)\b", re.I)
# A value changed ("max_retries 3 -> 5", "timeout: 10 → 30"): a setting tweaked
_TWEAK = re.compile(r"\b\d+(?:\.\d+)?\s*[a-z]{0,3}\s*(?:->|→|=>)\s*\d+(?:\.\d+)?\b")
# Code is not a request: a fenced block, an identifier with an underscore, a keyword argument
# ("port=443", "raise_server_exceptions=True"), a call ("add(…)") hold no build verb
_CODE = re.compile(r"```.*?(?:```|$)|\b\w*_\w*|\b[A-Za-z]\w*(?=\s?=[^=]|\()"
                   # a quotation of three words or more is someone's words, not the request; a quoted
                   # value after "=" (media_type='application/pdf') is code, and no quotation opens there
                   r"""|(?<![\w=])'(?=\S)[^\n]*?\s[^\n]*?\s[^\n]*?(?<=\S)'(?!\w)|(?<!=)"[^"\n]*?\s[^"\n]*?\s[^"\n]*?"|“[^”\n]*”""", re.S)
# Build verbs that are nouns as often ("the SOCKS port", "a debug log", "the nightly build"):
# a verb only first in a clause or after a word a verb follows
_NOUN_VERBS = frozenset({"port", "log", "build", "design", "draft"})
_BEFORE_VERB = frozenset("""
to please and then let's lets we i you can could should must will would also now just first
so pls plz not never why who us we'll i'll you'll they they'll ll
""".split())
# What "raise" builds: an error raised is new behaviour; "raise the timeout" turns a setting up
_RAISED = frozenset({"error", "exception", "warning", "clear", "helpful", "typeerror", "valueerror",
                     "custom", "specific", "proper", "new", "better", "dedicated", "meaningful"})
# An object that only points back at what was named before it ("deprecation warning: emit
# one when …", "a benchmark: write it"): the work is what the sign named
_PRO_FORMS = frozenset({"one", "ones", "it", "them", "this", "that", "these", "those"})
# A part of a text ("add the line", "write the table of old name -> new name"): after a sign
# that names a page, a guide or a docs file, the object is a piece of that text
_TEXT_PARTS = frozenset({"line", "table", "entry", "bullet", "list", "item", "column", "word", "mention",
                         "paragraph", "sentence", "row", "caveat", "admonition", "before/after", "step"})
# "make it point at the docs page", "make them warn once": a causative on what was named
# changes it; "make one from scratch" builds
_REBUILDS = frozenset({"from", "again", "ourselves", "anew", "new"})
# What a third person wants to build is theirs ("they want to build …", "a user wants to write …")
_WANT = frozenset({"want", "wants", "need", "needs", "plan", "plans", "wanted", "hope", "hopes", "try", "tries"})
_THIRD = frozenset({"they", "he", "she", "user", "someone", "somebody", "customer", "contributor", "team"})
# Who else does the work ("students implement SOCKS handshakes in C", "users write their own
# adapters"): a description of others' work, not a request to this project
_OTHERS = frozenset("""
students learners attendees participants readers users people folks customers contributors
developers teams others everyone everybody downstream integrators vendors
""".split())


def _gerund(word: str) -> str:
    """The verb of a gerund ("writing": write, "adding": add); the word itself otherwise."""
    if not word.endswith("ing") or len(word) < 6:
        return word
    stem = word[:-3]
    for verb in (stem, stem + "e", stem[:-1]):
        if verb in BUILD_VERBS:
            return verb
    return word


def _prose(text: str) -> str:
    """The text with its code blanked out, each character kept in place."""
    return _CODE.sub(lambda m: re.sub(r"\S", " ", m.group(0)), text)


def _spans(text: str):
    """Each clause of the text with the offset it starts at."""
    start = 0
    for sep in CLAUSES.finditer(text):
        yield start, text[start:sep.start()]
        start = sep.end()
    yield start, text[start:]


def _head(word: str) -> str:
    return singular(_CAMEL_SPLIT.split(word)[-1].lower())  # DeprecationWarning: warning


def about_work(prompt: str) -> dict | None:
    """The request is work about something that exists: asked about in the past or as a
    how-to ("why did we build…", "how do I build…"), filed under docs or tests ("docs: …"),
    with a docs artifact as its subject ("the docs page on Session objects still shows…"),
    with a verb of measuring, documenting or testing ("benchmark how HTTP/2 support
    compares"), with an object that is an artifact about a component ("a regression test", "a
    how-to page", "an example app"), or calling the component existing. None otherwise."""
    head = prompt[:400]
    asks = _ASKS_ABOUT.search(head)
    if asks:
        return {"asks": asks.group(0)}
    disclaims = _DISCLAIMS.search(prompt[:2000]) or _SCOPE.search(prompt[:2000])
    if disclaims:
        return {"disclaims": disclaims.group(0)}
    tweak = _TWEAK.search(head)
    if tweak:
        return {"tweak": tweak.group(0)}
    behaves = _BEHAVES.match(head)
    if behaves and not _asks_to_build(WORDS.findall(_prose(prompt[behaves.end():2000]))):
        return {"asks": behaves.group(0).strip()}
    filed = _FILED.match(head)
    if filed:
        return {"filed": filed.group(0).strip()}
    lead, colon, _rest = _prose(head).partition(":")
    lead_words = WORDS.findall(lead)
    named = [w for w in lead_words if not any(c.isdigit() for c in w)]  # "upgrade guide v1 -> v2"
    while named and named[-1].lower() in {"only", "just", "too", "first"}:
        named = named[:-1]  # "soak conftest only:"
    cut = next((i for i, w in enumerate(named) if i and w.lower() in PREPOSITIONS), None)
    named = named[:cut] if cut else named  # "release notes for 0.30": notes
    # a lead naming the kind of work ("cleanup:", "for my talk on X:") is a sign, as a subject
    # is: a build request after it still decides ("nit: replace X with a fresh implementation")
    lead_sign = None
    if colon and len(lead) <= 60 and named and (_head(named[-1]) in ABOUT
                                                or any(w.lower() in SAMPLES for w in named)
                                                or any(w.lower() in TALKS and lead_words[i - 1].lower() in DETERMINERS
                                                       for i, w in enumerate(lead_words) if i)):
        lead_sign = {"filed": lead.strip()}
    # a file of the docs or the tests is a sign, as a lead is ("The flaky test in
    # tests/test_asgi.py: leave it. … let's write our own decoder")
    text = _prose(prompt[:2000])
    if _ABOUT_TO_BUILD.search(text):
        return None  # "commit message for what I'm about to write: '…'": the build is coming
    placed_all = placed_paths(prompt[:2000], opening=True)
    about_paths = [(at, path) for at, path in placed_all
                   if path.split("/", 1)[0].lower() in _ABOUT_TREES or path.lower().endswith(_ABOUT_FILES)]
    source_paths = [at for at, path in placed_all if (at, path) not in about_paths and "/" in path.rstrip("/")]
    lead_sign = lead_sign or ({"path": about_paths[0][1]} if about_paths else None)
    # the first sign of work about what exists, unless a build request follows it ("The
    # security review wants digest. Let's write DigestAuth ourselves"; "Step 1: document the
    # use case. Step 2: write our own handshake")
    found = lead_sign
    for n, (start, clause) in enumerate(list(_spans(text))[:MAX_CLAUSES]):
        words = WORDS.findall(clause)
        low = [w.lower() for w in words]
        if n == 0 and len(low) > 2 and _head(low[0]) in ABOUT and low[1] in PREPOSITIONS:
            found = found or {"title": " ".join(words[:4])}  # "deprecation of on_startup …"
            continue
        grows = GROWS.search(clause)
        if grows and grows.group(1).lower() not in _PRONOUNS | _OTHERS | _PRO_FORMS | {"you", "i", "we"} \
                and _head(grows.group(1)) not in ABOUT and grows.group(2).lower() not in _REVIEWS:
            return None  # "Summary of the plan: I want httpx to get its own timeout object"; not "… Harriet to review"
        if n == 0 and "existing" in low[:24]:
            at = low.index("existing")
            return {"says": " ".join(words[max(0, at - 1):at + 3])}
        if n == 0 and lead_sign:
            continue  # the lead itself
        if n == 0 and words and low[0] in DETERMINERS:
            subject = []
            for w in words[1:1 + MAX_PHRASE]:
                if w.lower() in _OBJECT_ENDS:
                    break
                subject.append(w)
            if subject and _head(subject[-1]) in ABOUT:
                found = {"subject": " ".join(words[:1 + len(subject)])}
                continue
        for at, word in enumerate(low[:12]):
            if (word in ABOUT_VERBS or (word == "write" and low[at + 1:at + 2] == ["up"])) and (
                    at == 0 or (low[at - 1] in {"to", "please", "can", "let's", "lets", "we"}
                                                    and word != "log"  # "users … to log every request"
                                                    and not (low[at - 1] == "can" and at > 1
                                                             and low[at - 2] not in {"you", "we", "i"}))):
                found = found or {"verb": words[at]}
                break
            if word == "raise" and at + 2 < len(low) and low[at + 1] in DETERMINERS \
                    and words[at + 2].islower() and _head(low[at + 2]) not in _RAISED:
                found = found or {"verb": " ".join(words[at:at + 3])}  # "raise the timeout": a tweak
                break
            if word == "fix" and at == 0:
                found = found or {"verb": words[at]}  # "fix the lookup order …": unless "… by writing …"
                continue
            if word == "fix" and at and low[at - 1] in {"and", "then", "to", "please"}:
                found = found or {"verb": words[at]}  # "track down why and fix it": a bug in what exists
                break
            if at and low[at - 1] == "by" and _gerund(word) in BUILD_VERBS:
                word = _gerund(word)  # "fix it by writing a signed-cookie middleware": a request
            # "we need a router with Route and Mount": a request, as a build verb is
            needs = word == "need" and at and low[at - 1] in {"we", "i"} and low[at + 1:at + 2] in (["a"], ["an"], ["our"])
            if not needs and (word not in BUILD_VERBS or _a_noun_here(low, at, word)):
                continue  # "the build server", "the project's log", "through Tor's SOCKS port"
            if at > 1 and low[at - 1] in _SUBJECTS and low[at - 2] in _SUBORDINATE:
                continue  # "before I build the uploader on AsyncClient: does …?": a clause of time
            if at and low[at - 1] in _OTHERS and (at < 2 or low[at - 2] not in {"let", "lets", "help", "allow"}):
                continue  # "students implement SOCKS handshakes in C": what others do
            if at > 2 and low[at - 1] == "to" and low[at - 2] in _WANT and low[at - 3] in _OTHERS | _THIRD:
                continue  # "they want to build proxy routing per spider in their middleware": their wish
            run = []  # the object, as written; its head is its last word's last part
            for w in words[at + 1:at + 1 + MAX_PHRASE]:
                if not run and w.lower() in DETERMINERS:
                    continue  # "write that description": a determiner, not "that" of a clause
                last = _CAMEL_SPLIT.split(w)[-1].lower()
                if w.lower() in _OBJECT_ENDS or (last.endswith("ing") and last not in ABOUT and run):
                    break  # "a test covering …"; "the grading rubric" is one object
                if run and w.lower() in DETERMINERS - {"a", "an"}:
                    break  # "write the code this commit message describes": the code
                if run and w.endswith("/"):
                    break  # "the failing test tests/test_x.py::test_y": a path after the object
                if w.lower() not in DETERMINERS and w.lower() not in _PRONOUNS:
                    run.append(w)
            while run and (run[-1].lower() in _TRAILING or _TICKET.fullmatch(run[-1])):
                run = run[:-1]  # "write the reply only", "the failing test first"; "Design doc FRN-DD-7"
            if run and (_head(run[-1]) in ABOUT | _WRITTEN_TO or run[-1].lower() in ABOUT
                        or any(w.lower() in SAMPLES for w in run[:-1])):
                found = found or {"object": " ".join(run)}
                break
            if found and word in _STRONG and any(start <= p_at < start + len(clause) for p_at in source_paths):
                return None  # "Triage of #6983 … Let's build it in requests/proxying.py": placed in the source
            if found and at + 1 < len(low) and low[at + 1] in _PRO_FORMS and (
                    at + 2 == len(low) or low[at + 2] in _OBJECT_ENDS or low[at + 2] in {"up", "out", "down"}):
                break  # "deprecation warning: emit one when …": the object is what the sign named
            if found and word == "make" and at + 2 < len(low) and low[at + 1] in _PRO_FORMS - {"one", "ones"} \
                    and low[at + 2] not in _REBUILDS:
                break  # "… warning text: make it point at the docs page": what the sign named, changed
            if found and run and _head(run[-1]) in _TEXT_PARTS:
                break  # "docs/user/advanced.rst: … add the line": a piece of the page
            if found and not run and at + 1 < len(low) and low[at + 1] in _OBJECT_ENDS:
                break  # "config tweak: add QLB_ALLOWED_HOSTS to .env.example": the object is code
            place = _about_place(low, at + 1)
            if place:  # "add timeout=(3.05, 27) to the example": what is built goes into a docs artifact
                found = found or {"place": place}
                break
            # the path of the same sentence: "I'll write the class. You write the tests in tests/…"
            # places the tests, not the class
            placed = next((path for p_at, path in about_paths
                           if p_at >= start and not SENTENCES.search(text[start:p_at])), None)
            if placed:  # "write the failing test in tests/test_mock.py": the request writes a test
                return {"path": placed}
            return None  # a build request
    if found:
        return found
    return _only_asks(prompt[:2000])


_ATTRIBUTES = frozenset({"with", "without", "from", "by", "at", "per"})  # "a jar with two domains to …"


def _about_place(low: list[str], start: int) -> str | None:
    """The first place a build request puts its work ("… to the example", "… in the FAQ"),
    when it is an artifact about a component; None when the first place is anything else or
    the clause goes on before one ("as described in the docs")."""
    for k in range(start, min(len(low), start + 14)):
        if low[k] in {"to", "into", "in"}:
            j = k + 1
            while j < len(low) and low[j] in DETERMINERS:
                j += 1
            phrase = []
            while j < len(low) and len(phrase) < MAX_PHRASE and low[j] not in _OBJECT_ENDS and low[j] not in DETERMINERS:
                phrase.append(low[j])
                j += 1
            return " ".join(phrase) if phrase and _head(phrase[-1]) in ABOUT else None
        if low[k] in _OBJECT_ENDS and low[k] not in PREPOSITIONS | _ATTRIBUTES:
            return None  # "… as described in the docs": the clause went on
    return None


_TICKET = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*-\d+[\w.-]*")  # a ticket's key: "FRN-DD-7", "ST-144"
# Build verbs that make a thing, not a change to one: placed in the project's source, one of
# these builds there whatever sign came before it
_STRONG = frozenset({"build", "implement", "write", "rewrite", "reimplement", "create", "develop"})
# Words after an object that are not part of it: when, how much, a courtesy ("write the
# failing test first", "add one sentence pls")
_TRAILING = frozenset({"only", "too", "there", "here", "first", "now", "later", "today", "tonight",
                       "please", "pls", "plz"})
# What is written to someone about a component, as a build's object only ("draft a support
# ticket to their team"); as a lead ("Support ticket RQ-233: …") it files the request
_WRITTEN_TO = frozenset({"ticket", "issue"})


# The speaker says the build is under way ("… ? writing it tonight"): the question asks how, not
# whether
_DOING = re.compile(r"(?:^|[.;,!?]\s*)(?:writing|building|adding|implementing|coding)\s+(?:it|this|that|one|them)\b",
                    re.I | re.M)


def _only_asks(text: str) -> dict | None:
    """A question that asks for nothing to be built ("which one wins?", "is the body half
    read?"): the prompt asks something and no build verb in it is said as a request."""
    question = next((q for q in SENTENCES.split(text) if q.rstrip().endswith("?")), None)
    if question is None:
        return None
    if _asks_to_build(WORDS.findall(_prose(text))) or _DOING.search(text) or _PROPOSES.search(text):
        return None
    return {"asks": question.strip()[:120]}


def _asks_to_build(words: list[str]) -> bool:
    """A build verb in these words is said as a verb: not after a determiner, a preposition or
    an owner ("the build", "for a write", "the project's log"), and a verb that is as often a
    noun only where a verb goes ("through the proxy port", "the debug log" are nouns)."""
    low = [w.lower() for w in words]
    return any(word in BUILD_VERBS and not _a_noun_here(low, at, word)
               and not (at and low[at - 1] in PREPOSITIONS - {"to"})
               and not (at > 1 and low[at - 1] in _SUBJECTS and low[at - 2] in _SUBORDINATE)
               for at, word in enumerate(low))


# What a wish asks a person to do with what exists ("I want Harriet to review …"), not what it
# asks the project to grow ("we want requests to verify certificates …" is a build)
_REVIEWS = frozenset({"review", "test", "document", "benchmark", "explain", "triage", "proofread",
                      "answer", "reply", "translate", "reword", "clarify", "profile"})
# A build verb in a clause of time is no request: "before I build the uploader: does …?", "once
# we add it, will …?" ("if I write …" is a plan, and stays one)
_SUBORDINATE = frozenset({"before", "after", "when", "once", "until", "while"})
_SUBJECTS = frozenset({"i", "we", "you", "they"})


def _a_noun_here(low: list[str], at: int, word: str) -> bool:
    """The build verb `word`, at `at` of the lowercased words, reads as a noun: after a
    determiner or an owner ("the build server", "the project's log"), or, for a verb that is
    as often a noun, anywhere but where a verb goes ("through the proxy port")."""
    before = low[at - 1] if at else ""
    if before in DETERMINERS or (before.endswith("'s") and before != "let's"):
        return True
    return word in _NOUN_VERBS and bool(at) and before not in _BEFORE_VERB
