#!/usr/bin/env python3
"""Indexing benchmark: `agents index` against Universal Ctags (`ctags -R`) in one run.

Builds the benchmark corpora with ../shared/bench/make-corpus.sh (unless they
exist), then, for each corpus, measures side by side:

  * ctags -R over the tree (the speed reference), median of --runs runs
  * agents index, full first index into a fresh $AGENTS_HOME, median of --runs runs
  * agents index, no-change refresh
  * agents index, refresh after modifying 10 files
  * the first `agents query` into a fresh $AGENTS_HOME (it indexes the tree:
    code graph, full text and vectors, then answers), median of --runs runs
  * the store on disk after a first index ($AGENTS_HOME: SQLite, text index,
    vectors) against the corpus's bytes, and the binary's size

reporting wall time, files/s, MB/s and peak RSS (from wait4's rusage), and the
ratio agents/ctags. Prints Markdown tables (pasted into docs/benchmarks.md) and
writes the raw numbers as JSON.

    scripts/bench-index.py [--corpus-dir DIR] [--sizes 10000,0] [--runs 3] [--json OUT]

Size 0 means the full tree (~31,000 files).

With --refresh-home HOME (an $AGENTS_HOME that already indexed the corpus
CORPUS), only the refreshes are measured, for --binary and for each
--baseline binary in turn, each on its own copy of HOME: after one warm-up
round (10 other files edited, indexed, restored, indexed: a binary writing a
newer format converts the index then, and the index holds a past edit as it
would in use), the no-change `agents index` and the `agents query` after it,
then 10 files edited and `agents index` and the `agents query` after it, then
the edits undone and an `agents query` that syncs them itself:

    scripts/bench-index.py --refresh-home HOME --refresh-corpus CORPUS \
        --binary target/release/agents --baseline OLD/agents --runs 3
"""

import argparse
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


def run_measured(cmd, cwd=None, env=None):
    """Runs cmd and returns (seconds, peak RSS MB, stdout, CPU seconds: user + system) using wait4 for the child's own RSS."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{err.read().decode(errors='replace')}")
        return elapsed, usage.ru_maxrss / 1024.0, out.read(), usage.ru_utime + usage.ru_stime


def tree_stats(path):
    files = 0
    size = 0
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            p = os.path.join(dirpath, name)
            if os.path.isfile(p) and not os.path.islink(p):
                files += 1
                size += os.path.getsize(p)
    return files, size


def tree_bytes(path):
    """Bytes of every regular file under path (the store on disk)."""
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            p = os.path.join(dirpath, name)
            if os.path.isfile(p) and not os.path.islink(p):
                total += os.path.getsize(p)
    return total


QUERY = "parse the configuration file and merge it with the defaults"


def median_run(n, fn):
    results = [fn() for _ in range(n)]
    times = [r[0] for r in results]
    rss = max(r[1] for r in results)
    return statistics.median(times), rss, results[-1][2], statistics.median(r[3] for r in results)


def bench_corpus(binary, corpus, runs):
    files, size = tree_stats(corpus)
    tags = Path(tempfile.mkdtemp()) / "tags"
    ctags = median_run(runs, lambda: run_measured(["ctags", "-R", "-f", str(tags), "."], cwd=corpus))
    shutil.rmtree(tags.parent, ignore_errors=True)

    def fresh_index():
        home = tempfile.mkdtemp(prefix="agents-bench-")
        env = dict(os.environ, AGENTS_HOME=home)
        try:
            return run_measured([binary, "--quiet", "--json", "index", str(corpus)], env=env)
        finally:
            shutil.rmtree(home, ignore_errors=True)

    full = median_run(runs, fresh_index)
    summary = json.loads(full[2])

    def first_query():
        home = tempfile.mkdtemp(prefix="agents-bench-")
        env = dict(os.environ, AGENTS_HOME=home)
        try:
            return run_measured([binary, "--quiet", "query", QUERY, str(corpus), "--format", "json"], env=env)
        finally:
            shutil.rmtree(home, ignore_errors=True)

    query = median_run(runs, first_query)

    home = tempfile.mkdtemp(prefix="agents-bench-")
    env = dict(os.environ, AGENTS_HOME=home)
    try:
        run_measured([binary, "--quiet", "--json", "index", str(corpus)], env=env)
        store = {
            "bytes": tree_bytes(home),
            # agents.db with its -wal and -shm files.
            "database": sum(os.path.getsize(os.path.join(home, n)) for n in os.listdir(home) if n.startswith("agents.db")),
            "search": tree_bytes(os.path.join(home, "search")),
        }
        stats = json.loads(run_measured([binary, "--quiet", "--json", "uko", "stats", "--path", str(corpus)], env=env)[2])
        noop = median_run(runs, lambda: run_measured([binary, "--quiet", "--json", "index", str(corpus)], env=env))
        noop_report = json.loads(noop[2])["report"]
        assert noop_report["files_read"] == 0, noop_report
        # Modify 10 indexed files (append a comment line), then refresh.
        indexed = sorted(p for p in (corpus.rglob("*.py")) if ".git" not in p.parts)[:10]
        originals = {p: p.read_bytes() for p in indexed}
        try:
            for p in indexed:
                with open(p, "ab") as f:
                    f.write(b"\n# modified by bench-index\n")
            changed = run_measured([binary, "--quiet", "--json", "index", str(corpus)], env=env)
            changed_report = json.loads(changed[2])["report"]
        finally:
            for p, data in originals.items():
                p.write_bytes(data)
    finally:
        shutil.rmtree(home, ignore_errors=True)

    return {
        "corpus": str(corpus),
        "files": files,
        "bytes": size,
        "ctags": {"seconds": ctags[0], "rss_mb": ctags[1]},
        "index": {
            "seconds": full[0],
            "rss_mb": full[1],
            "indexed_files": summary["index"]["file_count"],
            "tokens": summary["index"]["token_estimate"],
            "skipped": summary["report"]["skipped"],
            "graph": summary["report"]["graph"],
        },
        "graph_stats": stats,
        "first_query": {"seconds": query[0], "rss_mb": query[1]},
        "store": store,
        "refresh_noop": {"seconds": noop[0], "rss_mb": noop[1], "files_read": noop_report["files_read"]},
        "refresh_10": {
            "seconds": changed[0],
            "rss_mb": changed[1],
            "changed": changed_report["changed"],
            "files_read": changed_report["files_read"],
        },
    }


def graph_markdown(results):
    lines = [
        "| corpus | nodes | edges (references) | resolved | nodes/s | edges/s | syntax warnings |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        g = r["index"]["graph"]
        t = r["index"]["seconds"]
        resolved = 100.0 * g["references_resolved"] / max(g["references"], 1)
        lines.append(
            f"| {r['files']:,} files | {g['nodes']:,} | {g['references']:,} | {resolved:.0f}% | "
            f"{g['nodes'] / t:,.0f} | {g['references'] / t:,.0f} | {g['parse_warnings']:,} |"
        )
    lines += ["", "| corpus | language | import edges | resolved to a file | share |", "|---|---|---:|---:|---:|"]
    for r in results:
        for lang, kind, count, resolved in r["graph_stats"]["refs"]:
            if kind == "import" and count:
                lines.append(f"| {r['files']:,} files | {lang} | {count:,} | {resolved:,} | {100.0 * resolved / count:.0f}% |")
    return "\n".join(lines)


def markdown(results):
    lines = [
        "| corpus | files | MB | ctags -R | agents index (with code graph) | ratio | files/s | MB/s | peak RSS (ctags / agents) | no-change refresh | refresh, 10 changed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        mb = r["bytes"] / 1e6
        t = r["index"]["seconds"]
        lines.append(
            f"| {r['files']:,} files | {r['files']:,} | {mb:.0f} | {r['ctags']['seconds']:.2f} s | {t:.2f} s | "
            f"{t / r['ctags']['seconds']:.2f}x | {r['files'] / t:,.0f} | {mb / t:.0f} | "
            f"{r['ctags']['rss_mb']:.0f} / {r['index']['rss_mb']:.0f} MB | {r['refresh_noop']['seconds'] * 1000:.0f} ms | "
            f"{r['refresh_10']['seconds'] * 1000:.0f} ms ({r['refresh_10']['changed']} changed) |"
        )
    return "\n".join(lines)


def cold_markdown(results, binary, tables=None):
    lines = [
        "| corpus | MB | ctags -R | first `agents query` (fresh home) | ratio | peak RSS (ctags / agents) | store on disk (SQLite + search) | store / source |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        mb = r["bytes"] / 1e6
        q = r["first_query"]
        st = r["store"]
        lines.append(
            f"| {r['files']:,} files | {mb:.0f} | {r['ctags']['seconds']:.2f} s | {q['seconds']:.2f} s | "
            f"{q['seconds'] / r['ctags']['seconds']:.2f}x | {r['ctags']['rss_mb']:.0f} / {q['rss_mb']:.0f} MB | "
            f"{st['bytes'] / 1e6:.0f} MB ({st['database'] / 1e6:.0f} + {st['search'] / 1e6:.0f}) | {st['bytes'] / r['bytes']:.2f}x |"
        )
    lines += ["", f"Binary: `{binary}`, {os.path.getsize(binary) / 1e6:.1f} MB."]
    if tables:
        lines.append(
            f"Tokenizer tables: a query on a one-file tree takes {tables['cold']['seconds']:.2f} s as the first "
            f"process on a machine (the tables built and cached; the runs above found them cached) and "
            f"{tables['warm']['seconds']:.2f} s after."
        )
    return "\n".join(lines)


def bench_tables(binary, runs):
    """The tokenizer tables' one-time cost: a query on a one-file tree with an
    empty $AGENTS_CACHE_DIR (the first process on a machine builds the tables)
    against the same with the tables cached (what every later process pays)."""
    work = Path(tempfile.mkdtemp(prefix="agents-bench-tables-"))
    tree = work / "tree"
    tree.mkdir()
    (tree / "main.py").write_text("def main():\n    return 1\n")
    warm_cache = work / "cache"

    def once(cache):
        home = tempfile.mkdtemp(prefix="agents-bench-", dir=work)
        env = dict(os.environ, AGENTS_HOME=home, AGENTS_CACHE_DIR=str(cache or tempfile.mkdtemp(dir=work)))
        return run_measured([binary, "--quiet", "query", "main", str(tree)], env=env)

    try:
        once(warm_cache)
        cold = median_run(runs, lambda: once(None))
        warm = median_run(runs, lambda: once(warm_cache))
        return {"cold": {"seconds": cold[0], "cpu": cold[3]}, "warm": {"seconds": warm[0], "cpu": warm[3]}}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def edit_files(files):
    """Appends a comment line to each of files; returns their contents before, to restore."""
    originals = {p: p.read_bytes() for p in files}
    for p in files:
        with open(p, "ab") as f:
            f.write(b"\n# modified by bench-index\n")
    return originals


def bench_refresh(binary, home, corpus, runs):
    """The refresh measurements on a copy of home (see the module docs)."""
    work = Path(tempfile.mkdtemp(prefix="agents-bench-refresh-"))
    copy = work / "home"
    shutil.copytree(home, copy, symlinks=True)
    env = dict(os.environ, AGENTS_HOME=str(copy))
    python = sorted(p for p in corpus.rglob("*.py") if ".git" not in p.parts)
    edited, warmup = python[:10], python[-10:]
    index = [binary, "--quiet", "--json", "index", str(corpus)]
    query = [binary, "--quiet", "query", QUERY, str(corpus), "--format", "json"]
    try:
        originals = edit_files(warmup)
        try:
            run_measured(index, env=env)
        finally:
            for p, data in originals.items():
                p.write_bytes(data)
        run_measured(index, env=env)
        noop = median_run(runs, lambda: run_measured(index, env=env))
        assert json.loads(noop[2])["report"]["files_read"] == 0
        noop_query = median_run(runs, lambda: run_measured(query, env=env))
        originals = edit_files(edited)
        try:
            changed = run_measured(index, env=env)
            changed_report = json.loads(changed[2])["report"]
            changed_query = run_measured(query, env=env)
        finally:
            for p, data in originals.items():
                p.write_bytes(data)
        restored_query = run_measured(query, env=env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    def figures(run):
        return {"seconds": run[0], "rss_mb": run[1], "cpu_seconds": run[3]}

    return {
        "binary": binary,
        "noop_index": figures(noop),
        "noop_query": figures(noop_query),
        "changed_index": dict(figures(changed), changed=changed_report["changed"]),
        "changed_query": figures(changed_query),
        "restored_query": figures(restored_query),
    }


def refresh_markdown(results):
    lines = [
        "| binary | no-change `agents index` | `agents query` after it | 10 files edited: `agents index` | `agents query` after it | edits undone: `agents query` (syncs them) | peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    keys = ["noop_index", "noop_query", "changed_index", "changed_query", "restored_query"]
    for r in results:
        # Wall time, then the CPU time (user + system) the process used: on a
        # machine shared with other work the second says more.
        cells = " | ".join(f"{r[k]['seconds'] * 1000:,.0f} ms ({r[k]['cpu_seconds'] * 1000:,.0f} ms CPU)" for k in keys)
        rss = max(r[k]["rss_mb"] for k in keys)
        lines.append(f"| `{r['binary']}` | {cells} | {rss:.0f} MB |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus-dir", default=os.path.join(tempfile.gettempdir(), "agents-bench-corpus"))
    ap.add_argument("--sizes", default="10000,0", help="comma-separated file counts; 0 = all")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", help="write raw results here")
    ap.add_argument("--binary", help="agents binary (default: build target/release/agents)")
    ap.add_argument("--refresh-home", help="measure only the refreshes, on copies of this indexed $AGENTS_HOME")
    ap.add_argument("--refresh-corpus", help="the tree --refresh-home indexed")
    ap.add_argument("--baseline", action="append", default=[], help="another binary measured alike (repeatable)")
    args = ap.parse_args()

    if shutil.which("ctags") is None:
        sys.exit("ctags (Universal Ctags) is required as the reference")
    binary = args.binary
    if not binary:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "agents-cli"], cwd=ROOT, check=True)
        binary = str(ROOT / "target" / "release" / "agents")

    if args.refresh_home:
        if not args.refresh_corpus:
            sys.exit("--refresh-home needs --refresh-corpus")
        corpus = Path(args.refresh_corpus).resolve()
        results = [bench_refresh(b, Path(args.refresh_home), corpus, args.runs) for b in [*args.baseline, binary]]
        print(refresh_markdown(results))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        return

    results = []
    for size in [int(s) for s in args.sizes.split(",")]:
        corpus = Path(args.corpus_dir) / (f"first-{size}" if size else "all")
        if not corpus.exists():
            subprocess.run(["bash", str(MAKE_CORPUS), str(corpus), str(size)], check=True, stdout=subprocess.DEVNULL)
        print(f"benchmarking {corpus} ...", file=sys.stderr)
        results.append(bench_corpus(binary, corpus, args.runs))

    tables = bench_tables(binary, args.runs)

    print(markdown(results))
    print()
    print(cold_markdown(results, binary, tables))
    print()
    print(graph_markdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps({"corpora": results, "tables": tables}, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
