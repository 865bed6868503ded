#!/usr/bin/env bash
# Checks that the real embedding model loads and serves the semantic strategies:
# indexes this repository's agents-search crate in a scratch home and asks
# `semantic-embedding` and `arce` for context; each must run without falling back,
# and the question about nearest neighbours must find the vector module.
#
#   scripts/smoke-semantic.sh MODEL_DIR [AGENTS_BINARY]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
model=${1:?usage: smoke-semantic.sh MODEL_DIR [AGENTS_BINARY]}
agents=${2:-$repo/target/debug/agents}
[ -x "$agents" ] || cargo build -q -p agents-cli
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
for strategy in semantic-embedding arce; do
  AGENTS_HOME=$home AGENTS_EMBEDDING_MODEL=$model "$agents" query --json --quiet --strategy "$strategy" \
    "approximate nearest neighbour search over embeddings" "$repo/crates/agents-search" >"$home/out.json"
  python3 - "$home/out.json" "$strategy" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
strategy = sys.argv[2]
assert out["strategy"] == strategy, f"{strategy} fell back: {out['fallbacks']}"
assert out["fallbacks"] == [], out["fallbacks"]
top = out["ranked_files"][:3]
assert "src/vector.rs" in top, f"{strategy}: vector.rs not in the top 3: {top}"
print(f"smoke: {strategy} ok, top files {top}")
PY
done
