#!/usr/bin/env python3
"""Builds the retrieval "dev localization set" (eval/localization-dev.jsonl) from git mirrors.

Each case is one real commit of a public repository: the query is the commit
message (subject + body, trailers and PR numbers removed), the ground truth is
the set of *source* files the commit touched that already existed in its
parent's tree. A retrieval engine run on the parent tree should rank those
files first.

    scripts/make-eval-set.py [--mirror-root /work/.mirror] [--mirror owner/name=GITDIR ...]
                             [--per-repo 28] [--since 2021-01-01] [--until 2026-07-01]
                             [--out eval/localization-dev.jsonl]

Mirrors are bare git directories (no work tree); by default each repository is
discovered as <mirror-root>/<owner>+<name>*/ (the git dir itself or its
`repo` subdirectory). Only git plumbing is used: nothing is checked out.

Determinism: the candidate list of a repository is every commit reachable from
the mirror's HEAD with committer date in [--since, --until), filtered by the
rules below and sorted by (committer time, sha); --per-repo cases are then
taken at evenly spaced positions of that list (position floor((i + 0.5) * n /
k)), so the same mirror content always gives the same set, and the cases are
spread over the whole window. The fixed --until keeps the set stable when a
mirror is refreshed with newer commits.

Selection rules (see eval/README.md):
  * non-merge commits, not authored by dependency/format bots;
  * subject of at least 4 words, not a version bump / release / revert /
    typo / formatting / lint / CI / docs / changelog / dependency-update
    commit (regexes in SKIP_SUBJECT);
  * 1-6 source files touched (after excluding tests, fixtures, docs,
    lockfiles, changelogs, CI config, generated and non-code files) and at
    most MAX_TOTAL_FILES files touched in all;
  * ground truth = those source files that exist in the parent tree (added
    files are dropped); the case is dropped when none remains.
"""

import argparse
import json
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

REPOS = [
    "psf/requests",
    "pallets/click",
    "sharkdp/fd",
    "sharkdp/bat",
    "gin-gonic/gin",
    "expressjs/express",
    "tokio-rs/axum",
    "pydantic/pydantic",
    "django/channels",
    "withastro/astro",
]

MAX_SOURCE_FILES = 6
MAX_TOTAL_FILES = 30
MIN_SUBJECT_WORDS = 4
MAX_QUERY_CHARS = 2000

# --- commit filters ---------------------------------------------------------

BOT_AUTHOR = re.compile(
    r"dependabot|renovate|pre-commit-ci|github-actions|greenkeeper|snyk-bot|allcontributors|imgbot",
    re.I,
)

SKIP_SUBJECT = [
    re.compile(p, re.I)
    for p in [
        r"^\s*(merge|revert)\b",
        r"\brevert(s|ed|ing)?\b",
        r"^\s*(release|releasing|prepare|preparing|publish)\b",
        r"\brelease[sd]?\s+v?\d",
        r"^\s*v?\d+(\.\d+)+",
        r"\bv?\d+\.\d+(\.\d+)?\s+(release|released)\b",
        r"\bbump(s|ed|ing)?\b",
        r"\bversion\s+(to\s+)?v?\d",
        r"^\s*(update|upgrade)\s+(the\s+)?(dependency|dependencies|deps|lockfile|lock file)\b",
        r"\bupgrade\b.*\bto\s+v?\d",
        r"\b(typo|typos|spelling|misspell\w*|grammar|whitespace|formatting|reformat\w*|fmt|rustfmt|gofmt|"
        r"prettier|black|isort|lint|linting|linter|clippy|eslint|biome)\b",
        r"^\s*(docs?|ci|style|test|tests|build|chore|release)(\([^)]*\))?!?\s*:",
        r"\[(ci|skip ci|docs?)\]",
        r"\bci\b",
        r"\b(changelog|changeset|changes\.(md|rst)|history\.(md|rst))\b",
        r"^\s*(\w+\s+){0,2}(the\s+)?(docs?|docstrings?|documentation|comments?|readme|examples? in docs)\b",
        r"^\s*(wip|fixup!|squash!|tmp|temp)\b",
        r"\bcopyright\b|\blicen[cs]e\b",
        r"\b(docs?|docstrings?|documentation|links?|semicolons?)\b|^\s*document(s|ed|ing)?\b",
        r"^\s*(add|added|adds|run|runs|fix|fixed|improve|update|updated|more)\s+(\w+\s+){0,2}tests?\b",
        r"\b(pr|review)\s+(feedback|comments?)\b|\baddress(ed|es)?\s+(the\s+)?(review|comments|feedback)\b",
        r"\bresolv\w*\s+(merge\s+)?conflicts?\b",
        r"^\s*(update|upgrade|set|pin|relax|require)\b.*\bdependenc(y|ies)\b",
        r"\b(drop|add|added|dropped|remove|removed)\s+(support\s+for\s+)?python\s*\d",
        r"\b(readme|todo|tests)\b",
        r"^\s*(update|upgrade|sync)\b.*\bto\s+v?\d+(\.\d+)+",
    ]
]

# --- file classification -------------------------------------------------------

SOURCE_EXT = {
    ".py", ".pyi", ".rs", ".go", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx",
    ".astro", ".vue", ".svelte", ".c", ".h", ".cc", ".cpp", ".hpp", ".java", ".kt", ".rb",
    ".php", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".swift", ".scala", ".lua",
}
TEST_DIRS = {
    "test", "tests", "__tests__", "testing", "testdata", "test-data", "test_data", "spec", "specs",
    "fixtures", "__fixtures__", "fixture", "__snapshots__", "snapshots", "e2e", "smoke",
    "syntax-tests", "benches", "benchmark", "benchmarks", "loadtesting",
}
DOC_DIRS = {"docs", "doc", "documentation", "site", "website", "www"}
VENDOR_DIRS = {"node_modules", "vendor", "third_party", "third-party", "dist", "generated", "__generated__"}
CI_PREFIXES = (".github/", ".circleci/", ".gitlab/", ".buildkite/", ".azure-pipelines/", ".devcontainer/")
TEST_FILE = re.compile(
    r"(^test_.*\.py$|_test\.(py|go|rs)$|^tests?\.(rs|py|go|js|ts)$|^conftest\.py$|"
    r"\.(test|spec|bench)\.[cm]?[jt]sx?$|_spec\.rb$|^test[-_].*\.(js|ts|sh)$)"
)
GENERATED_FILE = re.compile(r"(\.min\.js$|\.pb\.go$|_pb2\.pyi?$|\.generated\.|\.snap$|^generated_)")
# Packaging and tool configuration written in a programming language.
CONFIG_FILE = re.compile(r"(^setup\.py$|^noxfile\.py$|^fabfile\.py$|\.config\.[cm]?[jt]s$|^\.?(eslintrc|prettierrc)\.[cm]?js$)")


def is_source(path):
    """True for a hand-written source file that is not a test, doc, fixture, CI, generated or vendored file."""
    if path.startswith(CI_PREFIXES) or path.startswith((".changeset/", ".vscode/", ".zed/", ".agents/")):
        return False
    parts = path.split("/")
    name = parts[-1]
    dirs = {p.lower() for p in parts[:-1]}
    ext = ("." + name.rsplit(".", 1)[1].lower()) if "." in name else ""
    if ext not in SOURCE_EXT:
        return False
    if dirs & TEST_DIRS or dirs & DOC_DIRS or dirs & VENDOR_DIRS:
        return False
    if TEST_FILE.search(name.lower()) or GENERATED_FILE.search(name.lower()) or CONFIG_FILE.search(name.lower()):
        return False
    if name.endswith(".d.ts") and "generated" in path.lower():
        return False
    return True


# --- query cleaning -----------------------------------------------------------

TRAILER = re.compile(
    r"^\s*(signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|suggested-by|helped-by|"
    r"approved-by|authored-by|original-commit|change-id|cc|pr|pr-url|pull-request|closes|fixes|resolves|"
    r"refs?|see-also|related|issue|link|x-original-commit)\s*:.*$",
    re.I,
)
ISSUE_LINE = re.compile(
    r"^\s*[-*]?\s*(closes|close|closed|fixes|fix|fixed|resolves|resolve|resolved|refs?|see|related to|part of|"
    r"ref|follow-up to|followup to|pr)\s*:?\s*(([\w.-]+/[\w.-]+)?#\d+|https?://\S+)([\s,]+(and\s+)?"
    r"(([\w.-]+/[\w.-]+)?#\d+|https?://\S+))*\s*\.?\s*$",
    re.I,
)
PR_PAREN = re.compile(r"\s*\(\s*(?:(?:[\w.-]+/[\w.-]+)?#\d+\s*,?\s*)+\)")
# Inline "closes #12" / "fixes org/repo#12" and bare "#12" issue or PR numbers.
INLINE_REF = re.compile(
    r"(,?\s*\b(closes|close|fixes|fix|resolves|resolve|refs?|see)\s+)?(?<![\w&])([\w.-]+/[\w.-]+)?#\d+\b", re.I
)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
RULE_LINE = re.compile(r"^\s*([-=*_]\s*){3,}$")
CHECKBOX = re.compile(r"^\s*[-*]\s*\[[ xX]\]")
TEMPLATE_HEADING = re.compile(r"^\s*#+\s*(testing|docs|checklist|tests|how to test|changeset)\b", re.I)


def strip_refs(line):
    """Removes PR/issue numbers from one line, keeping its indentation."""
    indent = line[: len(line) - len(line.lstrip())]
    text = INLINE_REF.sub("", PR_PAREN.sub("", line))
    text = re.sub(r"[ \t]{2,}", " ", text).strip()
    text = re.sub(r"\s+([.,;:])(?=\s|$)", r"\1", text)
    return indent + text


def clean_message(message):
    """Returns (subject, query): the commit message without trailers, PR numbers and template noise."""
    message = HTML_COMMENT.sub("", message.replace("\r\n", "\n"))
    lines = message.split("\n")
    subject = strip_refs(lines[0])
    body = []
    skipping_section = False
    for line in lines[1:]:
        if TEMPLATE_HEADING.match(line):
            skipping_section = True
            continue
        if skipping_section:
            if re.match(r"^\s*#+\s", line):
                skipping_section = False
            else:
                continue
        if TRAILER.match(line) or ISSUE_LINE.match(line) or RULE_LINE.match(line) or CHECKBOX.match(line):
            continue
        line = strip_refs(line) if line.strip() else ""
        body.append(line)
    # Collapse blank-line runs and strip.
    text = "\n".join(body)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    query = subject if not text else subject + "\n\n" + text
    if len(query) > MAX_QUERY_CHARS:
        cut = query[:MAX_QUERY_CHARS]
        query = cut[: cut.rfind(" ")] if " " in cut else cut
    return subject, query.strip()


def subject_ok(subject):
    words = [w for w in re.split(r"\s+", subject) if re.search(r"[A-Za-z]", w)]
    if len(words) < MIN_SUBJECT_WORDS:
        return False
    return not any(p.search(subject) for p in SKIP_SUBJECT)


# --- git ----------------------------------------------------------------------


def git(gitdir, *args, input=None):
    res = subprocess.run(
        ["git", "-c", "core.quotePath=false", f"--git-dir={gitdir}", *args],
        input=input,
        capture_output=True,
        check=True,
    )
    return res.stdout.decode("utf-8", errors="replace")


def discover_mirror(root, repo):
    owner, name = repo.split("/")
    for cand in sorted(Path(root).glob(f"{owner}+{name}*")):
        for gitdir in (cand, cand / "repo"):
            if (gitdir / "HEAD").is_file() and (gitdir / "objects").is_dir():
                return gitdir
    return None


def commits(gitdir, since, until):
    """Yields dicts for non-merge commits reachable from HEAD in the window, with their changed paths."""
    out = git(
        gitdir,
        "log",
        "HEAD",
        "--no-merges",
        "--no-renames",
        f"--since={since}",
        f"--until={until}",
        "--name-status",
        "--format=%x1e%H%x1f%P%x1f%ct%x1f%an%x1f%ae%x1f%B%x1f",
    )
    for rec in out.split("\x1e")[1:]:
        sha, parents, ct, an, ae, body, files = rec.split("\x1f", 6)
        changes = []
        for line in files.strip("\n").split("\n"):
            if not line.strip():
                continue
            status, _, path = line.partition("\t")
            changes.append((status[:1], path))
        yield {
            "sha": sha,
            "parents": parents.split(),
            "time": int(ct),
            "author": f"{an} <{ae}>",
            "message": body.strip("\n"),
            "changes": changes,
        }


def existing_in(gitdir, rev, paths):
    """The subset of paths that are blobs in rev's tree."""
    if not paths:
        return []
    inp = "".join(f"{rev}:{p}\n" for p in paths).encode()
    out = git(gitdir, "cat-file", "--batch-check", input=inp).split("\n")
    return [p for p, line in zip(paths, out) if line.split(" ")[1:2] == ["blob"]]


def candidates(gitdir, repo, since, until, stats):
    result = []
    for c in commits(gitdir, since, until):
        stats["commits"] += 1
        if len(c["parents"]) != 1:
            continue
        if BOT_AUTHOR.search(c["author"]):
            stats["bot"] += 1
            continue
        subject, query = clean_message(c["message"])
        if not subject_ok(subject):
            stats["message"] += 1
            continue
        paths = [p for _, p in c["changes"] if not p.startswith('"')]
        if not paths or len(c["changes"]) > MAX_TOTAL_FILES:
            stats["too_many_files"] += 1
            continue
        source = sorted({p for p in paths if is_source(p)})
        if not (1 <= len(source) <= MAX_SOURCE_FILES):
            stats["source_count"] += 1
            continue
        parent = c["parents"][0]
        files = sorted(existing_in(gitdir, parent, source))
        if not files:
            stats["only_added"] += 1
            continue
        stats["eligible"] += 1
        result.append(
            {
                "repo": repo,
                "sha": c["sha"],
                "parent": parent,
                "query": query,
                "files": files,
                "_time": c["time"],
            }
        )
    result.sort(key=lambda r: (r["_time"], r["sha"]))
    return result


def spread(items, k):
    n = len(items)
    if n <= k:
        return list(items)
    return [items[(2 * i + 1) * n // (2 * k)] for i in range(k)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror-root", default="/work/.mirror")
    ap.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=GITDIR",
                    help="explicit git dir for a repository (repeatable)")
    ap.add_argument("--repos", default=",".join(REPOS), help="comma-separated owner/name list")
    ap.add_argument("--per-repo", type=int, default=28)
    ap.add_argument("--since", default="2021-01-01")
    ap.add_argument("--until", default="2026-07-01")
    ap.add_argument("--out", default=str(ROOT / "eval" / "localization-dev.jsonl"))
    args = ap.parse_args()

    explicit = dict(m.split("=", 1) for m in args.mirror)
    cases = []
    summary = []
    for repo in [r.strip() for r in args.repos.split(",") if r.strip()]:
        gitdir = Path(explicit[repo]) if repo in explicit else discover_mirror(args.mirror_root, repo)
        if gitdir is None:
            sys.exit(f"no mirror for {repo} under {args.mirror_root} (pass --mirror {repo}=GITDIR)")
        stats = dict(commits=0, bot=0, message=0, too_many_files=0, source_count=0, only_added=0, eligible=0)
        cands = candidates(gitdir, repo, args.since, args.until, stats)
        picked = spread(cands, args.per_repo)
        for case in picked:
            case.pop("_time")
        cases.extend(picked)
        head = git(gitdir, "rev-parse", "HEAD").strip()
        summary.append((repo, len(picked), stats, head))
        print(f"{repo}: {len(picked)} cases from {stats['eligible']} eligible "
              f"({stats['commits']} commits in window; dropped: bot {stats['bot']}, message {stats['message']}, "
              f"too many files {stats['too_many_files']}, source count {stats['source_count']}, "
              f"only added {stats['only_added']}) HEAD {head[:12]}", file=sys.stderr)

    cases.sort(key=lambda r: (r["repo"], r["sha"]))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
