"""The console's HTML: the stylesheet, escaping, the page object, and the small renderers
every page shares (status badges, cue cells, the cascade's arithmetic, chunk tables).
Every value that came from the store goes through `esc`."""

from __future__ import annotations

import html
import json
import time
from urllib.parse import parse_qs

from telemetry.console.security import SECURITY_HEADERS

PAGE_SIZE = 50
MAX_FORM_BODY = 64 * 1024
HEARTBEAT_DAYS = 7
GATE_HISTORY = 30
CLIP = 300
MAX_ITEMS = 500  # memory items listed (a project has tens to hundreds)
CURRENT = ' aria-current="page"'
HERE_CLASS = ' class="here"'

ROUTES = ("/", "/decisions", "/memory", "/triage", "/alerts-budget")
POST_ROUTES = ("/triage/confirm", "/triage/reject", "/triage/retitle", "/triage/merge")
NAV = (("/", "Health"), ("/decisions", "Decisions"), ("/memory", "Memory"), ("/triage", "Triage"),
       ("/alerts-budget", "Alerts"))



def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def when(ns) -> str:
    if not ns:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(ns) / 1e9)) + "Z"


def clip(text, n: int = CLIP) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def parse_query(query: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(query or "", keep_blank_values=False).items() if v}


def as_int(value, default: int | None = None) -> int | None:
    try:
        return int(str(value).lstrip("#"))
    except (TypeError, ValueError):
        return default


def status_badge(status: str) -> str:
    cls = {"red": "red", "green": "green", "note": "note"}.get(status or "", "muted")
    return f'<span class="{cls}">{esc((status or "?").upper())}</span>'


class Page:
    """What a handler returns: status, extra headers, body."""

    __slots__ = ("code", "headers", "body")

    def __init__(self, code: int, body: bytes, headers: dict | None = None):
        self.code = code
        self.body = body
        self.headers = {**SECURITY_HEADERS, "Content-Type": "text/html; charset=utf-8", **(headers or {})}

    def as_tuple(self) -> tuple[int, dict, bytes]:
        return self.code, self.headers, self.body


def text_page(code: int, message: str) -> Page:
    page = Page(code, (message + "\n").encode("utf-8"))
    page.headers["Content-Type"] = "text/plain; charset=utf-8"
    return page


def cue_cell(evaluations: list[tuple]) -> str:
    if not evaluations:
        return "—"
    parts = []
    for trigger, name, outcome, reason in evaluations[:8]:
        label = f"{esc(name or 'no item')} ({esc(trigger)})"
        parts.append(f'<span class="green">fired</span> {label}' if outcome == "fired"
                     else f"skipped {label}{': ' + esc(reason) if reason else ''}")
    more = f"<br><span class=muted>+{len(evaluations) - 8} more</span>" if len(evaluations) > 8 else ""
    return "<br>".join(parts) + more


def fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.1f}" if value < 100 else f"{value:.0f}"
    return str(value)


def loads_detail(text) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def line_span(start, end) -> str:
    if start is None:
        return ""
    return str(start) if end in (None, start) else f"{start}-{end}"


def provenance(transcript, line, session, ts, role) -> str:
    extra = ", ".join(x for x in (f"session {session}" if session else "", ts or "", role or "") if x)
    return f"{transcript}:{line}" + (f" ({extra})" if extra else "")


OUTCOME_MEANING = {
    "no_intent": "no decision, debugging or recall intent in the prompt: retrieval not run",
    "system_turn": "a harness turn, not the person: skipped",
    "capped": "the session's injection cap was reached",
    "error": "the cascade could not decide (store unavailable)",
}


def cascade(outcome: str, detail: dict) -> str:
    """The cascade's arithmetic in a line or two: which gate stopped the prompt and by how much."""
    parts = []
    if "marker" in detail:
        parts.append(f"system turn ({esc(detail['marker'])})")
    if "tokens" in detail:
        parts.append(f"{esc(detail['tokens'])} tokens")
    small = bool(detail.get("small_corpus"))
    if "corpus" in detail:
        parts.append(f"corpus {esc(detail['corpus'])} chunks"
                     + (" (small: the IDF gates are waived)" if small else ""))
    if "max_prompt_idf" in detail and "distinctive_idf" in detail and not small:
        parts.append("most distinctive word IDF " + versus(detail["max_prompt_idf"], detail["distinctive_idf"]))
    if detail.get("inventory"):
        parts.append(f"inventory {esc(detail['inventory'])} entries, {esc(detail.get('dnr_passed', 0))} named")
    if "matched" in detail:
        need = detail.get("min_matches")
        parts.append(f"best: {esc(detail['matched'])} matched" + (f" (need {esc(need)})" if need is not None else ""))
    if "idf_sum" in detail and "threshold" in detail:
        parts.append("IDF sum " + versus(detail["idf_sum"], detail["threshold"])
                     + (" (waived)" if small else ""))
    if "candidates" in detail:
        parts.append(f"{esc(detail['candidates'])} candidate(s), {esc(detail.get('passed', 0))} passed")
    if detail.get("reason"):
        parts.append(f"<em>{esc(detail['reason'])}</em>")
    items = detail.get("items") or []
    if items:
        parts.append("injected: " + ", ".join(
            f"chunk {esc(i.get('chunk_id'))}" + (f" “{esc(clip(i.get('block'), 60))}”" if i.get("block") else "")
            for i in items if isinstance(i, dict)))
    if "chars" in detail:
        parts.append(f"{esc(detail['chars'])} chars")
    line = "<br>".join(parts) or esc(OUTCOME_MEANING.get(outcome, "—"))
    if detail:
        line += ("<details><summary>detail</summary><pre>"
                 + esc(json.dumps(detail, indent=1, ensure_ascii=False, default=str)[:4000]) + "</pre></details>")
    return line


def versus(value, threshold) -> str:
    """"9.40 ≥ 7.00" (or "<"): a number against the threshold it had to reach."""
    try:
        v, t = float(value), float(threshold)
    except (TypeError, ValueError):
        return f"{esc(value)} vs {esc(threshold)}"
    return f"{v:.2f} {'≥' if v >= t else '<'} {t:.2f}"




def chunk_table(rows, score: bool = False) -> str:
    if not rows:
        return "<p>No chunk matches.</p>"
    head = ("<table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">Source</th><th scope=\"col\">Kind</th>"
            "<th scope=\"col\">Provenance</th><th scope=\"col\">Title</th><th scope=\"col\">Text</th>"
            "<th scope=\"col\" class=\"num\">Weight</th>" + ("<th scope=\"col\">Score</th>" if score else "")
            + "</tr></thead><tbody>")
    body = []
    for cid, source, kind, path, lines, title, snippet, weight, sc in rows:
        body.append(f"<tr><td>{cid}</td><td>{esc(source)}</td><td>{esc(kind or '—')}</td>"
                    f"<td><code>{esc(path)}{':' + esc(lines) if lines else ''}</code></td><td>{esc(title or '')}</td>"
                    f"<td>{esc(snippet)}</td><td class=\"num\">{esc(fmt(weight))}</td>"
                    + (f"<td>{esc(sc)}</td>" if score else "") + "</tr>")
    return head + "".join(body) + "</tbody></table>"
