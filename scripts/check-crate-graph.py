#!/usr/bin/env python3
"""Checks that every workspace crate depends only on the crates ARCHITECTURE.md
allows it (normal dependencies; dev-dependencies are free).

    scripts/check-crate-graph.py

Reads `cargo metadata --no-deps`; prints each crate's workspace dependencies and
exits 1 naming every dependency that is not allowed, or a crate the table below
does not know (a new crate gets its line here and its section in ARCHITECTURE.md).
"""

import json
import subprocess
import sys

# crate -> the workspace crates it may depend on (ARCHITECTURE.md, "Code map").
ALLOWED = {
    # The cached tokenizer tables are written with agents-fs's atomic write.
    "agents-core": {"agents-fs"},
    "agents-fs": set(),
    "agents-pack": {"agents-core"},
    "agents-search": {"agents-core", "agents-fs"},
    "agents-store": {"agents-core", "agents-fs"},
    "agents-uko": {"agents-core"},
    # The team server store: the store's roles and the search traits on PostgreSQL.
    "agents-postgres": {"agents-core", "agents-fs", "agents-search", "agents-store"},
    # The two halves: neither depends on the other.
    "agents-acms": {"agents-core", "agents-fs", "agents-pack", "agents-search", "agents-store", "agents-uko"},
    "agents-akms": {"agents-core", "agents-fs", "agents-pack", "agents-search", "agents-uko"},
    "agents-orchestrator": {"agents-akms", "agents-core", "agents-fs"},
    "agents-engine": {
        "agents-acms", "agents-akms", "agents-core", "agents-fs", "agents-pack", "agents-postgres", "agents-search",
        "agents-store", "agents-uko",
    },
    # The adapter: the application layer, the orchestrator, and the domain types.
    "agents-cli": {
        "agents-engine", "agents-orchestrator", "agents-core", "agents-acms", "agents-akms", "agents-fs",
        "agents-search", "agents-store", "agents-uko",
    },
}


def main() -> int:
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    members = json.loads(out)["packages"]
    names = {p["name"] for p in members}
    problems = []
    for package in sorted(members, key=lambda p: p["name"]):
        name = package["name"]
        deps = sorted(
            d["name"] for d in package["dependencies"] if d["name"] in names and d["kind"] is None
        )
        print(f"{name}: {', '.join(deps) or '-'}")
        if name not in ALLOWED:
            problems.append(f"{name}: a crate scripts/check-crate-graph.py does not know; add its line")
            continue
        for dep in deps:
            if dep not in ALLOWED[name]:
                problems.append(f"{name} depends on {dep}, which ARCHITECTURE.md does not allow")
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
