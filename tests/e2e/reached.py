"""What reached the model, read from the scripted model's request log.

Claude Code attaches a hook's additionalContext as a text block that starts with
`<Event> hook additional context: ` (CLI 2.1.332: a `system` role message for SessionStart,
after the prompt for UserPromptSubmit). SessionStart's block continues with the CLI's own
environment section, which begins with a blank line and a `# ` heading."""

from __future__ import annotations

from tests.e2e.messages_api import strings


def flat(body: dict) -> list[str]:
    """Every text the request carried, in the order the model reads it."""
    return list(strings([body.get("system", []), body.get("messages", [])]))


def hook_blocks(body: dict, event: str) -> list[str]:
    """The additionalContext texts of `event` in one request, without the CLI's own tail."""
    prefix = f"{event} hook additional context: "
    out = []
    for text in flat(body):
        at = text.find(prefix)
        if at < 0:
            continue
        block = text[at + len(prefix):]
        out.append(block.split("\n\n# ", 1)[0].split("\n\n<system-reminder>", 1)[0])
    return out


def position(body: dict, needle: str) -> int:
    """Index of the first text containing `needle` (-1 when none does)."""
    for i, text in enumerate(flat(body)):
        if needle in text:
            return i
    return -1


def request_with(requests: list[dict], needle: str) -> dict:
    """The first request whose messages carry `needle` (the prompt of a turn)."""
    for r in requests:
        if position(r["body"], needle) >= 0:
            return r["body"]
    raise AssertionError(f"no request carried {needle!r}; {len(requests)} requests")
