"""The alert runbook as a page `memhealth serve` shows at `/runbook`, so every alert's
`runbook_url` opens where the operator already is, with no repository to host it.

    html = render(load())          # headings get the ids a forge gives them (#memhealthwatchdog)

`alerts/runbook.md` is the hand-kept source; the package ships it as `telemetry/runbook.md`
(a link to it in a checkout, a copy in a wheel). The renderer knows only what the runbook
uses: headings, paragraphs, lists, fenced code, inline code and bold. Everything is escaped.
"""

from __future__ import annotations

import html
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGED = os.path.join(HERE, "runbook.md")


def anchor(heading: str) -> str:
    """The id GitHub and GitLab give a markdown heading: lower case, punctuation other than
    `-` and `_` dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def load(path: str = PACKAGED) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _inline(text: str) -> str:
    out = []
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if i % 2:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            out.append(re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(part)))
    return "".join(out)


def render(markdown: str, title: str = "memhealth runbook") -> bytes:
    body: list[str] = []
    para: list[str] = []
    items: list[str] = []
    code: list[str] | None = None

    def flush() -> None:
        if para:
            body.append(f"<p>{_inline(' '.join(para))}</p>")
            para.clear()
        if items:
            body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in markdown.splitlines():
        if code is not None:
            if line.startswith("```"):
                body.append(f"<pre><code>{html.escape(chr(10).join(code))}</code></pre>")
                code = None
            else:
                code.append(line)
            continue
        if line.startswith("```"):
            flush()
            code = []
        elif m := re.match(r"^(#{1,6}) (.+)$", line):
            flush()
            level, text = len(m.group(1)), m.group(2).strip()
            body.append(f'<h{level} id="{html.escape(anchor(text))}">{_inline(text)}</h{level}>')
        elif m := re.match(r"^\s*[-*] (.+)$", line):
            if para:
                flush()
            items.append(m.group(1))
        elif not line.strip():
            flush()
        elif items and line.startswith("  "):
            items[-1] += " " + line.strip()
        else:
            para.append(line.strip())
    if code is not None:
        body.append(f"<pre><code>{html.escape(chr(10).join(code))}</code></pre>")
    flush()
    page = ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title>"
            "<meta name=\"color-scheme\" content=\"light dark\">"
            "<style>body{max-width:60rem;margin:2rem auto;padding:0 1rem;font:16px/1.5 system-ui,sans-serif}"
            "pre{overflow-x:auto;padding:.75rem;border:1px solid #8884}code{font-size:.9em}</style>"
            "</head><body>\n" + "\n".join(body) + "\n</body></html>\n")
    return page.encode("utf-8")
