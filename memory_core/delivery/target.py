"""Where the work goes: a build request that names another system as its target is not a
re-proposal of this project's component, whatever words it shares with one.

    target = foreign_target("add multipart uploads to the S3 backup script", seen)
    target  # {"phrase": "the S3 backup script", "head": "script", "unseen": ["backup", "s3"]}

A near miss shares an entry's words and means another thing. Two kinds are read here, both
lexically, before any embedding is asked:

- `foreign_target`: the work goes to another system. "add event hooks to the GitHub Actions
  workflow", "the notebook does streaming downloads", "write `backup.py` with a multipart
  path", "nginx config: serve static files": a phrase (after a preposition, a clause's
  subject, a build verb's object, a short lead before a colon) whose head is a kind of
  system, a file name or someone else's thing, qualified by a word the project's own text
  never uses ("backup", "postgres"). A re-proposal says where too, and the place is the
  project's: "into the client", "for the connection pool".
- `about_work`: the work is about what exists, not building it again: a test, a docs page,
  a benchmark of it, "the existing X", "why did we build…", "how do I build…", `docs: …`.

The test is cheap (one document-frequency read of a handful of words, asked only once a
DO-NOT-REBUILD is about to fire) and explains itself: the decision row carries the phrase,
its head and the words the project has never written. A cosine cannot do this: a 6-layer
sentence model reads "WebSocket support for the iOS app" as close to the project's
WebSocket support, because the feature is most of the sentence.

Every rule here came from a false fire in a labeled set, and each round was measured on a
held-out set frozen before it (docs/internals/evaluation.md). A form no rule covers stays
the meaning gate's.
"""

from __future__ import annotations

import re

from memory_core.index.fts import STOPWORDS

# Prepositions that introduce where the work goes ("add X to Y", "X for Y", "X in Y", "the
# limits of Y"). "from" and "with" name a source or an instrument, not the place.
PREPOSITIONS = frozenset({"to", "for", "in", "into", "on", "onto", "inside", "within", "of"})
DETERMINERS = frozenset({"the", "our", "my", "your", "their", "its", "this", "that", "these", "those",
                         "a", "an", "some", "every", "each", "his", "her", "all"})
# Head nouns that name a system of their own: a program, a deployment, a place where code
# runs. Those the project itself may be ("client", "server", "library") are SHARED_HEADS
# below and need an unseen modifier; "module" and "api" are not listed at all.
SYSTEMS = frozenset("""
app application script service microservice site website webapp container workflow
pipeline job playbook bot cluster repo repository network database backend frontend
dashboard plugin extension lambda cronjob cron daemon deployment infrastructure infra
stack chart notebook spreadsheet game device firmware portal intranet monorepo vm server
project client library sdk handler page config configuration mod addon add-on box
machine vpc agent runner warehouse port crate
""".split())
# A context that is an exercise, not the product: the work is practice, whatever it builds
# ("chapter 4 of the networking course", "homework: implement encoding detection in Rust").
# Named at all, it is enough: "course" is a word every project writes ("of course").
EXERCISES = frozenset("""
course assignment homework exercise lecture kata interview workshop bootcamp
""".split())
# Heads a library's own text may lack and still have ("the response pipeline", "our
# backend"): one of these counts as another system only by a modifier the project never
# writes ("the Go pipeline"); any other head ("the playbook", "the microservice") by itself
SHARED_HEADS = frozenset("""
pipeline stack project server page config configuration handler client library job network
backend frontend database service box machine extension plugin chart deployment port
""".split())
# A file name written as the target ("to our deploy.sh") is a program of its own
_FILE = re.compile(r"[\w./-]*[\w-]\.(?:sh|bash|zsh|py|js|mjs|ts|tsx|rb|go|rs|php|java|kt|c|cc|cpp|h|cs|swift|pl|lua|"
                   r"ya?ml|toml|ini|conf|cfg|json|xml|tf|sql|ps1|bat)$")
# Words that end a noun phrase: a clause goes on after them
_ENDS = frozenset({"so", "that", "which", "who", "where", "when", "while", "because", "and", "or", "but",
                   "with", "without", "from", "by", "at", "as", "if", "then", "than", "instead", "like",
                   "using", "via", "is", "are", "was", "were", "be", "can", "could", "should", "would",
                   "will", "must", "may", "might", "does", "do", "did", "has", "have", "had", "behind",
                   "under", "over", "across", "between", "after", "before", "around", "through", "about",
                   "against", "during", "per", "needs", "need", "gets", "opens", "fails", "breaks",
                   "returns", "keeps", "makes", "uses", "runs", "works", "sends", "calls", "takes",
                   "wants", "lacks", "doesn't", "isn't", "won't", "can't"}) | PREPOSITIONS
MAX_PHRASE = 7            # words of a noun phrase read after the preposition and determiner
# a backtick quotes code inside a sentence ("in `backup.py` the bodies"): not a clause break
_CLAUSES = re.compile(r"[,;:!?()\[\]{}\"<>|]|\.(?=\s|$)|\s[-\u2013\u2014]\s")
_WORDS = re.compile(r"[A-Za-z0-9][A-Za-z0-9+./-]*(?:'s)?")
_PARTS = re.compile(r"[^\W_]+")


# A numbered variant of a word ("socks5", "authv2", "forms2"): the project that writes the word
# writes its variant; a new module of its own is often named so
_VARIANT = re.compile(r"([a-z]{3,}?)(?:v?\d+)")


def _unseen(part: str, df: dict) -> bool:
    """The project's text never writes this part, nor the word it is a numbered variant of."""
    if df.get(part, 0):
        return False
    stem = _VARIANT.fullmatch(part)
    return not (stem and df.get(stem.group(1), 0))


def _stems(parts) -> set[str]:
    return {m.group(1) for p in parts if (m := _VARIANT.fullmatch(p))}


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def phrases(prompt: str, objects: set | None = None) -> list[tuple[str, list[str]]]:
    """The noun phrases that say where the work goes or what it is about: each after a
    preposition, and a clause's subject when it opens with a determiner ("the notebook does
    streaming downloads", "their library gets digest auth wrong"). As (the phrase as written,
    its words lowercased): "to the S3 backup script" gives ("the S3 backup script", ["s3",
    "backup", "script"]). `objects`, when given, gets the phrases read as a build verb's
    object."""
    out = []
    lead, colon, _rest = prompt.partition(":")
    lead_words = _WORDS.findall(lead)
    if colon and 0 < len(lead_words) <= 4:  # "nginx config: serve static files …": what it is for
        out.append((lead.strip(), [w.lower() for w in lead_words]))
    for clause in _CLAUSES.split(prompt):
        words = _WORDS.findall(clause)
        starts = [at for at, word in enumerate(words) if word.lower() in PREPOSITIONS]
        if words and (words[0].lower() in DETERMINERS - {"a", "an", "all", "some", "every", "each", "that"}
                      or (words[0].endswith("'s") and words[0][:1].isupper() and words[0].lower() != "let's")):
            starts.insert(0, -1)  # the subject: from the determiner or the owner on ("Rui's hobby project")
        # the object of a build verb: "write `backup.py` with …", "build a Go microservice"
        starts += [at for at, word in enumerate(words[:12]) if word.lower() in BUILD_VERBS]
        for at in starts:
            k = at + 1
            det = k < len(words) and words[k].lower() in DETERMINERS
            if at >= 0 and words[at].lower() == "to" and not det:
                continue  # "to stop clients caching": an infinitive, not a place
            k += det
            run = []
            while k < len(words) and len(run) < MAX_PHRASE:
                w = words[k]
                low = w.lower()
                if low in _ENDS or low in DETERMINERS:
                    break
                run.append(w)
                k += 1
            if run:
                written = " ".join(([words[at + 1]] if det else []) + run)
                out.append((written, [w.lower() for w in run]))
                if objects is not None and at >= 0 and words[at].lower() in BUILD_VERBS:
                    objects.add(written)
    return out


# Words that qualify any kind of thing and name no system: never counted as unseen ("our
# own proxy configuration", "a new command line client")
GENERIC = frozenset("""
own new custom another additional extra separate simple small tiny basic better proper real
whole same first second next old current default main single little big
""".split())


def _parts(words) -> list[str]:
    return sorted({p for w in words for p in _PARTS.findall(w.removesuffix("'s").lower())
                   if not p.isdigit() and p not in GENERIC and p not in STOPWORDS})


def _readings(words: list[str], theirs: bool = False, built: bool = False):
    """What in one phrase may name another system, as (head, the words that must include one
    the project never writes, every word shown): each system noun in it, with the words
    before it as its modifiers ("the S3 backup script": script, by s3 and backup); a file name
    ("our deploy.sh"); an owner ("aiohttp's TCPConnector"). A build verb's object (`built`)
    is what is built, not where: its head counts only as a shared head does ("write a small
    daemon listing queues" may be the project's own daemon; "a Go daemon" is not)."""
    if theirs and built:  # "write their helper module": what is built is someone else's
        yield _singular(words[-1].removesuffix("'s")) if words else "their", None, _parts(words)
        return
    for at, word in enumerate(words):
        bare = word.removesuffix("'s")
        if _singular(bare) == "port" and at + 1 < len(words) and words[at + 1].isdigit():
            continue  # "on port 8443": a number, not a port of the code
        if _singular(bare) in SYSTEMS:
            modifiers = [w for w in words[:at] if w not in DETERMINERS]
            if theirs:  # "their library", "their SDK": someone else's, whatever its words
                yield _singular(bare), None, _parts(words)
                continue
            if word.endswith("'s"):  # an owner: its words and those of what it owns
                checked = _parts(modifiers + words[at + 1:])
            elif _singular(bare) in SHARED_HEADS or built:
                checked = _parts(modifiers) if modifiers else _parts([bare])
            else:
                checked = _parts(modifiers + [bare])
            yield _singular(bare), checked, _parts(words)
        elif _FILE.fullmatch(bare):  # "deploy.sh" by its name; "httpx/_forms2.py" by its folders
            folder = words[at - 1] if at and words[at - 1].endswith("/") else ""  # "httpx/" "_forms2.py"
            yield "file", _placed_by(folder + bare), _parts(words)
        elif word.endswith("'s") and bare.lower() not in _TIMES:
            yield "owner", _parts([bare]), _parts(words)


# Prepositions that name the instrument the work is done with ("with cron", "using Celery",
# "via Fluentd"): a tool the project never names, written bare as a name is, is another
# system's way of doing it. "through" is left out: it says where traffic goes ("talk through
# Tor"), which a proxy feature of the project's own names.
INSTRUMENTS = frozenset({"with", "using", "via"})
MAX_INSTRUMENT = 2        # a tool's name is a word or two ("cron", "systemd timers"); a longer run
                          # is what the thing has ("with whitelisted Content-Type headers")


# What follows "with" and names no tool: a pronoun ("start with mine"), a failure ("the
# workers die with MemoryError", "fails with ECONNRESET")
_NO_TOOLS = frozenset({"mine", "ours", "yours", "theirs", "his", "hers", "it", "them", "that", "this", "me", "us"})
_FAILURE = re.compile(r"(?:Error|Exception|Warning|Exit|Interrupt|Timeout)$|^E[A-Z]{3,}$")


# Owners that are times, not someone ("Monday's notes", "last week's triage")
_TIMES = frozenset("""
monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow tonight week
month year sprint quarter release morning evening night weekend
""".split())


# A source tree's folders and a file's extension, in any project: they name no other system
_TREE_PARTS = frozenset("""
src lib libs pkg app apps internal util utils core common main index init py js ts tsx go rs rb
java kt c h cpp md rst txt toml yaml yml json cfg ini
pyproject setup tox noxfile conftest requirements manifest makefile readme changelog license
contributing
""".split())


def _placed_by(path: str) -> list[str]:
    """The parts a path is placed by: its folders, a source tree's generic ones aside; a bare
    file by its name. A new file in a folder the project writes of ("httpx/_forms2.py") is a
    file of its own, however new its name; "android/net/pool/" is another tree's."""
    names = [f for f in re.split(r"/+", path) if f] or [path]
    folders, name = (names, "") if path.endswith("/") else (names[:-1], names[-1])
    parts = [p for p in _parts(re.split(r"[/._-]", "/".join(folders))) if p not in _TREE_PARTS]
    return parts or [p for p in _parts(re.split(r"[._-]", name)) if p not in _TREE_PARTS]


_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_REFERS = frozenset({"it", "them", "this", "that", "those", "these", "there", "one", "its"})
_LEADS = frozenset({"let's", "lets", "please", "now", "then", "so", "just", "also"})


def _from_request(prompt: str) -> str:
    """The text from the first sentence that asks for a build and says where on: the context
    before it ("The office printer's admin page wants digest. Write a digest auth handler for
    requests in requests/auth.py") is not the target. A request that points back ("add
    WebSocket support to it") keeps the context, which is what it points to."""
    sentences = _SENTENCES.split(prompt[:2000])
    for n, sentence in enumerate(sentences[1:], 1):
        words = [w.lower() for w in _WORDS.findall(sentence)]
        while words and words[0] in _LEADS:
            words = words[1:]
        if not words or words[0] not in BUILD_VERBS:
            continue
        ask = [w.lower() for w in _WORDS.findall(_CLAUSES.split(sentence)[0])]
        objects: set = set()
        found = [(w, ws) for w, ws in phrases(sentence, objects) if ws and ws[0] not in _REFERS]
        # a place of its own said after a preposition decides, whatever its object points back
        # at ("write that layer in requests/adapters.py"); "for that" is a purpose, not a place
        placed = [ws for w, ws in found if w not in objects]
        refers = any(a in _POINTING and b in _REFERS and not (a == "for" and b in {"that", "this"})
                     for a, b in zip(ask, ask[1:], strict=False))
        if placed or (found and not refers):
            return " ".join(sentences[n:])
        return prompt
    return prompt


def name_parts(names) -> list[str]:
    """The parts `foreign_target` reads a name by: the word as the prompt's parts are read
    ("NoCache" gives "nocache") and its name's words (`exists.name_parts`: "no", "cache")."""
    from memory_core.delivery.exists import name_parts as words_of

    return [p for name in names for word in _WORDS.findall(name or "") for p in _parts([word]) + words_of(word)]


def instruments(prompt: str) -> list[tuple[str, list[str]]]:
    """What the work is done with, as (the name as written, its words' parts): "schedule it
    with systemd timers every hour" gives ("systemd timers", ["systemd", "timers"])."""
    out = []
    for clause in _CLAUSES.split(prompt):
        words = _WORDS.findall(clause)
        for at, word in enumerate(words):
            if word.lower() not in INSTRUMENTS:
                continue
            k = at + 1
            if k < len(words) and words[k].lower() in DETERMINERS:
                continue  # "with a --verbose flag": what the thing has, not a tool's name
            run = []
            while k < len(words) and len(run) <= MAX_INSTRUMENT and words[k].lower() not in _ENDS \
                    and words[k].lower() not in DETERMINERS:
                run.append(words[k])
                k += 1
            if any(w.lower() in _NO_TOOLS or _FAILURE.search(w) for w in run):
                continue  # "start with mine", "die with MemoryError": no tool
            if run and len(run) <= MAX_INSTRUMENT and not (k < len(words) and words[k].lower() in {"and", "or"}):
                out.append((" ".join(run), _parts(run)))  # "with nc and cnonce": a list of parts, no tool
    return out


def foreign_target(prompt: str, seen) -> dict | None:
    """The first phrase that names another system (`_readings`) by a word the project's text
    never uses, a phrase made only of such words ("the Jenkins JVM", whatever its head), an
    instrument made only of such words ("with cron"), or an exercise. `seen(words)` returns
    {word: document frequency} over the project's chunks. None when the prompt names no such
    target."""
    lead = _WORDS.findall(prompt[:40])
    if lead and _singular(lead[0].lower()) in EXERCISES and prompt.lstrip()[len(lead[0]):].startswith(":"):
        return {"phrase": lead[0], "head": _singular(lead[0].lower()), "unseen": []}
    found, wholes, objects = [], [], set()
    for written, words in phrases(_from_request(prompt), objects):
        practice = next((_singular(w) for w in words if _singular(w) in EXERCISES), None)
        if practice is not None:
            return {"phrase": written, "head": practice, "unseen": []}
        for head, checked, shown in _readings(words, written.lower().startswith(("their ", "his ", "her ")),
                                              written in objects):
            if checked is None:
                return {"phrase": written, "head": head, "unseen": [], "owner": "their"}
            found.append((written, head, checked, shown))
        parts = _parts(words)
        # a proper name: two words or more, one capitalised ("the Jenkins JVM"); one word
        # unseen is too little ("for the UI"), and so are plain words ("the far side")
        shown = written.split()
        if written not in objects and len(parts) >= 2 and any(w[:1].isupper() and w.lower() not in DETERMINERS
                                                              for w in shown[1:]):
            wholes.append((written, _singular(words[-1].removesuffix("'s")), parts))
    tools = [(written, parts) for written, parts in instruments(prompt) if parts]
    trees = [(path, parts) for path in paths(prompt[:2000]) if (parts := _placed_by(path))]
    label = _label(prompt)
    if not (found or wholes or tools or trees or label):
        return None
    asked = {p for _w, _h, checked, shown in found for p in checked + shown}
    asked |= {p for _w, _h, parts in wholes for p in parts} | {p for _w, parts in tools + trees for p in parts}
    asked |= {label} if label else set()
    df = seen(sorted(asked | _stems(asked)))
    for written, head, checked, shown in found:
        if any(_unseen(p, df) for p in checked):
            return {"phrase": written, "head": head, "unseen": [p for p in shown if _unseen(p, df)]}
    for path, parts in trees:  # "android/net/pool/": a tree the project never writes of
        if any(_unseen(p, df) for p in parts):
            return {"phrase": path, "head": "path", "unseen": [p for p in parts if _unseen(p, df)]}
    for written, head, parts in wholes:
        if all(_unseen(p, df) for p in parts):
            return {"phrase": written, "head": head, "unseen": parts}
    for written, parts in tools:
        if all(_unseen(p, df) for p in parts):
            return {"phrase": written, "head": "instrument", "unseen": parts}
    if label and _unseen(label, df):  # "colab: render the templates to a report"
        return {"phrase": label, "head": "label", "unseen": [label]}
    return None


# Leads that file a prompt by the kind of message it is, not by where the work goes: a
# commit's type, a note's heading ("context: …", "plan: …")
_MESSAGE_LEADS = frozenset("""
feat feature fix bug docs doc test tests chore ci build perf refactor style revert nit todo
context plan next note update idea goal task ask request question proposal background step
traceback error summary tl;dr tldr ps fyi re commit wip draft
""".split())


def _label(prompt: str) -> str | None:
    """A one-word lead before a colon that names where the work runs ("colab: …",
    "terraform: …"), lowercased; a message's own heading ("context:", "feat:") is none."""
    lead, colon, rest = prompt[:40].partition(":")
    words = _WORDS.findall(lead)
    if not colon or len(words) != 1 or lead.strip() != words[0] or rest[:2] == "//" \
            or any(c.isdigit() for c in lead):  # "ST-144:", "v2:": a ticket or a version
        return None
    parts = _parts(words)
    if len(parts) != 1 or parts[0] in _MESSAGE_LEADS or _singular(parts[0]) in _MESSAGE_LEADS:
        return None
    return parts[0]


# Work about a component is not building it again: a test of it, a page of its docs, a
# benchmark, a warning in it ("add a regression test checking that redirect handling keeps
# the header", "write a how-to page for the existing timeout configuration").
ABOUT = frozenset("""
test tests benchmark benchmarks page docs documentation tutorial guide example examples
warning warnings changelog comparison measurement measurements review writeup write-up
note notes faq recipe cookbook section chapter paragraph article post readme slide slides
sentence sentences pytest unittest testcase translation reference advisory error
cleanup tweak nit fixup deprecation migration upgrade bump results numbers findings summary
report text wording conftest fix bugfix answer reply email comment logging tracing metrics
instrumentation
""".split())
# A lead phrase filing the request under a talk or a post ("for my talk on HTTP/2 support:
# which Chrome version dropped server push?"): it asks about the feature, for an audience
TALKS = frozenset({"talk", "presentation", "slides", "blog", "newsletter", "podcast", "meetup", "keynote"})
# An object qualified by one of these is a sample of a component, not the component ("an
# example app that uses TestClient.websocket_connect")
SAMPLES = frozenset({"example", "sample", "demo", "tutorial", "docs", "documentation", "changelog", "commit"})
ABOUT_VERBS = frozenset("""
benchmark benchmarks measure measures profile document documents review compare deprecate
test explain pin unpin bump increase decrease lower reply answer triage
""".split())
BUILD_VERBS = frozenset("""
add build create implement design develop write introduce draft rewrite scaffold port
integrate make generate serve wire emit raise log replace reimplement
""".split())
_POINTING = PREPOSITIONS | BUILD_VERBS  # "add it to …", "… support to it": pointing back
# A build verb in the past or in a question about using what exists asks about it, not for
# it again: "why did we build the transport API around handle_request?", "should we have
# built BaseHTTPMiddleware at all?", "how do I build a TestClient that runs the lifespan?",
# "why did requests build SOCKS support on PySocks?"
_ASKS_ABOUT = re.compile(
    r"\b(?:did|didn't|(?:have|haven't|had|has|hasn't)(?=[^.!?\n]{0,200}\?))\s+(?:[\w.]+\s+)?"
    r"(?:ever\s+|really\s+|even\s+)?(?:built|added|implemented|designed|written|wrote|created|made|build|add|"
    r"implement|design|write|create|make|shipped|ship|released|chosen|picked|used|gone|done)\b"
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
_FILED = re.compile(r"\s*(?:docs?|tests?|chore|ci|bench|typo|fix|bug|regression|refactor|perf|cfg|config)(?:\([\w-]+\))?\s*:", re.I)
# A prompt that says it asks for no change: "not asking for a change", "just answer",
# "discussion only, no code"
_DISCLAIMS = re.compile(
    r"\bnot\s+asking\s+for\s+(?:a\s+|any\s+)?(?:change|code|fix|rewrite)s?\b"
    r"|\b(?:just|only)\s+(?:answer|explain|curious|asking|wondering|tell\s+me|talking|chatting|thinking)\b"
    r"|\b(?:is|are|stays?|remains?)\s+(?:untouched|unchanged)\b"
    r"|\b(?:itself|in\s+(?:the\s+)?[\w.-]+)\s+(?:is|are)\s+(?:fine|correct)\s*(?:[.;!]|$)"
    r"|\b(?:stays|remains)(?:\s+as\s+is|\s+the\s+same|\s+for\s+\w+(?:\s+\w+)?)?\s*[.!]?\s*$"
    r"|\b(?:and|but)\s+nothing\s+(?:else\s+)?in\s+(?:the\s+)?[\w.-]+\s*[.!]?\s*$"
    r"|\bnot\s+asking\s+(?:you\s+)?to\s+(?:write|build|implement|code|add|make|change)\b"
    r"|\b(?:discussion|question|explanation)\s+only\b"
    r"|\bno\s+code\b(?=\s*(?:[.,;!)]|$|please|just))"
    r"|\b(?:don't|do\s+not)\s+(?:change|touch|write|implement)\s+(?:anything|any\s+code)\b"
    r"|\bjust\s+(?:thoughts|opinions?|an\s+opinion)\b|\bcurious\s*[.!?]?\s*$"
    r"|\bexplain\s+(?:me|to\s+me|please|pls)\b|\bno\s+code\s+changes?\b"
    r"|\bno\s+changes?\s+(?:in|to)\s+(?:the\s+)?(?:library|lib|package|code|project)\b"
    r"|\bnothing\s+changes\s+(?:on|in|for)\s+our\b"
    r"|\bno\s+behaviou?r(?:al)?\s+changes?\b|\bbehaviou?r\b[^.;]{0,40}\bstays?\s+(?:exactly\s+)?(?:as|the\s+same)\b"
    r"|\b(?:docs?|documentation|tests?)\s+only\b|\bno\s+feature\s+work\b"
    r"|\bno\s+new\s+(?:[\w-]+\s+){0,2}(?:class(?:es)?|code|features?|modules?|components?)\b"
    r"|\b(?:otherwise|else)\s+unchanged\b|\bkeep\s+(?:today's|the\s+current|current|existing|its|the)\s+behaviou?r\b"
    r"|\bnot\s+a\s+(?:ticket|task|request)\b|\b(?:nobody|no\s+one)\s+is\s+(?:writing|building|implementing)\b"
    r"|\bleave\s+(?:the\s+|our\s+|its\s+)?[\w/.-]+(?:\s+[\w/.-]+){0,4}\s+alone\b", re.I)
# A path in a source tree ("tests/test_chunked.py", "docs/advanced/retries.md", "rust/svc/"):
# a trailing slash, a file at its end, or three parts; "HTTP/2" and "and/or" are not paths
_PATH = re.compile(r"(?<![\w:/.])(?:[\w.-]+/){1,8}(?:[\w-]+\.[A-Za-z]{1,6}\b|[\w.-]+/[\w.-]+\b)?"
                   r"(?![\w/])|(?<![\w:/.])(?:[\w.-]+/)+[\w-]+\.[A-Za-z]{1,6}\b")
# what places a path: a preposition, a lead's colon ("Puppet: modules/ca/init.pp should…"),
# a parenthesis after what it locates ("the signup example (examples/signup/app.py)")
_PLACE = re.compile(r"(?:\b(?:in|into|to|under|inside|within|of|onto|at|from|for|write|create|add|edit|update)"
                    r"\s+[`'\"(]?|:\s*|\(\s*)$", re.I)
_ABOUT_TREES = frozenset({"docs", "doc", "docs_src", "documentation", "tests", "test", "testing",
                          "examples", "example", "benchmarks", "bench"})
_ABOUT_FILES = (".md", ".rst", ".txt", ".ipynb")
_CAMEL_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_OBJECT_ENDS = _ENDS | frozenset({"about", "how", "what", "why"})


MAX_CLAUSES = 40          # clauses read for work about what exists; the first build request decides
_PRONOUNS = frozenset({"me", "us", "you", "them", "him", "her"})  # "write me a commit message"
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S*", re.I)


# A value changed ("max_retries 3 -> 5", "timeout: 10 → 30"): a setting tweaked
_TWEAK = re.compile(r"\b\d+(?:\.\d+)?\s*[a-z]{0,3}\s*(?:->|→|=>)\s*\d+(?:\.\d+)?\b")
# Code is not a request: a fenced block, an identifier with an underscore, a keyword argument
# ("port=443", "raise_server_exceptions=True"), a call ("add(…)") hold no build verb
_CODE = re.compile(r"```.*?(?:```|$)|\b\w*_\w*|\b[A-Za-z]\w*(?=\s?=[^=]|\()"
                   # a quotation of three words or more is someone's words, not the request
                   r"""|(?<!\w)'(?=\S)[^\n]*?\s[^\n]*?\s[^\n]*?(?<=\S)'(?!\w)|"[^"\n]*?\s[^"\n]*?\s[^"\n]*?"|“[^”\n]*”""", re.S)
# An object that only points back at what was named before it ("deprecation warning: emit
# one when …", "a benchmark: write it"): the work is what the sign named
# Build verbs that are nouns as often ("the SOCKS port", "a debug log", "the nightly build"):
# a verb only first in a clause or after a word a verb follows
_NOUN_VERBS = frozenset({"port", "log", "build", "design", "draft"})
_BEFORE_VERB = frozenset("""
to please and then let's lets we i you can could should must will would also now just first
so pls plz not never why who us we'll i'll you'll they they'll
""".split())
# What "raise" builds: an error raised is new behaviour; "raise the timeout" turns a setting up
_RAISED = frozenset({"error", "exception", "warning", "clear", "helpful", "typeerror", "valueerror",
                     "custom", "specific", "proper", "new", "better", "dedicated", "meaningful"})
_PRO_FORMS = frozenset({"one", "ones", "it", "them", "this", "that", "these", "those"})


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
    for sep in _CLAUSES.finditer(text):
        yield start, text[start:sep.start()]
        start = sep.end()
    yield start, text[start:]


def _head(word: str) -> str:
    return _singular(_CAMEL_SPLIT.split(word)[-1].lower())  # DeprecationWarning: warning


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
    disclaims = _DISCLAIMS.search(prompt[:2000])
    if disclaims:
        return {"disclaims": disclaims.group(0)}
    tweak = _TWEAK.search(head)
    if tweak:
        return {"tweak": tweak.group(0)}
    behaves = _BEHAVES.match(head)
    if behaves and not _asks_to_build(_WORDS.findall(_prose(prompt[behaves.end():2000]))):
        return {"asks": behaves.group(0).strip()}
    filed = _FILED.match(head)
    if filed:
        return {"filed": filed.group(0).strip()}
    lead, colon, _rest = _prose(head).partition(":")
    lead_words = _WORDS.findall(lead)
    named = [w for w in lead_words if not any(c.isdigit() for c in w)]  # "upgrade guide v1 -> v2"
    while named and named[-1].lower() in {"only", "just", "too", "first"}:
        named = named[:-1]  # "soak conftest only:"
    cut = next((i for i, w in enumerate(named) if i and w.lower() in PREPOSITIONS), None)
    named = named[:cut] if cut else named  # "release notes for 0.30": notes
    # a lead naming the kind of work ("cleanup:", "for my talk on X:") is a sign, as a subject
    # is: a build request after it still decides ("nit: replace X with a fresh implementation")
    lead_sign = None
    if colon and len(lead) <= 60 and named and (_head(named[-1]) in ABOUT
                                                or any(w.lower() in TALKS and lead_words[i - 1].lower() in DETERMINERS
                                                       for i, w in enumerate(lead_words) if i)):
        lead_sign = {"filed": lead.strip()}
    # a file of the docs or the tests is a sign, as a lead is ("The flaky test in
    # tests/test_asgi.py: leave it. … let's write our own decoder")
    text = _prose(prompt[:2000])
    about_paths = [(at, path) for at, path in _placed_paths(prompt[:2000])
                   if path.split("/", 1)[0].lower() in _ABOUT_TREES or path.lower().endswith(_ABOUT_FILES)]
    lead_sign = lead_sign or ({"path": about_paths[0][1]} if about_paths else None)
    # the first sign of work about what exists, unless a build request follows it ("The
    # security review wants digest. Let's write DigestAuth ourselves"; "Step 1: document the
    # use case. Step 2: write our own handshake")
    found = lead_sign
    for n, (start, clause) in enumerate(list(_spans(text))[:MAX_CLAUSES]):
        words = _WORDS.findall(clause)
        low = [w.lower() for w in words]
        if n == 0 and len(low) > 2 and _head(low[0]) in ABOUT and low[1] in PREPOSITIONS:
            found = found or {"title": " ".join(words[:4])}  # "deprecation of on_startup …"
            continue
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
            if word in ABOUT_VERBS and (at == 0 or low[at - 1] in {"to", "please", "can", "let's", "lets", "we"}):
                found = found or {"verb": words[at]}
                break
            if word == "raise" and at + 2 < len(low) and low[at + 1] in DETERMINERS \
                    and words[at + 2].islower() and _head(low[at + 2]) not in _RAISED:
                found = found or {"verb": " ".join(words[at:at + 3])}  # "raise the timeout": a tweak
                break
            if word == "fix" and at and low[at - 1] in {"and", "then", "to", "please"}:
                found = found or {"verb": words[at]}  # "track down why and fix it": a bug in what exists
                break
            if at and low[at - 1] == "by" and _gerund(word) in BUILD_VERBS:
                word = _gerund(word)  # "fix it by writing a signed-cookie middleware": a request
            if word not in BUILD_VERBS or (at and (low[at - 1] in DETERMINERS
                                                   or (low[at - 1].endswith("'s") and low[at - 1] != "let's"))):
                continue  # "the build server", "the project's log"
            if word in _NOUN_VERBS and at and low[at - 1] not in _BEFORE_VERB:
                continue  # "through Tor's SOCKS port", "the debug log": a noun
            run = []  # the object, as written; its head is its last word's last part
            for w in words[at + 1:at + 1 + MAX_PHRASE]:
                last = _CAMEL_SPLIT.split(w)[-1].lower()
                if w.lower() in _OBJECT_ENDS or (last.endswith("ing") and last not in ABOUT):
                    break
                if w.lower() not in DETERMINERS and w.lower() not in _PRONOUNS:
                    run.append(w)
            while run and run[-1].lower() in {"only", "too"}:
                run = run[:-1]  # "write the reply only"
            if run and (_head(run[-1]) in ABOUT or run[-1].lower() in ABOUT
                        or any(w.lower() in SAMPLES for w in run[:-1])):
                found = found or {"object": " ".join(run)}
                break
            if found and at + 1 < len(low) and low[at + 1] in _PRO_FORMS and (
                    at + 2 == len(low) or low[at + 2] in _OBJECT_ENDS or low[at + 2] in {"up", "out", "down"}):
                break  # "deprecation warning: emit one when …": the object is what the sign named
            placed = next((path for p_at, path in about_paths if p_at >= start), None)
            if placed:  # "write the failing test in tests/test_mock.py": the request writes a test
                return {"path": placed}
            return None  # a build request
    if found:
        return found
    return _only_asks(prompt[:2000])


def _only_asks(text: str) -> dict | None:
    """A question that asks for nothing to be built ("which one wins?", "is the body half
    read?"): the prompt asks something and no build verb in it is said as a request."""
    question = next((q for q in _SENTENCES.split(text) if q.rstrip().endswith("?")), None)
    if question is None:
        return None
    if _asks_to_build(_WORDS.findall(_prose(text))):
        return None
    return {"asks": question.strip()[:120]}


def _asks_to_build(words: list[str]) -> bool:
    """A build verb in these words is said as a verb: not after a determiner, a preposition or
    an owner ("the build", "for a write", "the project's log"), and a verb that is as often a
    noun only where a verb goes ("through the proxy port", "the debug log" are nouns)."""
    low = [w.lower() for w in words]
    for at, word in enumerate(low):
        if word not in BUILD_VERBS:
            continue
        before = low[at - 1] if at else ""
        if before in DETERMINERS or before in PREPOSITIONS - {"to"} or (before.endswith("'s") and before != "let's"):
            continue
        if word in _NOUN_VERBS and at and before not in _BEFORE_VERB:
            continue
        return True
    return False


def paths(text: str) -> list[str]:
    """The paths of a source tree the text places the work in ("in tests/test_x.py", "under
    rust/svc/", "of docs/advanced.md", "write docs/faq.md"), as written; a path said as context
    ("scripts/sync.py runs out of memory") or in a URL is not one."""
    return [path for _at, path in _placed_paths(text)]


def _placed_paths(text: str) -> list[tuple[int, str]]:
    text = _URL.sub(lambda m: " " * len(m.group(0)), text)
    return [(m.start(), m.group(0)) for m in _PATH.finditer(text)
            if _PLACE.search(text[max(0, m.start() - 12):m.start()])]
