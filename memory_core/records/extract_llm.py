"""Optional synthesis: an Ollama generate model proposes records the patterns missed.

    found = synthesize(turns, "http://127.0.0.1:11434", "qwen2.5:7b", deadline)   # [Candidate]

Off unless `[capture].llm_model` is set, and only in the detached capture worker (or
`memhealth ingest`), never in a hook. The model sees the same turns the patterns see (typed
prompts and assistant text, numbered by transcript line) and answers JSON. What it proposes
is grounded before it is kept: the line must be one it was shown, the statement must be
words of that line (compared normalized), a correction must come from the human. Anything
else is dropped and counted. A call that fails (unreachable, timeout, missing model, not
JSON) raises SynthesisError; the caller keeps the deterministic candidates, records a
degradation and stops calling the model for the rest of the run.
"""

from __future__ import annotations

import json
import time

from memory_core.records.extract import KINDS, MIN_STATEMENT_CHARS, Candidate, Turn, normalize

MAX_PROMPT_CHARS = 24_000  # turns per call; a longer batch is sent in several calls
MAX_TURN_CHARS = 4_000
INSTRUCTIONS = """You read part of a coding session between a human and an AI assistant and \
extract anti-recurrence records, so a later session does not repeat them:
- decision: a choice that was actually made ("we will use X instead of Y"), not a question, \
plan, proposal or hypothetical;
- dead_end: an approach that was tried and failed or was ruled out;
- correction: the human telling the assistant it was wrong or not to do something (human \
turns only).
Copy each statement word for word from one turn; give that turn's line number. Most turns \
contain no record. Answer only JSON: {"records": [{"line": 12, "kind": "dead_end", \
"statement": "..."}]}; {"records": []} when there is none.

Turns:
"""


class SynthesisError(Exception):
    """The generate call failed; `reason` is a degradation reason."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def _prompts(found: list[Turn]) -> list[str]:
    prompts, part = [], ""
    for turn in found:
        text = " ".join(turn.text.split())[:MAX_TURN_CHARS]
        entry = f"[L{turn.line} {turn.role}] {text}\n"
        if part and len(part) + len(entry) > MAX_PROMPT_CHARS:
            prompts.append(INSTRUCTIONS + part)
            part = ""
        part += entry
    if part:
        prompts.append(INSTRUCTIONS + part)
    return prompts


def _generate(url: str, model: str, prompt: str, timeout_s: float, deadline: float) -> str:
    from memory_core.index.http import HttpError, request

    left = deadline - time.monotonic()
    if left <= 0.5:
        raise SynthesisError("llm_timeout", "no time left in the capture budget")
    body = {"model": model, "prompt": prompt, "stream": False, "format": "json",
            "options": {"temperature": 0}}
    try:
        status, raw = request("POST", url.rstrip("/") + "/api/generate", body, connect_s=min(2.0, left),
                              read_s=min(timeout_s, left), deadline=time.monotonic() + min(timeout_s, left))
    except HttpError as exc:
        reason = "llm_timeout" if exc.kind in ("timeout", "connect_timeout") else "llm_unreachable"
        raise SynthesisError(reason, f"{url}: {exc}") from None
    except (OSError, ValueError) as exc:
        raise SynthesisError("llm_unreachable", f"{url}: {exc}") from None
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if status == 404:
        raise SynthesisError("llm_model_missing", f"model {model!r}: {raw[:200]!r}")
    if status != 200 or not isinstance(data, dict) or not isinstance(data.get("response"), str):
        raise SynthesisError("llm_bad_output", f"HTTP {status}: {raw[:200]!r}")
    return data["response"]


def _records(text: str) -> list:
    try:
        data = json.loads(text)
    except ValueError:
        raise SynthesisError("llm_bad_output", f"the model did not answer JSON: {text[:200]!r}") from None
    records = data.get("records") if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise SynthesisError("llm_bad_output", f"no records list in the answer: {text[:200]!r}")
    return records


def synthesize(found: list[Turn], url: str, model: str, deadline: float,
               timeout_s: float = 60.0) -> tuple[list[Candidate], int]:
    """(grounded candidates, proposals dropped as ungrounded). Raises SynthesisError."""
    by_line: dict[int, list[Turn]] = {}
    for turn in found:
        by_line.setdefault(turn.line, []).append(turn)
    kept: list[Candidate] = []
    dropped = 0
    for prompt in _prompts(found):
        for rec in _records(_generate(url, model, prompt, timeout_s, deadline)):
            cand = _grounded(rec, by_line)
            if cand is None:
                dropped += 1
            else:
                kept.append(cand)
    return kept, dropped


def _grounded(rec, by_line: dict[int, list[Turn]]) -> Candidate | None:
    if not isinstance(rec, dict):
        return None
    line, kind, statement = rec.get("line"), rec.get("kind"), rec.get("statement")
    if isinstance(line, str) and line.lstrip("L").isdigit():
        line = int(line.lstrip("L"))
    if not isinstance(line, int) or kind not in KINDS or not isinstance(statement, str):
        return None
    statement = " ".join(statement.split())
    norm = normalize(statement)
    if len(statement) < MIN_STATEMENT_CHARS or not norm:
        return None
    for turn in by_line.get(line, ()):
        if kind == "correction" and turn.role != "human":
            continue
        if f" {norm} " in f" {normalize(turn.text)} ":
            return Candidate(kind, statement, line, turn.session_id, turn.ts, turn.role)
    return None
