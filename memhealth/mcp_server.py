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


def serve_stdio(start_dir: str | None) -> None:
    """Serve the tools on stdin/stdout until the client closes the stream."""
    build_server(start_dir).run(transport="stdio")
