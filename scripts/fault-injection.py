#!/usr/bin/env python3
"""Fault injection: kill -9 at random points, concurrent commands, hostile repositories.

    scripts/fault-injection.py --agents target/release/agents [--trials 40] [--quick]
                               [--seed 1] [--work DIR] [--json OUT] [--only SECTION,...]

Sections (each prints one row per check of the table in docs/robustness.md):

  index-kill      N trials: `agents index` on a generated 1,500-file repository is
                  killed with SIGKILL after a random delay (0 .. the clean run's
                  duration), then run again; the stored rows (files, nodes, references,
                  search state) and the `context_hash` of three queries must equal a
                  clean run's. Torn or lost states are counted.
  update-kill     N trials: `knowledge update` of two evidence documents (an AgentMemory
                  and a PCD) on a copy of the golden fixture, killed at a random delay,
                  then run again; graph.json, local-nodes/ and local_state.yaml must equal
                  a clean run's (a lost new-knowledge node is a loss), and no temporary
                  file may be left.
  build-kill      N trials: `knowledge build` killed at a random delay; right after the
                  kill `knowledge search` must still answer (exit 0, results), and a
                  rerun must give the clean graph.json.
  concurrency     10 rounds of two `knowledge update` runs on different sessions at once
                  (both must succeed, both sessions must be in the graph), and 40
                  `knowledge search` processes at once (all must succeed with results).
  hostile         The hostile-repository set: each case runs under a time limit (20 s)
                  and an address-space limit (4 GiB); it passes when the command ends in
                  time, is not killed by a signal, and either succeeds without serving
                  what it must not or fails with a clear error naming the culprit.

--quick runs 3 trials per kill section and 3 concurrency rounds (what CI runs).
Exit status: 0 when every check passed, 1 otherwise. Nothing here is timed against
a reference: it counts losses, hangs and crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GOLDEN = REPO / "crates/agents-akms/tests/fixtures/golden"

MEMORY = """---
task_id: {task}
task_description: "Fix strain-rate formula"
phase_id: 2
timestamp: 2026-03-04T10:32:00
agent_model: test-model
loadout_used: loadouts/phase2-loadout.md
status: complete
tests_passed: 7
tests_total: 7
nodes_used:
  - id: lippmann-schwinger
    useful: true
    coverage: sufficient
  - id: green-operator
    useful: false
    coverage: outdated
pitfalls_discovered:
  - node_ref: lippmann-schwinger
    description: "Division by zero at k = 0"
    severity: high
new_knowledge:
  - suggested_id: {new_id}
    title: "{new_title}"
    domain: fft-galerkin
    content_draft: "Use the symmetric gradient for the strain rate ({task})."
    status: tentative
    source: agent
akms_schema: v2
---

## Task Notes
"""

PCD = """---
phase_id: 2
plan_file: plans/plan.md
branch: plan_phase-2
date: 2026-03-05
loadout_used: loadouts/phase2-loadout.md
tasks:
  - task_id: TASK-101
    title: "Strain rate"
    commit: abc1234
    tests_passed: 7
    tests_total: 7
    status: complete
    agent_model: test-model
overall_test_status: {passed: 7, total: 7, skipped: 0, fixed: 0}
files_modified:
  - path: src/green.py
    changes: "regularised"
next_phase_warnings:
  - "No warnings"
nodes_used:
  - id: fft-galerkin-basics
    useful: true
    coverage: sufficient
new_knowledge:
  - suggested_id: zero-frequency-epsilon
    title: "Epsilon Regularisation of the Zero Frequency"
    domain: fft-galerkin
    content_draft: "Drafted by an agent: add an epsilon to the zero-frequency denominator."
    status: tentative
    source: agent
akms_schema: v2
---
"""

QUERIES = ["parse the configuration file", "retry a failed request with backoff", "cache invalidation"]


class Runner:
    def __init__(self, agents: Path, work: Path, rng: random.Random):
        self.agents = agents
        self.work = work
        self.rng = rng
        self.rows: list[dict] = []

    def record(self, section: str, check: str, trials: int, failures: int, note: str = "") -> None:
        row = {"section": section, "check": check, "trials": trials, "failures": failures, "note": note}
        self.rows.append(row)
        mark = "ok  " if failures == 0 else "FAIL"
        print(f"{mark} {section:12} {check:58} {trials - failures}/{trials} {note}", flush=True)

    def env(self, home: Path, vault: Path | None = None) -> dict:
        env = dict(os.environ)
        env["AGENTS_HOME"] = str(home)
        env.pop("AGENTS_LOG", None)
        if vault is not None:
            env["AKMS_GLOBAL_VAULT"] = str(vault)
        return env

    def run(self, args, home, cwd=None, vault=None, timeout=120, input=None):
        return subprocess.run(
            [str(self.agents), *args],
            env=self.env(home, vault),
            cwd=cwd or home,
            capture_output=True,
            timeout=timeout,
            input=input,
        )

    def spawn(self, args, home, cwd=None, vault=None):
        return subprocess.Popen(
            [str(self.agents), *args],
            env=self.env(home, vault),
            cwd=cwd or home,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def kill_after(self, args, home, delay, cwd=None, vault=None) -> None:
        proc = self.spawn(args, home, cwd=cwd, vault=vault)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()


# --------------------------------------------------------------------------- helpers


def make_code_repo(root: Path, files: int) -> None:
    """A deterministic Python repository: `files` modules with a few functions each."""
    words = ["parse", "config", "retry", "request", "cache", "token", "render", "index", "query", "merge"]
    for i in range(files):
        pkg = root / f"pkg{i % 25}"
        pkg.mkdir(parents=True, exist_ok=True)
        a, b, c = words[i % 10], words[(i * 3 + 1) % 10], words[(i * 7 + 2) % 10]
        body = [f'"""Module {i}: {a} and {b}."""', "", "import os", ""]
        for j in range(4):
            body += [
                f"def {a}_{b}_{j}(value, attempts={j + 1}):",
                f'    """{a.capitalize()} the {b} with {c} ({i}.{j})."""',
                "    for attempt in range(attempts):",
                f"        value = os.path.join(str(value), '{c}{j}')",
                "    return value",
                "",
            ]
        (pkg / f"mod{i}.py").write_text("\n".join(body) + "\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def index_dump(home: Path, runner: Runner, repo: Path) -> dict:
    """The stored rows of the repository's index (ids and times left out) and the
    context hash of a few queries."""
    db = sqlite3.connect(home / "agents.db")
    out = {}
    out["files"] = db.execute(
        "select path, content_hash, token_count, size_bytes, language from indexed_files order by path"
    ).fetchall()
    # The compact graph (schema 11): paths and strings interned, URIs derived
    # from path and symbol path (so the resource id, which differs from home
    # to home, is not in them).
    out["nodes"] = db.execute(
        "select p.path, sy.text, k.text, nm.text, n.valid_until is null from uko_nodes n"
        " join uko_paths p on p.path_id = n.path_id join uko_strings sy on sy.string_id = n.symbol_id"
        " join uko_strings k on k.string_id = n.kind_id join uko_strings nm on nm.string_id = n.name_id"
        " where n.is_current = 1 order by 1, 2, 3, 4"
    ).fetchall()
    out["refs"] = db.execute(
        "select p.path, f.text, k.text, r.target, tp.path, ts.text from uko_refs r"
        " join uko_paths p on p.path_id = r.path_id join uko_strings f on f.string_id = r.from_id"
        " join uko_strings k on k.string_id = r.kind_id left join uko_paths tp on tp.path_id = r.to_path_id"
        " left join uko_strings ts on ts.string_id = r.to_symbol_id order by 1, 2, 3, 4, 5, 6"
    ).fetchall()
    out["search"] = db.execute(
        "select s.backend, f.path, hex(f.content_hash) from search_state f"
        " join search_sets s on s.set_id = f.set_id order by 1, 2"
    ).fetchall()
    out["status"] = db.execute("select status from repo_indexes").fetchall() if _has_column(db, "repo_indexes", "status") else []
    db.close()
    hashes = []
    for q in QUERIES:
        r = runner.run(["query", q, str(repo), "--format", "json", "--max-tokens", "2000"], home)
        if r.returncode != 0:
            hashes.append(f"exit {r.returncode}: {r.stderr.decode(errors='replace')[-200:]}")
        else:
            hashes.append(json.loads(r.stdout).get("context_hash"))
    out["hashes"] = hashes
    return out


def _has_column(db, table, column) -> bool:
    return any(row[1] == column for row in db.execute(f"pragma table_info({table})"))


def tree(dir: Path, skip=()) -> dict:
    files = {}
    for p in sorted(dir.rglob("*")):
        rel = p.relative_to(dir).as_posix()
        if any(rel.startswith(s) for s in skip):
            continue
        if p.is_file() and not p.is_symlink():
            files[rel] = p.read_bytes()
    return files


def knowledge_copy(dest: Path) -> tuple[Path, Path]:
    shutil.copytree(GOLDEN, dest)
    (dest / "expected-graph.json").unlink(missing_ok=True)
    return dest / "repo", dest / "global"


def write_sessions(repo: Path, tasks=("TASK-101",)) -> list[str]:
    sessions = repo / "knowledge/sessions"
    names = []
    for n, task in enumerate(tasks):
        text = MEMORY.format(task=task, new_id=f"strain-rate-formula-{n}", new_title=f"Strain-rate formula {task}")
        (sessions / f"{task}.md").write_text(text)
        names.append(f"knowledge/sessions/{task}.md")
    (sessions / "handoff_phase_2.md").write_text(PCD)
    names.append("knowledge/sessions/handoff_phase_2.md")
    return names


def knowledge_state(repo: Path) -> dict:
    """graph.json, local_state.yaml and local-nodes/, with the trial's own folder
    (which graph.json names as the vault's parent) written as <TRIAL>."""
    k = repo / "knowledge"
    trial = str(repo.parent).encode()

    def read(p: Path):
        return p.read_bytes().replace(trial, b"<TRIAL>") if p.exists() else None

    state = {"graph.json": read(k / "graph/graph.json"), "local_state.yaml": read(k / "graph/local_state.yaml")}
    state["local-nodes"] = {rel: data.replace(trial, b"<TRIAL>") for rel, data in tree(k / "local-nodes").items()}
    return state


def leftovers(repo: Path) -> list[str]:
    return sorted(
        p.relative_to(repo).as_posix()
        for p in (repo / "knowledge").rglob("*")
        if ".tmp" in p.name and "search" not in p.relative_to(repo).parts
    )


# --------------------------------------------------------------------------- sections


def section_index_kill(r: Runner, trials: int) -> None:
    repo = r.work / "code"
    make_code_repo(repo, 1500)
    clean_home = r.work / "index-clean"
    clean_home.mkdir()
    t0 = time.monotonic()
    res = r.run(["index", str(repo)], clean_home, timeout=600)
    duration = time.monotonic() - t0
    if res.returncode != 0:
        r.record("index-kill", "clean run", 1, 1, res.stderr.decode(errors="replace")[-300:])
        return
    clean = index_dump(clean_home, r, repo)
    failures, notes = 0, []
    for t in range(trials):
        home = r.work / f"index-{t}"
        home.mkdir()
        # Half the trials kill a first index, half a refresh after edits.
        if t % 2 == 1:
            r.run(["index", str(repo)], home, timeout=600)
            victim = repo / "pkg0" / "mod0.py"
            original = victim.read_text()
            victim.write_text(original + "\ndef added():\n    return 1\n")
        r.kill_after(["index", str(repo)], home, r.rng.uniform(0, duration))
        if t % 2 == 1:
            victim.write_text(original)
        res = r.run(["index", str(repo)], home, timeout=600)
        got = index_dump(home, r, repo) if res.returncode == 0 else None
        if got != clean:
            failures += 1
            if got is None:
                notes.append(f"trial {t}: rerun exit {res.returncode}")
            else:
                notes.append(f"trial {t}: " + ",".join(k for k in clean if clean[k] != got.get(k)) + f" (kept {home})")
                continue
        shutil.rmtree(home)
    r.record("index-kill", f"kill -9 during `agents index`, rerun equals clean ({duration:.1f} s run)", trials, failures, "; ".join(notes[:3]))


def section_update_kill(r: Runner, trials: int) -> None:
    base = r.work / "update-clean"
    repo, vault = knowledge_copy(base)
    home = r.work / "update-home"
    home.mkdir()
    docs = write_sessions(repo)
    r.run(["knowledge", "build"], home, cwd=repo, vault=vault)
    t0 = time.monotonic()
    res = r.run(["knowledge", "update", *docs], home, cwd=repo, vault=vault)
    duration = time.monotonic() - t0
    if res.returncode != 0:
        r.record("update-kill", "clean run", 1, 1, res.stderr.decode(errors="replace")[-300:])
        return
    clean = knowledge_state(repo)
    failures, left, notes = 0, 0, []
    for t in range(trials):
        trial = r.work / f"update-{t}"
        repo, vault = knowledge_copy(trial)
        docs = write_sessions(repo)
        r.run(["knowledge", "build"], home, cwd=repo, vault=vault)
        r.kill_after(["knowledge", "update", *docs], home, r.rng.uniform(0, duration * 1.2), cwd=repo, vault=vault)
        res = r.run(["knowledge", "update", *docs], home, cwd=repo, vault=vault)
        got = knowledge_state(repo)
        if res.returncode != 0 or got != clean:
            failures += 1
            what = [k for k in clean if clean[k] != got.get(k)]
            notes.append(f"trial {t}: exit {res.returncode} {','.join(what)}")
        if leftovers(repo):
            left += 1
        shutil.rmtree(trial)
    r.record("update-kill", f"kill -9 during `knowledge update`, rerun equals clean ({duration * 1000:.0f} ms run)", trials, failures, "; ".join(notes[:3]))
    r.record("update-kill", "no temporary file left after the rerun", trials, left)


def section_build_kill(r: Runner, trials: int) -> None:
    base = r.work / "build-clean"
    repo, vault = knowledge_copy(base)
    home = r.work / "build-home"
    home.mkdir()
    t0 = time.monotonic()
    res = r.run(["knowledge", "build"], home, cwd=repo, vault=vault)
    duration = time.monotonic() - t0
    if res.returncode != 0:
        r.record("build-kill", "clean run", 1, 1, res.stderr.decode(errors="replace")[-300:])
        return
    clean = knowledge_state(repo)
    search_fail, rerun_fail, notes = 0, 0, []
    for t in range(trials):
        r.kill_after(["knowledge", "build"], home, r.rng.uniform(0, duration * 1.2), cwd=repo, vault=vault)
        s = r.run(["--json", "knowledge", "search", "regularisation"], home, cwd=repo, vault=vault)
        hits = _json_len(s.stdout)
        if s.returncode != 0 or not hits:
            search_fail += 1
            notes.append(f"trial {t}: search exit {s.returncode}, {hits} hits {s.stderr.decode(errors='replace')[-120:]}")
        res = r.run(["knowledge", "build"], home, cwd=repo, vault=vault)
        if res.returncode != 0 or knowledge_state(repo) != clean:
            rerun_fail += 1
    r.record("build-kill", f"search answers right after a killed build ({duration * 1000:.0f} ms run)", trials, search_fail, "; ".join(notes[:2]))
    r.record("build-kill", "rebuild after a killed build equals clean", trials, rerun_fail)


def _json_len(stdout: bytes) -> int:
    try:
        v = json.loads(stdout)
    except ValueError:
        return 0
    if isinstance(v, dict):
        for key in ("results", "hits", "passages"):
            if isinstance(v.get(key), list):
                return len(v[key])
        return 0
    return len(v) if isinstance(v, list) else 0


def section_concurrency(r: Runner, rounds: int, searches: int) -> None:
    home = r.work / "conc-home"
    home.mkdir()
    failures, lost, notes = 0, 0, []
    for t in range(rounds):
        repo, vault = knowledge_copy(r.work / f"conc-{t}")
        docs = write_sessions(repo, tasks=("TASK-101", "TASK-102"))
        r.run(["knowledge", "build"], home, cwd=repo, vault=vault)
        procs = [
            subprocess.Popen(
                [str(r.agents), "knowledge", "update", doc],
                env=r.env(home, vault),
                cwd=repo,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for doc in docs[:2]
        ]
        for p in procs:
            _, err = p.communicate(timeout=120)
            if p.returncode != 0:
                failures += 1
                notes.append(f"round {t}: {err.decode(errors='replace')[-150:]}")
        graph = json.loads((repo / "knowledge/graph/graph.json").read_text())
        ids = {n["id"] for n in graph["nodes"]}
        # Each document's session node (their new-knowledge drafts are near
        # duplicates, so the second may rightly be folded into the first).
        if not {"session-task-101", "session-task-102"} <= ids:
            lost += 1
            notes.append(f"round {t}: sessions in graph: {sorted(i for i in ids if i.startswith('session-'))}")
    r.record("concurrency", "two `knowledge update` at once: both succeed", rounds * 2, failures, "; ".join(notes[:2]))
    r.record("concurrency", "two `knowledge update` at once: no session lost", rounds, lost)

    repo, vault = knowledge_copy(r.work / "conc-search")
    r.run(["knowledge", "build"], home, cwd=repo, vault=vault)
    procs = [
        subprocess.Popen(
            [str(r.agents), "--json", "knowledge", "search", "regularisation"],
            env=r.env(home, vault),
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(searches)
    ]
    bad, notes = 0, []
    for p in procs:
        out, err = p.communicate(timeout=120)
        if p.returncode != 0 or not _json_len(out):
            bad += 1
            notes.append(err.decode(errors="replace")[-120:])
    r.record("concurrency", f"{searches} `knowledge search` at once: all answer", searches, bad, "; ".join(notes[:2]))
    # A build running while searches run.
    build = subprocess.Popen([str(r.agents), "knowledge", "build"], env=r.env(home, vault), cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bad = 0
    for _ in range(10):
        s = r.run(["--json", "knowledge", "search", "regularisation"], home, cwd=repo, vault=vault)
        bad += s.returncode != 0 or not _json_len(s.stdout)
    build.wait(timeout=120)
    r.record("concurrency", "`knowledge search` during a build: all answer", 10, bad)


# --------------------------------------------------------------------------- hostile

TIME_LIMIT = 20
MEMORY_LIMIT = 4 << 30


def bounded(r: Runner, args, home, cwd=None, vault=None, stdin=None):
    """Runs under the time and address-space limits; returns (rc, seconds, maxrss_mb, stdout, stderr)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        os.setsid()

    t0 = time.monotonic()
    proc = subprocess.Popen(
        [str(r.agents), *args],
        env=r.env(home, vault),
        cwd=cwd or home,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=limit,
    )
    try:
        out, err = proc.communicate(input=stdin, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, time.monotonic() - t0, 0, out, err
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc.returncode, time.monotonic() - t0, usage.ru_maxrss // 1024, out, err


def hostile_case(r: Runner, name: str, run, judge) -> None:
    try:
        rc, secs, _rss, out, err = run()
        text = out.decode(errors="replace")
        errtext = err.decode(errors="replace")
        if rc is None:
            r.record("hostile", name, 1, 1, f"hung (killed after {TIME_LIMIT} s)")
        elif rc < 0 or rc in (134, 139):
            r.record("hostile", name, 1, 1, f"crashed (exit {rc}) {errtext[-160:]}")
        else:
            ok, note = judge(rc, text, errtext)
            r.record("hostile", name, 1, 0 if ok else 1, f"{secs:.1f} s, exit {rc}; {note}")
    except Exception as e:  # noqa: BLE001 - a broken case is a failed check, not a crash
        r.record("hostile", name, 1, 1, f"harness error: {e!r}")


def clear_error(needle):
    """Refused with a message naming `needle` (validate lists problems on stdout,
    other commands on stderr)."""

    def judge(rc, out, err):
        if rc == 0:
            return False, "accepted"
        lines = [line for line in (out + err).splitlines() if needle in line]
        shown = lines[0] if lines else (err.strip().splitlines() or [""])[0]
        return bool(lines), shown[:140]

    return judge


def section_hostile(r: Runner) -> None:
    home = r.work / "hostile-home"
    home.mkdir()
    secret = r.work / "secret.txt"
    secret.write_text("SECRET-TOKEN-4242 private\n")

    # 1. A file symlink leading out of the repository.
    repo = r.work / "h-leak"
    repo.mkdir()
    (repo / "app.py").write_text("def private_token():\n    return None\n")
    (repo / "leak.txt").symlink_to(secret)
    outside_dir = r.work / "outside-dir"
    outside_dir.mkdir()
    (outside_dir / "keys.py").write_text("KEY = 'SECRET-TOKEN-4242'\n")
    (repo / "linked").symlink_to(outside_dir)

    def not_served(rc, out, err):
        return rc == 0 and "SECRET-TOKEN-4242" not in out.replace("SECRET-TOKEN-4242 private", "") and "leak.txt" not in out, "secret not served" if "leak.txt" not in out else "served"

    hostile_case(r, "symlink to a file outside the repository", lambda: bounded(r, ["query", "private token secret", str(repo)], home), not_served)
    cfg_home = r.work / "hostile-follow"
    cfg_home.mkdir()
    (cfg_home / "config.toml").write_text("[index]\nfollow-symlinks = true\n")
    hostile_case(r, "directory symlink outside, follow-symlinks = true", lambda: bounded(r, ["query", "KEY secret token", str(repo)], cfg_home), lambda rc, out, err: (rc == 0 and "keys.py" not in out, "not served" if "keys.py" not in out else "served"))

    # 2. Knowledge: nested formulas, FIFOs, symlink loops, YAML nesting, big files.
    def kcase(name, mutate, args, judge):
        base = r.work / ("k-" + name.replace(" ", "-").replace("/", "")[:40])
        krepo, vault = knowledge_copy(base)
        mutate(krepo)
        hostile_case(r, name, lambda: bounded(r, args, home, cwd=krepo, vault=vault), judge)

    def config_with_formula(formula):
        def mutate(krepo):
            run = r.run(["knowledge", "init"], home, cwd=krepo)
            cfg = krepo / "knowledge/graph/propagation_config.yaml"
            if run.returncode != 0 or not cfg.exists():
                raise RuntimeError("knowledge init wrote no propagation_config.yaml")
            text = cfg.read_text().replace('rank_formula: "confidence * activations"', f'rank_formula: "{formula}"', 1)
            cfg.write_text(text)

        return mutate

    deep = 100_000
    kcase("rank_formula with 100,000 nested parentheses", config_with_formula("(" * deep + "confidence" + ")" * deep), ["knowledge", "validate"], clear_error("propagation_config.yaml"))
    kcase("rank_formula with 100,000 unary minus signs", config_with_formula("-" * deep + "confidence"), ["knowledge", "validate"], clear_error("propagation_config.yaml"))

    def fifo_node(krepo):
        os.mkfifo(krepo / "knowledge/local-nodes/x.md")

    def ends(rc, out, err):
        return True, (err.strip().splitlines() or [""])[0][:140]

    kcase("FIFO as a local node (validate)", fifo_node, ["knowledge", "validate"], ends)
    kcase("FIFO as a local node (build)", fifo_node, ["knowledge", "build"], ends)

    def fifo_ref(krepo):
        notes = krepo / "knowledge/notes"
        notes.mkdir(parents=True, exist_ok=True)
        os.mkfifo(notes / "not-written-yet.md")

    kcase("FIFO as a content_ref (build)", fifo_ref, ["knowledge", "build"], ends)

    def loops(krepo):
        nodes = krepo / "knowledge/local-nodes"
        (nodes / "a").symlink_to(".")
        (nodes / "b").symlink_to(".")

    kcase("two symlinks to . in local-nodes (build)", loops, ["knowledge", "build"], ends)

    def yaml_nest(krepo):
        body = "---\nid: nest\ntitle: x\nextra: " + "[" * deep + "]" * deep + "\n---\n"
        (krepo / "knowledge/local-nodes/nest.md").write_text(body)

    kcase("YAML nested 100,000 levels in a node", yaml_nest, ["knowledge", "validate"], clear_error("nest.md"))

    def sparse_ref(krepo):
        notes = krepo / "knowledge/notes"
        notes.mkdir(parents=True, exist_ok=True)
        with open(notes / "not-written-yet.md", "wb") as f:
            f.truncate(1 << 30)

    kcase("1 GiB sparse content_ref (build)", sparse_ref, ["knowledge", "build"], ends)

    def big_draft(krepo):
        sessions = krepo / "knowledge/sessions"
        text = MEMORY.format(task="TASK-103", new_id="huge-draft", new_title="Huge").replace(
            'content_draft: "Use the symmetric gradient for the strain rate (TASK-103)."',
            'content_draft: "' + "x" * (10 << 20) + '"',
        )
        (sessions / "TASK-103.md").write_text(text)

    kcase("10 MB content_draft in evidence (update)", big_draft, ["knowledge", "update", "knowledge/sessions/TASK-103.md"], clear_error("TASK-103.md"))

    # 3. MCP: paths outside the roots and malformed lines.
    mcp_home = r.work / "mcp-home"
    mcp_home.mkdir()
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "fi", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "request_context", "arguments": {"query": "secret", "path": "/", "max_tokens": 500}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "request_context", "arguments": {"query": "secret", "path": "../../..", "max_tokens": 500}}},
    ]
    payload = "".join(json.dumps(line) + "\n" for line in lines).encode() + b"this is not json\n\x00\xff\n" + (json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}) + "\n").encode()

    def mcp_judge(rc, out, err):
        replies = {}
        parse_errors = 0
        for line in out.splitlines():
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if v.get("id") is None and v.get("error", {}).get("code") == -32700:
                parse_errors += 1
            replies[v.get("id")] = v
        refused = all(
            (replies.get(i, {}).get("error") is not None) or replies.get(i, {}).get("result", {}).get("isError")
            for i in (2, 3)
        )
        alive = 4 in replies
        return refused and alive and parse_errors >= 1, f"outside paths refused={refused}, parse errors answered={parse_errors}, still serving={alive}"

    hostile_case(r, "MCP: path `/` and `../../..`, then garbage lines", lambda: bounded(r, ["mcp"], mcp_home, cwd=mcp_home, stdin=payload), mcp_judge)

    # 4. Damaged derived files.
    code = r.work / "h-derived"
    make_code_repo(code, 40)
    dhome = r.work / "derived-home"
    dhome.mkdir()
    first = r.run(["query", "parse the configuration", str(code), "--format", "json"], dhome)
    want = json.loads(first.stdout).get("context_hash") if first.returncode == 0 else None

    def damage(pattern, how):
        def run():
            hits = [p for p in (dhome).rglob(pattern) if p.is_file()]
            for p in hits:
                if how == "truncate":
                    with open(p, "r+b") as f:
                        f.truncate(max(0, p.stat().st_size // 2))
                else:
                    p.write_text("{")
            res = bounded(r, ["query", "parse the configuration", str(code), "--format", "json"], dhome)
            return res

        return run

    def same_answer(rc, out, err):
        try:
            got = json.loads(out).get("context_hash")
        except ValueError:
            got = None
        return rc == 0 and got == want, "same answer" if got == want else f"answer changed or failed: {err.strip()[:120]}"

    hostile_case(r, "truncated vectors file", damage("vectors.bin", "truncate"), same_answer)
    hostile_case(r, "truncated Tantivy segment files", damage("*.idx", "truncate"), same_answer)
    hostile_case(r, "`{` in tiers/hot.json", damage("hot.json", "brace"), same_answer)


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", required=True, type=Path)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--quick", action="store_true", help="3 trials per kill section, 3 concurrency rounds (CI)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--json", type=Path, help="write the rows as JSON here")
    ap.add_argument("--only", help="comma-separated sections: index-kill,update-kill,build-kill,concurrency,hostile")
    args = ap.parse_args()
    agents = args.agents.resolve()
    if not agents.is_file():
        print(f"fault-injection: no binary at {agents}", file=sys.stderr)
        return 2
    trials = 3 if args.quick else args.trials
    rounds = 3 if args.quick else 10
    searches = 8 if args.quick else 40
    only = set(args.only.split(",")) if args.only else None
    work = args.work or Path(tempfile.mkdtemp(prefix="agents-fi-"))
    work.mkdir(parents=True, exist_ok=True)
    r = Runner(agents, work, random.Random(args.seed))
    sections = [
        ("index-kill", lambda: section_index_kill(r, trials)),
        ("update-kill", lambda: section_update_kill(r, trials)),
        ("build-kill", lambda: section_build_kill(r, trials)),
        ("concurrency", lambda: section_concurrency(r, rounds, searches)),
        ("hostile", lambda: section_hostile(r)),
    ]
    for name, fn in sections:
        if only is None or name in only:
            fn()
    failed = sum(row["failures"] > 0 for row in r.rows)
    print(f"\n{len(r.rows)} checks, {failed} failed (work dir {work})")
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "trials": trials, "rows": r.rows}, indent=2) + "\n")
    if not args.work and failed == 0:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
