#!/usr/bin/env python3
"""Differential check of incremental refresh: an edited tree, refreshed, must
hold the code graph a fresh index of the same files holds.

For each round the tree is copied to WORK/<name> (its tracked files when it
is a git checkout, else everything but `.git`), indexed
with a home of its own, edited, and indexed again (the incremental refresh);
then the edited copy is indexed with a second, empty home. The two graphs
are compared (and, once the original files are copied back and the first
home refreshed again, that graph with the one its first index had): the current nodes (path, symbol path, kind, lines, signature)
and every reference (file, line, the symbol it is written in, kind, target,
names, and what it resolves to: path and symbol path). Any difference is
printed with examples and the script exits with status 1.

Edits are drawn with a seeded generator from the first index's own nodes and
references, so a seed replays the same edits on the same tree:

  * delete    a function, method or class: its lines blanked (line numbers stay)
  * rename    a definition: its name on its first line gets a suffix
  * copy      a top-level function appended to another file of its language
              (a second definition of the name)
  * unimport  an import line blanked
  * retype    Python: a `-> X` return annotation replaced by another class of
              the tree, or removed; Go: an embedded field of a struct blanked
  * remove    a whole file

Usage:
    scripts/check-refresh.py --agents target/release/agents --tree /path/to/repo \
        [--work /tmp/check-refresh] [--rounds 5] [--edits 6] [--seed 1] [--kinds delete,rename,...]

Needs only the Python standard library and the `agents` binary.
"""

import argparse
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter

KINDS = ["delete", "rename", "copy", "unimport", "retype", "remove"]
DEFINITIONS = ("function", "method", "class", "struct", "interface", "trait", "impl", "enum")


def copy_tree(src, dest):
    """`src` copied to `dest`: its tracked files when it is a git checkout
    (no build output), else everything but `.git`."""
    listed = None
    if os.path.isdir(os.path.join(src, ".git")):
        proc = subprocess.run(["git", "-C", src, "ls-files", "-z"], capture_output=True)
        if proc.returncode == 0:
            listed = [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
    if listed is None:
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".git"), symlinks=True)
        return
    for rel in listed:
        source = os.path.join(src, rel)
        if not os.path.isfile(source) or os.path.islink(source):
            continue
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(source, target)


def run_index(agents, home, tree):
    os.makedirs(home, exist_ok=True)
    proc = subprocess.run([agents, "--home", home, "index", "--json", tree], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"agents index failed ({proc.returncode}) on {tree}:\n{proc.stderr}")


def graph(home):
    """(nodes, refs) of the single resource of `home`, as comparable tuples."""
    c = sqlite3.connect(os.path.join(home, "agents.db"))
    s = dict(c.execute("SELECT string_id, text FROM uko_strings"))
    paths = dict(c.execute("SELECT path_id, path FROM uko_paths"))
    nodes = []
    for node_id, path_id, sym, kind, start, end, sig, current in c.execute(
        "SELECT node_id, path_id, symbol_id, kind_id, start_line, end_line, signature, is_current FROM uko_nodes"
    ):
        if current:
            nodes.append((paths[path_id], s[sym], s[kind], start, end, sig or ""))
    refs = []
    for path_id, from_id, kind, line, target, names, to_path, to_sym in c.execute(
        "SELECT path_id, from_id, kind_id, line, target, names, to_path_id, to_symbol_id FROM uko_refs"
    ):
        frm = s[from_id]
        to = (paths.get(to_path, ""), s.get(to_sym, "")) if to_path is not None else ("", "")
        refs.append((paths[path_id], line, frm, s[kind], target, names or "", *to))
    c.close()
    return Counter(nodes), Counter(refs)


def read_lines(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read().split("\n")


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write("\n".join(lines))
    # The refresh finds edits by size and modification time.
    later = time.time() + 5
    os.utime(path, (later, later))


def edit(kind, rng, tree, home, log):
    """Applies one edit of `kind`; False when the tree offers none."""
    c = sqlite3.connect(os.path.join(home, "agents.db"))
    s = dict(c.execute("SELECT string_id, text FROM uko_strings"))
    paths = dict(c.execute("SELECT path_id, path FROM uko_paths"))
    defs = [
        (paths[p], s[sym], s[name], s[k], a, b, parent)
        for p, sym, name, k, a, b, parent in c.execute(
            "SELECT path_id, symbol_id, name_id, kind_id, start_line, end_line, parent_id FROM uko_nodes WHERE is_current = 1"
        )
        if s[k] in DEFINITIONS and os.path.exists(os.path.join(tree, paths[p]))
    ]
    imports = [
        (paths[p], line)
        for p, line, k in c.execute("SELECT path_id, line, kind_id FROM uko_refs")
        if s[k] == "import" and os.path.exists(os.path.join(tree, paths[p]))
    ]
    c.close()
    defs.sort()
    imports.sort()
    if kind == "delete" and defs:
        path, sym, name, k, a, b, _ = rng.choice(defs)
        lines = read_lines(os.path.join(tree, path))
        for i in range(a - 1, min(b, len(lines))):
            lines[i] = ""
        write_lines(os.path.join(tree, path), lines)
        log.append(f"delete {k} {path}#{sym} (lines {a}-{b})")
        return True
    if kind == "rename" and defs:
        path, sym, name, k, a, b, _ = rng.choice(defs)
        lines = read_lines(os.path.join(tree, path))
        if a - 1 < len(lines) and re.search(rf"\b{re.escape(name)}\b", lines[a - 1]):
            lines[a - 1] = re.sub(rf"\b{re.escape(name)}\b", name + "Renamed", lines[a - 1], count=1)
            write_lines(os.path.join(tree, path), lines)
            log.append(f"rename {k} {path}#{sym} -> {name}Renamed")
            return True
        return False
    if kind == "copy":
        tops = [d for d in defs if d[3] == "function" and d[6] is None]
        if not tops:
            return False
        path, sym, name, k, a, b, _ = rng.choice(tops)
        ext = os.path.splitext(path)[1]
        others = sorted({d[0] for d in defs if d[0] != path and d[0].endswith(ext)})
        if not others:
            return False
        dest = rng.choice(others)
        body = read_lines(os.path.join(tree, path))[a - 1 : b]
        lines = read_lines(os.path.join(tree, dest))
        write_lines(os.path.join(tree, dest), lines + [""] + body + [""])
        log.append(f"copy {path}#{sym} to the end of {dest}")
        return True
    if kind == "unimport" and imports:
        path, line = rng.choice(imports)
        lines = read_lines(os.path.join(tree, path))
        if line - 1 < len(lines):
            log.append(f"unimport {path}:{line} {lines[line - 1].strip()[:60]!r}")
            lines[line - 1] = ""
            write_lines(os.path.join(tree, path), lines)
            return True
        return False
    if kind == "retype":
        classes = sorted({d[2] for d in defs if d[3] == "class" and d[0].endswith(".py")})
        typed = []
        for d in defs:
            if d[0].endswith(".py") and d[3] in ("function", "method"):
                typed.append(d)
            elif d[0].endswith(".go") and d[3] == "struct":
                typed.append(d)
        rng.shuffle(typed)
        for path, sym, name, k, a, b, _ in typed[:200]:
            lines = read_lines(os.path.join(tree, path))
            if path.endswith(".py"):
                for i in range(a - 1, min(b, a + 12, len(lines))):
                    m = re.search(r"->\s*([^:]+):\s*(#.*)?$", lines[i])
                    if m:
                        new = rng.choice(classes + [""]) if classes else ""
                        lines[i] = lines[i][: m.start()] + (f"-> {new}:" if new else ":")
                        write_lines(os.path.join(tree, path), lines)
                        log.append(f"retype {path}#{sym}: -> {m.group(1).strip()} becomes {new or '(none)'}")
                        return True
            else:
                for i in range(a, min(b - 1, len(lines))):
                    if re.fullmatch(r"\s*\*?[A-Z][A-Za-z0-9_.]*\s*(//.*)?", lines[i]):
                        log.append(f"retype {path}#{sym}: embedded {lines[i].strip()} removed")
                        lines[i] = ""
                        write_lines(os.path.join(tree, path), lines)
                        return True
        return False
    if kind == "remove":
        files = sorted({d[0] for d in defs})
        if not files:
            return False
        path = rng.choice(files)
        os.remove(os.path.join(tree, path))
        log.append(f"remove {path}")
        return True
    return False


def compare(label, a, b, show):
    only_a = a - b
    only_b = b - a
    if not only_a and not only_b:
        return 0
    print(f"  {label}: {sum(only_a.values())} only in the refreshed graph, {sum(only_b.values())} only in the fresh one")
    for row in sorted(only_a)[:show]:
        print(f"    refreshed: {row}")
    for row in sorted(only_b)[:show]:
        print(f"    fresh:     {row}")
    return sum(only_a.values()) + sum(only_b.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", required=True, help="the agents binary")
    ap.add_argument("--tree", required=True, help="repository to copy and edit (never modified)")
    ap.add_argument("--work", default="/tmp/check-refresh", help="scratch directory (emptied per round)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--edits", type=int, default=6, help="edits per round")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(KINDS), help="edit kinds to draw from")
    ap.add_argument("--show", type=int, default=8, help="differences printed per table")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        sys.exit(f"unknown edit kind(s) {unknown}; known: {KINDS}")
    agents = os.path.abspath(args.agents)
    name = os.path.basename(os.path.abspath(args.tree))
    failures = 0
    for round_ in range(args.rounds):
        rng = random.Random(f"{args.seed}/{name}/{round_}")
        work = os.path.join(args.work, name)
        shutil.rmtree(args.work, ignore_errors=True)
        copy_tree(args.tree, work)
        home_a = os.path.join(args.work, "home-refreshed")
        home_b = os.path.join(args.work, "home-fresh")
        run_index(agents, home_a, work)
        original = graph(home_a)
        log = []
        tries = 0
        while len(log) < args.edits and tries < args.edits * 10:
            tries += 1
            edit(rng.choice(kinds), rng, work, home_a, log)
        run_index(agents, home_a, work)
        run_index(agents, home_b, work)
        nodes_a, refs_a = graph(home_a)
        nodes_b, refs_b = graph(home_b)
        print(f"round {round_ + 1}: {len(log)} edits")
        for line in log:
            print(f"  - {line}")
        diff = compare("nodes", nodes_a, nodes_b, args.show) + compare("references", refs_a, refs_b, args.show)
        print(f"  {'DIFFERENT' if diff else 'same'} ({sum(refs_b.values())} references, {sum(nodes_b.values())} nodes)")
        # Undone: the original files back (removed ones too), refreshed
        # again, must give the graph the first index had.
        shutil.rmtree(work)
        copy_tree(args.tree, work)
        run_index(agents, home_a, work)
        nodes_c, refs_c = graph(home_a)
        undone = compare("nodes after undoing", nodes_c, original[0], args.show)
        undone += compare("references after undoing", refs_c, original[1], args.show)
        print(f"  undone: {'DIFFERENT' if undone else 'same'}")
        failures += bool(diff or undone)
    print(f"{failures} of {args.rounds} rounds differ")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
