"""`memhealth mcp` as a real subprocess, driven by the MCP SDK's own client over stdio:
the three tools list with their schemas, remember writes a memory that search then finds and
cues lists, a bad call is an MCP tool error (not a crash), and every call leaves its span
and its counter in the store."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from tests.conftest import clean_env, memhealth_cmd, rows

pytest.importorskip("mcp")


def session_calls(project, calls):
    """Run `memhealth mcp --project P` and make `calls` [(tool, arguments)] in one client
    session; return (tool names listed, [CallToolResult]). Bounded: 60 s for everything."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    cmd = memhealth_cmd()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--project", str(project)],
                                   env=clean_env(), cwd=str(project))

    async def run():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            results = [await session.call_tool(name, args) for name, args in calls]
            return listed, results

    listed, results = asyncio.run(asyncio.wait_for(run(), timeout=60))
    return {t.name: t for t in listed.tools}, results


def payload_of(result) -> dict:
    """A tool result's JSON: structured content when the SDK gives it, else the text block."""
    if result.structured_content:
        return result.structured_content
    return json.loads(result.content[0].text)


def test_an_agent_remembers_searches_and_lists_cues_over_stdio(project):
    tools, (remembered, found, cues, empty) = session_calls(project, [
        ("remember", {"text": "The ledger writer must flush the WAL before rotating segments.",
                      "kind": "invariant", "paths": ["src/ledger/**"], "symbols": ["rotate_segment"]}),
        ("search", {"query": "ledger WAL rotating segments", "k": 3}),
        ("cues", {}),
        ("search", {"query": "   "}),
    ])
    assert set(tools) == {"search", "remember", "cues"}
    assert tools["search"].input_schema["properties"]["query"]["type"] == "string"
    assert "query" in tools["search"].input_schema["required"]

    assert not remembered.is_error
    item = payload_of(remembered)
    assert item["kind"] == "invariant" and item["path"].startswith(".memhealth/memory/")
    assert {"trigger": "symbol", "pattern": "rotate_segment"} in item["cues"]
    assert os.path.isfile(project / item["path"])

    assert not found.is_error
    hits = payload_of(found)["hits"]
    assert hits and hits[0]["path"] == item["path"]
    assert "flush the WAL" in hits[0]["text"]

    listed = payload_of(cues)["items"]
    assert any(i["path"] == item["path"] for i in listed), listed

    assert empty.is_error and "query is empty" in empty.content[0].text

    # every call is a span (MCP semconv: `tools/call <tool>`, kind server) and a count
    spans = rows(project, "SELECT name, kind, status_code, attributes FROM spans "
                          "WHERE name LIKE 'tools/call %' ORDER BY id")
    assert [(n, k, s) for n, k, s, _ in spans] == [
        ("tools/call remember", "server", "unset"), ("tools/call search", "server", "unset"),
        ("tools/call cues", "server", "unset"), ("tools/call search", "server", "error")]
    attrs = json.loads(spans[1][3])
    assert attrs["mcp.method.name"] == "tools/call" and attrs["gen_ai.tool.name"] == "search"
    children = rows(project, "SELECT s.name FROM spans s JOIN spans p ON s.parent_span_id = p.span_id "
                             "WHERE p.name = 'tools/call search'")
    assert ("memory.search",) in children
    counts = {json.loads(labels)["tool"] + ":" + json.loads(labels)["outcome"]: value for labels, value in rows(
        project, "SELECT labels, value FROM rollups WHERE metric = 'memhealth_mcp_calls_total'")}
    assert counts == {"remember:ok": 1, "search:ok": 1, "cues:ok": 1, "search:error": 1}


def test_mcp_outside_a_project_is_a_usage_error_before_any_protocol(tmp_path):
    import subprocess

    proc = subprocess.run(memhealth_cmd() + ["mcp", "--project", str(tmp_path)], input=b"",
                          capture_output=True, env=clean_env(), timeout=30)
    assert proc.returncode == 2
    assert proc.stdout == b""  # nothing on the protocol stream
    assert b".memhealth" in proc.stderr
