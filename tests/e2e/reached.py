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


def every_hook_block(body: dict, event: str) -> list[str]:
    """Every additionalContext text of `event` in one request, each cut at its first blank
    line (memhealth's blocks have none; the CLI joins what follows with one). Unlike
    `hook_blocks`, finds several in one text: after a compaction the CLI puts the resume
    and the compact SessionStart contexts into one system message."""
    prefix = f"{event} hook additional context: "
    out = []
    for text in flat(body):
        at = text.find(prefix)
        while at >= 0:
            block = text[at + len(prefix):]
            out.append(block.split("\n\n", 1)[0])
            at = text.find(prefix, at + len(prefix))
    return out


def after_tool_result(body: dict, tool_use_id: str) -> list[dict]:
    """The messages from the one holding `tool_use_id`'s result up to the next assistant
    turn: where the CLI puts that tool call's hook context (CLI 2.1.332: PreToolUse's as a
    `system` message right after the tool_result)."""
    messages = body.get("messages") or []
    for i, m in enumerate(messages):
        content = m.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                             and b.get("tool_use_id") == tool_use_id for b in content):
            out = [m]
            for later in messages[i + 1:]:
                if later.get("role") == "assistant":
                    break
                out.append(later)
            return out
    raise AssertionError(f"no tool_result for {tool_use_id} in {len(messages)} messages")
