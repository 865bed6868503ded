#!/usr/bin/env python3
"""Retrieval evaluation: file localization on real commits (eval/localization-dev.jsonl).

For each case (a commit: its message is the query, the source files it touched
are the ground truth) the harness

  1. materialises the parent commit's tree into one fixed directory per
     repository, WORK/<owner>+<name> (removed and re-extracted with
     `git --git-dir=MIRROR archive PARENT | tar -x` for every case, so the
     engine's incremental index is reused from case to case; cases run
     oldest parent first within a repository; --git-history also makes it
     a git work tree at PARENT with only PARENT's ancestors reachable);
  2. refreshes the engine's index of it (`agents index DIR`, timed apart);
  3. asks the engine, once per strategy, for a ranked file list:
         agents query --json --max-tokens 8000 [--strategy NAME] [EXTRA ARGS] -- "QUERY" DIR
     using `ranked_files` from the JSON when present, else the first
     occurrence of each fragment path (`path` or `source_path`) in rank order;
  4. ranks the tree's files with a plain whole-file BM25 baseline computed
     here (no engine involved);

and scores recall@1/5/10 (fraction of the ground-truth files in the top k) and
MRR (reciprocal rank of the first ground-truth file), overall and per
repository, plus p50/p95 query latency per strategy. A Markdown report goes to
stdout, everything (per-case rankings included) to --out as JSON, progress to
stderr.

    scripts/eval-retrieval.py [--agents target/release/agents] [--strategies a,b|default]
                              [--no-strategy-flag] [--repos gin-gonic/gin,...] [--limit N]
                              [--work DIR] [--out results.json] [--jobs 1]
                              [--extra-args '--candidates 100']

Strategy "default" (or --no-strategy-flag) runs the engine without --strategy.
A strategy whose run exits non-zero, or whose JSON says it is unavailable, is
reported as such (failures count as misses); after --max-failures consecutive
failures it is not asked again for the rest of the run.

Baseline BM25 (k1=1.2, b=0.75): documents are every text file of the parent
tree (blobs only; binaries -- a NUL byte in the first 8 KiB --, files over
1 MB, symlinks and submodules skipped); tokens are identifiers
([A-Za-z0-9_]+) lowercased, plus their snake_case and camelCase parts; the
score of a file sums idf * tf-saturation over the distinct query tokens.
"bm25" ranks all text files, "bm25-src" only files with a source-code
extension (the ground truth is always source files).
"""

import argparse
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_STRATEGIES = "simple-keyword,semantic-embedding,breadth-depth-navigator,arce,temporal-archaeology"
KS = (1, 5, 10)
MAX_DOC_BYTES = 1_000_000
SOURCE_EXT = {
    ".py", ".pyi", ".rs", ".go", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx",
    ".astro", ".vue", ".svelte", ".c", ".h", ".cc", ".cpp", ".hpp", ".java", ".kt", ".rb",
    ".php", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".swift", ".scala", ".lua",
    # The other languages the code graph parses (issue 22).
    ".cs", ".kts", ".sc", ".zig", ".hs", ".ex", ".exs",
}

_print_lock = threading.Lock()


def log(msg):
    with _print_lock:
        print(msg, file=sys.stderr, flush=True)


# --- tokenisation and BM25 -------------------------------------------------------

IDENT = re.compile(r"[A-Za-z0-9_]+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def tokenize(text):
    """Identifiers lowercased, plus their snake_case and camelCase parts."""
    out = []
    for ident in IDENT.findall(text):
        low = ident.lower()
        out.append(low)
        parts = [p for chunk in ident.split("_") for p in CAMEL.findall(chunk)]
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return out


class TreeDocs:
    """Term frequencies of the text files of a tree, cached by blob id between trees of one repository."""

    def __init__(self, gitdir):
        self.gitdir = gitdir
        self.cache = {}  # blob -> (length, Counter) or None for skipped blobs

    def load(self, rev):
        out = subprocess.run(
            ["git", "-c", "core.quotePath=false", f"--git-dir={self.gitdir}", "ls-tree", "-r", "-l", "-z", rev],
            capture_output=True, check=True,
        ).stdout.decode("utf-8", errors="replace")
        entries = []
        for rec in out.split("\0"):
            if not rec:
                continue
            meta, path = rec.split("\t", 1)
            mode, kind, blob, size = meta.split()
            if kind != "blob" or mode == "120000" or path.startswith(".git/"):
                continue
            if not size.isdigit() or int(size) > MAX_DOC_BYTES:  # "-" or "BAD" (blob absent)
                continue
            entries.append((path, blob))
        missing = sorted({b for _, b in entries if b not in self.cache})
        if missing:
            self._read_blobs(missing)
        docs = {}
        for path, blob in entries:
            d = self.cache.get(blob)
            if d is not None:
                docs[path] = d
        # Keep only the blobs of this tree: consecutive cases share most of them.
        keep = {b for _, b in entries}
        self.cache = {b: v for b, v in self.cache.items() if b in keep}
        return docs

    def _read_blobs(self, blobs):
        proc = subprocess.Popen(
            ["git", f"--git-dir={self.gitdir}", "cat-file", "--batch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        feeder = threading.Thread(target=lambda: (proc.stdin.write("".join(b + "\n" for b in blobs).encode()),
                                                  proc.stdin.close()))
        feeder.start()
        out = proc.stdout
        for blob in blobs:
            header = out.readline().decode().split()
            if len(header) < 3 or header[1] != "blob":
                self.cache[blob] = None
                continue
            data = out.read(int(header[2]))
            out.read(1)  # trailing newline
            if b"\0" in data[:8192]:
                self.cache[blob] = None
                continue
            toks = tokenize(data.decode("utf-8", errors="replace"))
            self.cache[blob] = (len(toks), Counter(toks))
        feeder.join()
        proc.wait()


def bm25_rank(docs, query, k1=1.2, b=0.75, only=None):
    scored = sorted((-s, path) for path, s in bm25_scores(docs, query, k1, b, only).items())
    return [p for _, p in scored]


def bm25_scores(docs, query, k1=1.2, b=0.75, only=None):
    """BM25 of each document of `docs` ({key: (length, Counter of tokenize())}) that meets
    a term of `query`, {key: score}; `only(key)` keeps a subset."""
    items = [(p, d) for p, d in docs.items() if only is None or only(p)]
    n = len(items)
    if n == 0:
        return {}
    avgdl = sum(d[0] for _, d in items) / n or 1.0
    terms = sorted(set(tokenize(query)))
    df = {t: 0 for t in terms}
    for _, (_, tf) in items:
        for t in terms:
            if t in tf:
                df[t] += 1
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms if df[t]}
    scores = {}
    for path, (dl, tf) in items:
        s = 0.0
        for t, w in idf.items():
            f = tf.get(t)
            if f:
                s += w * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl))
        if s > 0:
            scores[path] = s
    return scores


def is_source_path(path):
    name = path.rsplit("/", 1)[-1]
    return "." in name and ("." + name.rsplit(".", 1)[1].lower()) in SOURCE_EXT


# --- engine -------------------------------------------------------------------------


def ranked_from_output(data, workdir):
    """File ranking from the engine's JSON: ranked_files when present, else fragment order."""
    if isinstance(data.get("ranked_files"), list):
        paths = [p if isinstance(p, str) else (p.get("path") or p.get("source_path")) for p in data["ranked_files"]]
    else:
        paths = [f.get("path") or f.get("source_path") for f in data.get("fragments", [])]
    seen, out = set(), []
    prefix = str(workdir).rstrip("/") + "/"
    for p in paths:
        if not p:
            continue
        if p.startswith(prefix):
            p = p[len(prefix):]
        p = p.removeprefix("./")
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def fragment_rows(data, workdir):
    """Every packed fragment of the engine's JSON, in the columns scripts/eval-nl.py keeps
    (`all`), for scripts/fit-chunk-ranker.py: [path, first line, last line, evidence,
    relevance_score, depth, tokens, kind, node, name_match, file standing, query words met
    (`met/words`)]. A fragment without a line range (a whole file) has None for its lines."""
    rows = []
    prefix = str(workdir).rstrip("/") + "/"
    for f in data.get("fragments") or []:
        prov = f.get("provenance") or {}
        meta = f.get("metadata") or {}
        path = (prov.get("source_path") or "").removeprefix(prefix).removeprefix("./")
        m = re.fullmatch(r"\s*(\d+):(\d+)-(\d+):(\d+)\s*", prov.get("source_range") or "")
        first = last = None
        if m:
            first, _, last, col = map(int, m.groups())
            if col == 0 and last > first:
                last -= 1

        def num(key):
            try:
                return float(meta.get(key) or 0.0)
            except ValueError:
                return 0.0
        score = f.get("relevance_score")
        rows.append([path, first, last, num("evidence"), float(score) if isinstance(score, (int, float)) else 0.0,
                     f.get("detail_depth"), f.get("token_count"), meta.get("kind") or "", f.get("uko_node") or "",
                     num("name_match"), num("standing"), meta.get("terms")])
    return rows


def reports_unavailable(data):
    for key in ("unavailable",):
        if data.get(key):
            return str(data.get(key))
    if data.get("available") is False:
        return str(data.get("reason") or "available: false")
    status = data.get("status") or data.get("strategy_status")
    if isinstance(status, str) and status.lower() in ("unavailable", "disabled", "not_available"):
        return status
    strat = data.get("strategy")
    if isinstance(strat, dict):
        if strat.get("available") is False or str(strat.get("status", "")).lower() == "unavailable":
            return str(strat.get("reason") or strat.get("status") or "unavailable")
    return None


def run_engine(agents, env, args, timeout):
    start = time.perf_counter()
    try:
        proc = subprocess.run([agents, *args], env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, None, f"timeout after {timeout}s"
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        lines = [l.strip() for l in proc.stderr.decode(errors="replace").splitlines() if l.strip()]
        errs = [l for l in lines if "error" in l.lower()] or lines[-2:]
        return elapsed, None, f"exit {proc.returncode}: {' | '.join(errs[:2])[:300]}"
    return elapsed, proc.stdout, None


# --- metrics ---------------------------------------------------------------------------


def score(ranked, truth):
    truth = set(truth)
    res = {f"r@{k}": len(truth & set(ranked[:k])) / len(truth) for k in KS}
    rr = 0.0
    for i, p in enumerate(ranked):
        if p in truth:
            rr = 1.0 / (i + 1)
            break
    res["mrr"] = rr
    return res


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    idx = min(len(v) - 1, max(0, math.ceil(q / 100 * len(v)) - 1))
    return v[idx]


def aggregate(results, system):
    rows = [r["systems"][system] for r in results if system in r["systems"]]
    if not rows:
        return None
    ok = [x for x in rows if x.get("error") is None]
    agg = {"cases": len(rows), "failed": len(rows) - len(ok)}
    for m in [f"r@{k}" for k in KS] + ["mrr"]:
        agg[m] = sum(x["scores"][m] if x.get("error") is None else 0.0 for x in rows) / len(rows)
    lat = [x["seconds"] for x in ok if x.get("seconds") is not None]
    agg["p50_s"] = percentile(lat, 50)
    agg["p95_s"] = percentile(lat, 95)
    errors = Counter(x["error"] for x in rows if x.get("error"))
    agg["errors"] = dict(errors.most_common(3))
    return agg


# --- driver -------------------------------------------------------------------------


def discover_mirror(root, repo):
    owner, name = repo.split("/")
    for cand in sorted(Path(root).glob(f"{owner}+{name}*")):
        for gitdir in (cand, cand / "repo", cand / "repo" / ".git"):
            if (gitdir / "HEAD").is_file() and (gitdir / "objects").is_dir():
                return gitdir
    return None


def materialise(gitdir, rev, dest, history=False):
    """Replaces dest with rev's tree; returns the paths that could not be written (blobs absent from the mirror).

    With history, dest is also made a git work tree whose detached HEAD is rev, borrowing the
    mirror's objects (objects/info/alternates) and holding no refs, so only rev's ancestors
    are reachable: the commit being predicted and later ones stay invisible.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if history:
        g = ["git", "-C", str(dest)]
        subprocess.run(["git", "init", "-q", str(dest)], check=True, capture_output=True)
        (dest / ".git" / "objects" / "info" / "alternates").write_text(str(Path(gitdir).resolve() / "objects") + "\n")
        subprocess.run(g + ["update-ref", "--no-deref", "HEAD", rev], check=True, capture_output=True)
        subprocess.run(g + ["read-tree", rev], check=True, capture_output=True)
    archive = subprocess.Popen(["git", f"--git-dir={gitdir}", "archive", rev],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, capture_output=True)
    archive.stdout.close()
    archive_err = archive.stderr.read().decode(errors="replace")
    if archive.wait() == 0 and tar.returncode == 0:
        if history:  # refresh the index's stat data so `git status` is clean
            subprocess.run(["git", "-C", str(dest), "update-index", "-q", "--refresh"], capture_output=True)
        return []
    # Snapshots can lack a few large blobs (git archive then stops): write the tree blob by blob instead.
    log(f"git archive {rev[:10]} failed ({archive_err.strip().splitlines()[:1]}); writing the tree blob by blob")
    for child in dest.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    return write_tree(gitdir, rev, dest)


def write_tree(gitdir, rev, dest):
    out = subprocess.run(["git", f"--git-dir={gitdir}", "ls-tree", "-r", "-z", rev],
                         capture_output=True, check=True).stdout.decode("utf-8", errors="surrogateescape")
    entries = []
    for rec in out.split("\0"):
        if rec:
            meta, path = rec.split("\t", 1)
            mode, kind, obj = meta.split()
            if kind == "commit":
                (dest / path).mkdir(parents=True, exist_ok=True)
            elif kind == "blob":
                entries.append((mode, obj, path))
    proc = subprocess.Popen(["git", f"--git-dir={gitdir}", "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    feeder = threading.Thread(target=lambda: (proc.stdin.write("".join(o + "\n" for _, o, _ in entries).encode()),
                                              proc.stdin.close()))
    feeder.start()
    missing = []
    for mode, obj, path in entries:
        header = proc.stdout.readline().decode().split()
        if len(header) < 3 or header[1] != "blob":
            missing.append(path)
            continue
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            os.symlink(data.decode("utf-8", errors="surrogateescape"), target)
        else:
            target.write_bytes(data)
            if mode == "100755":
                target.chmod(0o755)
    feeder.join()
    proc.wait()
    return missing


class Runner:
    def __init__(self, args, strategies, env, total):
        self.args = args
        self.strategies = strategies
        self.env = env
        self.total = total
        self.done = 0
        self.lock = threading.Lock()
        self.consecutive_failures = Counter()
        self.disabled = {}

    def run_repo(self, repo, cases, gitdir):
        args = self.args
        owner, name = repo.split("/")
        workdir = Path(args.work).resolve() / f"{owner}+{name}"
        docs = TreeDocs(gitdir) if not args.no_baseline else None
        results = []
        for case in cases:
            t0 = time.perf_counter()
            res = {"repo": repo, "sha": case["sha"], "parent": case["parent"], "files": case["files"],
                   "query": case["query"], "systems": {}}
            try:
                absent = materialise(gitdir, case["parent"], workdir, history=args.git_history)
                if absent:
                    res["absent_blobs"] = absent
            except Exception as e:  # noqa: BLE001 - report and go on
                log(f"{repo} {case['sha'][:10]}: {e}")
                res["error"] = str(e)
                results.append(res)
                continue
            missing = [f for f in case["files"] if not (workdir / f).is_file()]
            if missing:
                res["missing_in_tree"] = missing
            if docs is not None:
                t = time.perf_counter()
                tree = docs.load(case["parent"])
                load_s = time.perf_counter() - t
                for system, only in (("bm25", None), ("bm25-src", is_source_path)):
                    t = time.perf_counter()
                    ranked = bm25_rank(tree, case["query"], only=only)
                    res["systems"][system] = {"ranked": ranked[:50], "scores": score(ranked, case["files"]),
                                              "seconds": time.perf_counter() - t, "load_s": load_s, "error": None}
            if self.strategies:
                elapsed, _, err = run_engine(args.agents, self.env, ["index", "--quiet", str(workdir)], args.timeout)
                res["index_s"] = elapsed
                if err:
                    res["index_error"] = err
            for strat in self.strategies:
                key = f"agents:{strat}"
                with self.lock:
                    disabled = self.disabled.get(strat)
                if disabled:
                    res["systems"][key] = {"ranked": [], "scores": score([], case["files"]), "seconds": None,
                                           "error": f"skipped: {disabled}"}
                    continue
                cmd = ["query", "--json", "--quiet", "--max-tokens", str(args.max_tokens), *shlex.split(args.extra_args)]
                if strat != "default":
                    # `a+b` asks for several strategies at once.
                    for name in strat.split("+"):
                        cmd += ["--strategy", name]
                cmd += ["--", case["query"], str(workdir)]
                elapsed, out, err = run_engine(args.agents, self.env, cmd, args.timeout)
                ranked, rows = [], []
                if err is None:
                    try:
                        data = json.loads(out)
                        why = reports_unavailable(data)
                        if why:
                            err = f"unavailable: {why}"
                        else:
                            ranked = ranked_from_output(data, workdir)
                            rows = fragment_rows(data, workdir)
                    except (json.JSONDecodeError, AttributeError) as e:
                        err = f"bad JSON: {e}"
                res["systems"][key] = {"ranked": ranked[:50], "scores": score(ranked, case["files"]),
                                       "seconds": elapsed if err is None else None, "error": err, "all": rows}
                with self.lock:
                    if err is None:
                        self.consecutive_failures[strat] = 0
                    else:
                        self.consecutive_failures[strat] += 1
                        if err.startswith("unavailable") or self.consecutive_failures[strat] >= args.max_failures:
                            self.disabled[strat] = err
                            log(f"strategy {strat} disabled: {err}")
            results.append(res)
            with self.lock:
                self.done += 1
                n = self.done
            summary = " ".join(
                f"{k}={v['scores']['mrr']:.2f}" if v.get("error") is None else f"{k}=ERR"
                for k, v in res["systems"].items()
            )
            log(f"[{n}/{self.total}] {repo} {case['sha'][:10]} ({len(case['files'])} files) {summary} "
                f"index={res.get('index_s', 0):.2f}s case={time.perf_counter() - t0:.1f}s")
        return results


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def markdown(report):
    systems = report["systems"]
    lines = ["## Overall", "",
             f"{report['cases']} cases, {len(report['repos'])} repositories, "
             f"wall time {report['wall_s']:.0f}s (engine index refresh {report['index_s_total']:.0f}s in all).", "",
             "| system | cases | failed | R@1 | R@5 | R@10 | MRR | p50 s | p95 s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in systems:
        a = report["overall"].get(s)
        if a is None:
            continue
        lines.append(f"| {s} | {a['cases']} | {a['failed']} | {fmt(a['r@1'])} | {fmt(a['r@5'])} | {fmt(a['r@10'])} | "
                     f"{fmt(a['mrr'])} | {fmt(a['p50_s'], 3)} | {fmt(a['p95_s'], 3)} |")
    failing = {s: a["errors"] for s, a in report["overall"].items() if a and a["errors"]}
    if failing:
        lines += ["", "Failures (most common messages):", ""]
        for s, errs in failing.items():
            for e, n in errs.items():
                lines.append(f"- {s}: {n}x `{e}`")
    lines += ["", "## Per repository (R@10 / MRR)", "",
              "| repo | cases | " + " | ".join(systems) + " |",
              "|---|---:|" + "---|" * len(systems)]
    for repo in report["repos"]:
        per = report["per_repo"][repo]
        cells = []
        for s in systems:
            a = per.get(s)
            cells.append("-" if a is None else f"{a['r@10']:.2f} / {a['mrr']:.2f}")
        n = max((a["cases"] for a in per.values() if a), default=0)
        lines.append(f"| {repo} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def default_work():
    shm = Path("/dev/shm")
    return str(shm / "agents-eval") if shm.is_dir() and os.access(shm, os.W_OK) else "/tmp/agents-eval"


def spread_limit(by_repo, limit):
    """Keeps at most `limit` cases of each repository, evenly spaced (in place; 0 keeps all)."""
    if not limit:
        return
    for repo, cs in by_repo.items():
        n = len(cs)
        if n > limit:
            by_repo[repo] = [cs[(2 * i + 1) * n // (2 * limit)] for i in range(limit)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=str(ROOT / "eval" / "localization-dev.jsonl"))
    ap.add_argument("--agents", default=str(ROOT / "target" / "release" / "agents"))
    ap.add_argument("--strategies", default=DEFAULT_STRATEGIES,
                    help="comma-separated; 'default' runs without --strategy; empty runs the baseline only")
    ap.add_argument("--no-strategy-flag", action="store_true",
                    help="never pass --strategy (same as --strategies default)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the Python BM25 baseline")
    ap.add_argument("--git-history", action="store_true",
                    help="make each work tree a git repository whose HEAD is the parent commit (history up to it, "
                         "nothing later), for strategies that read git history")
    ap.add_argument("--mirror-root", default="/work/.mirror")
    ap.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=GITDIR")
    ap.add_argument("--work", default=os.environ.get("WORK") or default_work(),
                    help="work directory: one tree per repository plus the engine home (default $WORK, else "
                         "/dev/shm/agents-eval when /dev/shm is writable -- re-extracting trees on a slow disk "
                         "dominates the run time --, else /tmp/agents-eval)")
    ap.add_argument("--fresh-home", action="store_true", help="delete WORK/agents-home first")
    ap.add_argument("--repos", default="", help="comma-separated owner/name (or name) filter")
    ap.add_argument("--limit", type=int, default=0, help="at most N cases per repository (evenly spaced)")
    ap.add_argument("--jobs", type=int, default=1, help="repositories evaluated in parallel")
    ap.add_argument("--max-tokens", type=int, default=8000)
    ap.add_argument("--extra-args", default="", help="extra arguments for every `agents query` (shell-split)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per engine call")
    ap.add_argument("--max-failures", type=int, default=5,
                    help="stop asking a strategy after this many consecutive failures")
    ap.add_argument("--out", default=None, help="JSON report (default WORK/results.json)")
    args = ap.parse_args()

    if args.no_strategy_flag:
        strategies = ["default"]
    else:
        strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if strategies:
        agents = Path(args.agents)
        if not agents.is_file():
            sys.exit(f"engine binary not found: {agents} (build it or pass --agents)")
        args.agents = str(agents.resolve())

    cases = [json.loads(line) for line in open(args.cases, encoding="utf-8") if line.strip()]
    wanted = {r.strip() for r in args.repos.split(",") if r.strip()}
    by_repo = defaultdict(list)
    for c in cases:
        if not wanted or c["repo"] in wanted or c["repo"].split("/")[1] in wanted:
            by_repo[c["repo"]].append(c)
    spread_limit(by_repo, args.limit)
    explicit = dict(m.split("=", 1) for m in args.mirror)
    mirrors = {}
    for repo in sorted(by_repo):
        g = Path(explicit[repo]) if repo in explicit else discover_mirror(args.mirror_root, repo)
        if g is None:
            sys.exit(f"no mirror for {repo} under {args.mirror_root}")
        mirrors[repo] = g
        # Oldest parent first: consecutive trees then differ least, so the engine's
        # incremental refresh does less work and its recorded history runs forward.
        out = subprocess.run(["git", f"--git-dir={g}", "log", "--no-walk=unsorted", "--format=%H %ct",
                              *[c["parent"] for c in by_repo[repo]]], capture_output=True, text=True, check=True).stdout
        when = dict(line.split() for line in out.splitlines() if line.strip())
        by_repo[repo].sort(key=lambda c: (int(when.get(c["parent"], 0)), c["sha"]))

    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    home = work / "agents-home"
    if args.fresh_home and home.exists():
        shutil.rmtree(home)
    home.mkdir(exist_ok=True)
    env = dict(os.environ, AGENTS_HOME=str(home))

    if args.out is None:
        args.out = str(work / "results.json")
    total = sum(len(v) for v in by_repo.values())
    log(f"{total} cases in {len(by_repo)} repositories; strategies: {', '.join(strategies) or '(none)'}; "
        f"baseline: {'no' if args.no_baseline else 'yes'}; work dir {work}")
    runner = Runner(args, strategies, env, total)
    start = time.perf_counter()
    results = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(runner.run_repo, repo, by_repo[repo], mirrors[repo]) for repo in sorted(by_repo)]
        for f in futures:
            results.extend(f.result())
    wall = time.perf_counter() - start

    systems = ([] if args.no_baseline else ["bm25", "bm25-src"]) + [f"agents:{s}" for s in strategies]
    repos = sorted(by_repo)
    report = {
        "cases": len(results),
        "repos": repos,
        "systems": systems,
        "wall_s": wall,
        "index_s_total": sum(r.get("index_s", 0) for r in results),
        "agents": args.agents if strategies else None,
        "max_tokens": args.max_tokens,
        "extra_args": args.extra_args,
        "overall": {s: aggregate(results, s) for s in systems},
        "per_repo": {repo: {s: aggregate([r for r in results if r["repo"] == repo], s) for s in systems}
                     for repo in repos},
        "index_p50_s": percentile([r["index_s"] for r in results if "index_s" in r], 50),
        "index_p95_s": percentile([r["index_s"] for r in results if "index_s" in r], 95),
        "results": results,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    sys.stdout.write(markdown(report))
    log(f"done in {wall:.0f}s; JSON in {args.out}")


if __name__ == "__main__":
    main()
