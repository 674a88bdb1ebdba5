"""`memhealth mcp`: serve the project's memory to the agent as MCP tools over stdio."""

from __future__ import annotations

from memhealth.cliutil import add_parser, add_project_option


def register(sub):
    p = add_parser(
        sub, "mcp", help="serve search, remember and cues as MCP tools over stdio",
        description="Run an MCP server on stdin/stdout for Claude Code (or any MCP client) with "
                    "three tools over this project's memory: search, remember and cues. Each call "
                    "is recorded as a span and counted in memhealth_mcp_calls_total. Needs the "
                    "`mcp` extra: pip install 'memhealth[mcp]'. Register it with "
                    "`claude mcp add memhealth -- memhealth mcp --project DIR`.")
    add_project_option(p)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from memhealth.cliutil import project_root
    from memhealth.errors import MemhealthError
    from memhealth.project import Project

    root = Project.find(project_root(args)).root  # no project: exit 2 before any protocol
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise MemhealthError("memhealth mcp needs the MCP SDK: pip install 'memhealth[mcp]'") from None
    from memhealth.mcp_server import serve_stdio

    serve_stdio(root)
    return 0
