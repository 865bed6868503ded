#!/usr/bin/env python3
"""A plain chunk-level hybrid ranker, scored like the engine on the natural-language dev sets.

What a "static embeddings + BM25" code search does, written plainly, as a reference for the
engine's chunk ranking (docs/benchmarks.md, "Where the order goes wrong", session 21): the
repository's functions and methods, and its classes of at most 150 lines, are the chunks (a file
with none is cut into 100-line windows every 80 lines); each chunk is ranked by

    BM25(chunk) / best BM25  +  W * max(0, cosine) / best cosine

(the whole-file baseline's BM25 of scripts/eval-retrieval.py over the path and text of each
chunk: identifiers and their parts, k1 1.2, b 0.75; the cosine of the bundled static model's mean
token vectors over "kind, name words, path words, text" against the query's), times 0.5 outside
source files (the engine's file roles, as scripts/fit-chunk-ranker.py writes them), times 1.5
when every word of the chunk's name is a word of the query; the ten results are taken greedily
with 0.8 per chunk of a file already taken. Chunk NDCG@10 as scripts/eval-nl.py scores it (graded spans, each
credited once), next to the engine's own from the same run.

The chunks are the engine's own nodes, read from the SQLite store of the home the run used
(so both rankings see the same boundaries); the trees are the run's. Needs numpy, tokenizers
and safetensors.

    scripts/chunk-hybrid-baseline.py RUN.json --home HOME --trees /tmp/ev/trees
                                     [--repos owner/name,...] [--weights 0,0.5,1,2]
"""

import argparse
import collections
import importlib.util
import json
import os
import re
import sqlite3
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "crates", "agents-search", "model", "minilm-code-static")


def _load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


eval_nl = _load("eval_nl", "eval-nl.py")
fit = _load("fit_chunk_ranker", "fit-chunk-ranker.py")
bm25 = eval_nl.er  # scripts/eval-retrieval.py: the whole-file baseline's tokenizer and BM25
CALLABLE = ("function", "method", "test", "macro")
CONTAINER = ("class", "struct", "interface", "trait", "enum", "impl", "type", "type_alias", "protocol", "record",
             "object", "namespace")


def split_ident(text):
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text)
    return re.findall(r"[a-z0-9]+", text.lower())


class Model:
    def __init__(self, path):
        self.tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        self.vectors = next(iter(load_file(os.path.join(path, "model.safetensors")).values()))

    def embed(self, texts):
        out = np.zeros((len(texts), self.vectors.shape[1]), dtype=np.float32)
        for i, enc in enumerate(self.tokenizer.encode_batch([t[:4000] for t in texts], add_special_tokens=False)):
            ids = enc.ids[:512]
            if ids:
                v = self.vectors[ids].mean(0)
                n = np.linalg.norm(v)
                out[i] = v / n if n > 0 else v
        return out


class Repo:
    """The chunks of one repository's tree, with their BM25 statistics and vectors."""

    def __init__(self, db, tree, model):
        rows = db.execute(
            """select p.path, k.text, nm.text, n.start_line, n.end_line
               from resources r join repo_indexes i on i.resource_id = r.resource_id
               join uko_graphs g on g.index_id = i.index_id join uko_paths p on p.graph_id = g.graph_id
               join uko_nodes n on n.path_id = p.path_id join uko_strings k on k.string_id = n.kind_id
               join uko_strings nm on nm.string_id = n.name_id
               where n.is_current = 1 and r.path = ? order by p.path, n.start_line, n.end_line""",
            (tree,),
        ).fetchall()
        if not rows:
            sys.exit(f"no indexed nodes for {tree} in the store (run the evaluation with this home first)")
        by_file = collections.defaultdict(list)
        for path, kind, name, start, end in rows:
            by_file[path].append((kind, name, start, end))
        self.chunks, texts = [], []
        for path in sorted(by_file):
            try:
                with open(os.path.join(tree, path), errors="replace") as f:
                    lines = f.read().split("\n")
            except OSError:
                continue
            nodes = [n for n in by_file[path] if n[0] in CALLABLE or (n[0] in CONTAINER and n[3] - n[2] <= 150)]
            if not nodes:
                nodes = [("file", os.path.basename(path), s + 1, min(len(lines), s + 100))
                         for s in range(0, len(lines), 80)]
            for kind, name, start, end in nodes:
                self.chunks.append((path, kind, name, start, end))
                texts.append("\n".join(lines[start - 1:end]))
        self.docs = {}
        for i, (chunk, text) in enumerate(zip(self.chunks, texts)):
            tokens = bm25.tokenize(chunk[0] + " " + text)
            self.docs[i] = (len(tokens), collections.Counter(tokens))
        self.vectors = model.embed(
            [f"{k} {' '.join(split_ident(n))} {' '.join(split_ident(p))}\n{t}" for (p, k, n, _, _), t in
             zip(self.chunks, texts)])

    def rank(self, query, model, weight):
        lexical = np.zeros(len(self.chunks))
        for i, s in bm25.bm25_scores(self.docs, query).items():
            lexical[i] = s
        cos = self.vectors @ model.embed([query])[0]
        score = lexical / (lexical.max() or 1) + weight * np.clip(cos, 0, None) / (cos.max() or 1)
        asked = set(split_ident(query))
        for i, (path, _, name, _, _) in enumerate(self.chunks):
            if fit.file_role(path) != "source":
                score[i] *= 0.5
            parts = split_ident(name)
            if len(name) > 2 and parts and all(p in asked for p in parts):
                score[i] *= 1.5
        pool = sorted(np.argsort(-score, kind="stable")[:200].tolist())
        taken, out = collections.Counter(), []
        while pool and len(out) < 10:
            best = max(pool, key=lambda i: (score[i] * 0.8 ** taken[self.chunks[i][0]], -i))
            pool.remove(best)
            taken[self.chunks[best][0]] += 1
            out.append(best)
        return [(self.chunks[i][0], (self.chunks[i][3], self.chunks[i][4]), None) for i in out]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="JSON written by scripts/eval-nl.py --out (the engine's figures to compare)")
    ap.add_argument("--home", required=True, help="the agents home the run used (its agents.db holds the chunks)")
    ap.add_argument("--trees", required=True, help="the directory holding the run's trees (<owner>+<name>)")
    ap.add_argument("--repos", help="comma-separated owner/name (default: every repository of the run)")
    ap.add_argument("--weights", default="0,0.5,1,2", help="cosine weights W to try (default 0,0.5,1,2)")
    args = ap.parse_args()
    store = os.path.join(args.home, "agents.db")
    for path, what in ((args.run, "run JSON"), (store, "agents store"), (args.trees, "trees directory")):
        if not os.path.exists(path):
            sys.exit(f"{path}: no such {what}")
    try:
        with open(args.run) as f:
            run = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{args.run}: not a JSON run of scripts/eval-nl.py ({e})")
    if "results" not in run:
        sys.exit(f"{args.run}: no `results` (not written by scripts/eval-nl.py --out)")
    weights = [float(w) for w in args.weights.split(",")]
    wanted = set(args.repos.split(",")) if args.repos else None
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    model = Model(MODEL)
    repos = {}
    scores = collections.defaultdict(lambda: collections.defaultdict(list))
    for case in run["results"]:
        if wanted and case["repo"] not in wanted:
            continue
        repo = case["repo"]
        if repo not in repos:
            print(f"chunking {repo}", file=sys.stderr)
            repos[repo] = Repo(db, os.path.join(args.trees, repo.replace("/", "+")), model)
        groups = ("overall", "category:" + case["category"])
        engine = case["systems"]["engine"].get("metrics", {}).get("chunk_ndcg", 0.0)
        for g in groups:
            scores[g]["engine"].append(engine)
        for w in weights:
            ranked = repos[repo].rank(case["query"], model, w)
            v = eval_nl.chunk_metrics(ranked, case["relevant"])[0]["chunk_ndcg"]
            for g in groups:
                scores[g][f"W={w:g}"].append(v)
    columns = ["engine"] + [f"W={w:g}" for w in weights]
    print("| group | questions | " + " | ".join(columns) + " |")
    print("|---|---:|" + "---:|" * len(columns))
    for g in sorted(scores, key=lambda g: (g != "overall", g)):
        row = " | ".join(f"{np.mean(scores[g][c]):.3f}" for c in columns)
        print(f"| {g} | {len(scores[g]['engine'])} | {row} |")


if __name__ == "__main__":
    main()
