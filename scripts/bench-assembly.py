#!/usr/bin/env python3
"""Assembly benchmark: `agents query` end to end, the pipeline in process, and
budget use, on the benchmark corpora (../shared/bench/make-corpus.sh).

  1. cold: the first query on an unindexed 10,000-file tree, into a fresh
     $AGENTS_HOME (indexing, search sync, embedding and assembly included),
     against `ctags -R` on the same tree in the same run;
  2. warm: on the whole tree (~31,000 files, indexed once beforehand, not
     timed), --queries queries at an 8,000-token budget (the first docstring
     line of every k-th Python module: a deterministic list), each timed as a
     whole process (start to output: the latency an agent sees), against
     `grep -rlF` for the query's longest word over the same tree; from each
     query's --json output, the in-process assembly time (request to
     AssembledContext: the ten components and rendering the candidates
     between them), the components' share, and the fusion time (everything
     after the strategies ran);
  3. budget use: the share of the budget the printed context takes, over the
     queries whose candidates (scored, at their resolved depths) exceeded it.

    scripts/bench-assembly.py [--corpus-dir DIR] [--agents BIN] [--model DIR]
                              [--queries 30] [--home DIR] [--json OUT]

--home reuses a home where the whole tree is already indexed. Prints Markdown.
"""

import argparse
import importlib.util
import json
import shutil
import statistics
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


def run(cmd, env=None):
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True)
    return time.perf_counter() - start, proc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus-dir", type=Path, default=Path("/tmp/bench-corpus"))
    ap.add_argument("--agents", type=Path, default=ROOT / "target" / "release" / "agents")
    ap.add_argument("--model", type=Path, default=ROOT / "target" / "models" / "minilm-code-static")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--home", type=Path, help="a home where the whole tree is already indexed")
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    agents = str(args.agents)
    results = {}

    if not args.skip_cold:
        tree = bq.corpus(args.corpus_dir, 10000)
        queries = bq.queries_from(tree, 1)
        home = bq.fresh_home()
        env = bq.env_for(home, args.model)
        ctags_s, _ = bq.timed(["ctags", "-R", "-f", str(Path(tempfile.mkdtemp()) / "tags"), "."], cwd=tree)
        cold_s, proc = run([agents, "--json", "query", "--max-tokens", str(BUDGET), queries[0], str(tree)], env=env)
        if proc.returncode != 0:
            sys.exit(f"cold query failed:\n{proc.stderr.decode(errors='replace')}")
        shutil.rmtree(home)
        results["cold"] = {"files": 10000, "agents_s": cold_s, "ctags_s": ctags_s, "ratio": cold_s / ctags_s}
        print("## Cold first query (10,000 files, unindexed)\n")
        print("| command | seconds | vs ctags -R |\n|---|---:|---:|")
        print(f"| ctags -R | {ctags_s:.2f} | 1.00x |")
        print(f"| agents query (index + search sync + assembly) | {cold_s:.2f} | {cold_s / ctags_s:.2f}x |\n")

    tree = bq.corpus(args.corpus_dir, 0)
    home = args.home or bq.fresh_home()
    env = bq.env_for(home, args.model)
    bq.timed([agents, "--json", "index", str(tree)], env=env)
    queries = bq.queries_from(tree, args.queries)
    # One query first, so the search indexes are synced and the page cache warm.
    run([agents, "--json", "query", queries[0], str(tree)], env=env)
    rows = []
    for q in queries:
        seconds, proc = run([agents, "--json", "query", "--max-tokens", str(BUDGET), q, str(tree)], env=env)
        if proc.returncode != 0:
            sys.exit(f"query {q!r} failed:\n{proc.stderr.decode(errors='replace')}")
        out = json.loads(proc.stdout)
        trace = out["trace"]
        components_ms = sum(s["micros"] for s in trace) / 1000
        # The whole assembly: the ten components and rendering the candidates
        # the strategies proposed into fragments, between them.
        pipeline_ms = out["assembly_micros"] / 1000
        executor_ms = sum(s["micros"] for s in trace if s["component"] == "strategy-executor") / 1000
        word = max(q.split(), key=len)
        grep_s, _ = run(["grep", "-rlF", "--", word, str(tree)])
        rows.append({
            "query": q,
            "seconds": seconds,
            "grep_s": grep_s,
            "pipeline_ms": pipeline_ms,
            "components_ms": components_ms,
            "fusion_ms": pipeline_ms - executor_ms,
            "rendered_tokens": out["rendered_tokens"],
            "available": out["budget"]["available_tokens"],
            "omitted": out["omitted"],
            # Tokens of every scored candidate at its resolved depth: more than the
            # budget means the packer had to choose.
            "candidate_tokens": next(s["tokens"] for s in trace if s["component"] == "fragment-scorer"),
            "strategies": out["strategies_used"],
        })
    if not args.home:
        shutil.rmtree(home)
    p = lambda key, q: bq.pct([r[key] for r in rows], q)
    tight = [r for r in rows if r["candidate_tokens"] > r["available"]]
    use = [r["rendered_tokens"] / r["available"] for r in tight]
    results["warm"] = {
        "queries": len(rows),
        "p50_s": p("seconds", 0.5),
        "p95_s": p("seconds", 0.95),
        "grep_p50_s": p("grep_s", 0.5),
        "pipeline_p50_ms": p("pipeline_ms", 0.5),
        "pipeline_p95_ms": p("pipeline_ms", 0.95),
        "components_p50_ms": p("components_ms", 0.5),
        "fusion_p50_ms": p("fusion_ms", 0.5),
        "budget_use_min": min(use) if use else None,
        "budget_use_median": statistics.median(use) if use else None,
        "over_budget_queries": len(tight),
        "rows": rows,
    }
    w = results["warm"]
    print(f"## Warm queries on the whole tree ({len(rows)} queries, budget {BUDGET:,} tokens)\n")
    print("| measure | p50 | p95 |\n|---|---:|---:|")
    print(f"| `agents query`, process start to output | {w['p50_s'] * 1000:.0f} ms | {w['p95_s'] * 1000:.0f} ms |")
    print(f"| `grep -rlF WORD` over the tree (reference) | {w['grep_p50_s'] * 1000:.0f} ms | |")
    print(f"| in-process assembly, request to AssembledContext | {w['pipeline_p50_ms']:.1f} ms | {w['pipeline_p95_ms']:.1f} ms |")
    print(f"| of which the ten components | {w['components_p50_ms']:.1f} ms | |")
    print(f"| of which fusion (everything after the strategies ran) | {w['fusion_p50_ms']:.1f} ms | |")
    print(f"\nratio to grep (p50): {w['p50_s'] / w['grep_p50_s']:.2f}x")
    if use:
        print(f"budget use when candidates exceeded the budget ({len(tight)} of {len(rows)} queries): "
              f"min {min(use):.1%}, median {statistics.median(use):.1%}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
