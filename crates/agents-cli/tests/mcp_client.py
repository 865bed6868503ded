"""End-to-end check of `agents mcp` with the official Python MCP client.

    python3 mcp_client.py AGENTS_BINARY REPO_DIR

Runs the server over stdio in REPO_DIR (with the caller's environment, so
AGENTS_HOME points at a scratch home) and checks: the handshake, the tool
list and its schemas, a request_context call whose result respects its
budget, the other tools, and that a malformed call is answered with a
protocol error and bad arguments with a tool error, while the server keeps
serving. Exits non-zero on the first failure.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED_TOOLS = {"request_context", "query_history", "get_context_budget", "index_status", "refresh_index"}
CRP_FIELDS = {
    "query", "entities", "uko_types", "focus", "breadth", "depth", "depth_gradient", "temporal",
    "max_tokens", "preferred_strategies", "required_backends", "priority", "purpose",
}


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


async def expect_protocol_error(session, name, arguments, what):
    try:
        result = await session.call_tool(name, arguments)
    except Exception as error:  # the client raises the JSON-RPC error it received
        print(f"ok: {what}: protocol error: {error}")
        return
    check(False, f"{what}: expected a protocol error, got {result}")


async def expect_tool_error(session, arguments, says, what):
    result = await session.call_tool("request_context", arguments)
    text = "".join(c.text for c in result.content if c.type == "text")
    check(result.is_error and says in text, f"{what}: expected a tool error mentioning {says!r}, got {result}")
    print(f"ok: {what}: tool error: {text}")


async def main(agents, repo):
    params = StdioServerParameters(command=agents, args=["mcp"], env=dict(os.environ), cwd=repo)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "agents", f"server name: {init.server_info}")
            print(f"ok: handshake with {init.server_info.name} {init.server_info.version}, protocol {init.protocol_version}")

            tools = {t.name: t for t in (await session.list_tools()).tools}
            check(EXPECTED_TOOLS <= set(tools), f"tools: {sorted(tools)}")
            schema = tools["request_context"].input_schema
            missing = CRP_FIELDS - set(schema.get("properties", {}))
            check(not missing, f"request_context schema lacks {missing}: {json.dumps(schema)}")
            print(f"ok: {len(tools)} tools; request_context takes every CRP field")

            budget = 1500
            result = await session.call_tool(
                "request_context", {"query": "pause between retry attempts", "max_tokens": budget, "depth": 9}
            )
            check(not result.is_error, f"request_context failed: {result}")
            text = "".join(c.text for c in result.content if c.type == "text")
            summary = result.structured_content
            check(summary is not None, "request_context has no structured content")
            check(summary["available_tokens"] == budget, f"budget: {summary}")
            check(0 < summary["rendered_tokens"] <= budget, f"over budget: {summary}")
            check(summary["is_within_budget"], f"not within budget: {summary}")
            check("net/retry.py" in summary["ranked_files"], f"files: {summary['ranked_files']}")
            check("## net/retry.py" in text, f"no fragment of net/retry.py in:\n{text}")
            # A rough check of the count from the client side: o200k tokens
            # average well over two characters of code.
            check(len(text) < budget * 8, f"{len(text)} characters for {budget} tokens")
            print(f"ok: request_context: {summary['rendered_tokens']} of {budget} tokens, files {summary['ranked_files']}")

            as_json = await session.call_tool("request_context", {"query": "retry backoff", "format": "json", "max_tokens": 800})
            payload = json.loads(as_json.content[0].text)
            check(payload["budget"]["available_tokens"] == 800 and payload["rendered_tokens"] <= 800, f"json: {payload.keys()}")
            print("ok: request_context format json is the AssembledContext")

            status = await session.call_tool("index_status", {})
            check(not status.is_error and status.structured_content["index"]["file_count"] >= 2, f"status: {status}")
            refreshed = await session.call_tool("refresh_index", {})
            check(not refreshed.is_error and refreshed.structured_content["report"]["unchanged"] >= 2, f"refresh: {refreshed}")
            budget_info = await session.call_tool("get_context_budget", {"max_tokens": 4000})
            check(budget_info.structured_content["available_tokens"] == 4000, f"budget: {budget_info}")
            history = await session.call_tool("query_history", {"file": "net/retry.py"})
            commits = history.structured_content["commits"]
            check(commits and all("net/retry.py" in c["paths"] for c in commits), f"history: {history}")
            print(f"ok: index_status, refresh_index, get_context_budget, query_history ({len(commits)} commits)")

            await expect_protocol_error(session, "no_such_tool", {}, "an unknown tool")
            await expect_tool_error(session, {"query": "x", "max_tokens": "many"}, "expected u64", "a string budget")
            await expect_tool_error(session, {"query": "retry", "depth": 12}, "depth", "depth 12")
            await expect_tool_error(session, {"query": "   "}, "query", "a blank query")
            again = await session.call_tool("request_context", {"query": "retry", "max_tokens": 600})
            check(not again.is_error and again.structured_content["rendered_tokens"] <= 600, "the server stopped serving")
            print("ok: malformed calls are protocol errors, bad arguments tool errors; the server still serves")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
