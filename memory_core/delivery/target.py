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
- `about.about_work` (its own module): the work is about what exists, not building it
  again: a test, a docs page, a benchmark of it, "why did we build…", `docs: …`.

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
machine vpc agent runner warehouse port crate scraper crawler spider package
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
backend frontend database service box machine extension plugin chart deployment port package
""".split())
# A file name written as the target ("to our deploy.sh") is a program of its own
_FILE = re.compile(r"[\w./-]*[\w-]\.(?:sh|bash|zsh|py|js|mjs|ts|tsx|rb|go|rs|php|java|kt|c|cc|cpp|h|cs|swift|pl|lua|"
                   r"ya?ml|toml|ini|conf|cfg|json|xml|tf|sql|ps1|bat)$")
# Words that end a noun phrase: a clause goes on after them
PHRASE_ENDS = frozenset({"so", "that", "which", "who", "where", "when", "while", "because", "and", "or", "but",
                   "with", "without", "from", "by", "at", "as", "if", "then", "than", "instead", "like",
                   "using", "via", "is", "are", "was", "were", "be", "can", "could", "should", "would",
                   "will", "must", "may", "might", "does", "do", "did", "has", "have", "had", "behind",
                   "under", "over", "across", "between", "after", "before", "around", "through", "about",
                   "against", "during", "per", "needs", "need", "gets", "opens", "fails", "breaks",
                   "returns", "keeps", "makes", "uses", "runs", "works", "sends", "calls", "takes",
                   "wants", "lacks", "doesn't", "isn't", "won't", "can't",
                   "we", "i", "you", "they", "want", "below", "above", "beneath", "underneath",
                   "atop"}) | PREPOSITIONS
MAX_PHRASE = 7            # words of a noun phrase read after the preposition and determiner
# a backtick quotes code inside a sentence ("in `backup.py` the bodies"): not a clause break
CLAUSES = re.compile(r"[,;:!?()\[\]{}\"<>|]|\.(?=\s|$)|\s[-\u2013\u2014]\s")
WORDS = re.compile(r"[A-Za-z0-9][A-Za-z0-9+./_-]*(?:'s)?")  # "httpx/_pool_caps.py", "raise_for_status"
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


def singular(word: str) -> str:
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
    lead_words = WORDS.findall(lead)
    if colon and 0 < len(lead_words) <= 4 and not any(  # "nginx config: serve static files …": what it is for
            singular(w.lower()) in _HEADINGS or any(c.isdigit() for c in w) for w in lead_words):
        out.append((lead.strip(), [w.lower() for w in lead_words]))  # not "sprint goal KDL-S22:"
    for clause in CLAUSES.split(prompt):
        words = WORDS.findall(clause)
        starts = [at for at, word in enumerate(words) if word.lower() in PREPOSITIONS]
        if words and (words[0].lower() in DETERMINERS - {"a", "an", "all", "some", "every", "each", "that"}
                      or (words[0].endswith("'s") and words[0][:1].isupper() and words[0].lower() != "let's")):
            starts.insert(0, -1)  # the subject: from the determiner or the owner on ("Rui's hobby project")
        elif len(words) > 1 and words[0][:1].isupper() and not words[0].lower().endswith(("ed", "ing")) \
                and words[1].lower() in SYSTEMS:  # one system, named: not "Scraped pages"
            starts.insert(0, -1)  # a named system as the subject: "Perl port (…) wants …"
        # the object of a build verb: "write `backup.py` with …", "build a Go microservice"
        starts += [at for at, word in enumerate(words[:12]) if word.lower() in BUILD_VERBS]
        for at in starts:
            k = at + 1
            det = k < len(words) and words[k].lower() in DETERMINERS
            if at >= 0 and words[at].lower() == "to" and not det:
                continue  # "to stop clients caching": an infinitive, not a place
            if at > 0 and words[at].lower() == "on" and words[at - 1].lower() in _MODELLED:
                continue  # "modelled on aiohttp's TCPConnector": a model, not the place
            if at > 0 and words[at].lower() == "to" and words[at - 1].lower() in _HANDS_TO:
                continue  # "fall back to a detector library": what it uses, not the place
            if at > 1 and words[at].lower() == "of" and words[at - 1].lower() == "top" and words[at - 2].lower() == "on":
                continue  # "on top of the h2 state machine": a base, not the place
            k += det
            run = []
            while k < len(words) and len(run) < MAX_PHRASE:
                w = words[k]
                low = w.lower()
                if low in PHRASE_ENDS or low in DETERMINERS:
                    break
                run.append(w)
                k += 1
            if run:
                written = " ".join(([words[at + 1]] if det else []) + run)
                out.append((written, [w.lower() for w in run]))
                if objects is not None and at >= 0 and words[at].lower() in BUILD_VERBS:
                    objects.add(written)
    return out


# What "on" after these names is a model or a base, not where the work goes
_MODELLED = frozenset({"modelled", "modeled", "based", "patterned", "built"})
# What "to" after these names is what the work hands off to, not where it goes
_HANDS_TO = frozenset({"back", "defer", "defers", "deferring", "delegate", "delegates", "delegating"})
# Words that qualify any kind of thing and name no system: never counted as unseen ("our
# own proxy configuration", "a new command line client")
GENERIC = frozenset("""
own new custom another additional extra separate simple small tiny basic better proper real
whole same first second next old current default main single little big
""".split())


def _parts(words) -> list[str]:
    return sorted({p for w in words for p in _PARTS.findall(w.removesuffix("'s").lower())
                   if not p.isdigit() and p not in GENERIC and p not in STOPWORDS})


# The repository the prompt is written in, said bare ("in the repo", "this project")
_THIS_REPO = frozenset({"repo", "repository", "project", "codebase", "monorepo", "package", "library"})
# What a plan or a note is written in names no system ("buried in the Q2 plan", "per the RFC")
DOCUMENTS = frozenset("""
plan roadmap note rfc proposal ticket minutes retro agenda memo writeup write-up adr backlog
""".split())


def _readings(words: list[str], theirs: bool = False, built: bool = False, tree: frozenset = frozenset()):
    """What in one phrase may name another system, as (head, the words that must include one
    the project never writes, every word shown): each system noun in it, with the words
    before it as its modifiers ("the S3 backup script": script, by s3 and backup); a file name
    ("our deploy.sh"); an owner ("aiohttp's TCPConnector"). A build verb's object (`built`)
    is what is built, not where: its head counts only as a shared head does ("write a small
    daemon listing queues" may be the project's own daemon; "a Go daemon" is not)."""
    if words and singular(words[-1].removesuffix("'s")) in DOCUMENTS:
        return  # "in the Q2 plan", "the KDL-2410 ticket": where the request is written down
    if len(words) == 1 and not theirs and singular(words[0]) in _THIS_REPO:
        return  # "in the repo": the project's own
    if theirs and built:  # "write their helper module": what is built is someone else's
        yield singular(words[-1].removesuffix("'s")) if words else "their", None, _parts(words)
        return
    for at, word in enumerate(words):
        bare = word.removesuffix("'s")
        if singular(bare) == "port" and at + 1 < len(words) and words[at + 1].isdigit():
            continue  # "on port 8443": a number, not a port of the code
        if singular(bare) == "box" and not [w for w in words[:at] if w not in DETERMINERS]:
            continue  # "shipped in the box", "out of the box": an idiom, no machine
        if singular(bare) in SYSTEMS and any(_in_tree(w, tree) for w in words[:at]):
            continue  # "a new httpx/_transports_ng/ package": a package of the project's own tree
        if singular(bare) in SYSTEMS and not (built and at + 1 < len(words) and not word.endswith("'s")
                                              and not words[at + 1].endswith("ing")):
            # a built object names a system by its head: "a pluggable backend interface" is an
            # interface; "a Rust daemon listing queues" is a daemon
            modifiers = [w for w in words[:at] if w not in DETERMINERS]
            if theirs:  # "their library", "their SDK": someone else's, whatever its words
                yield singular(bare), None, _parts(words)
                continue
            if word.endswith("'s"):  # an owner: its words and those of what it owns
                checked = _parts(modifiers + words[at + 1:])
            elif singular(bare) in SHARED_HEADS or built:
                checked = _parts(modifiers) if modifiers else _parts([bare])
            else:
                checked = _parts(modifiers + [bare])
            yield singular(bare), checked, _parts(words)
        elif _FILE.fullmatch(bare) and theirs:  # "in their middleware/gzip.go": their file
            yield "file", None, _parts(words)
        elif _FILE.fullmatch(bare):  # "deploy.sh" by its name; "httpx/_forms2.py" by its folders
            folder = words[at - 1] if at and words[at - 1].endswith("/") else ""  # "httpx/" "_forms2.py"
            yield "file", _placed_by(folder + bare, tree), _parts(words)
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


def _placed_by(path: str, tree: frozenset = frozenset()) -> list[str]:
    """The parts a path is placed by: its folders, a source tree's generic ones aside; a bare
    file by its name. A new file in a folder the project writes of ("httpx/_forms2.py") is a
    file of its own, however new its name; "android/net/pool/" is another tree's. A path that
    starts in one of the project's own top folders (`tree`: "httpx/_commandline/") is placed
    by nothing: it is the project's, whatever new folders it names."""
    names = [f for f in re.split(r"/+", path) if f] or [path]
    if _in_tree(path, tree):
        return []
    folders, name = (names, "") if path.endswith("/") else (names[:-1], names[-1])
    parts = [p for p in _parts(re.split(r"[/._-]", "/".join(folders))) if p not in _TREE_PARTS]
    return parts or [p for p in _parts(re.split(r"[._-]", name)) if p not in _TREE_PARTS]


SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_REFERS = frozenset({"it", "them", "this", "that", "those", "these", "there", "one", "its"})
_LEADS = frozenset({"let's", "lets", "please", "now", "then", "so", "just", "also"})


def _from_request(prompt: str, tree: frozenset = frozenset()) -> str:
    """The text from the first sentence that asks for a build and says where on: the context
    before it ("The office printer's admin page wants digest. Write a digest auth handler for
    requests in requests/auth.py") is not the target. A request that points back ("add
    WebSocket support to it") keeps the context, which is what it points to."""
    text = prompt[:2000]
    for start, sentence in _requests(text, tree):
        contrast = _CONTRAST.match(sentence)
        if contrast:  # "Rather than a loop in the handler, build retrying into requests' adapter"
            start, sentence = start + contrast.end(), sentence[contrast.end():]
        lets = _LETS_CLAUSE.search(sentence)
        if lets and not _builds(sentence[:lets.start()]):  # "Rather than relying on anything
            start, sentence = start + lets.end(), sentence[lets.end():]  # shipped, let's write …"
        words = [w.lower() for w in WORDS.findall(sentence)]
        while words and (words[0] in _LEADS or words[0].isdigit() or (len(words[0]) == 1 and words[0] not in "ai")):
            words = words[1:]  # "(2) add a json= keyword …", "b) add …": an item's number or letter
        if len(words) > 2 and words[0] in _ASKING and words[1] in {"we", "you"}:
            words = words[2:]  # "can we make the client go through that proxy?": a request asked
        grows = GROWS.match(sentence.strip())
        if grows and grows.group(1).lower() in tree:
            return text[start:]  # "I'd like Starlette to have an authentication system of its own"
        if not words or words[0] not in BUILD_VERBS:
            continue
        ask = [w.lower() for w in WORDS.findall(CLAUSES.split(sentence)[0])]
        objects: set = set()
        found = [(w, ws) for w, ws in phrases(sentence, objects) if ws and ws[0] not in _REFERS]
        # a place of its own said after a preposition decides, whatever its object points back
        # at ("write that layer in requests/adapters.py"); "for that" is a purpose, not a place
        placed = [ws for w, ws in found if w not in objects]
        refers = any(a in _POINTING and b in _REFERS and not (a == "for" and b in {"that", "this"})
                     for a, b in zip(ask, ask[1:], strict=False))
        if placed or (found and not refers):
            return text[start:]
        return prompt
    return prompt


_ASKING = frozenset({"can", "could", "will", "would"})
# A wish or a lesson for a named thing: "I'd like Starlette to have …", "I want httpx to get its
# own …", "teach httpx to follow them"; group 1 is the thing, group 2 its verb
GROWS = re.compile(r"(?:\b(?:i|we)(?:'d|\s+would)?\s+(?:like|want)|\bteach)\s+(?:the\s+|our\s+)?([\w.-]+)\s+to\s+([a-z]+)",
                   re.I)
# A clause of contrast that opens a sentence: what follows its comma is the request
_CONTRAST = re.compile(r"\s*(?:rather\s+than|instead\s+of)\b[^,.;]{0,200},\s*", re.I)
# The speaker's own decision after a clause of reason or contrast ("Rather than relying on
# anything shipped, let's write our own middleware set in starlette/middleware/")
_LETS_CLAUSE = re.compile(r",\s*(?=(?:let's|lets|let\s+us)\s)", re.I)


def _builds(clause: str) -> bool:
    """The clause holds a build verb said first, as a request is."""
    words = [w.lower() for w in WORDS.findall(clause)]
    while words and words[0] in _LEADS:
        words = words[1:]
    return bool(words) and words[0] in BUILD_VERBS


# A speaker taking the work on, mid-sentence ("…, so I'll write connection limits of our
# own in httpx/_limits.py"): a request as a new sentence is
_TAKES_ON = re.compile(r"\b(?:so\s+|then\s+|and\s+)?(?:i|we)(?:'ll|\s+will|\s+am\s+going\s+to|'m\s+going\s+to"
                       r"|'m\s+planning\s+to|'re\s+planning\s+to|\s+plan\s+to|'d\s+like\s+to|\s+would\s+like\s+to)\s+", re.I)


# A clause after the context that may be the request: after a semicolon, ", so" or ", then",
# when it places the work in the project ("the bastion only speaks SOCKS, so add socks5 to our
# HTTP layer"; "… made me notice: requests needs a way to plug transports; let's write that
# adapter class in requests/adapters.py") or is the speaker's own "so let's …". The context
# before it is not the target; where the clause points to another system ("to our iOS app")
# its own phrases still say so.
_NEXT_ASK = re.compile(r";\s*|,\s*(?=(?:so|then)\s)", re.I)
# "…, so let's build proxy support: …": the speaker's own request after the reason for it
_SO_LETS = re.compile(r"so\s+(?:let's|lets|let\s+us|we\s+should|we\s+need\s+to)\s", re.I)
_OURS = re.compile(r"\b(?:to|in|into|inside|within)\s+(?:our\s|(?:the|this)\s+(?:repo|repository|package|library|project|codebase)\b)",
                   re.I)


def _names_tree(clause: str, tree: frozenset) -> bool:
    """The clause puts the work into the project by its name ("… into httpx itself", "… for
    Starlette"): a preposition of place before one of its own names."""
    words = [w.lower() for w in WORDS.findall(clause)]
    return any(a in {"to", "into", "in", "for", "inside", "within"} and b in tree
               for a, b in zip(words, words[1:], strict=False))


def _in_tree(path: str, tree: frozenset) -> bool:
    names = [f for f in re.split(r"/+", path) if f]
    return len(names) > 1 and names[0].lower().strip("._") in tree


def _requests(text: str, tree: frozenset = frozenset()):
    """Where a request may start after the context: each sentence after the first, each clause
    in which the speaker takes the work on ("Mine: … so I'll write …"), and each later clause
    that places the work in the project (`_NEXT_ASK`), with its offset."""
    at = 0
    for n, sentence in enumerate(SENTENCES.split(text)):
        at = text.find(sentence, at)
        if n:
            yield at, sentence
        head, colon, rest = sentence.partition(":")
        heading = [w.lower() for w in WORDS.findall(head)]
        if colon and n and 0 < len(heading) <= 4 and singular(heading[-1]) in _MESSAGE_LEADS:
            yield at + len(head) + 1, rest  # "So my proposal: add authentication to starlette"
        for m in _TAKES_ON.finditer(sentence):
            if m.start() and sentence[:m.start()].strip():
                yield at + m.end(), sentence[m.end():]
        for m in _NEXT_ASK.finditer(sentence):  # "…, so add socks5 to our HTTP layer"
            clause = sentence[m.end():]
            if _OURS.search(clause) or _names_tree(clause, tree) or any(_in_tree(path, tree) for path in paths(clause)) \
                    or _SO_LETS.match(clause):
                yield at + m.end(), clause
        at += len(sentence)


def name_parts(names) -> list[str]:
    """The parts `foreign_target` reads a name by: the word as the prompt's parts are read
    ("NoCache" gives "nocache") and its name's words (`exists.name_parts`: "no", "cache")."""
    from memory_core.delivery.exists import name_parts as words_of

    return [p for name in names for word in WORDS.findall(name or "") for p in _parts([word]) + words_of(word)]


def instruments(prompt: str) -> list[tuple[str, list[str]]]:
    """What the work is done with, as (the name as written, its words' parts): "schedule it
    with systemd timers every hour" gives ("systemd timers", ["systemd", "timers"])."""
    out = []
    for clause in CLAUSES.split(prompt):
        words = WORDS.findall(clause)
        for at, word in enumerate(words):
            if word.lower() not in INSTRUMENTS:
                continue
            k = at + 1
            if k < len(words) and words[k].lower() in DETERMINERS:
                continue  # "with a --verbose flag": what the thing has, not a tool's name
            run = []
            while k < len(words) and len(run) <= MAX_INSTRUMENT and words[k].lower() not in PHRASE_ENDS \
                    and words[k].lower() not in DETERMINERS:
                run.append(words[k])
                k += 1
            if any(w.lower() in _NO_TOOLS or _FAILURE.search(w) or len(w) < 2 for w in run):
                continue  # "start with mine", "die with MemoryError", "with -m for the method": no tool
            if run and len(run) <= MAX_INSTRUMENT and not (k < len(words) and words[k].lower() in {"and", "or"}):
                out.append((" ".join(run), _parts(run)))  # "with nc and cnonce": a list of parts, no tool
    return out


def foreign_target(prompt: str, seen, tree: frozenset = frozenset()) -> dict | None:
    """The first phrase that names another system (`_readings`) by a word the project's text
    never uses, a phrase made only of such words ("the Jenkins JVM", whatever its head), an
    instrument made only of such words ("with cron"), or an exercise. `seen(words)` returns
    {word: document frequency} over the project's chunks. None when the prompt names no such
    target. `tree`: the project's own top folders, lowercased (its root's name among them)."""
    exercise = _exercise_lead(prompt)
    if exercise:
        return exercise
    found, wholes, objects = [], [], set()
    request = _from_request(prompt, tree)
    if _placed_in_project(request, tree):
        return None
    for written, words in phrases(request, objects):
        practice = next((singular(w.removesuffix("'s")) for w in words if singular(w.removesuffix("'s")) in EXERCISES), None)
        if practice is not None:
            return {"phrase": written, "head": practice, "unseen": []}
        for head, checked, shown in _readings(words, written.lower().startswith(("their ", "his ", "her ")),
                                              written in objects, tree):
            if checked is None:
                return {"phrase": written, "head": head, "unseen": [], "owner": "their"}
            found.append((written, head, checked, shown))
        parts = _parts(words)
        # a proper name: two words or more, one capitalised ("the Jenkins JVM"); one word
        # unseen is too little ("for the UI"), and so are plain words ("the far side")
        shown = written.split()
        if written not in objects and len(parts) >= 2 and singular(words[-1].removesuffix("'s")) not in DOCUMENTS \
                and not (shown[-1].isupper() and not any(w[:1].isupper() and not w.isupper() for w in shown[:-1])) \
                and any(w[:1].isupper() and w.lower() not in DETERMINERS for w in shown[1:]):
            wholes.append((written, singular(words[-1].removesuffix("'s")), parts))  # not "remote DNS"
    ci = _ci_config(request)
    if ci:  # "add `pip install trio` to .github/workflows/tests.yml": the CI's configuration
        return {"phrase": ci, "head": "ci", "unseen": []}
    tools = [(written, parts) for written, parts in instruments(request) if parts]  # not the context's
    trees = [(path, parts) for path in paths(prompt[:2000]) if (parts := _placed_by(path, tree))]
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


# A CI service's configuration, by the path every such service reads
_CI = re.compile(r"(?<![\w/.-])(?:\.github/(?:workflows/)?[\w./-]*|\.gitlab-ci\.ya?ml|\.circleci/[\w./-]*"
                 r"|bitbucket-pipelines\.ya?ml|Jenkinsfile|\.travis\.ya?ml|azure-pipelines\.ya?ml"
                 r"|\.woodpecker(?:\.ya?ml|/[\w./-]*)|\.buildkite/[\w./-]*)")


def _ci_config(text: str) -> str | None:
    """A CI configuration the text places the work in ("to .github/workflows/tests.yml", "in
    .gitlab-ci.yml"), as written."""
    for m in _CI.finditer(text[:2000]):
        if _PLACE.search(text[max(0, m.start() - 12):m.start()]):
            return m.group(0)
    return None


def _placed_in_project(request: str, tree: frozenset) -> bool:
    """The request names the project as the place of the work, which decides over its context
    and whoever it is for: its first clause asks for a build and puts it into the project by
    name ("Let's build retrying into requests, so none of the scripts …"), or it wishes or
    teaches the project something ("Teach httpx to follow them"). "Porting our scraper to
    httpx" asks for no build of the project's."""
    if not tree:
        return False
    first = CLAUSES.split(request, 1)[0]
    grows = GROWS.search(request[:400])
    return bool((_builds(first) and _names_tree(first, tree)) or (grows and grows.group(1).lower() in tree))


def _exercise_lead(prompt: str) -> dict | None:
    """A lead before a colon whose head is an exercise ("homework: …", "course assignment for
    the networking class: students implement …"): the work is practice."""
    lead, colon, _rest = prompt[:80].partition(":")
    words = WORDS.findall(lead)
    if not colon or not words or len(words) > 8:
        return None
    cut = next((i for i, w in enumerate(words) if i and w.lower() in PREPOSITIONS), len(words))
    head = singular(words[cut - 1].lower())
    # the word alone ("homework:") or a compound ("course assignment for …"); "homework for me
    # this week:" is a to-do of one's own
    if head in EXERCISES and (cut > 1 or len(words) == 1):
        return {"phrase": " ".join(words[:cut]), "head": head, "unseen": []}
    return None


# Words of a heading that name no system ("sprint goal KDL-S22:", "standup:"); "ci" and "build"
# in _MESSAGE_LEADS below may ("Woodpecker CI (.woodpecker.yml): …")
_HEADINGS = frozenset("""
plan goal standup note context idea task summary background step proposal retro agenda minutes
recap status sprint roadmap todo question request ask update
""".split())


# Leads that file a prompt by the kind of message it is, not by where the work goes: a
# commit's type, a note's heading ("context: …", "plan: …")
_MESSAGE_LEADS = frozenset("""
feat feature fix bug docs doc test tests chore ci build perf refactor style revert nit todo
context plan next note update idea goal task ask request question proposal background step
traceback error summary tl;dr tldr ps fyi re commit wip draft standup retro agenda minutes recap
status sprint roadmap suggestion comment review reply thought thoughts followup follow-up
""".split())


def _label(prompt: str) -> str | None:
    """A one-word lead before a colon that names where the work runs ("colab: …",
    "terraform: …"), lowercased; a message's own heading ("context:", "feat:") is none."""
    lead, colon, rest = prompt[:40].partition(":")
    words = WORDS.findall(lead)
    if not colon or len(words) != 1 or lead.strip() != words[0] or rest[:2] == "//" \
            or any(c.isdigit() for c in lead):  # "ST-144:", "v2:": a ticket or a version
        return None
    parts = _parts(words)
    if len(parts) != 1 or parts[0] in _MESSAGE_LEADS or singular(parts[0]) in _MESSAGE_LEADS:
        return None
    return parts[0]


BUILD_VERBS = frozenset("""
add build create implement design develop write introduce draft rewrite scaffold port
integrate make generate serve wire emit raise replace reimplement give
""".split())
_POINTING = PREPOSITIONS | BUILD_VERBS  # "add it to …", "… support to it": pointing back

# A path in a source tree ("tests/test_chunked.py", "docs/advanced/retries.md", "rust/svc/"):
# a trailing slash, a file at its end, or three parts; "HTTP/2" and "and/or" are not paths
_PATH = re.compile(r"(?<![\w:/.])(?:[\w.-]+/){1,8}(?:[\w-]+\.[A-Za-z]{1,6}\b|[\w.-]+/[\w.-]+\b)?"
                   r"(?![\w/])|(?<![\w:/.])(?:[\w.-]+/)+[\w-]+\.[A-Za-z]{1,6}\b")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S*", re.I)  # a URL's path places nothing
# what places a path: a preposition, a lead's colon ("Puppet: modules/ca/init.pp should…"),
# a parenthesis after what it locates ("the signup example (examples/signup/app.py)")
_PLACE = re.compile(r"(?:\b(?:in|into|to|under|inside|within|of|onto|at|from|for|write|create|add|edit|update)"
                    r"\s+[`'\"(]?|:\s*|\(\s*)$", re.I)
def paths(text: str) -> list[str]:
    """The paths of a source tree the text places the work in ("in tests/test_x.py", "under
    rust/svc/", "of docs/advanced.md", "write docs/faq.md"), as written; a path said as context
    ("scripts/sync.py runs out of memory") or in a URL is not one."""
    return [path for _at, path in placed_paths(text)]


def placed_paths(text: str, opening: bool = False) -> list[tuple[int, str]]:
    """`paths` with their offsets; `opening`: a path the text opens with is placed too (a
    docs page as the subject: "docs/staticfiles.md never mentions …")."""
    text = _URL.sub(lambda m: " " * len(m.group(0)), text)
    return [(m.start(), m.group(0)) for m in _PATH.finditer(text)
            if _PLACE.search(text[max(0, m.start() - 12):m.start()])
            or (opening and not text[:m.start()].strip())]
