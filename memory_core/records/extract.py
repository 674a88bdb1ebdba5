"""Deterministic extraction of anti-recurrence candidates from transcript lines.

    found = extract_lines(lines, first_line, "/abs/t.jsonl", state)   # [Candidate, ...]
    extract_text("We decided to use WAL mode instead of rollback journals.", "human")

Three kinds, each from explicit wording only (the paper's triage keeps few candidates, so
the pass proposes what was said plainly and leaves judgement to triage):

- decision: "we decided to ...", "decision: ...", "let's go with ...", "we'll use X instead
  of Y", "we chose / settled on / went with ...". A question, a hypothetical ("if we go
  with ...", "maybe we'll use ...", "should we ...") or an open decision ("we haven't
  decided") is not a decision.
- dead_end: "tried X and it failed", "... didn't work", "reverted ...", "ruled out",
  "dead end", "abandoned", "gave up on", "turned out to be slower", ... A conditional ("if
  that doesn't work, revert") and a question are not dead ends.
- correction: the human telling the agent it was wrong or not to do something ("No, ...",
  "don't ...", "that's wrong", "I told you ...", "stop ...ing", "from now on ..."). Only
  typed human text can be a correction.

What is read is exactly what the transcript ingester keeps (memory_core.ingest.transcripts
.parse_transcript_lines): typed prompts and the assistant's own text. Machine turns, isMeta
text, compaction summaries and their summarizer sidechains, tool results, attachments and
hook output never reach the patterns. Subagent text is left out on purpose: a subagent
reports to the parent agent, and its "decisions" are proposals the parent may not take.
Code blocks, quoted lines ("> ...") and table rows are skipped inside a text.
"""

from __future__ import annotations

import re

from memory_core.ingest.transcripts import parse_transcript_lines

KINDS = ("decision", "dead_end", "correction")
MAX_STATEMENT_CHARS = 400
MIN_STATEMENT_CHARS = 12
TITLE_CHARS = 72

_F = re.I


def _any(*patterns: str) -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in patterns), _F)


_APOS = "['\u2019]"
NT = f"(?:n{_APOS}?t|\\s+not)"  # didn't, didnt, did not

DECISION = _any(
    r"\bdecision\s*:",
    r"\b(?:we|i|team)\s+(?:have\s+|'ve\s+|had\s+)?(?:finally\s+)?decided\b",
    r"\bdecided\s+(?:to|on|against|that)\b",
    r"\b(?:the|our|final)\s+decision\s+(?:is|was)\b",
    rf"\blet{_APOS}?s\s+(?:go|stick|stay)\s+with\b",
    rf"\blet{_APOS}?s\s+(?:use|keep|switch\s+to|do)\b.{{1,80}}?\b(?:instead\s+of|rather\s+than)\b",
    rf"\bwe(?:{_APOS}ll|\s+will|{_APOS}re\s+going\s+to|\s+are\s+going\s+to)\s+(?:go|stick|stay)\s+with\b",
    rf"\bwe(?:{_APOS}ll|\s+will|{_APOS}re\s+going\s+to|\s+are\s+going\s+to)\s+(?:use|keep|switch\s+to|adopt|move\s+to)\b"
    r".{1,80}?\b(?:instead\s+of|rather\s+than|over)\b",
    rf"\b(?:we|i){_APOS}?(?:re|m|\s+are|\s+am)\s+going\s+with\b",
    r"^(?:then\s+|so\s+|ok,?\s+|okay,?\s+)?we\s+(?:stick|stay|go)\s+with\b",
    r"\b(?:we|i)\s+(?:chose|picked|settled\s+on|opted\s+for|went\s+with|standardi[sz]ed\s+on)\b",
    r"\bsettled\s+on\b",
    r"\bgoing\s+forward,?\s+(?:we|the\s+\w+)\s+(?:use|will\s+use|uses)\b",
)
DECISION_VETO = _any(
    rf"\b(?:haven{_APOS}?t|have\s+not|hasn{_APOS}?t|not\s+yet|not|never|yet\s+to\s+be|still|undecided)\s+(?:been\s+)?decided\b",
    r"\b(?:need|needs|have|has|going)\s+to\s+decide\b",
    r"\bdecide\s+(?:whether|if|between|later|which)\b",
    r"\bto\s+be\s+decided\b|\btbd\b",
)
DEAD_END = _any(
    r"\bdead[- ]?ends?\b",
    r"\bruled\s+(?:it\s+|that\s+|this\s+)?out\b",
    rf"\b(?:did|does|do|would|will|wo){NT}\s+(?:really\s+|actually\s+)?(?:work|help|pan\s+out)\b",
    r"\bnever\s+worked\b",
    r"\btried\b.{0,160}?\b(?:fail(?:ed|s|ing)?|no\s+luck|no\s+(?:improvement|difference|effect)|"
    r"made\s+(?:it|things)\s+worse|dropped|regressed|got\s+worse|hurt|was\s+(?:even\s+)?(?:slower|worse)|broke|crashed|timed\s+out|too\s+slow|"
    r"same\s+(?:error|failure|result)|came\s+back|reappeared|still\s+(?:fails|failed|fired|fires|broke|broken|crashed|hung|stalled|"
    r"timed\s+out|leaked|flaked|happened|slow|lagged))\b",
    r"\breverted\b|\brevert(?:ing)?\s+(?:the|this|that|it|to|back|my|our)\b|\brolled\s+(?:it\s+|this\s+|that\s+)?back\b|\bbacked\s+(?:it\s+|this\s+|that\s+)?out\b",
    r"\babandon(?:ed|ing)\b|\bgave\s+up\s+on\b|\bgiving\s+up\s+on\b|\bno\s+longer\s+pursu",
    r"\bnot\s+worth\s+(?:it|pursuing|the)\b|\bwas\s+a\s+(?:bust|dead\s+loss)\b",
    r"\bturned\s+out\s+(?:to\s+be\s+)?(?:slower|worse|broken|useless|unworkable|flaky|impossible|a\s+mistake|wrong)\b",
    r"\b(?:that|this|the)\s+(?:approach|idea|route|path|attempt)\s+(?:failed|is\s+a\s+no-go|was\s+a\s+no-go)\b",
)
CORRECTION = _any(
    r"^(?:no|nope|wrong|stop)\b(?!\s+(?:problem|worries|need\s+to\s+worry|rush))",
    rf"^(?:please\s+)?(?:don{_APOS}?t|do\s+not|never)\b(?!\s+(?:forget|worry|mind|hesitate))",
    rf"\b(?:that{_APOS}?s|that\s+is|this\s+is|it{_APOS}?s|it\s+is|you{_APOS}?re|you\s+are|you\s+were)\s+"
    r"(?:(?:still|just|completely|totally)\s+)?(?:wrong|incorrect|not\s+right|not\s+correct|mistaken|"
    r"not\s+what\s+i\s+(?:asked|wanted|said|meant))\b",
    r"\bi\s+(?:told|asked)\s+you\b|\bi\s+(?:already\s+)?said\b|\bnot\s+what\s+i\s+(?:asked|meant|wanted)\b",
    rf"\byou\s+(?:shouldn{_APOS}?t|should\s+not|should\s+never|must\s+not|mustn{_APOS}?t|broke|ignored|forgot)\b",
    r"\bwhy\s+did\s+you\b",
    r"\bfrom\s+now\s+on\b",
    r"^(?:actually|instead)\s*,",
    rf"(?:[,;:.]\s*|\band\s+)(?:so\s+|and\s+|but\s+|just\s+)?(?:please\s+)?(?:don{_APOS}?t|do\s+not|never)\s+"
    r"(?!forget|worry|mind|hesitate)",
    r"\byou\s+(?:removed|deleted|dropped|renamed|reverted|undid|skipped|missed|overwrote|changed\s+the)\b",
    r"^stop\s+\w+ing\b",
)
# A hedge or condition before the trigger makes a sentence hypothetical, not a record.
HEDGE = _any(
    r"\bif\b", r"\bunless\b", r"\bwhether\b", r"\bin\s+case\b", r"\bsuppose\b", r"\bassuming\b",
    r"\bmaybe\b", r"\bperhaps\b", r"\bmight\b", r"\bcould\b", r"\bwould\b", r"\bshould\b",
    r"\bin\s+the\s+event\b", r"\bcan\s+we\b",
    r"\bi\s+(?:think|guess|suspect)\b", r"\bprobably\b", r"\bpropose\b", r"\bsuggest",
)
# A decision announced for later ("once we go with X", "when we use Y") is not taken yet.
LATER = _any(r"\bwhen\b", r"\bonce\b", r"\bbefore\b", r"\bafter\b", r"\buntil\b")
_FENCE = re.compile(r"^\s*(```|~~~)")
_BULLET = re.compile(r"^\s*(?:[-*+•]\s+|\d+[.)]\s+|#{1,6}\s+)")
# Humans type lowercase sentences ("ok. we keep it."): a period ends a sentence before any
# letter, except after the abbreviations that are common in technical prose.
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\betc)(?<!\bcf)"
                           r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`*_]*[A-Za-z0-9])")
_MARKUP = re.compile(r"\*\*|__|`")
_NORM = re.compile(r"[^a-z0-9]+")


class Candidate:
    """One proposed record: what was said, its kind and where."""

    __slots__ = ("kind", "statement", "title", "norm", "line", "session_id", "ts", "role")

    def __init__(self, kind: str, statement: str, line: int = 0, session_id: str | None = None,
                 ts: str | None = None, role: str = "human"):
        self.kind = kind
        self.statement = statement
        self.title = title_of(statement)
        self.norm = f"{kind}:{normalize(statement)}"  # the never-again key is per kind
        self.line = line
        self.session_id = session_id
        self.ts = ts
        self.role = role

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self) -> str:
        return f"Candidate({self.kind!r}, {self.statement[:40]!r}, line={self.line})"


def normalize(statement: str) -> str:
    """The never-propose-again key: lowercase words and digits, single spaces."""
    return " ".join(_NORM.sub(" ", statement.lower()).split())


def title_of(statement: str) -> str:
    """A short title: the statement's first words, cut at a word boundary."""
    text = " ".join(statement.split()).rstrip(".!")
    if len(text) <= TITLE_CHARS:
        return text
    cut = text[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(",;:-")
    return cut + "…"


def sentences(text: str) -> list[str]:
    """Sentences of prose: code blocks, quoted lines and table rows left out."""
    out: list[str] = []
    fenced = False
    for raw in text.split("\n"):
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        line = raw.strip()
        if fenced or not line or line.startswith((">", "|", "    ")) or raw.startswith(("    ", "\t")):
            continue
        line = _BULLET.sub("", line)
        line = _MARKUP.sub("", line)
        carry = ""
        for part in _SENTENCE_END.split(line):
            part = part.strip()
            if not part:
                continue
            if len(part) < MIN_STATEMENT_CHARS and part[-1:] in ".!":
                carry += part + " "  # "No." leads the sentence it answers with
                continue
            out.append(carry + part)
            carry = ""
        if carry.strip():
            out.append(carry.strip())
    return out


def _hedged(sentence: str, at: int) -> bool:
    return HEDGE.search(sentence, 0, at) is not None


def classify(sentence: str, role: str) -> list[str]:
    """The kinds one sentence said by `role` (human | assistant) states, usually none or one
    ("I tried X and it made no difference, so don't" is a dead end and a correction)."""
    s = sentence.strip()
    if len(s) < MIN_STATEMENT_CHARS:
        return []
    kinds = []
    question = s.rstrip(" )\"'*_").endswith("?")
    if role == "human":
        m = CORRECTION.search(s)
        if m and not (question and "why did you" not in s.lower()):
            kinds.append("correction")
    if question:
        return kinds
    m = DEAD_END.search(s)
    if m and not _hedged(s, m.start()):
        kinds.append("dead_end")
    m = DECISION.search(s)
    if not kinds and m and not _hedged(s, m.start()) and not LATER.search(s, 0, m.start()) \
            and not DECISION_VETO.search(s):
        kinds.append("decision")
    return kinds


# A dead end stated by reference names what was tried only by a pronoun ("That approach is a
# dead end.", "It made no difference, so we abandoned it.", "We ruled it out.") or not at all
# ("Abandoned: it lost spans."): what was tried is in the sentence before, and the record must
# carry it. Leading connectives are skipped; a demonstrative with a generic noun is a pronoun.
_CONNECTIVES = frozenset({"but", "so", "and", "sadly", "unfortunately", "alas", "in", "the", "end",
                          "anyway", "well", "however", "ultimately", "honestly", "still", "then", "yet"})
_PRONOUNS = frozenset({"it", "this", "that", "these", "those", "they", "which", "neither", "both",
                       "it's", "that's", "itself"})
_GENERIC = frozenset({"approach", "idea", "route", "path", "attempt", "change", "fix", "experiment",
                      "one", "option", "plan", "trick", "hack", "version", "way", "solution", "thing",
                      "patch", "design", "direction"})
_OBJECT_PRONOUN = re.compile(
    r"\b(?:ruled|abandon(?:ed|ing)?|revert(?:ed|ing)?|rolled|backed|dropped|gave\s+up\s+on|giving\s+up\s+on|"
    r"tried|scrapped|ditched)\s+(?:it|this|that|them|those|these)\b", _F)
_LEAD_WORDS = re.compile(r"[A-Za-z'\u2019]+")


def by_reference(sentence: str) -> bool:
    """Does this dead-end sentence name what was tried only by reference (a pronoun or a
    demonstrative with a generic noun as its subject, a pronoun as the object of its
    trigger verb, or no subject at all: it starts with the trigger)?"""
    words = [w.lower().replace("\u2019", "'") for w in _LEAD_WORDS.findall(sentence[:200])]
    i = 0
    while i < len(words) - 1 and words[i] in _CONNECTIVES:
        i += 1
    if not words[i:]:
        return False
    first = words[i]
    if first in _PRONOUNS and (first not in ("this", "that", "these", "those")
                               or i + 1 >= len(words) or words[i + 1] in _GENERIC
                               or words[i + 1] in _VERBISH):
        return True
    if _OBJECT_PRONOUN.search(sentence):
        return True
    m = DEAD_END.search(sentence)
    return m is not None and not sentence[:m.start()].strip(" \t*_\"'(")


# what follows a demonstrative used as a pronoun ("That did not work", "This was a dead end")
_VERBISH = frozenset({"is", "was", "did", "didn't", "does", "doesn't", "made", "turned", "never",
                      "failed", "broke", "went", "won't", "wouldn't", "isn't", "wasn't", "just",
                      "also", "only", "approach", "has", "had", "got", "ended", "proved"})


def _with_antecedent(before: list[str], sentence: str) -> str:
    """The sentence(s) before that state what was tried, joined to `sentence` (one sentence,
    two when the nearer is itself by reference or too short to name anything)."""
    take = before[-1:]
    if before and (len(before[-1]) < 40 or by_reference(before[-1])) and len(before) > 1:
        take = before[-2:]
    return " ".join([*take, sentence])


def _cut(statement: str) -> str:
    if len(statement) <= MAX_STATEMENT_CHARS:
        return statement
    return statement[:MAX_STATEMENT_CHARS].rsplit(" ", 1)[0] + "…"


def extract_text(text: str, role: str) -> list[tuple[str, str]]:
    """(kind, statement) for every sentence of `text` that states a record. A dead end
    stated by reference (`by_reference`) carries the sentence(s) before it that say what was
    tried; when that sentence was already a dead end, the two are one record."""
    found: list[tuple[str, str]] = []
    said = sentences(text)
    last_dead_end = None  # (index in found, index in said) of the previous sentence's dead end
    for at, sentence in enumerate(said):
        kinds = classify(sentence, role)
        for kind in kinds:
            if kind == "dead_end" and at > 0 and by_reference(sentence):
                if last_dead_end is not None and last_dead_end[1] == at - 1:
                    k, prev = found[last_dead_end[0]]
                    found[last_dead_end[0]] = (k, _cut(f"{said[at - 1]} {sentence}"))
                    continue
                found.append((kind, _cut(_with_antecedent(said[:at], sentence))))
            else:
                found.append((kind, _cut(sentence)))
        last_dead_end = (len(found) - 1, at) if "dead_end" in kinds and found else None
    return found


_ROLES = {"prompt": "human", "reply": "assistant"}


class Turn:
    """A piece of typed or assistant text at its transcript line."""

    __slots__ = ("line", "role", "text", "session_id", "ts")

    def __init__(self, line: int, role: str, text: str, session_id: str | None, ts: str | None):
        self.line, self.role, self.text, self.session_id, self.ts = line, role, text, session_id, ts


def turns(lines: list[bytes], first: int, rel: str, state: dict) -> list[Turn]:
    """What the transcript filter keeps of complete lines (line numbers from `first`),
    without subagent text. `state` persists per file (summarizer sidechains)."""
    pieces, _malformed, _filtered = parse_transcript_lines(lines, first, rel, state)
    out = []
    for piece in pieces:
        role = _ROLES.get(piece.kind or "")
        if role is None:  # subagent text: see the module docstring
            continue
        attrs = piece.attrs or {}
        out.append(Turn(piece.line_start, role, piece.content, attrs.get("session"), attrs.get("ts")))
    return out


def extract_turns(found: list[Turn]) -> list[Candidate]:
    """Candidates from turns, one per (line, kind, statement)."""
    out: list[Candidate] = []
    seen: set[tuple[int, str]] = set()
    for turn in found:
        for kind, statement in extract_text(turn.text, turn.role):
            cand = Candidate(kind, statement, turn.line, turn.session_id, turn.ts, turn.role)
            key = (cand.line, cand.norm)
            if cand.norm and key not in seen:
                seen.add(key)
                out.append(cand)
    return out


def extract_lines(lines: list[bytes], first: int, rel: str, state: dict) -> list[Candidate]:
    """Candidates from complete transcript lines (line numbers from `first`)."""
    return extract_turns(turns(lines, first, rel, state))
