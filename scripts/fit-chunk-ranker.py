#!/usr/bin/env python3
"""Fit the chunk ranker's logistic model (crates/agents-acms/src/pipeline/components.rs, `ranker`).

Reads the JSON of a natural-language evaluation run (scripts/eval-nl.py --out X.json: every
packed fragment of each engine answer, with its evidence, kind, lines, name match and file
standing), labels each fragment by whether its lines meet an annotated span of its question,
and fits a logistic model (L2-regularised, Newton steps, numpy) over:

  ln(file standing), the same again when the query asks how something works (QueryNames::asks_how:
  it opens with `how`, not `how many`/`much`/`long`/`often`, or `what happens`, `walk through`,
  `trace`, `explain`, `lifecycle`), 1/(1 + place among its file's pieces), evidence, name match,
  function/method, class-like container, whole-file node (module, file, document),
  ln(lines) of a node that is not a whole file,
  test / document / example / stub-or-generated file (the engine's FileRole rules; an example
  counts as source when the query asks for examples, as RolesAsked has it, and so does a
  definition the query names outright, name match 1, that is not a test case, in a file whose
  own name is not a test's or a document's, as ranker_logit has it; otherwise a test case or a
  piece of a test module, Rust's `mod tests`, counts as a test whatever its file),
  the share and the number of the query's words the node's text contains, and the share that
  a short passage of it, and of its whole file, holds together (`near`, `file_near`; 0 for a
  look-up), the share a function calling it adds to its own (`caller`; 0 for a look-up), and
  ln(1 + how many distinct names of the answer's functions it calls) (`callees`; 0 unless the
  question asks how something works), and whether the function a look-up names outright calls
  it (`called_by_named`; 0 for a question).

The weights are fitted pairwise by default (RankNet: within each question, the log-odds that a
fragment meeting a span outranks one that does not, each question weighing the same), then the
constant term alone pointwise so the probabilities stay calibrated; `--objective pointwise`
fits P(meets a span) over all fragments at once instead.

A whole-file node's range meets every span of its file whatever it shows: it is labelled as
meeting a span only when it was delivered with its text (depth 9), not as a skeleton.

It prints the coefficients to paste into `ranker`, then chunk NDCG@10 of three orders of the
same packed fragments: the run's own (relevance_score), the model fitted on everything
(in-sample), and the model fitted without each repository in turn and applied to it
(leave-one-repository-out: the figure to trust), overall, per category and per repository,
and "hindsight": the same fragments in the best order knowing the annotated spans, the bound
of any re-ranking of what the answers pack.

With `--commits LOC.json` (a scripts/eval-retrieval.py run, which keeps every fragment too) it
fits on the commit-message cases as well: a fragment of a file the commit changed is a positive,
and the report adds file MRR and recall@10 of the files in the order of their first fragment.

Usage: python3 scripts/fit-chunk-ranker.py RUN.json [--l2 1.0] [--objective pairwise|pointwise]
                                          [--commits LOC.json [--commit-weight 1.0]]
Needs numpy (pip install numpy); the run must come from an engine whose JSON fragments carry
the `evidence`, `name_match`, `standing`, `term_coverage`, `terms_met`, `near`, `file_near`,
`caller`, `callees` and `called_by_named` metadata (a run from before those last seven counts
them as 0).
"""

import argparse
import collections
import importlib.util
import json
import math
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("eval_nl", os.path.join(HERE, "eval-nl.py"))
eval_nl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(eval_nl)

FEATURES = ["bias", "ln_standing", "ln_standing_how", "inv_ordinal", "evidence", "name_match", "function", "container", "whole_file",
            "ln_lines", "test", "doc", "example", "stub_or_generated", "term_coverage", "terms_met", "near_coverage",
            "file_near_coverage", "caller_coverage", "ln_callees", "called_by_named"]
FUNCTION = {"function", "method"}
CONTAINER = {"class", "struct", "interface", "trait", "enum", "impl", "type", "protocol", "record", "object"}
WHOLE_FILE = {"module", "file", "document"}


def is_test_class_file(name):
    """The engine's is_test_class_file: `RouterTest.java`, `SessionTests.swift`, `MapSpec.hs`."""
    if "." not in name:
        return False
    stem, ext = name.rsplit(".", 1)
    if ext not in ("java", "kt", "scala", "groovy", "swift", "cs", "php", "hs"):
        return False
    return (stem.endswith("Test") or stem.endswith("Tests") or (ext == "java" and len(stem) > 2 and stem.endswith("IT"))
            or (ext in ("scala", "groovy", "hs") and stem.endswith("Spec")))


def file_role(path):
    """The engine's FileRole::of (crates/agents-acms/src/retrieval/mod.rs), in Python."""
    lower = path.lower()
    parts = lower.split("/")
    name, dirs = parts[-1], parts[:-1]

    def ends(suffixes):
        return any(name.endswith(s) for s in suffixes)

    if any(d in ("vendor", "vendored", "third_party", "third-party", "node_modules", "dist", "generated",
                 "__generated__") for d in dirs) or ends([".min.js", ".min.css", "_pb2.py", "_pb2_grpc.py",
                                                          ".pb.go", ".generated.ts", ".generated.js", ".g.dart"]):
        return "generated"
    if any(d in ("test", "tests", "__tests__", "spec", "specs", "fixtures", "testdata", "e2e", "fuzz", "fuzzing")
           for d in dirs) or lower.startswith("testing/") or name.startswith("test_") or name == "conftest.py" or ends(
            ["_test.go", "_test.py", "_test.rs", ".test.ts", ".test.js", ".test.tsx", ".test.jsx", ".test.mjs",
             ".test.cjs", ".spec.ts", ".spec.js", ".spec.tsx", ".spec.jsx", ".spec.mjs", "_tests.rs", "tests.py",
             "_spec.rb", "_test.rb", "_test.exs", "_spec.lua", "_test.c", "_test.cc", "_test.cpp", "_test.cxx",
             "_tests.cc", "_tests.cpp", "_unittest.cc", "_unittest.cpp"]) or is_test_class_file(path.split("/")[-1]):
        return "test"
    if any(d in ("examples", "example", "samples", "sample", "benches", "benchmarks", "bench", "benchmark", "profiling")
           for d in dirs):
        return "example"
    if any(d in ("docs", "doc", "documentation", "docs_src") for d in dirs) or ends(
            [".md", ".mdx", ".rst", ".txt", ".adoc"]) or name.startswith("changelog") or name.startswith("history"):
        return "doc"
    if ends([".pyi", ".d.ts", ".d.mts", ".d.cts"]):
        return "stub"
    return "source"


EXAMPLE_WORDS = {"example", "examples", "sample", "samples", "bench", "benches", "benchmark", "benchmarks", "profiling"}


def asks_for_examples(query):
    """The engine's RolesAsked::of (crates/agents-acms/src/retrieval/mod.rs): the query names
    examples or benchmarks as a word, and their files then rank as source."""
    return any(w.lower() in EXAMPLE_WORDS for w in re.split(r"[^0-9A-Za-z]+", query or "") if w)


def in_test_module(uri):
    """The engine's in_test_module (crates/agents-acms/src/retrieval/mod.rs): the node is a test
    module of its file (`#tests`) or lies in one (a `tests` or `test` segment before its own name)."""
    if "#" not in (uri or ""):
        return False
    *outer, own = uri.split("#", 1)[1].split(".")
    return own == "tests" or any(s in ("tests", "test") for s in outer)


def words_met(f):
    """(share, number) of the query's words a fragment's node holds: its `met/words` column
    (runs from before it: the two numbers, or nothing)."""
    if len(f) > 12 and isinstance(f[11], (int, float)):
        return float(f[11]), float(f[12])
    try:
        met, words = (int(x) for x in str(f[11]).split("/"))
        return (met / words if words else 0.0), float(met)
    except (IndexError, ValueError):
        return 0.0, 0.0


def near_share(f, column=12):
    """The share of the query's words a short passage of the fragment's node (column 12, `near`)
    or of its file (column 13, `file_near`) holds, or a caller adds (column 14, `caller`), over the
    `met/words` column's words (0 for runs from before it)."""
    try:
        words = int(str(f[11]).split("/")[1])
        return f[column] / words if words and len(f) > column and isinstance(f[column], (int, float)) else 0.0
    except (IndexError, ValueError):
        return 0.0


def ln_callees(f):
    """ln(1 + how many distinct names of the answer's functions the fragment's node calls): column 15,
    `callees`, set for a question asking how something works only (0 for runs from before it)."""
    return math.log1p(f[15]) if len(f) > 15 and isinstance(f[15], (int, float)) else 0.0


def called_by_named(f):
    """Whether the function a look-up names outright calls the fragment's node: column 16,
    `called_by_named` (0 for runs from before it)."""
    return float(f[16]) if len(f) > 16 and isinstance(f[16], (int, float)) else 0.0


def asks_how(query):
    """The engine's QueryNames::asks_how (crates/agents-acms/src/retrieval/mod.rs), in Python."""
    words = [re.sub(r"^[\W_]+|[\W_]+$", "", t.lower()) for t in (query or "").split()]
    first, second = (words + ["", ""])[:2]
    if first == "how":
        return second not in ("many", "much", "long", "often")
    return (first, second) in (("what", "happens"), ("walk", "through")) or first in ("trace", "explain", "lifecycle")


def features(case):
    """One row per packed fragment of the case's engine answer, and the fragments."""
    engine = case["systems"]["engine"]
    asks_example = asks_for_examples(case.get("query"))
    how = asks_how(case.get("query"))
    fragments = engine["all"]
    files = engine["files"]
    by_file = collections.defaultdict(list)
    for f in fragments:
        by_file[f[0]].append(f)
    ordinal = {}
    for group in by_file.values():
        for j, f in enumerate(sorted(group, key=lambda f: -f[4])):
            ordinal[id(f)] = j
    rows = []
    for f in fragments:
        path, first, last, evidence, _score, _depth, _tokens, kind, _node, name_match = f[:10]
        standing = f[10] if len(f) > 10 and f[10] > 0 else None
        if standing is None:  # a run from before the standing was delivered: its ranked_files order
            i = files.index(path) if path in files else len(files)
            standing = 1 / (1 + i / 3)
        lines = (last - first + 1) if first is not None else 1
        role = file_role(path or "")
        named = name_match >= 1.0 and kind != "test" and file_role((path or "").rsplit("/", 1)[-1]) == "source"
        if (role == "example" and asks_example) or named:
            role = "source"
        elif kind == "test" or in_test_module(_node):
            role = "test"
        ln_standing = math.log(max(standing, 1e-3))
        rows.append([1.0, ln_standing, ln_standing if how else 0.0, 1 / (1 + ordinal[id(f)]), evidence, name_match,
                     kind in FUNCTION, kind in CONTAINER, kind in WHOLE_FILE,
                     0.0 if kind in WHOLE_FILE else math.log(max(lines, 1)),
                     role == "test", role == "doc", role == "example", role in ("stub", "generated"),
                     *words_met(f), near_share(f), near_share(f, 13), near_share(f, 14), ln_callees(f),
                     called_by_named(f)])
    return np.array(rows, dtype=float), fragments


def meets_a_span(f, spans):
    if f[7] in WHOLE_FILE and f[5] != 9:
        return False
    return any(s["path"] == f[0] and f[1] is not None and f[1] <= s["lines"][1] and s["lines"][0] <= f[2]
               for s in spans)


def standardise(data):
    x = np.vstack([d[1] for d in data])
    mu, sd = x.mean(0), x.std(0)
    mu[0], sd[0] = 0.0, 1.0
    sd[sd == 0] = 1.0
    return mu, sd


def unstandardise(w, mu, sd):
    raw = w / sd
    raw[0] = w[0] - (w[1:] * mu[1:] / sd[1:]).sum()
    return raw


def fit_pointwise(data, l2):
    """Logistic regression of P(meets a span) over every fragment (Newton steps)."""
    mu, sd = standardise(data)
    z = (np.vstack([d[1] for d in data]) - mu) / sd
    y = np.concatenate([d[2] for d in data])
    w = np.zeros(z.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-z @ w))
        gradient = z.T @ (p - y) + l2 * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + l2 * np.eye(len(w))
        w -= np.linalg.solve(hessian, gradient)
    return unstandardise(w, mu, sd)


def fit_pairwise(data, l2):
    """RankNet: within each question, the log-odds that a fragment meeting a span outranks
    one that does not, every question weighing the same; then the constant term alone,
    fitted pointwise, so the model's probabilities stay calibrated."""
    mu, sd = standardise(data)
    pairs, weights = [], []
    for d in data:
        z, y = (d[1] - mu) / sd, d[2]
        good, bad = np.where(y > 0)[0], np.where(y == 0)[0]
        if len(good) and len(bad):
            diff = (z[good][:, None, :] - z[bad][None, :, :]).reshape(-1, z.shape[1])
            pairs.append(diff)
            weights.append(np.full(len(diff), d[0].get("weight", 1.0) / len(diff)))
    diff, weight = np.vstack(pairs), np.concatenate(weights)
    penalty = 0.01 * l2 * np.eye(diff.shape[1])
    penalty[0, 0] = 1.0  # the constant cancels in a difference
    w = np.zeros(diff.shape[1])
    for _ in range(30):
        p = 1 / (1 + np.exp(-diff @ w))
        gradient = -(diff * (weight * (1 - p))[:, None]).sum(0) + penalty @ w
        hessian = (diff * (weight * p * (1 - p))[:, None]).T @ diff + penalty
        w -= np.linalg.solve(hessian, gradient)
    # The constant term: with the other weights fixed, Newton steps on the pointwise loss.
    z = (np.vstack([d[1] for d in data]) - mu) / sd
    y = np.concatenate([d[2] for d in data])
    w[0] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-z @ w))
        w[0] -= (p - y).sum() / max((p * (1 - p)).sum(), 1e-9)
    return unstandardise(w, mu, sd)


FIT = {"pairwise": fit_pairwise, "pointwise": fit_pointwise}


def hindsight(case, fragments):
    """The fragments in the best order knowing the spans: greedily, the one meeting the
    highest-graded span not yet met (the bound any re-ordering of these fragments can reach)."""
    spans = case["relevant"]

    def met(f):
        return {j for j, s in enumerate(spans)
                if s["path"] == f[0] and f[1] is not None and f[1] <= s["lines"][1] and s["lines"][0] <= f[2]}

    remaining, credited, order = list(fragments), set(), []
    while remaining and len(order) < eval_nl.K:
        best = max(remaining, key=lambda f: max((spans[j]["grade"] for j in met(f) - credited), default=0))
        order.append(best)
        remaining.remove(best)
        credited |= met(best)
    return order


def ndcg(case, ordered):
    metrics, _ = eval_nl.chunk_metrics([(f[0], (f[1], f[2]), None) for f in ordered], case["relevant"])
    return metrics["chunk_ndcg"]


def file_order(case, ordered):
    """Files in the order their first fragment comes, then the run's other ranked files."""
    seen, out = set(), []
    for path in [f[0] for f in ordered] + list(case["systems"]["engine"]["files"]):
        if path and path not in seen:
            seen.add(path)
            out.append(path)
    return out


def file_scores(case, ordered):
    """MRR and recall@10 of the changed files (a commit-message case) in `ordered`'s file order."""
    files, truth = file_order(case, ordered), set(case["changed"])
    mrr = next((1 / (i + 1) for i, p in enumerate(files) if p in truth), 0.0)
    return mrr, len(truth & set(files[:10])) / len(truth)


def commit_cases(path, weight):
    """The commit-message cases of a scripts/eval-retrieval.py run, as cases of this script:
    a fragment is a positive when its file is one the commit changed."""
    out = []
    for case in json.load(open(path))["results"]:
        engine = case["systems"].get("agents:default") or {}
        if not engine.get("all"):
            continue
        as_case = {"repo": case["repo"], "category": "commit", "query": case["query"], "relevant": [],
                   "changed": case["files"], "weight": weight,
                   "systems": {"engine": {"all": engine["all"], "files": engine.get("ranked") or []}}}
        x, fragments = features(as_case)
        y = np.array([1.0 if f[0] in set(case["files"]) else 0.0 for f in fragments])
        out.append((as_case, x, y, fragments))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="JSON written by scripts/eval-nl.py --out")
    ap.add_argument("--l2", type=float, default=1.0, help="ridge penalty on standardised weights (default 1)")
    ap.add_argument("--commits", help="also fit on a scripts/eval-retrieval.py run (JSON with every fragment): "
                    "a fragment of a file the commit changed is a positive")
    ap.add_argument("--commit-weight", type=float, default=1.0,
                    help="weight of each commit-message case against a question's 1 (default 1)")
    ap.add_argument("--objective", choices=sorted(FIT), default="pairwise",
                    help="pairwise (default: order within each question) or pointwise (P(meets a span))")
    args = ap.parse_args()
    run = json.load(open(args.run))
    data = []
    for case in run["results"]:
        if not case["systems"].get("engine", {}).get("all"):
            continue
        x, fragments = features(case)
        y = np.array([1.0 if meets_a_span(f, case["relevant"]) else 0.0 for f in fragments])
        data.append((case, x, y, fragments))
    if not data:
        sys.exit(f"{args.run}: no engine answers with their fragments (run scripts/eval-nl.py from this tree)")
    if args.commits:
        data += commit_cases(args.commits, args.commit_weight)
    fit = FIT[args.objective]
    weights = fit(data, args.l2)
    print(f"{len(data)} cases, {sum(len(d[3]) for d in data)} fragments, "
          f"{int(sum(d[2].sum() for d in data))} positives\n")
    print("| feature | weight |\n|---|---:|")
    for name, w in zip(FEATURES, weights):
        print(f"| {name} | {w:+.4f} |")
    scores = {k: collections.defaultdict(list) for k in ("run", "in-sample", "held-out", "hindsight")}
    commits = {k: collections.defaultdict(list) for k in ("run", "in-sample", "held-out")}
    repos = sorted({d[0]["repo"] for d in data})
    for repo in repos:
        held = fit([d for d in data if d[0]["repo"] != repo], args.l2)
        for case, x, _, fragments in (d for d in data if d[0]["repo"] == repo):
            if case["category"] == "commit":
                for name, w in (("run", None), ("in-sample", weights), ("held-out", held)):
                    ordered = (sorted(fragments, key=lambda f: -f[4]) if w is None
                               else [fragments[i] for i in np.argsort(-(x @ w), kind="stable")])
                    mrr, r10 = file_scores(case, ordered)
                    commits[name]["mrr"].append(mrr)
                    commits[name]["r@10"].append(r10)
                continue
            orders = {
                "run": sorted(fragments, key=lambda f: -f[4]),
                "in-sample": [fragments[i] for i in np.argsort(-(x @ weights), kind="stable")],
                "held-out": [fragments[i] for i in np.argsort(-(x @ held), kind="stable")],
                "hindsight": hindsight(case, sorted(fragments, key=lambda f: -f[4])),
            }
            for name, ordered in orders.items():
                v = ndcg(case, ordered)
                for group in ("overall", "category:" + case["category"], "repo:" + repo):
                    scores[name][group].append(v)
    print("\n| group | questions | run | in-sample | held out (leave one repository out) | hindsight |\n"
          "|---|---:|---:|---:|---:|---:|")
    groups = sorted(scores["run"], key=lambda g: (g != "overall", not g.startswith("category:"), g))
    for g in groups:
        mean = {k: sum(scores[k][g]) / len(scores[k][g]) for k in scores}
        print(f"| {g} | {len(scores['run'][g])} | {mean['run']:.3f} | {mean['in-sample']:.3f} | {mean['held-out']:.3f} "
              f"| {mean['hindsight']:.3f} |")
    if commits["run"]:
        print("\nCommit messages (files in the order of their first fragment, then the run's ranked files):\n")
        print("| measure | cases | run | in-sample | held out |\n|---|---:|---:|---:|---:|")
        for m in ("mrr", "r@10"):
            v = {k: sum(commits[k][m]) / len(commits[k][m]) for k in commits}
            print(f"| {m} | {len(commits['run'][m])} | {v['run']:.3f} | {v['in-sample']:.3f} | {v['held-out']:.3f} |")


if __name__ == "__main__":
    main()
