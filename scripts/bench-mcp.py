#!/usr/bin/env python3
"""MCP benchmark: `request_context` round trips against `agents mcp`, on the
whole benchmark corpus (~31,000 files; ../shared/bench/make-corpus.sh).

One server is started in the tree (the official Python MCP client over
stdio) and answers --queries requests at an 8,000-token budget (the first
docstring line of every k-th Python module: the same deterministic list as
bench-assembly.py), each timed from the client's call to its result. The
reference, in the same run, is the same requests as `agents query`
processes (start to output: what an agent without the server pays).

The tree is indexed once beforehand (not timed); the server's first request
(which loads what the session keeps warm) is not counted either.

    scripts/bench-mcp.py [--corpus-dir DIR] [--agents BIN] [--model DIR]
                         [--queries 30] [--home DIR] [--json OUT]

Needs `python3 -m pip install mcp`. Prints Markdown.
"""

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_query", ROOT / "scripts" / "bench-query.py")
bq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bq)

BUDGET = 8000


async def mcp_round_trips(agents, tree, env, queries):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=agents, args=["mcp"], env=env, cwd=str(tree))
    rows = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            warm = await session.call_tool("request_context", {"query": queries[0], "max_tokens": BUDGET, "depth": 9})
            if warm.is_error:
                sys.exit(f"request_context failed: {warm.content}")
            for q in queries:
                start = time.perf_counter()
                result = await session.call_tool("request_context", {"query": q, "max_tokens": BUDGET, "depth": 9})
                seconds = time.perf_counter() - start
                if result.is_error:
                    sys.exit(f"request_context {q!r} failed: {result.content}")
                s = result.structured_content
                rows.append({"query": q, "seconds": seconds, "rendered_tokens": s["rendered_tokens"],
                             "within_budget": s["is_within_budget"]})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus-dir", type=Path, default=Path("/tmp/bench-corpus"))
    ap.add_argument("--agents", type=Path, default=ROOT / "target" / "release" / "agents")
    ap.add_argument("--model", type=Path, default=ROOT / "target" / "models" / "minilm-code-static")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--home", type=Path, help="a home where the whole tree is already indexed")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    agents = str(args.agents)
    tree = bq.corpus(args.corpus_dir, 0)
    home = args.home or bq.fresh_home()
    env = bq.env_for(home, args.model)
    bq.timed([agents, "--json", "index", str(tree)], env=env)
    queries = bq.queries_from(tree, args.queries)

    rows = asyncio.run(mcp_round_trips(agents, tree, env, queries))
    cli = []
    for q in queries:
        seconds, _ = bq.timed([agents, "--json", "query", "--max-tokens", str(BUDGET), q, str(tree)], env=env)
        cli.append(seconds)

    p = lambda values, q: bq.pct(values, q)
    mcp_s = [r["seconds"] for r in rows]
    result = {
        "queries": len(rows),
        "mcp_p50_s": p(mcp_s, 0.5),
        "mcp_p95_s": p(mcp_s, 0.95),
        "cli_p50_s": p(cli, 0.5),
        "cli_p95_s": p(cli, 0.95),
        "all_within_budget": all(r["within_budget"] and r["rendered_tokens"] <= BUDGET for r in rows),
        "rows": rows,
    }
    print(f"## MCP `request_context` on the whole tree ({len(rows)} queries, budget {BUDGET:,} tokens)\n")
    print("| measure | p50 | p95 |\n|---|---:|---:|")
    print(f"| `request_context` round trip (Python MCP client, stdio) | {result['mcp_p50_s'] * 1000:.0f} ms | {result['mcp_p95_s'] * 1000:.0f} ms |")
    print(f"| `agents query`, process start to output (reference) | {result['cli_p50_s'] * 1000:.0f} ms | {result['cli_p95_s'] * 1000:.0f} ms |")
    print(f"\nratio to `agents query` (p50): {result['mcp_p50_s'] / result['cli_p50_s']:.2f}x; "
          f"every result within its budget: {'yes' if result['all_within_budget'] else 'NO'}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
