#!/usr/bin/env python3
"""Team-server benchmark: many MCP clients against one `agents serve` while an
indexer refreshes edited files, on the whole benchmark corpus (~31,000 files;
../shared/bench/make-corpus.sh).

The tree is indexed once beforehand (not timed). Then `agents serve` starts on
a free localhost port, and --clients clients (the official Python MCP client
over streamable HTTP, each its own session, with the bearer token) issue
`request_context` at an 8,000-token budget for --seconds seconds, each taking
the next question from one deterministic list (the first docstring line of
every k-th Python module, as bench-query.py). A quarter of the way in, an
indexer (`agents index`, a separate process on the same store) refreshes the
tree after --edits Python files were edited: each gets a function whose
docstring holds a unique marker phrase.

Reported: p50/p95 latency, requests per second, errors (any failed call is
one), and whether updates were lost or torn: once the load ends, every
marker is asked for and must bring back its own file, and a fresh index of
the edited tree in another home is asked the same and must agree.

    scripts/bench-serve.py [--corpus-dir DIR] [--agents BIN] [--clients 16]
                           [--seconds 60] [--edits 100] [--store-url URL]
                           [--home DIR] [--json OUT]

With --store-url (postgres://...), the server, the indexer and the fresh
check all use that store (AGENTS_STORE_URL); otherwise the embedded one in
--home. Needs `python3 -m pip install mcp`. Prints Markdown. The edited files
are restored (and the index refreshed) at the end.
"""

import argparse
import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_query", ROOT / "scripts" / "bench-query.py")
bq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bq)

BUDGET = 8000
MARKER = "zebracorn lattice {i} quintessence"


def marker_files(tree, count):
    """`count` Python files spread over the tree, in a fixed order."""
    modules = sorted(p for p in tree.rglob("*.py") if ".git" not in p.parts and p.stat().st_size > 200)
    step = max(1, len(modules) // count)
    return modules[::step][:count]


def edit(files):
    originals = {p: p.read_bytes() for p in files}
    for i, p in enumerate(files):
        with open(p, "ab") as f:
            f.write(f'\n\ndef agents_bench_probe_{i}():\n    """{MARKER.format(i=i)}."""\n    return {i}\n'.encode())
    return originals


def start_server(agents, tree, env):
    proc = subprocess.Popen(
        # The indexer below refreshes the edits (the server's own watcher would race it for the run lock).
        [agents, "serve", "--bind", "127.0.0.1:0", "--json", "--no-watch"],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if not line:
        sys.exit(f"agents serve did not start:\n{proc.stderr.read()}")
    info = json.loads(line)
    token = Path(info["token_file"]).read_text().strip()
    return proc, info["url"], token


async def client(url, token, queries, offset, deadline, rows, errors):
    from mcp import ClientSession
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, streamable_http_client(url, http_client=http) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            i = offset
            while time.perf_counter() < deadline:
                q = queries[i % len(queries)]
                i += 1
                start = time.perf_counter()
                try:
                    result = await session.call_tool("request_context", {"query": q, "max_tokens": BUDGET})
                    ok = not result.is_error
                except Exception as exc:  # noqa: BLE001 - every failure is counted, the load goes on
                    ok, result = False, exc
                end = time.perf_counter()
                if ok:
                    rows.append((start, end))
                else:
                    errors.append(f"{q!r}: {result}")


async def ask_markers(url, token, count):
    """The file each marker's question brings back first."""
    from mcp import ClientSession
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    found = {}
    async with http, streamable_http_client(url, http_client=http) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for i in range(count):
                result = await session.call_tool(
                    "request_context", {"query": MARKER.format(i=i), "max_tokens": 2000}
                )
                # The fragments' text is in the tool's text content (the structured
                # result lists them without it).
                text = "".join(getattr(part, "text", "") for part in result.content)
                found[i] = f"agents_bench_probe_{i}" in text
    return found


async def load(url, token, queries, clients, seconds, indexer):
    rows, errors = [], []
    deadline = time.perf_counter() + seconds
    tasks = [
        asyncio.create_task(client(url, token, queries, k * 7, deadline, rows, errors)) for k in range(clients)
    ]
    await asyncio.sleep(seconds / 4)
    refresh = await asyncio.to_thread(indexer)
    await asyncio.gather(*tasks, return_exceptions=False)
    return rows, errors, refresh


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus-dir", type=Path, default=Path("/tmp/bench-corpus"))
    ap.add_argument("--agents", type=Path, default=ROOT / "target" / "release" / "agents")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--edits", type=int, default=100)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--store-url", help="postgres://... (default: the embedded store)")
    ap.add_argument("--home", type=Path, help="a home where the whole tree is already indexed")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    # Absolute: the server runs in the tree.
    agents = str(args.agents.resolve())
    tree = bq.corpus(args.corpus_dir, 0)
    home = args.home or bq.fresh_home()
    env = dict(os.environ, AGENTS_HOME=str(home))
    env.pop("AGENTS_LOG", None)
    if args.store_url:
        env["AGENTS_STORE_URL"] = args.store_url
    bq.timed([agents, "--json", "index", str(tree)], env=env)
    queries = bq.queries_from(tree, args.queries)
    files = marker_files(tree, args.edits)

    server, url, token = start_server(agents, tree, env)
    originals = {}
    fresh_home = Path(tempfile.mkdtemp(prefix="agents-bench-fresh-"))
    try:

        def indexer():
            originals.update(edit(files))
            start = time.perf_counter()
            out = subprocess.run(
                [agents, "--json", "index", "--wait", str(tree)], env=env, capture_output=True, text=True
            )
            if out.returncode != 0:
                sys.exit(f"the indexer failed:\n{out.stderr}")
            report = json.loads(out.stdout)["report"]
            return {"seconds": time.perf_counter() - start, "changed": report["changed"]}

        try:
            rows, errors, refresh = asyncio.run(load(url, token, queries, args.clients, args.seconds, indexer))
            served = asyncio.run(ask_markers(url, token, len(files)))
        except BaseException:
            for p, data in originals.items():
                p.write_bytes(data)
            raise
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()

    # The same questions against a fresh index of the edited tree.
    fresh_env = dict(env, AGENTS_HOME=str(fresh_home))
    fresh_env.pop("AGENTS_STORE_URL", None)
    bq.timed([agents, "--json", "index", str(tree)], env=fresh_env)
    fresh_server, fresh_url, fresh_token = start_server(agents, tree, fresh_env)
    try:
        fresh = asyncio.run(ask_markers(fresh_url, fresh_token, len(files)))
    finally:
        fresh_server.terminate()
        fresh_server.wait(timeout=30)
        for p, data in originals.items():
            p.write_bytes(data)
        bq.timed([agents, "--json", "index", str(tree)], env=env)
        shutil.rmtree(fresh_home, ignore_errors=True)

    latencies = [end - start for start, end in rows]
    span = max(end for _, end in rows) - min(start for start, _ in rows) if rows else 0
    # Lost: a marker a fresh index of the same tree finds and the server does not.
    lost = sorted(i for i, ok in served.items() if not ok and fresh[i])
    disagree = sorted(i for i in served if served[i] != fresh[i])
    result = {
        "clients": args.clients,
        "seconds": args.seconds,
        "requests": len(rows),
        "errors": len(errors),
        "error_samples": errors[:5],
        "p50_ms": bq.pct(latencies, 0.5) * 1000 if latencies else None,
        "p95_ms": bq.pct(latencies, 0.95) * 1000 if latencies else None,
        "rps": len(rows) / span if span else 0,
        "refresh": refresh,
        "markers_found": sum(served.values()),
        "markers_found_fresh": sum(fresh.values()),
        "lost": lost,
        "disagree_with_fresh": disagree,
        "store": "postgres" if args.store_url else "embedded",
    }
    print(f"## `agents serve`: {args.clients} clients for {args.seconds:.0f} s, "
          f"{len(files)} files edited and refreshed during the load ({result['store']} store)\n")
    print("| p50 | p95 | requests/s | requests | errors | refresh of the edits | markers found (server / fresh index) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {result['p50_ms']:.0f} ms | {result['p95_ms']:.0f} ms | {result['rps']:.1f} | {len(rows)} | "
          f"{len(errors)} | {refresh['seconds']:.1f} s ({refresh['changed']} changed) | "
          f"{result['markers_found']} / {result['markers_found_fresh']} of {len(files)} |")
    if lost or disagree:
        print(f"\nlost: {lost}; disagreeing with a fresh index: {disagree}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
