#!/usr/bin/env python3
"""Scores the code graph's call and import edges against a hand-checked sample.

The sample (eval/edges/*.jsonl, one file per language) holds references read
off the dev repositories and checked by reading the code: repo, file, line,
kind (`calls` or `import`), the enclosing symbol, the callee text as written,
and the expected target: `path#Symbol.path` for a call, the file for an
import (a directory ending in `/` for a Go package, `./` for the module
root), or `unresolved` when the target is not in the repository (standard
library, third-party package, builtin) or not a callable.

The script indexes each sampled repository with the given binary (debug
build is fine) into a throwaway AGENTS_HOME, reads the stored references
and prints precision and recall per language and kind:

  precision = edges bound to the expected target / edges bound
  recall    = edges bound to the expected target / sampled references whose
              target is in the repository

Overloads and redefinitions (`Group.command~2`) count as the same target.
It also counts call self-loops in the whole graph (a call bound to the node
it is written in), which should be zero.

Usage:
  scripts/eval-edges.py [--binary target/debug/agents] [--trees /work/trees]
                        [--home DIR] [--reuse] [--markdown]
"""

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Repositories indexed as a part only (the sample comes from that part).
SUBTREES = {"withastro/astro": ["packages/astro/src", "packages/astro/package.json"]}
LANGUAGES = ["python", "typescript", "javascript", "rust", "go", "lua"]


def load_sample(directory):
    sample = []
    for language in LANGUAGES:
        path = directory / f"{language}.jsonl"
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{number}: not JSON: {e}")
            missing = {"repo", "file", "line", "kind", "callee", "expected"} - record.keys()
            if missing:
                sys.exit(f"{path}:{number}: missing {sorted(missing)}")
            record["language"] = language
            sample.append(record)
    return sample


def prepare_tree(trees, repo, scratch):
    source = trees / repo.replace("/", "+")
    if not source.is_dir():
        sys.exit(f"{source}: no such tree (give --trees)")
    parts = SUBTREES.get(repo)
    if not parts:
        return source
    target = scratch / repo.replace("/", "+")
    if target.exists():
        return target
    for part in parts:
        src, dst = source / part, target / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        elif src.exists():
            shutil.copy2(src, dst)
    return target


def index(binary, home, tree):
    env = dict(os.environ, AGENTS_HOME=str(home))
    done = subprocess.run([str(binary), "index", str(tree)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"indexing {tree} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def strip_uri(uri):
    """`uko://<resource>/path#Sym` -> `path#Sym`."""
    return uri.split("/", 3)[3] if uri else None


def normalize(target):
    """Overloads and redefinitions name the same target: drop `~N`."""
    return re.sub(r"~\d+", "", target)


def reference_name(target):
    parts = [p for p in re.split(r"[.:>-]", target) if p and p != "<"]
    return parts[-1].rstrip("!") if parts else ""


def produced_target(ref, kind):
    if kind == "import":
        return ref["resolved_path"]
    return strip_uri(ref["resolved_uri"])


def correct(record, produced):
    expected = record["expected"]
    if produced is None or expected == "unresolved":
        return False
    if expected.endswith("/"):
        directory = produced.rsplit("/", 1)[0] + "/" if "/" in produced else "./"
        return directory == expected
    return normalize(produced) == normalize(expected)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=str(ROOT / "target/debug/agents"))
    parser.add_argument("--trees", default="/work/trees")
    parser.add_argument("--sample", default=str(ROOT / "eval/edges"))
    parser.add_argument("--home", help="AGENTS_HOME to index into (default: a temporary one)")
    parser.add_argument("--reuse", action="store_true", help="score an already indexed --home")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--misses", action="store_true", help="list wrong and missed edges")
    args = parser.parse_args()

    sample = load_sample(Path(args.sample))
    scratch = Path(tempfile.mkdtemp(prefix="eval-edges-"))
    home = Path(args.home) if args.home else scratch / "home"
    repos = sorted({r["repo"] for r in sample})
    trees = {}
    for repo in repos:
        trees[repo] = prepare_tree(Path(args.trees), repo, scratch / "trees")
        if not args.reuse:
            index(args.binary, home, trees[repo])

    db = sqlite3.connect(home / "agents.db")
    db.row_factory = sqlite3.Row
    resources = {}
    for row in db.execute(
        "SELECT r.path, i.index_id FROM resources r JOIN repo_indexes i ON i.resource_id = r.resource_id"
    ):
        resources[Path(row["path"]).name] = row["index_id"]

    stats = defaultdict(lambda: defaultdict(int))
    misses = []
    for record in sample:
        index_id = resources.get(trees[record["repo"]].name)
        if index_id is None:
            sys.exit(f"{record['repo']}: not indexed in {home}")
        kind = record["kind"]
        # The compact graph (schema 11): a resolved target is a path id and a
        # symbol id; its URI is derived (the resource part does not matter here).
        refs = db.execute(
            "SELECT r.target, tp.path AS resolved_path,"
            " CASE WHEN ts.text IS NULL THEN NULL WHEN ts.text = '' THEN 'uko://r/' || tp.path"
            " ELSE 'uko://r/' || tp.path || '#' || ts.text END AS resolved_uri"
            " FROM uko_refs r JOIN uko_paths p ON p.path_id = r.path_id JOIN uko_graphs g ON g.graph_id = p.graph_id"
            " JOIN uko_strings k ON k.string_id = r.kind_id LEFT JOIN uko_paths tp ON tp.path_id = r.to_path_id"
            " LEFT JOIN uko_strings ts ON ts.string_id = r.to_symbol_id"
            " WHERE g.index_id = ? AND p.path = ? AND r.line = ? AND k.text = ?",
            (index_id, record["file"], record["line"], kind),
        ).fetchall()
        exact = [r for r in refs if r["target"] == record["callee"]]
        by_name = [r for r in refs if reference_name(r["target"]) == reference_name(record["callee"])]
        ref = (exact or (by_name if kind == "calls" else []) or [None])[0]
        produced = produced_target(ref, kind) if ref is not None else None
        ok = correct(record, produced)
        for key in ((record["language"], kind), (record["language"], "all"), ("all", "all")):
            s = stats[key]
            s["sampled"] += 1
            s["in_repo"] += record["expected"] != "unresolved"
            s["bound"] += produced is not None
            s["correct"] += ok
        if (produced is not None and not ok) or (record["expected"] != "unresolved" and not ok):
            misses.append((record, produced))

    loops = db.execute(
        "SELECT COUNT(*) FROM uko_refs r JOIN uko_strings k ON k.string_id = r.kind_id"
        " WHERE k.text = 'calls' AND r.to_path_id = r.path_id AND r.to_symbol_id = r.from_id"
    ).fetchone()[0]

    def ratio(a, b):
        return f"{a / b:.2f}" if b else "-"

    rows = []
    for language in LANGUAGES + ["all"]:
        for kind in (["calls", "import", "all"] if language != "all" else ["all"]):
            s = stats.get((language, kind))
            if not s:
                continue
            rows.append(
                (
                    language,
                    kind,
                    s["sampled"],
                    s["in_repo"],
                    s["bound"],
                    s["correct"],
                    ratio(s["correct"], s["bound"]),
                    ratio(s["correct"], s["in_repo"]),
                )
            )
    header = ("language", "kind", "sampled", "in repo", "bound", "correct", "precision", "recall")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(str(c) for c in row) + " |")
    else:
        print("  ".join(f"{h:>10}" for h in header))
        for row in rows:
            print("  ".join(f"{c!s:>10}" for c in row))
    print(f"call self-loops in the graph: {loops}")
    if args.misses:
        for record, produced in misses:
            print(
                f"{record['language']} {record['file']}:{record['line']} {record['callee']}: "
                f"expected {record['expected']}, got {produced}"
            )


if __name__ == "__main__":
    main()
