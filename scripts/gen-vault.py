#!/usr/bin/env python3
"""Writes a synthetic AKMS vault for benchmarks: a global vault and a repository
with local nodes, code-mirror nodes, session nodes and an overlay, all valid
against schema v2. Deterministic: the same N and seed give the same files.

    scripts/gen-vault.py OUT N [--seed 7]

Layout: OUT/global/*.md (60% of N, in nested folders), OUT/repo/knowledge/
local-nodes (25%), code-mirror (10%), graph/local_state.yaml (5% as session
nodes, overrides for a fifth of the nodes, a pitfall edge per session).
Each knowledge node has up to 4 edges to earlier nodes of its reach.
"""
import argparse
import os
import random

TYPES = ["requires", "refines", "feeds-into", "contradicts"]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def node_text(nid, domain, tags, source, status, confidence, edges, extra=""):
    lines = ["---", f"id: {nid}", f'title: "Node {nid}"', f"domain: {domain}",
             "tags: [" + ", ".join(tags) + "]", f"status: {status}", f"confidence: {confidence}",
             f"source: {source}"]
    if edges:
        lines.append("edges:")
        for to, kind, weight in edges:
            lines += [f"  - to: {to}", f"    type: {kind}", f"    weight: {weight}"]
    lines.append(extra.rstrip("\n")) if extra else None
    lines += ["akms_schema: v2", "---", "", f"# Node {nid}", "", "Body text " * 20, ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    n = args.n
    n_global, n_local, n_mirror = n * 60 // 100, n * 25 // 100, n * 10 // 100
    n_session = n - n_global - n_local - n_mirror
    glob = os.path.join(args.out, "global")
    know = os.path.join(args.out, "repo", "knowledge")
    ids = []

    def edges_for(i):
        if i == 0:
            return []
        targets = sorted({rng.randrange(i) for _ in range(rng.randint(0, 4))})
        return [(ids[t], rng.choice(TYPES), round(rng.uniform(0.1, 1.0), 2)) for t in targets]

    for i in range(n_global):
        nid = f"g-{i:06d}"
        text = node_text(nid, f"domain-{i % 17}", [f"tag-{i % 97}", f"tag-{i % 13}"], "human",
                         rng.choice(["established", "tentative"]), round(rng.uniform(0.3, 1.0), 2), edges_for(i))
        ids.append(nid)
        write(os.path.join(glob, f"d{i % 50:02d}", f"{nid}.md"), text)
    for j in range(n_local):
        nid = f"l-{j:06d}"
        text = node_text(nid, f"domain-{j % 17}", [f"tag-{j % 97}"], "human", "established",
                         round(rng.uniform(0.3, 1.0), 2), edges_for(len(ids)))
        ids.append(nid)
        write(os.path.join(know, "local-nodes", f"{nid}.md"), text)
    for k in range(n_mirror):
        nid = f"mirror-src-m{k:06d}"
        rel = f"code-mirror/src/m{k:06d}.md"
        text = "\n".join(["---", f"id: {nid}", f'title: "Code Mirror: src/m{k:06d}.py"', "domain: code-mirror",
                          "status: established", "confidence: 1.0", "source: generated", "auto_update: true",
                          f"content_ref: {rel}", f"source_file: src/m{k:06d}.py", "generated_by_phase: 1",
                          "akms_schema: v2", "---", "", "## f", "", "```python", "def f(): ...", "```", ""])
        write(os.path.join(know, rel), text)
    out = ["akms_schema: v2", "repo_id: synthetic", "nodes:"]
    for nid in ids[:: 5]:
        out += [f"  {nid}:", f"    confidence: {round(rng.uniform(0.2, 0.99), 2)}",
                f"    activations: {rng.randint(0, 40)}", "    last_activated: 2026-01-01"]
    out.append("local_edges:")
    for s in range(n_session):
        out += [f"  - from: {ids[rng.randrange(len(ids))]}", f"    to: session-{s:06d}",
                "    type: pitfall", "    weight: 0.8"]
    out.append("session_nodes:")
    for s in range(n_session):
        out += [f"  session-{s:06d}:", f'    title: "Session {s}"', "    tags: [synthetic]",
                "    outcome: success", f"    content_ref: sessions/s{s:06d}.md", f"    phase: {s % 9 + 1}"]
        write(os.path.join(know, "sessions", f"s{s:06d}.md"), f"# Session {s}\n")
    out.append("suppressed_edges: []")
    write(os.path.join(know, "graph", "local_state.yaml"), "\n".join(out) + "\n")


if __name__ == "__main__":
    main()
