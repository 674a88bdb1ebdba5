"""`memhealth mcp`: the project's memory as MCP tools for the agent, over stdio.

    memhealth mcp --project DIR        # Claude Code starts it (`claude mcp add memhealth -- …`)

Tools: `search` (hybrid search, as `memhealth search`), `remember` (a memory file with its
cues, as `memhealth remember`), `cues` (what can fire and its state, as `memhealth cues`).
Each call opens the store, does its work and records, in one write transaction, an MCP
server span (`tools/call <tool>`, MCP semantic conventions) with the work's spans under it,
and `memhealth_mcp_calls_total{tool,outcome}` / `memhealth_mcp_call_duration_seconds{tool}`,
so the agent's voluntary use is measured beside what the hooks deliver.

The official MCP Python SDK (`pip install 'memhealth[mcp]'`) is imported here only: never
on the hook path, and not by any other command.
"""

from __future__ import annotations

import time

from memhealth.cliutil import ProjectContext
from telemetry.catalog import MCP_TOOLS

SERVER_NAME = "memhealth"
MAX_K = 50            # a search asks for at most this many hits
MAX_SNIPPET = 400     # characters of each hit's text handed back


class MemoryTools:
    """The tool bodies, independent of the SDK: each returns JSON-ready data or raises.

        tools = MemoryTools("/path/to/project")
        tools.search("wal checkpoint", k=5)
    """

    def __init__(self, start_dir: str | None):
        self.start_dir = start_dir

    def _call(self, tool: str, work, **attrs):
        """Run work(ctx, trace, span) inside a recorded MCP server span; count the call."""
        from memhealth.config import load
        from memhealth.project import Project
        from memory_core.outbox.rollups import bump, observe
        from memory_core.outbox.spans import Trace
        from memory_core.store.db import connect
        from memory_core.store.tx import write

        assert tool in MCP_TOOLS, tool
        project = Project.find(self.start_dir)
        cfg = load(project.state_dir)
        conn = connect(project.db_path)
        t0 = time.perf_counter()
        trace = Trace()
        # MCP semconv: `{mcp.method.name} {target}`, kind SERVER on the server side
        span = trace.span(f"tools/call {tool}", kind="server", **{
            "mcp.method.name": "tools/call", "gen_ai.tool.name": tool,
            "gen_ai.operation.name": "execute_tool", **attrs})
        outcome = "ok"
        try:
            with span:
                return work(ProjectContext(project, cfg, conn), trace, span)
        except Exception:
            outcome = "error"  # the span's __exit__ already set ERROR and error.type
            raise
        finally:
            try:
                with write(conn):
                    trace.write(conn)
                    bump(conn, "memhealth_mcp_calls_total", {"tool": tool, "outcome": outcome})
                    observe(conn, "memhealth_mcp_call_duration_seconds",
                            time.perf_counter() - t0, {"tool": tool})
            except Exception:  # a locked store: the answer matters more than its telemetry
                pass
            conn.close()

    def search(self, query: str, k: int = 5) -> dict:
        from memhealth.errors import UsageError
        from memory_core.index.search import search

        k = max(1, min(int(k), MAX_K))

        def work(ctx, trace, span):
            if not query.strip():
                raise UsageError("query is empty: say what to look for")
            result = search(ctx.conn, query, ctx.cfg, k=k, trace=trace)
            span.set("memhealth.search.hits", len(result.hits))
            return {"hits": [{"path": h.path, "lines": h.lines, "title": h.title,
                              "source": h.source, "score": round(h.score, 6),
                              "text": (h.snippet or "")[:MAX_SNIPPET]} for h in result.hits],
                    "degraded": result.degraded or None}

        return self._call("search", work, **{"memhealth.search.k": k})

    def remember(self, text: str, kind: str | None = None, name: str | None = None,
                 paths: list[str] | None = None, symbols: list[str] | None = None,
                 on: list[str] | None = None, pinned: bool = False) -> dict:
        from memhealth.cmd_remember import record

        def work(ctx, trace, span):
            item = record(ctx, text, kind=kind, name=name, paths=paths or (),
                          symbols=symbols or (), on=on or (), pinned=pinned, trace=trace)
            span.set("memhealth.memory.item_id", item["id"])
            return item

        return self._call("remember", work)

    def cues(self) -> list[dict]:
        from memory_core.items.listing import list_cues

        def work(ctx, trace, span):
            items = list_cues(ctx.conn, ctx.project.root, ctx.cfg)
            span.set("memhealth.cues.items", len(items))
            return items

        return self._call("cues", work)


def build_server(start_dir: str | None):
    """The SDK server with the three tools registered (imports the `mcp` package)."""
    from mcp.server.mcpserver import MCPServer  # mcp 2.x (1.x called it FastMCP)
    from mcp.server.mcpserver.exceptions import ToolError

    from memhealth import __version__
    from memhealth.cli import caught_errors

    tools = MemoryTools(start_dir)
    anticipated = caught_errors()  # the families the CLI prints as one line

    def answer(fn, *args):
        """fn(*args), with our own errors handed to the model as tool errors (is_error and
        the one-line message, as the CLI prints it) rather than as a crash."""
        try:
            return fn(*args)
        except anticipated as exc:
            raise ToolError(str(exc)) from exc

    server = MCPServer(SERVER_NAME, version=__version__, instructions=(
        "The project's memory: decisions, dead ends, invariants and docs with provenance. "
        "search before re-deriving something the project may have decided; remember what must "
        "not be lost (with paths/symbols so it comes back when that code is touched)."))

    @server.tool(name="search", description=(
        "Search the project's memory (BM25 + vectors). Returns hits with path, lines, title, "
        "source and text. k: how many (default 5, at most 50)."))
    def search(query: str, k: int = 5) -> dict:
        return answer(tools.search, query, k)

    @server.tool(name="remember", description=(
        "Record a memory in the project (a file under .memhealth/memory/) that comes back "
        "when a matching file is touched (paths: globs), an identifier appears (symbols), or "
        "on an event (on: session-start, compact, prompt, stop); pinned: every session start. "
        "kind: gotcha, invariant, decision, dead_end, correction, note, ..."))
    def remember(text: str, kind: str | None = None, name: str | None = None,
                 paths: list[str] | None = None, symbols: list[str] | None = None,
                 on: list[str] | None = None, pinned: bool = False) -> dict:
        return answer(tools.remember, text, kind, name, paths, symbols, on, pinned)

    @server.tool(name="cues", description=(
        "List the memories that can fire (pinned, or with path/symbol/event/semantic cues) "
        "and each cue's state: active, expired, inactive (why) or stale."))
    def cues() -> dict:
        return {"items": answer(tools.cues)}

    return server


# -- the stdio transport: every line answered, a vanished reader an exit ----------------------
# JSON-RPC 2.0 (jsonrpc.org/specification, section 5.1): a line that is not JSON (or not
# UTF-8) is a Parse error, JSON that is not a request, notification or response an Invalid
# Request; the id is null when it cannot be read. The SDK's own stdio transport drops both
# without a word, and a closed stdout ends it in a traceback with exit 1.
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
MAX_LINE = 4 * 1024 * 1024  # bytes of one message; a longer line is a parse error, not memory


class ReaderGone(Exception):
    """The client stopped reading (stdout closed, EPIPE): nothing more can be answered."""


class Wire:
    """The JSON-RPC side of stdout: whole lines under a lock, on a private copy of fd 1 (fd 1
    itself then points at stderr, so a stray print never corrupts the protocol). The SDK's
    transport calls write() and flush(); a broken pipe raises ReaderGone."""

    def __init__(self, raw):
        import threading

        self.raw = raw
        self._lock = threading.Lock()

    def _put(self, data: bytes) -> None:
        with self._lock:
            try:
                self.raw.write(data)
                self.raw.flush()
            except (BrokenPipeError, ConnectionResetError, ValueError) as exc:  # ValueError: closed
                raise ReaderGone(str(exc)) from None
            except OSError as exc:
                import errno

                if exc.errno in (errno.EPIPE, errno.EBADF):
                    raise ReaderGone(str(exc)) from None
                raise

    async def write(self, text: str) -> None:
        import anyio

        await anyio.to_thread.run_sync(self._put, text.encode("utf-8"))

    async def flush(self) -> None:
        """Each write() is flushed whole already."""

    async def error(self, code: int, message: str, detail: str, msg_id=None) -> None:
        import json

        await self.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {
            "code": code, "message": message, "data": detail[:300]}}) + "\n")


def screen(line: bytes):
    """(text of a well-formed JSON-RPC message, None) or (None, (code, message, detail, id))."""
    import json

    import mcp_types
    from pydantic import ValidationError

    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, (PARSE_ERROR, "Parse error", f"the message is not UTF-8 (byte {exc.start})", None)
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return None, (PARSE_ERROR, "Parse error", f"not JSON: {exc}", None)
    try:
        mcp_types.jsonrpc_message_adapter.validate_python(obj, by_name=False)
    except ValidationError:
        msg_id = obj.get("id") if isinstance(obj, dict) else None
        if isinstance(msg_id, bool) or not isinstance(msg_id, (str, int)):
            msg_id = None
        what = ("a batch (an array): MCP takes one message per line" if isinstance(obj, list)
                else "not a JSON-RPC 2.0 request, notification or response")
        return None, (INVALID_REQUEST, "Invalid Request", what, msg_id)
    return text, None


class Lines:
    """stdin for the SDK's transport: yields the well-formed lines, answers every other one on
    the wire itself (so the SDK never sees it), and ends at end of input."""

    def __init__(self, raw, wire: Wire):
        self.raw = raw
        self.wire = wire

    def _read(self) -> bytes:
        line = self.raw.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while True:  # the rest of the oversized line is dropped, never held
                more = self.raw.readline(MAX_LINE)
                if not more or more.endswith(b"\n"):
                    break
            return b"\x00too long"
        return line

    async def __aiter__(self):
        import anyio

        while True:
            # abandoned on cancel: a client gone from stdout may keep stdin open forever
            line = await anyio.to_thread.run_sync(self._read, abandon_on_cancel=True)
            if not line:
                return
            if line == b"\x00too long":
                await self.wire.error(PARSE_ERROR, "Parse error", f"a line over {MAX_LINE} bytes")
                continue
            if not line.strip():
                continue  # a blank line is no message
            text, error = screen(line)
            if error is not None:
                await self.wire.error(*error)
                continue
            yield text


def serve_stdio(start_dir: str | None) -> None:
    """Serve the tools on stdin/stdout until the client closes stdin (or stops reading)."""
    import os
    import sys

    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(start_dir)
    sys.stdout.flush()
    wire = Wire(os.fdopen(os.dup(1), "wb", buffering=0))
    os.dup2(2, 1)  # stray output goes to stderr, never onto the wire
    lines = Lines(sys.stdin.buffer, wire)
    # the MCPServer's low-level server: run_stdio_async() would build the SDK's own transport
    lowlevel = server._lowlevel_server

    async def run() -> None:
        async with stdio_server(stdin=lines, stdout=wire) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    try:
        anyio.run(run)
    except* ReaderGone:
        # every call's work is committed before its answer is written, so nothing recorded is
        # lost; exit at once: the abandoned stdin read (a thread) cannot be joined while the
        # client holds stdin open, and interpreter shutdown would wait for it
        sys.stderr.flush()
        os._exit(0)
    try:
        wire.raw.close()
    except OSError:
        pass
