#!/usr/bin/env python3
"""Retrieval benchmark: indexing with and without embeddings against Universal Ctags,
embedding throughput, and per-strategy query latency.

On the benchmark corpora (../shared/bench/make-corpus.sh; reused when present):

  1. on the first 10,000 files, each into a fresh $AGENTS_HOME, median of --runs:
       ctags -R                              the speed reference
       agents index --no-search              the code graph only
       agents index, context.backends.vector = "none"   graph + full-text index
       agents index                          graph + full-text + vectors
     with the ratio of each to ctags, and the embedding throughput (vectors
     embedded per second of the difference the vectors make);
  2. on the whole tree (~31,000 files), one full `agents index`, then --queries
     queries (the first docstring line of every k-th Python module of the tree,
     a deterministic list) per strategy, reporting p50 / p95 latency of the
     whole `agents query` process (index refresh and sync included: the
     latency an agent sees) and how often the strategy fell back.

    scripts/bench-query.py [--corpus-dir DIR] [--model DIR] [--runs 3] [--queries 50]
                           [--strategies a,b] [--skip-index | --skip-latency] [--json OUT]

The embedding model must exist (scripts/get-model.sh). Prints Markdown tables.
"""

import argparse
import ast
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAKE_CORPUS = ROOT.parent / "shared" / "bench" / "make-corpus.sh"
STRATEGIES = "simple-keyword,semantic-embedding,breadth-depth-navigator,arce,temporal-archaeology"


def timed(cmd, env=None, cwd=None):
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stderr.decode(errors='replace')}")
    return elapsed, proc.stdout


def corpus(base, size):
    name = "all" if size == 0 else f"first-{size}"
    path = base / name
    if not path.exists():
        args = [str(MAKE_CORPUS), str(path)] + ([] if size == 0 else [str(size)])
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return path


def fresh_home(config=None):
    home = Path(tempfile.mkdtemp(prefix="agents-bench-"))
    if config:
        (home / "config.toml").write_text(config)
    return home


def env_for(home, model):
    env = dict(os.environ, AGENTS_HOME=str(home), AGENTS_EMBEDDING_MODEL=str(model))
    env.pop("AGENTS_LOG", None)
    return env


def queries_from(tree, count):
    modules = sorted(p for p in tree.rglob("*.py") if ".git" not in p.parts)
    out = []
    step = max(1, len(modules) // (count * 20))
    for path in modules[::step]:
        try:
            doc = ast.get_docstring(ast.parse(path.read_text(errors="replace")))
        except (SyntaxError, ValueError, RecursionError):
            continue
        line = (doc or "").strip().splitlines()[0].strip() if doc and doc.strip() else ""
        if 4 <= len(line.split()) <= 16 and line not in out:
            out.append(line)
        if len(out) == count:
            break
    return out


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus-dir", type=Path, default=Path("/tmp/bench-corpus"))
    ap.add_argument("--agents", type=Path, default=ROOT / "target" / "release" / "agents")
    ap.add_argument("--model", type=Path, default=ROOT / "target" / "models" / "minilm-code-static")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--strategies", default=STRATEGIES)
    ap.add_argument("--skip-index", action="store_true", help="only the query latencies")
    ap.add_argument("--skip-latency", action="store_true", help="only the 10,000-file indexing runs")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not (args.model / "model.safetensors").exists():
        sys.exit(f"no embedding model in {args.model}: run scripts/get-model.sh {args.model}")
    agents = str(args.agents)
    results = {}

    if not args.skip_index:
        tree = corpus(args.corpus_dir, 10000)
        rows = {"ctags -R": [], "agents index --no-search": [], "agents index (text, no vectors)": [],
                "agents index (text + vectors)": []}
        vectors = 0
        for _ in range(args.runs):
            tags = Path(tempfile.mkdtemp()) / "tags"
            rows["ctags -R"].append(timed(["ctags", "-R", "-f", str(tags), "."], cwd=tree)[0])
            shutil.rmtree(tags.parent)
            for label, extra, config in [
                ("agents index --no-search", ["--no-search"], None),
                ("agents index (text, no vectors)", [], '[context.backends]\nvector = "none"\n'),
                ("agents index (text + vectors)", [], None),
            ]:
                home = fresh_home(config)
                seconds, out = timed([agents, "--json", "index", *extra, str(tree)], env=env_for(home, args.model))
                rows[label].append(seconds)
                if label.endswith("vectors)") and "no vectors" not in label:
                    vectors = json.loads(out)["search"]["vectors_indexed"]
                shutil.rmtree(home)
        ctags = statistics.median(rows["ctags -R"])
        print(f"## Indexing the first 10,000 files (median of {args.runs})\n")
        print("| run | seconds | ratio to ctags |\n|---|---:|---:|")
        for label, values in rows.items():
            print(f"| {label} | {statistics.median(values):.2f} | {statistics.median(values) / ctags:.2f}x |")
        extra = statistics.median(rows["agents index (text + vectors)"]) - statistics.median(
            rows["agents index (text, no vectors)"])
        rate = vectors / extra if extra > 0 else float("inf")
        print(f"\n{vectors:,} node summaries embedded; embedding adds {extra:.2f} s: {rate:,.0f} vectors/s\n")
        results["index"] = {k: statistics.median(v) for k, v in rows.items()}
        results["vectors"] = vectors
        results["vectors_per_s"] = rate

    if args.skip_latency:
        if args.json:
            args.json.write_text(json.dumps(results, indent=2, sort_keys=True))
        return
    tree = corpus(args.corpus_dir, 0)
    home = fresh_home()
    env = env_for(home, args.model)
    seconds, out = timed([agents, "--json", "index", str(tree)], env=env)
    summary = json.loads(out)
    results["full_index_s"] = seconds
    results["full_vectors"] = summary["search"]["vectors_indexed"]
    queries = queries_from(tree, args.queries)
    print(f"## Query latency on the whole tree ({summary['index']['file_count']:,} files, "
          f"{results['full_vectors']:,} vectors; first index {seconds:.1f} s), {len(queries)} queries\n")
    print("| strategy | p50 s | p95 s | fell back |\n|---|---:|---:|---:|")
    results["latency"] = {}
    for strategy in args.strategies.split(","):
        times, fell = [], 0
        for q in queries:
            s, out = timed([agents, "--json", "query", "--strategy", strategy, "--temporal", "recent", q, str(tree)],
                           env=env)
            times.append(s)
            fell += bool(json.loads(out)["fallbacks"])
        results["latency"][strategy] = {"p50": pct(times, 0.5), "p95": pct(times, 0.95), "fell_back": fell}
        print(f"| {strategy} | {pct(times, 0.5):.2f} | {pct(times, 0.95):.2f} | {fell}/{len(queries)} |")
    shutil.rmtree(home)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
