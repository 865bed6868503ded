#!/usr/bin/env python3
"""Team-store benchmark: indexing into PostgreSQL against the embedded store,
in the same run, on the first 10,000 files of the benchmark corpus
(../shared/bench/make-corpus.sh).

For each of --runs rounds, `agents index` runs into a fresh home with the
embedded store (SQLite, Tantivy, local vectors), then into a fresh schema of
the PostgreSQL server (store, text and pgvector on the server), each timed
as a whole process with its peak RSS. Then --queries warm `agents query`
processes against each (the first docstring line of every k-th Python
module, as bench-query.py) give p50 latencies.

    scripts/bench-team.py [--corpus-dir DIR] [--agents BIN] [--size 10000]
                          [--runs 3] [--queries 20] [--store-url URL] [--json OUT]

Without --store-url a throwaway server is started with
scripts/pg-test-server.sh (PostgreSQL 16 + pgvector from the pgserver wheel;
fsync off, so writes cost less than on a production server) and stopped at
the end. Needs `psql` to create the schemas. Prints Markdown.
"""

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_query", ROOT / "scripts" / "bench-query.py")
bq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bq)


def measured(cmd, env):
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            sys.exit(f"{' '.join(map(str, cmd))} failed:\n{err.read().decode(errors='replace')}")
        return seconds, usage.ru_maxrss / 1024.0


def with_schema(url, schema):
    """The URL with `search_path` set to `schema` (then public, for the extension)."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query)
    query.append(("options", f"-c search_path={schema},public"))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query, quote_via=urllib.parse.quote)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus-dir", type=Path, default=Path("/tmp/bench-corpus"))
    ap.add_argument("--agents", type=Path, default=ROOT / "target" / "release" / "agents")
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--store-url", help="postgres://... (default: a throwaway test server)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if shutil.which("psql") is None:
        sys.exit("psql is needed to create the benchmark's schemas")
    agents = str(args.agents)
    tree = bq.corpus(args.corpus_dir, args.size)
    queries = bq.queries_from(tree, args.queries)

    server_dir = None
    url = args.store_url
    if not url:
        server_dir = tempfile.mkdtemp(prefix="agents-bench-pg-")
        url = subprocess.run(
            [str(ROOT / "scripts" / "pg-test-server.sh"), "start", server_dir],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    homes = []
    try:
        rows = {"embedded": [], "postgres": []}
        for run in range(args.runs):
            home = Path(tempfile.mkdtemp(prefix="agents-bench-"))
            homes.append(home)
            env = dict(os.environ, AGENTS_HOME=str(home))
            env.pop("AGENTS_STORE_URL", None)
            rows["embedded"].append(measured([agents, "--quiet", "--json", "index", str(tree)], env))

            schema = f"bench_{os.getpid()}_{run}"
            subprocess.run(["psql", url, "-q", "-c", f"CREATE SCHEMA {schema}"], check=True, capture_output=True)
            home = Path(tempfile.mkdtemp(prefix="agents-bench-"))
            homes.append(home)
            env = dict(os.environ, AGENTS_HOME=str(home), AGENTS_STORE_URL=with_schema(url, schema))
            rows["postgres"].append(measured([agents, "--quiet", "--json", "index", str(tree)], env))
        latency = {}
        for name, home, extra in [
            ("embedded", homes[-2], {}),
            ("postgres", homes[-1], {"AGENTS_STORE_URL": with_schema(url, f"bench_{os.getpid()}_{args.runs - 1}")}),
        ]:
            env = dict(os.environ, AGENTS_HOME=str(home), **extra)
            if not extra:
                env.pop("AGENTS_STORE_URL", None)
            latency[name] = [measured([agents, "--quiet", "query", q, str(tree)], env)[0] for q in queries]
    finally:
        for home in homes:
            shutil.rmtree(home, ignore_errors=True)
        if server_dir:
            subprocess.run([str(ROOT / "scripts" / "pg-test-server.sh"), "stop", server_dir], capture_output=True)
            shutil.rmtree(server_dir, ignore_errors=True)

    def med(values):
        return statistics.median(v[0] for v in values)

    result = {
        "files": args.size,
        "runs": args.runs,
        "embedded_index_s": med(rows["embedded"]),
        "postgres_index_s": med(rows["postgres"]),
        "embedded_rss_mb": max(v[1] for v in rows["embedded"]),
        "postgres_rss_mb": max(v[1] for v in rows["postgres"]),
        "embedded_query_p50_s": bq.pct(latency["embedded"], 0.5),
        "postgres_query_p50_s": bq.pct(latency["postgres"], 0.5),
        "embedded_query_p95_s": bq.pct(latency["embedded"], 0.95),
        "postgres_query_p95_s": bq.pct(latency["postgres"], 0.95),
    }
    ratio = result["postgres_index_s"] / result["embedded_index_s"]
    print(f"## Indexing {args.size:,} files into the team server against the embedded store "
          f"(median of {args.runs}, same run)\n")
    print("| store | `agents index` | peak RSS | warm `agents query` p50 / p95 |")
    print("|---|---:|---:|---:|")
    for name in ("embedded", "postgres"):
        print(f"| {name} | {result[name + '_index_s']:.2f} s | {result[name + '_rss_mb']:.0f} MB | "
              f"{result[name + '_query_p50_s'] * 1000:.0f} / {result[name + '_query_p95_s'] * 1000:.0f} ms |")
    print(f"\nPostgreSQL / embedded, indexing: {ratio:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
