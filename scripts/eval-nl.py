#!/usr/bin/env python3
"""Natural-language retrieval evaluation: chunk and file ranking, and coverage per token (eval/nl/*.jsonl).

Each case of the dev set is one line

    {"category": "symbol|behaviour|architecture", "id": "requests-01", "query": "...",
     "relevant": [{"grade": 2, "lines": [10, 42], "path": "src/requests/sessions.py"}, ...],
     "repo": "psf/requests", "rev": "<sha>"}

where each relevant *span* is a path plus a 1-based inclusive line range, grade 2 a core answer and
grade 1 supporting material.

Trees. A repository's tree is TREES/<owner>+<name> (--trees, default /work/trees) when that
directory exists and the dev set names a single rev for the repository (the directory is trusted
to hold that rev). Otherwise it is materialised from the git mirror MIRROR_ROOT/<owner>+<name>
(--mirror-root; the git dir itself or its `repo/` folder) with `git archive REV | tar -x` into
WORK/<owner>+<name> (WORK/<owner>+<name>@<rev12> when the dev set names several revs), and
reused while WORK/<name>.rev still names the rev. Spans whose file is missing from the tree are
reported (they stay in the ground truth and count as misses).

Engine. For each case the harness runs, with a dedicated home,

    agents --home HOME query --json --max-tokens N [EXTRA_ARGS] -- "QUERY" TREE

once with N = --max-tokens (default 8000; the ranking run) and once for every other budget of
--budgets (default 2000,8000,32000; a budget equal to --max-tokens reuses the ranking run). The
first query of a repository indexes its tree. Fragments are read from `fragments[]`: path
`provenance.source_path` (made relative to the tree when absolute; `./` and `file://` dropped),
line range from `provenance.source_range`, which is `L1:C1-L2:C2` (lines 1-based, columns 0-based,
end exclusive: an end at column 0 of a later line does not include that line) or a byte range
`B1-B2` (mapped to lines through the file's bytes). A fragment with a path but no range stands for
the whole file. File ranking: `ranked_files` (strings, or objects with `path`/`source_path`),
normalised the same way and deduplicated; when absent, the first occurrence of each fragment path
in score order.

Metrics, per case, then averaged (every case weighs the same; a failed engine call scores 0)
overall, per category and per repository:

  * chunk NDCG@10: results are the fragments sorted by relevance_score descending (stable: ties
    keep the output order), the first 10 taken. Result i (1-based) overlaps a span when it has
    the span's path and their line ranges intersect. Its gain is the highest grade among the
    spans it overlaps that no earlier result has credited (0 if none); every span it overlaps
    is then credited. DCG = sum gain_i / log2(i + 1); IDCG is the same sum over the spans'
    grades sorted descending (first 10). NDCG = DCG / IDCG.
  * chunk R@10: share of the case's spans overlapped by at least one of the 10 results.
  * binary NDCG@10: the published peer benchmarks' scoring, for comparison with their figures:
    each span marks the first of the 10 results that overlaps it, a marked result gains 1 (however
    many spans mark it, whatever their grades), and IDCG is min(10, spans) gains of 1.
  * shown NDCG@10 / shown R@10: the same, except that a result overlaps a span only when it also
    shows at least half of the span's non-blank lines that lie inside its range (at least one;
    each line tested as for coverage below: its stripped text inside the fragment's `content`),
    i.e. it really delivers the part of the span it claims. The engine's module and class
    fragments span whole files or classes even when delivered as a one-line name or a signature
    list, and the plain chunk metrics credit them for every span inside; this variant does not.
    A BM25 whole file shows every line, so its two variants are equal.
  * file NDCG@10: over the first 10 files of the file ranking; a file's gain is the highest
    grade of the spans in it (0 for other files); IDCG from the relevant files' gains sorted
    descending (first 10).
  * file R@1/5/10: share of the relevant files (distinct span paths) among the first k files.
  * MRR: 1 / rank of the first relevant file in the whole file ranking (0 if none).
  * coverage at budget B (coverage per token): the relevant lines are the distinct (path, line)
    pairs of all spans whose text is not blank. A line is covered when some fragment of the run
    with budget B has its path, a range containing the line, and a `content` containing the
    line's text stripped of surrounding whitespace (so a fragment delivered at signature depth
    only covers the lines it really shows). Coverage = covered / relevant lines. Tokens used is
    the JSON's `total_tokens` (else the sum of the fragments' `token_count`).
  * latency: wall time of each `agents query` process. "warm" leaves out the first query of
    each repository (it indexes the tree); p50/p95 are nearest-rank percentiles.

Baseline BM25, computed here with the BM25 of scripts/eval-retrieval.py (imported, not copied:
k1=1.2, b=0.75, identifier tokens lowercased plus their snake_case/camelCase parts). Documents
are the tree's text files by that script's rules: regular files only (symlinks skipped), `.git`
skipped, files over 1 MB skipped, binaries (a NUL byte in the first 8 KiB) skipped. "bm25" ranks
every text file, "bm25-src" only files with a source-code extension (eval-retrieval's
is_source_path). For the chunk metrics a BM25 result is a whole file (lines 1 to its last line),
the first 10 files being the 10 results; the file metrics use the BM25 ranking; for coverage BM25
packs whole files in rank order into the budget (a file that does not fit is skipped and the
next one tried) and every line of a packed file is present. A file's token count is
ceil(characters / 4), an approximation: the engine counts o200k_base BPE tokens and has no
command that counts a text's tokens; the report prints the ratio of the engine's `token_count`
to ceil(len(content) / 4) over the fragments it delivered, to show how far off that is.

    scripts/eval-nl.py [--dev 'eval/nl/*.jsonl'] [--agents target/release/agents] [--home DIR]
                       [--trees /work/trees] [--mirror-root /work/.mirror] [--work DIR]
                       [--repos psf/requests,...] [--categories symbol,...] [--limit N]
                       [--budgets 2000,8000,32000] [--max-tokens 8000] [--extra-args '--strategy arce']
                       [--jobs 1] [--out results.json] [--no-engine] > report.md

Markdown to stdout (sections in a fixed order; repositories, categories and cases sorted),
per-case details (top-10 results with their gains, file rankings, coverage per budget, timings,
errors) to --out as JSON, progress to stderr.
"""

import argparse
import glob
import hashlib
import importlib.util
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
K = 10
FILE_KS = (1, 5, 10)
ENGINE = "engine"
BASELINES = ("bm25", "bm25-src")
SYSTEMS = (ENGINE,) + BASELINES
CATEGORIES = ("symbol", "behaviour", "architecture")

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
_spec = importlib.util.spec_from_file_location("eval_retrieval", ROOT / "scripts" / "eval-retrieval.py")
er = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(er)

log = er.log

TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|testdata|testing|e2e|fixtures|spec|benches)/|(^|/)test_[^/]*\.py$|"
    r"_test\.(go|py|rs)$|\.(test|spec)\.[cm]?[jt]sx?$|(^|/)conftest\.py$"
)
DOC_PATH = re.compile(r"(^|/)(docs?|examples?|_examples|www|site)/|\.(md|mdx|rst|txt)$")


# --- trees ---------------------------------------------------------------------------------------


class Tree:
    """One repository tree on disk: BM25 documents, file texts on demand."""

    def __init__(self, repo, rev, root, source):
        self.repo, self.rev, self.root, self.source = repo, rev, Path(root).resolve(), source
        self.docs = None  # path -> (token count, Counter), eval-retrieval's TreeDocs shape
        self.chars = {}  # path -> characters of the decoded text
        self.nlines = {}
        self._text = {}
        self._lock = threading.Lock()

    def load_docs(self):
        docs = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d != ".git" and not os.path.islink(os.path.join(dirpath, d)))
            for fn in sorted(filenames):
                full = os.path.join(dirpath, fn)
                if os.path.islink(full) or not os.path.isfile(full):
                    continue
                if os.path.getsize(full) > er.MAX_DOC_BYTES:
                    continue
                with open(full, "rb") as f:
                    data = f.read()
                if b"\0" in data[:8192]:
                    continue
                text = data.decode("utf-8", errors="replace")
                rel = os.path.relpath(full, self.root).replace(os.sep, "/")
                toks = er.tokenize(text)
                docs[rel] = (len(toks), Counter(toks))
                self.chars[rel] = len(text)
                self.nlines[rel] = len(text.split("\n")) - (1 if text.endswith("\n") else 0)
        self.docs = docs

    def raw(self, path):
        """File bytes (None when absent or unreadable), cached."""
        with self._lock:
            if path in self._text:
                return self._text[path]
        p = self.root / path
        try:
            data = p.read_bytes() if p.is_file() else None
        except OSError:
            data = None
        with self._lock:
            self._text[path] = data
        return data

    def lines(self, path):
        data = self.raw(path)
        return None if data is None else data.decode("utf-8", errors="replace").split("\n")

    def line_count(self, path):
        if path in self.nlines:
            return self.nlines[path]
        lines = self.lines(path)
        if lines is None:
            return 0
        return len(lines) - (1 if lines and lines[-1] == "" else 0)


def prepare_tree(repo, rev, single_rev, args):
    owner, name = repo.split("/")
    key = f"{owner}+{name}"
    tdir = Path(args.trees) / key
    if single_rev and tdir.is_dir():
        return Tree(repo, rev, tdir, f"{tdir}")
    gitdir = er.discover_mirror(args.mirror_root, repo)
    if gitdir is None:
        raise RuntimeError(f"no tree {tdir} and no mirror for {repo} under {args.mirror_root}")
    dest = Path(args.work).resolve() / (key if single_rev else f"{key}@{rev[:12]}")
    stamp = dest.parent / (dest.name + ".rev")
    if not (dest.is_dir() and stamp.is_file() and stamp.read_text().strip() == rev):
        log(f"{repo}: materialising {rev[:12]} from {gitdir} into {dest}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        absent = er.materialise(gitdir, rev, dest)
        if absent:
            log(f"{repo}: {len(absent)} blobs absent from the mirror, e.g. {absent[:3]}")
        stamp.write_text(rev + "\n")
    return Tree(repo, rev, dest, f"{gitdir} @ {rev[:12]} -> {dest}")


# --- engine output ---------------------------------------------------------------------------------


def norm_path(p, tree):
    if not isinstance(p, str) or not p:
        return None
    p = p.removeprefix("file://")
    if p.startswith("/"):
        for prefix in {str(tree.root), os.path.realpath(tree.root)}:
            prefix = prefix.rstrip("/") + "/"
            if p.startswith(prefix):
                return p[len(prefix):]
        return p
    return p.removeprefix("./")


def parse_range(text, path, tree):
    """(start, end) 1-based inclusive lines, or None."""
    if not isinstance(text, str) or not text.strip():
        return None
    m = re.fullmatch(r"\s*(\d+):(\d+)-(\d+):(\d+)\s*", text)
    if m:
        l1, _c1, l2, c2 = map(int, m.groups())
        if c2 == 0 and l2 > l1:
            l2 -= 1
        return (l1, l2)
    m = re.fullmatch(r"\s*(\d+)-(\d+)\s*", text)
    if m and path:
        b1, b2 = map(int, m.groups())
        data = tree.raw(path)
        if data is None:
            return None
        start = data.count(b"\n", 0, b1) + 1
        end = data.count(b"\n", 0, max(b1, b2 - 1)) + 1
        return (start, end)
    return None


def parse_output(data, tree):
    frags = []
    for i, f in enumerate(data.get("fragments") or []):
        prov = f.get("provenance") or {}
        raw_path = prov.get("source_path") or f.get("path") or f.get("source_path")
        path = norm_path(raw_path, tree)
        if path is not None and (path.startswith("/") or "://" in path):
            path_kind = "foreign"
        else:
            path_kind = "file" if path is not None else "none"
        rng = parse_range(prov.get("source_range"), path, tree) if path_kind == "file" else None
        whole = False
        if path_kind == "file" and rng is None:
            rng, whole = (1, max(1, tree.line_count(path))), True
        score = f.get("relevance_score")
        frags.append({
            "order": i, "path": path if path_kind == "file" else None, "raw_path": raw_path,
            "range": rng, "whole_file": whole, "score": float(score) if isinstance(score, (int, float)) else 0.0,
            "tokens": f.get("token_count"), "depth": f.get("detail_depth"), "content": f.get("content") or "",
            "strategy": prov.get("strategy"),
            "evidence": float((f.get("metadata") or {}).get("evidence") or 0.0),
            "kind": (f.get("metadata") or {}).get("kind") or "", "node": f.get("uko_node") or "",
            "name_match": float((f.get("metadata") or {}).get("name_match") or 0.0),
            "standing": float((f.get("metadata") or {}).get("standing") or 0.0),
            "terms": (f.get("metadata") or {}).get("terms"),
            "near": int((f.get("metadata") or {}).get("near") or 0),
            "file_near": int((f.get("metadata") or {}).get("file_near") or 0),
            "caller": int((f.get("metadata") or {}).get("caller") or 0),
            "callees": int((f.get("metadata") or {}).get("callees") or 0),
            "called_by_named": int((f.get("metadata") or {}).get("called_by_named") or 0),
        })
    ranked = sorted(frags, key=lambda x: -x["score"])  # stable: ties keep output order
    if isinstance(data.get("ranked_files"), list):
        raw_files = [p if isinstance(p, str) else (p.get("path") or p.get("source_path"))
                     for p in data["ranked_files"] if isinstance(p, (str, dict))]
        files_from = "ranked_files"
    else:
        raw_files = [x["raw_path"] for x in ranked]
        files_from = "fragments"
    files, seen = [], set()
    for p in raw_files:
        p = norm_path(p, tree)
        if p and p not in seen:
            seen.add(p)
            files.append(p)
    tokens = data.get("total_tokens")
    if not isinstance(tokens, (int, float)):
        tokens = sum(x["tokens"] or 0 for x in frags)
    return {"fragments": ranked, "files": files, "files_from": files_from, "tokens": tokens,
            "strategies_used": data.get("strategies_used"), "backends": data.get("backends")}


# --- metrics -------------------------------------------------------------------------------------------


def dcg(gains):
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def overlaps(path, rng, span):
    """Whether a result at path with line range rng intersects span."""
    return path == span["path"] and rng is not None and rng[0] <= span["lines"][1] and span["lines"][0] <= rng[1]


def chunk_metrics(results, spans, shows=None, prefix="chunk_"):
    """results: [(path, (start, end), fragment)] in rank order; spans: [{"path", "lines", "grade"}].

    With shows(fragment, j), a result overlaps span j only when that also holds.
    """
    credited, hit_any, gains = set(), set(), []
    for path, rng, frag in results[:K]:
        hits = [j for j, s in enumerate(spans) if overlaps(path, rng, s) and (shows is None or shows(frag, j))]
        gains.append(max((spans[j]["grade"] for j in hits if j not in credited), default=0))
        credited.update(hits)
        hit_any.update(hits)
    idcg = dcg(sorted((s["grade"] for s in spans), reverse=True)[:K])
    return {prefix + "ndcg": dcg(gains) / idcg if idcg else 0.0,
            prefix + "r10": len(hit_any) / len(spans) if spans else 0.0}, gains


def binary_ndcg(results, spans):
    """Binary NDCG@10: each span credits the first result overlapping it; a credited result gains 1."""
    gains = [0] * min(K, len(results))
    for s in spans:
        for i, (path, rng, _frag) in enumerate(results[:K]):
            if overlaps(path, rng, s):
                gains[i] = 1
                break
    idcg = dcg([1] * min(K, len(spans)))
    return {"binary_ndcg": dcg(gains) / idcg if idcg else 0.0}


def span_lines(tree, spans):
    """Per span, its non-blank lines as [(line, stripped text)]."""
    out = []
    for s in spans:
        lines = tree.lines(s["path"]) or []
        a, b = s["lines"]
        out.append([(ln, lines[ln - 1].strip()) for ln in range(a, b + 1)
                    if 1 <= ln <= len(lines) and lines[ln - 1].strip()])
    return out


def shows_half(per_span):
    """shows(fragment, j): of span j's non-blank lines inside the fragment's range, the fragment's
    content shows at least half (coverage's test), and there is at least one."""
    def shows(frag, j):
        a, b = frag["range"]
        inside = [text for ln, text in per_span[j] if a <= ln <= b]
        shown = sum(1 for text in inside if text in frag["content"])
        return bool(inside) and 2 * shown >= len(inside)
    return shows


def file_metrics(files, spans):
    grade = {}
    for s in spans:
        grade[s["path"]] = max(grade.get(s["path"], 0), s["grade"])
    gains = [grade.get(p, 0) for p in files[:K]]
    idcg = dcg(sorted(grade.values(), reverse=True)[:K])
    res = {"file_ndcg": dcg(gains) / idcg if idcg else 0.0}
    for k in FILE_KS:
        res[f"file_r{k}"] = len(set(files[:k]) & set(grade)) / len(grade) if grade else 0.0
    res["mrr"] = next((1.0 / (i + 1) for i, p in enumerate(files) if p in grade), 0.0)
    return res


METRICS = ("chunk_ndcg", "chunk_r10", "binary_ndcg", "shown_ndcg", "shown_r10", "file_ndcg", "file_r1", "file_r5", "file_r10", "mrr")
ZERO = dict.fromkeys(METRICS, 0.0)


def relevant_lines(tree, spans):
    """{(path, line): stripped text} of the spans' non-blank lines; also the spans missing from the tree."""
    out, missing = {}, []
    for s in spans:
        lines = tree.lines(s["path"])
        if lines is None:
            missing.append(s["path"])
            continue
        a, b = s["lines"]
        for ln in range(a, b + 1):
            if 1 <= ln <= len(lines):
                t = lines[ln - 1].strip()
                if t:
                    out[(s["path"], ln)] = t
    return out, missing


def engine_coverage(frags, rel):
    if not rel:
        return 0.0
    by_path = defaultdict(list)
    for f in frags:
        if f["path"] is not None and f["range"] is not None:
            by_path[f["path"]].append(f)
    covered = 0
    for (path, ln), text in rel.items():
        if any(f["range"][0] <= ln <= f["range"][1] and text in f["content"] for f in by_path.get(path, ())):
            covered += 1
    return covered / len(rel)


def approx_tokens(chars):
    return math.ceil(chars / 4)


def bm25_pack(tree, ranked, budget):
    used, packed = 0, []
    for p in ranked:
        t = approx_tokens(tree.chars.get(p, 0))
        if used + t <= budget:
            used += t
            packed.append(p)
    return packed, used


def percentile(values, q):
    return er.percentile(values, q)


# --- runner ---------------------------------------------------------------------------------------------


class Runner:
    def __init__(self, args, env, extra, total):
        self.args, self.env, self.extra, self.total = args, env, extra, total
        self.done = 0
        self.lock = threading.Lock()

    def query(self, tree, text, max_tokens):
        cmd = ["--home", self.args.home, "query", "--json", "--quiet", "--max-tokens", str(max_tokens), *self.extra,
               "--", text, str(tree.root)]
        elapsed, out, err = er.run_engine(self.args.agents, self.env, cmd, self.args.timeout)
        if err is not None:
            return elapsed, None, err
        try:
            data = json.loads(out)
        except json.JSONDecodeError as e:
            return elapsed, None, f"bad JSON: {e}"
        why = er.reports_unavailable(data) if isinstance(data, dict) else "not an object"
        if why:
            return elapsed, None, f"unavailable: {why}"
        return elapsed, parse_output(data, tree), None

    def run_repo(self, repo, rev, cases, single_rev):
        args = self.args
        t0 = time.perf_counter()
        tree = prepare_tree(repo, rev, single_rev, args)
        tree.load_docs()
        log(f"{repo}: tree {tree.source}: {len(tree.docs)} text files ({time.perf_counter() - t0:.1f}s)")
        budgets = args.budgets
        engine_budgets = [args.max_tokens] + [b for b in budgets if b != args.max_tokens]
        results = []
        first = True
        for case in cases:
            tc = time.perf_counter()
            spans = [{"path": r["path"], "lines": (int(r["lines"][0]), int(r["lines"][1])), "grade": int(r["grade"])}
                     for r in case["relevant"]]
            rel, missing = relevant_lines(tree, spans)
            per_span = span_lines(tree, spans)
            res = {"id": case["id"], "repo": repo, "rev": rev, "category": case.get("category"),
                   "query": case["query"], "relevant": spans, "relevant_lines": len(rel), "systems": {}}
            if missing:
                res["missing_in_tree"] = sorted(set(missing))
                log(f"{case['id']}: relevant files missing from the tree: {res['missing_in_tree']}")
            # Baselines.
            for system, only in (("bm25", None), ("bm25-src", er.is_source_path)):
                t = time.perf_counter()
                ranked = er.bm25_rank(tree.docs, case["query"], only=only)
                secs = time.perf_counter() - t
                results10 = [(p, (1, max(1, tree.line_count(p))), None) for p in ranked[:K]]
                cm, gains = chunk_metrics(results10, spans)
                # A whole file shows every line: the "shown" variant equals the plain one.
                sm, _ = chunk_metrics(results10, spans, prefix="shown_")
                entry = {"metrics": {**cm, **binary_ndcg(results10, spans), **sm, **file_metrics(ranked, spans)},
                         "error": None, "seconds": secs,
                         "top": [{"path": p, "lines": list(r), "gain": g} for (p, r, _), g in zip(results10, gains)],
                         "files": ranked[:20], "coverage": {}}
                for b in budgets:
                    packed, used = bm25_pack(tree, ranked, b)
                    pset = set(packed)
                    cov = sum(1 for (p, _ln) in rel if p in pset) / len(rel) if rel else 0.0
                    entry["coverage"][str(b)] = {"share": cov, "tokens": used, "files": len(packed)}
                res["systems"][system] = entry
            # Engine.
            if not args.no_engine:
                entry = {"metrics": dict(ZERO), "error": None, "coverage": {}, "calls": []}
                outputs = {}
                for b in engine_budgets:
                    elapsed, out, err = self.query(tree, case["query"], b)
                    entry["calls"].append({"max_tokens": b, "seconds": elapsed, "first": first, "error": err})
                    first = False
                    if err:
                        entry["error"] = entry["error"] or f"max-tokens {b}: {err}"
                    outputs[b] = out
                main = outputs.get(args.max_tokens)
                if main is not None:
                    frags = main["fragments"]
                    results10 = [(f["path"], f["range"], f) for f in frags[:K]]
                    cm, gains = chunk_metrics(results10, spans)
                    sm, sgains = chunk_metrics(results10, spans, shows=shows_half(per_span), prefix="shown_")
                    entry["metrics"] = {**cm, **binary_ndcg(results10, spans), **sm, **file_metrics(main["files"], spans)}
                    entry["top"] = [{"path": f["path"] or f["raw_path"], "lines": list(f["range"]) if f["range"] else None,
                                     "score": f["score"], "depth": f["depth"], "tokens": f["tokens"],
                                     "whole_file": f["whole_file"], "strategy": f["strategy"], "gain": g,
                                     "shown_gain": sg}
                                    for f, g, sg in zip(frags[:K], gains, sgains)]
                    entry["files"] = main["files"][:20]
                    entry["files_from"] = main["files_from"]
                    entry["fragments"] = len(frags)
                    # Every packed fragment, for re-ranking studies offline:
                    # [path, first line, last line, evidence, relevance_score, depth, tokens, kind, node,
                    # name_match, file standing, query words met (`met/words`), most of them in a
                    # short passage of the node (`near`) and of its file (`file_near`), the most
                    # of them a caller adds (`caller`), how many names of the answer's functions it
                    # calls when the question asks how something works (`callees`), whether the
                    # function a look-up names calls it (`called_by_named`)]
                    # (scripts/fit-chunk-ranker.py reads them).
                    entry["all"] = [[f["path"] or f["raw_path"], *(f["range"] or (None, None)), f["evidence"],
                                     f["score"], f["depth"], f["tokens"], f["kind"], f["node"], f["name_match"],
                                     f["standing"], f["terms"], f["near"], f["file_near"], f["caller"],
                                     f["callees"], f["called_by_named"]] for f in frags]
                    entry["strategies_used"] = main["strategies_used"]
                    entry["backends"] = main["backends"]
                    entry["diag"] = diagnostics(frags)
                for b in budgets:
                    out = outputs.get(b)
                    if out is None:
                        entry["coverage"][str(b)] = {"share": 0.0, "tokens": None, "error": True}
                        continue
                    entry["coverage"][str(b)] = {"share": engine_coverage(out["fragments"], rel),
                                                 "tokens": out["tokens"], "fragments": len(out["fragments"])}
                    if b == args.max_tokens or "calibration" not in entry:
                        entry["calibration"] = token_calibration(out["fragments"])
                res["systems"][ENGINE] = entry
            results.append(res)
            with self.lock:
                self.done += 1
                n = self.done
            summary = " ".join(
                f"{s}={v['metrics']['chunk_ndcg']:.2f}/{v['metrics']['mrr']:.2f}" + ("(ERR)" if v.get("error") else "")
                for s, v in res["systems"].items())
            log(f"[{n}/{self.total}] {case['id']} ({res['category']}) chunk-NDCG/MRR {summary} "
                f"{time.perf_counter() - tc:.1f}s")
        return results


def diagnostics(frags):
    top = frags[:K]
    scores = [f["score"] for f in top]
    paths = [f["path"] for f in top if f["path"]]
    return {
        "tied_pairs": sum(1 for a, b in zip(scores, scores[1:]) if a == b),
        "distinct_scores": len(set(scores)),
        "distinct_files": len(set(paths)),
        "repeated_files": sorted(p for p, n in Counter(paths).items() if n > 1),
        "tests": sum(1 for p in paths if TEST_PATH.search(p)),
        "docs": sum(1 for p in paths if DOC_PATH.search(p)),
        "no_path": sum(1 for f in top if not f["path"]),
        "rank1_test": bool(top and top[0]["path"] and TEST_PATH.search(top[0]["path"])),
        "tied_pairs_all": sum(1 for a, b in zip(frags, frags[1:]) if a["score"] == b["score"]),
        "overlap_pairs": sum(1 for i, a in enumerate(top) for b in top[i + 1:]
                             if a["path"] and a["path"] == b["path"] and a["range"] and b["range"]
                             and a["range"][0] <= b["range"][1] and b["range"][0] <= a["range"][1]),
        "whole_file": sum(1 for f in top if f["whole_file"]),
        "depths": dict(Counter(str(f["depth"]) for f in top)),
        "n": len(top),
    }


def token_calibration(frags):
    tok = sum(f["tokens"] for f in frags if isinstance(f["tokens"], (int, float)) and f["content"])
    approx = sum(approx_tokens(len(f["content"])) for f in frags if isinstance(f["tokens"], (int, float)) and f["content"])
    return {"tokens": tok, "approx": approx}


# --- aggregation and report ------------------------------------------------------------------------------


def aggregate(rows, system):
    xs = [r["systems"][system] for r in rows if system in r["systems"]]
    if not xs:
        return None
    agg = {"n": len(xs), "failed": sum(1 for x in xs if x.get("error"))}
    for m in METRICS:
        agg[m] = sum(x["metrics"][m] for x in xs) / len(xs)
    agg["coverage"] = {}
    for b in xs[0]["coverage"]:
        shares = [x["coverage"][b]["share"] for x in xs]
        toks = [x["coverage"][b]["tokens"] for x in xs if x["coverage"][b].get("tokens") is not None]
        agg["coverage"][b] = {"share": sum(shares) / len(shares), "tokens": sum(toks) / len(toks) if toks else None}
    return agg


def fmt(v, d=3):
    return "-" if v is None else f"{v:.{d}f}"


def metric_table(title, groups, report, note=""):
    lines = [f"## {title}", ""] + ([note, ""] if note else []) + [
        "| group | system | queries | failed | chunk NDCG@10 | chunk R@10 | binary NDCG@10 | shown NDCG@10 | "
        "shown R@10 | file NDCG@10 | file R@1 | file R@5 | file R@10 | MRR |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for g in groups:
        for s in report["systems"]:
            a = report["aggregates"][g].get(s)
            if a is None:
                continue
            lines.append(f"| {g} | {s} | {a['n']} | {a['failed']} | " + " | ".join(fmt(a[m]) for m in METRICS) + " |")
    return lines


def describe_files(files):
    dirs = sorted({os.path.dirname(f) for f in files})
    if len(files) > 3 and len(dirs) == 1:
        return f"{len(files)} files in {dirs[0] or '.'}/ ({', '.join(os.path.basename(f) for f in files)})"
    return ", ".join(files)


def markdown(report):
    counts = ", ".join(f"{c} {report['category_counts'][c]}" for c in report["categories"])
    L = ["# Natural-language retrieval evaluation", "",
         f"Command: `{report['command']}`", "",
         f"{report['cases']} queries ({counts}) "
         f"in {len(report['repos'])} repositories, from {describe_files(report['dev_files'])}. "
         + (f"Engine: `{report['agents']}` (sha256 {report['agents_sha256']}), home `{report['home']}`, "
            f"extra arguments `{report['extra_args'] or '(none)'}`, ranking run at --max-tokens {report['max_tokens']}. "
            if report["agents"] else "Engine not run. ")
         + f"Wall time {report['wall_s']:.0f} s.", ""]
    if report.get("missing_spans"):
        L += [f"Relevant spans whose file is missing from the tree (counted as misses): {report['missing_spans']}.", ""]
    L += metric_table("Overall", ["overall"], report, note=(
        "Chunk metrics credit a result for every relevant span its line range intersects (a BM25 result is a "
        "whole file); the shown variant also needs the fragment's content to show at least half of the span's "
        "non-blank lines inside its range. File metrics use `ranked_files` (engine) or the BM25 ranking. "
        "Definitions: the docstring of scripts/eval-nl.py."))
    L += [""] + metric_table("Per category", [f"category:{c}" for c in report["categories"]], report)
    L += [""] + metric_table("Per repository", [f"repo:{r}" for r in report["repos"]], report)

    # Coverage per token.
    bs = [str(b) for b in report["budgets"]]
    L += ["", "## Coverage per token", "",
          "Share of the relevant non-blank lines present in the packed context (mean over queries); tokens: mean "
          "tokens used (engine: its `total_tokens`, which includes its preamble and headers; BM25: ceil(chars/4) "
          "of the whole files packed, an approximation of the engine's o200k_base count, see the token count check "
          "under Engine output).", "",
          "| budget | engine | bm25 | bm25-src | engine / bm25 | engine / bm25-src | engine tokens | bm25 tokens | "
          "bm25-src tokens |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    ov = report["aggregates"]["overall"]
    for b in bs:
        cov = {s: (ov[s]["coverage"][b] if ov.get(s) else None) for s in SYSTEMS}
        share = {s: (c["share"] if c else None) for s, c in cov.items()}
        tok = {s: (c["tokens"] if c else None) for s, c in cov.items()}

        def ratio(a, c):
            return "-" if a is None or not c else f"{a / c:.2f}x"
        L.append(f"| {b} | {fmt(share[ENGINE])} | {fmt(share['bm25'])} | {fmt(share['bm25-src'])} | "
                 f"{ratio(share[ENGINE], share['bm25'])} | {ratio(share[ENGINE], share['bm25-src'])} | "
                 f"{fmt(tok[ENGINE], 0)} | {fmt(tok['bm25'], 0)} | {fmt(tok['bm25-src'], 0)} |")
    L += ["", "Per category and repository (engine / bm25 / bm25-src coverage):", "",
          "| group | queries | " + " | ".join(bs) + " |", "|---|---:|" + "---:|" * len(bs)]
    for g in [f"category:{c}" for c in report["categories"]] + [f"repo:{r}" for r in report["repos"]]:
        ag = report["aggregates"][g]
        n = max((a["n"] for a in ag.values() if a), default=0)
        cells = []
        for b in bs:
            cells.append(" / ".join(fmt(ag[s]["coverage"][b]["share"], 2) if ag.get(s) else "-" for s in SYSTEMS))
        L.append(f"| {g} | {n} | " + " | ".join(cells) + " |")

    # Latency.
    lat = report["latency"]
    if not report["agents"]:
        return "\n".join(L) + "\n"
    L += ["", "## Latency of `agents query`", "",
          "Warm: every call but the first of each repository (that one indexes the tree).", "",
          "| max-tokens | calls | p50 s | p95 s | max s |", "|---:|---:|---:|---:|---:|"]
    for b, v in lat["warm"].items():
        L.append(f"| {b} | {v['n']} | {fmt(v['p50'])} | {fmt(v['p95'])} | {fmt(v['max'])} |")
    L += ["", "First query per repository (it indexes the tree when the home has no index of it yet, else "
          "only checks it for changes): " +
          ", ".join(f"{r} {fmt(s, 1)} s" for r, s in lat["first"].items()), ""]

    # Engine output.
    eo = report["engine_output"]
    if eo:
        L += ["## Engine output", "",
              f"- strategies_used (queries naming each, ranking run): {eo['strategies']}",
              f"- backends (distinct values, ranking run): {eo['backends']}",
              f"- fragment strategies (provenance.strategy, top 10): {eo['fragment_strategies']}",
              f"- file ranking from: {eo['files_from']}",
              f"- fragments per ranking run: mean {fmt(eo['fragments_mean'], 1)}",
              f"- top 10: queries with tied relevance_score between neighbours {eo['queries_with_ties']}/{eo['n']} "
              f"(mean distinct scores {fmt(eo['distinct_scores_mean'], 1)} of {fmt(eo['top_n_mean'], 1)}); "
              f"mean distinct files {fmt(eo['distinct_files_mean'], 1)}; queries with a file repeated "
              f"{eo['queries_with_repeats']}/{eo['n']}",
              f"- ties over all fragments of a ranking run: {eo['queries_with_ties_all']}/{eo['n']} queries; "
              f"rank-1 fragment is a test: {eo['rank1_tests']}/{eo['n']} queries; top-10 fragment pairs of one "
              f"file with intersecting ranges (e.g. a module or class and a member of it): {eo['overlap_pairs']} "
              f"in {eo['queries_with_overlaps']}/{eo['n']} queries",
              f"- queries whose coverage drops as the budget grows: {len(eo['coverage_drops'])}/{eo['n']}"
              + (f" ({', '.join(eo['coverage_drops'][:12])}{', ...' if len(eo['coverage_drops']) > 12 else ''})"
                 if eo['coverage_drops'] else ""),
              f"- top-10 fragments that are tests {fmt(eo['tests_share'])}, docs/examples {fmt(eo['docs_share'])}, "
              f"without a file path {fmt(eo['no_path_share'])}, without a line range (whole file) "
              f"{fmt(eo['whole_file_share'])}; detail_depth counts {eo['depths']}",
              f"- token count check: engine token_count / ceil(len(content)/4) over delivered fragments = "
              f"{fmt(eo['token_ratio'], 2)} (BM25's budget uses ceil(chars/4))", ""]
    if report.get("errors"):
        L += ["Engine failures (most common):", ""] + [f"- {n}x `{e}`" for e, n in report["errors"].items()] + [""]
    return "\n".join(L) + "\n"


def engine_output_summary(results):
    rows = [r["systems"][ENGINE] for r in results if ENGINE in r["systems"] and "diag" in r["systems"][ENGINE]]
    if not rows:
        return None
    strategies, backends, fstrat, files_from, depths = Counter(), Counter(), Counter(), Counter(), Counter()
    for x in rows:
        su = x.get("strategies_used")
        if isinstance(su, dict):
            su = list(su)
        for s in su or []:
            strategies[s if isinstance(s, str) else json.dumps(s, sort_keys=True)] += 1
        backends[json.dumps(x.get("backends"), sort_keys=True)] += 1
        for t in x.get("top", []):
            fstrat[str(t.get("strategy"))] += 1
        files_from[x.get("files_from")] += 1
        depths.update(x["diag"]["depths"])
    n = len(rows)
    tops = sum(x["diag"]["n"] for x in rows) or 1
    cal_t = sum(x["calibration"]["tokens"] for x in rows if "calibration" in x)
    cal_a = sum(x["calibration"]["approx"] for x in rows if "calibration" in x)
    return {
        "n": n,
        "strategies": dict(sorted(strategies.items(), key=lambda kv: (-kv[1], kv[0]))),
        "backends": dict(sorted(backends.items(), key=lambda kv: (-kv[1], kv[0]))),
        "fragment_strategies": dict(sorted(fstrat.items(), key=lambda kv: (-kv[1], kv[0]))),
        "files_from": dict(files_from),
        "fragments_mean": sum(x["fragments"] for x in rows) / n,
        "queries_with_ties": sum(1 for x in rows if x["diag"]["tied_pairs"]),
        "distinct_scores_mean": sum(x["diag"]["distinct_scores"] for x in rows) / n,
        "top_n_mean": tops / n,
        "distinct_files_mean": sum(x["diag"]["distinct_files"] for x in rows) / n,
        "queries_with_repeats": sum(1 for x in rows if x["diag"]["repeated_files"]),
        "tests_share": sum(x["diag"]["tests"] for x in rows) / tops,
        "docs_share": sum(x["diag"]["docs"] for x in rows) / tops,
        "no_path_share": sum(x["diag"]["no_path"] for x in rows) / tops,
        "whole_file_share": sum(x["diag"]["whole_file"] for x in rows) / tops,
        "depths": dict(sorted(depths.items())),
        "token_ratio": cal_t / cal_a if cal_a else None,
        "rank1_tests": sum(1 for x in rows if x["diag"]["rank1_test"]),
        "queries_with_ties_all": sum(1 for x in rows if x["diag"]["tied_pairs_all"]),
        "queries_with_overlaps": sum(1 for x in rows if x["diag"]["overlap_pairs"]),
        "overlap_pairs": sum(x["diag"]["overlap_pairs"] for x in rows),
        "coverage_drops": sorted(r["id"] for r in results if ENGINE in r["systems"] and not r["systems"][ENGINE].get("error")
                                 and coverage_drops(r["systems"][ENGINE]["coverage"])),
    }


def coverage_drops(cov):
    """True when a larger budget covers less than a smaller one."""
    shares = [cov[b]["share"] for b in sorted(cov, key=int)]
    return any(a > b + 1e-9 for a, b in zip(shares, shares[1:]))


def latency_summary(results, engine_budgets):
    calls = [c for r in results if ENGINE in r["systems"] for c in r["systems"][ENGINE]["calls"]]
    warm = {}
    for b in sorted(engine_budgets):
        v = [c["seconds"] for c in calls if c["max_tokens"] == b and not c["first"] and not c["error"]]
        warm[str(b)] = {"n": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95), "max": max(v) if v else None}
    v = [c["seconds"] for c in calls if not c["first"] and not c["error"]]
    warm["all"] = {"n": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95), "max": max(v) if v else None}
    first = {}
    for r in results:
        for c in r["systems"].get(ENGINE, {}).get("calls", []):
            if c["first"]:
                first[r["repo"]] = c["seconds"]
    return {"warm": warm, "first": dict(sorted(first.items()))}


# --- driver ------------------------------------------------------------------------------------------------


def load_cases(patterns):
    files, cases = [], []
    for pat in patterns:
        matched = sorted(glob.glob(pat)) or ([pat] if os.path.isfile(pat) else [])
        files.extend(m for m in matched if m not in files)
    for fn in files:
        with open(fn, encoding="utf-8") as f:
            for ln, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    c = json.loads(line)
                    assert c["query"] and c["repo"] and c["rev"] and c["relevant"] and c["id"]
                    for r in c["relevant"]:
                        assert r["path"] and len(r["lines"]) == 2 and r["grade"] in (1, 2)
                except (json.JSONDecodeError, KeyError, AssertionError, TypeError) as e:
                    log(f"{fn}:{ln}: skipped ({type(e).__name__}: {e})")
                    continue
                cases.append(c)
    return files, cases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", default=str(ROOT / "eval" / "nl" / "*.jsonl"),
                    help="comma-separated JSONL files or globs (default eval/nl/*.jsonl)")
    ap.add_argument("--agents", default=str(ROOT / "target" / "release" / "agents"))
    ap.add_argument("--home", default=os.environ.get("AGENTS_EVAL_HOME") or "/work/eval-home",
                    help="the engine's home, passed as `agents --home` (default $AGENTS_EVAL_HOME or /work/eval-home)")
    ap.add_argument("--trees", default="/work/trees")
    ap.add_argument("--mirror-root", default="/work/.mirror")
    ap.add_argument("--work", default=os.environ.get("WORK") or "/tmp/agents-eval-nl",
                    help="where trees missing from --trees are materialised from the mirrors")
    ap.add_argument("--repos", default="", help="comma-separated owner/name (or name) filter")
    ap.add_argument("--categories", default="", help="comma-separated category filter")
    ap.add_argument("--limit", type=int, default=0, help="at most N cases per repository (evenly spaced by id)")
    ap.add_argument("--budgets", default="2000,8000,32000", help="coverage budgets in tokens")
    ap.add_argument("--max-tokens", type=int, default=8000, help="budget of the ranking (NDCG) run")
    ap.add_argument("--extra-args", default="", help="extra arguments for every `agents query` (shell-split)")
    ap.add_argument("--jobs", type=int, default=1, help="repositories evaluated in parallel")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per engine call")
    ap.add_argument("--no-engine", action="store_true", help="baselines only")
    ap.add_argument("--out", default=None, help="JSON with per-query details")
    args = ap.parse_args()
    command = " ".join(shlex.quote(a) for a in ["scripts/eval-nl.py", *sys.argv[1:]])

    args.budgets = sorted({int(b) for b in args.budgets.split(",") if b.strip()})
    extra = shlex.split(args.extra_args)
    agents_sha = "-"
    if not args.no_engine:
        agents = Path(args.agents)
        if not agents.is_file():
            sys.exit(f"engine binary not found: {agents} (build it or pass --agents)")
        args.agents = str(agents.resolve())
        agents_sha = hashlib.sha256(agents.read_bytes()).hexdigest()[:12]
        Path(args.home).mkdir(parents=True, exist_ok=True)
        args.home = str(Path(args.home).resolve())

    files, cases = load_cases([p.strip() for p in args.dev.split(",") if p.strip()])
    wanted = {r.strip() for r in args.repos.split(",") if r.strip()}
    cats = {c.strip() for c in args.categories.split(",") if c.strip()}
    cases = [c for c in cases
             if (not wanted or c["repo"] in wanted or c["repo"].split("/")[1] in wanted)
             and (not cats or c.get("category") in cats)]
    ids = Counter(c["id"] for c in cases)
    if any(n > 1 for n in ids.values()):
        log(f"duplicate ids: {[i for i, n in ids.items() if n > 1][:5]}")
    by_repo = defaultdict(list)
    for c in sorted(cases, key=lambda c: (c["repo"], c["id"])):
        by_repo[c["repo"]].append(c)
    er.spread_limit(by_repo, args.limit)
    groups = []  # (repo, rev, cases, single_rev)
    for repo in sorted(by_repo):
        revs = sorted({c["rev"] for c in by_repo[repo]})
        for rev in revs:
            groups.append((repo, rev, [c for c in by_repo[repo] if c["rev"] == rev], len(revs) == 1))
    total = sum(len(g[2]) for g in groups)
    if not total:
        sys.exit("no cases")
    engine_budgets = [args.max_tokens] + [b for b in args.budgets if b != args.max_tokens]
    log(f"{total} cases in {len(by_repo)} repositories from {len(files)} files; engine "
        f"{'off' if args.no_engine else args.agents}; budgets {args.budgets}, ranking at {args.max_tokens}")

    env = dict(os.environ, AGENTS_HOME=args.home) if not args.no_engine else dict(os.environ)
    runner = Runner(args, env, extra, total)
    start = time.perf_counter()
    results = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(runner.run_repo, *g) for g in groups]
        for f in futures:
            results.extend(f.result())
    wall = time.perf_counter() - start
    results.sort(key=lambda r: (r["repo"], r["id"]))

    systems = [s for s in SYSTEMS if any(s in r["systems"] for r in results)]
    repos = sorted(by_repo)
    categories = [c for c in CATEGORIES if any(r["category"] == c for r in results)] + \
        sorted({r["category"] for r in results} - set(CATEGORIES), key=str)
    buckets = {"overall": results}
    for c in categories:
        buckets[f"category:{c}"] = [r for r in results if r["category"] == c]
    for repo in repos:
        buckets[f"repo:{repo}"] = [r for r in results if r["repo"] == repo]
    errors = Counter(r["systems"][ENGINE]["error"] for r in results
                     if ENGINE in r["systems"] and r["systems"][ENGINE].get("error"))
    report = {
        "command": command,
        "dev_files": [os.path.relpath(f, ROOT) if f.startswith(str(ROOT)) else f for f in files],
        "cases": len(results),
        "category_counts": {c: sum(1 for r in results if r["category"] == c) for c in categories},
        "repos": repos,
        "categories": categories,
        "systems": systems,
        "agents": None if args.no_engine else args.agents,
        "agents_sha256": agents_sha,
        "home": None if args.no_engine else args.home,
        "extra_args": args.extra_args,
        "max_tokens": args.max_tokens,
        "budgets": args.budgets,
        "wall_s": wall,
        "missing_spans": sum(len(r.get("missing_in_tree", [])) for r in results),
        "aggregates": {g: {s: aggregate(rows, s) for s in systems} for g, rows in buckets.items()},
        "latency": latency_summary(results, engine_budgets),
        "engine_output": engine_output_summary(results),
        "errors": dict(errors.most_common(5)),
        "results": results,
    }
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, sort_keys=True)
    sys.stdout.write(markdown(report))
    log(f"done in {wall:.0f}s" + (f"; JSON in {args.out}" if args.out else ""))


if __name__ == "__main__":
    main()
