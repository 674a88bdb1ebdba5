"""A scripted stand-in for the Anthropic Messages API, for driving the real Claude Code CLI.

    with ScriptedModel(script=[[text("Reading."), tool_use("Read", {"file_path": p})],
                               [text("Done.")]]) as model:
        env["ANTHROPIC_BASE_URL"] = model.url
        ... run the CLI ...
    model.requests            # every request the CLI sent: {"i", "method", "path", "body", "reply"}
    model.agent_requests()    # the main loop's calls (the ones that carry tools)

A real HTTP/1.1 server on 127.0.0.1:0 in a background thread. `POST /v1/messages` answers
with server-sent events when the request asks to stream (the CLI always does) and with one
JSON message otherwise; `count_tokens` gets a token count; any GET gets an empty list.

The script is a list of replies for the successive *agent* calls, the requests that carry a
`tools` list: the CLI's side calls (titles, topic checks) carry none and get the text
`side_text`. The compaction call carries the tools too (CLI 2.1.332) but ends with the
summarizer's instruction; it gets an `<analysis>`/`<summary>` reply, as the CLI expects,
and never consumes the script. Each reply is a list of content blocks (`text`, `tool_use`).
When the script runs out the reply is `fallback` (a plain "OK."). A reply may also be a
callable taking the request body and returning blocks, for replies that depend on what the
CLI sent.

Every request body is kept (and appended to `log_path` as NDJSON when given) so a test
asserts on what reached the model: the system blocks, the messages, the tool results and
each hook's `additionalContext` as Claude Code attached it.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Block = dict
Reply = list[Block] | Callable[[dict], list[Block]]

_IDS = itertools.count(1)


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool_use(name: str, tool_input: dict, tool_id: str | None = None) -> Block:
    return {"type": "tool_use", "id": tool_id or f"toolu_e2e_{next(_IDS):04d}", "name": name,
            "input": tool_input}


COMPACTION_MARKER = "create a detailed summary of the conversation"


def strings(value) -> Iterator[str]:
    """Every string inside a JSON value (system blocks, message content, tool results)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def body_text(body: dict) -> str:
    """The system prompt and messages of one request, joined: what the model read."""
    return "\n".join(strings([body.get("system", []), body.get("messages", [])]))


def is_compaction(body: dict) -> bool:
    """The CLI's compaction call: its last user message asks for a summary."""
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    return bool(users) and any(COMPACTION_MARKER in s for s in strings(users[-1].get("content")))


class ScriptedModel:
    """The stand-in server; a context manager that starts and stops it."""

    def __init__(self, script: list[Reply] | None = None, log_path: str | None = None,
                 fallback: str = "OK.", side_text: str = "Scripted side reply.",
                 summary: str = "The user and the assistant looked at the project.") -> None:
        self.script: list[Reply] = list(script or [])
        self.log_path = log_path
        self.fallback = fallback
        self.side_text = side_text
        self.summary = summary
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> ScriptedModel:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(10)
            self._server = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def extend(self, replies: list[Reply]) -> None:
        """Queue more agent replies (the next CLI run in the same test)."""
        with self._lock:
            self.script.extend(replies)

    # what reached the model
    def posts(self) -> list[dict]:
        with self._lock:
            return [r for r in self.requests if r["method"] == "POST" and "count_tokens" not in r["path"]]

    def agent_requests(self) -> list[dict]:
        """The main loop's calls, compaction excluded."""
        return [r for r in self.posts() if r["body"].get("tools") and not is_compaction(r["body"])]

    def compactions(self) -> list[dict]:
        return [r for r in self.posts() if is_compaction(r["body"])]

    def texts(self) -> list[str]:
        """body_text of every messages request, in arrival order."""
        return [body_text(r["body"]) for r in self.posts()]

    # the server
    def _record(self, entry: dict) -> None:
        with self._lock:
            entry["i"] = len(self.requests)
            self.requests.append(entry)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry) + "\n")

    def _next_reply(self, body: dict) -> list[Block]:
        if is_compaction(body):
            return [text(f"<analysis>Scripted.</analysis>\n<summary>{self.summary}</summary>")]
        if not body.get("tools"):
            return [text(self.side_text)]
        with self._lock:
            step = self.script.pop(0) if self.script else None
        if step is None:
            return [text(self.fallback)]
        return step(body) if callable(step) else step

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30  # a stalled client never holds a handler thread for good

            def log_message(self, *args) -> None:  # quiet: the request log is the record
                pass

            def _send_json(self, obj: dict, code: int = 200) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                model._record({"method": "GET", "path": self.path, "body": {}})
                self._send_json({"data": [], "has_more": False, "first_id": None, "last_id": None})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                arrived = time.monotonic()  # what a tool call cost the client: the gap to the next request
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"unparsed": raw[:500].decode("utf-8", "replace")}
                if not isinstance(body, dict):
                    body = {"unparsed": str(body)[:500]}
                if "count_tokens" in self.path:
                    model._record({"method": "POST", "path": self.path, "body": body})
                    return self._send_json({"input_tokens": 100})
                try:
                    content = model._next_reply(body)
                except Exception as exc:  # a broken script is a test bug: say so to the CLI
                    content = [text(f"scripted model error: {type(exc).__name__}: {exc}")]
                entry = {"method": "POST", "path": self.path, "body": body, "reply": content, "t": arrived}
                model._record(entry)
                stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
                msg_id = f"msg_e2e_{next(_IDS):04d}"
                name = body.get("model", "claude-scripted")
                usage = {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0,
                         "cache_read_input_tokens": 0}
                if not body.get("stream"):
                    return self._send_json({"id": msg_id, "type": "message", "role": "assistant",
                                            "model": name, "content": content, "stop_reason": stop,
                                            "stop_sequence": None, "usage": usage})
                self._stream(msg_id, name, content, stop, usage)
                entry["replied_t"] = time.monotonic()

            def _stream(self, msg_id, name, content, stop, usage) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

                def event(kind: str, data: dict) -> None:
                    self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())

                event("message_start", {"type": "message_start", "message": {
                    "id": msg_id, "type": "message", "role": "assistant", "model": name, "content": [],
                    "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}})
                for index, block in enumerate(content):
                    if block["type"] == "tool_use":
                        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                    else:
                        start = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    event("content_block_start", {"type": "content_block_start", "index": index,
                                                  "content_block": start})
                    event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                  "delta": delta})
                    event("content_block_stop", {"type": "content_block_stop", "index": index})
                event("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": stop, "stop_sequence": None},
                                        "usage": {"output_tokens": usage["output_tokens"]}})
                event("message_stop", {"type": "message_stop"})
                self.wfile.flush()

        return Handler
