//! The code mirror (spec 4.7, 5.6): one generated Markdown node per source
//! file under `knowledge/code-mirror/`, holding per function and class the
//! docstring (rendered as Markdown: the semantic search layer) and the full
//! source in a fenced code block (the literal search layer, FR-C02), with the
//! structural docstring-drift check of [`crate::drift`] (FR-C03).
//!
//! Which files: those changed against a base branch ([`changed_files`], the
//! git CLI: committed, staged, unstaged and untracked changes since the merge
//! base, NFR-B02), or a list such as a Phase Completion Document's
//! `files_modified` (FR-M07), both through [`mirror_files`]. A listed file
//! that no longer exists loses its mirror; one in no language with a
//! tree-sitter analyzer (the same analyzers the indexer uses) is skipped.
//!
//! Where: `src/a.py` is mirrored in `knowledge/code-mirror/src/a.py.md`
//! (the extension stays, so `a.py` and `a.rs` never share a mirror), node
//! id `mirror-src-a.py` (lower-cased, `/` as `-`; a path with other
//! characters gets a short hash of itself appended so ids stay unique).
//!
//! Entries: functions, methods and tests, and the declarations that stand
//! for classes (classes, interfaces, traits, structs, enums), each with its
//! full source, so a class's block also holds its methods, which have their
//! own entries too (the literal layer finds both).
//!
//! Deterministic: symbols in source order, file lists sorted, and no
//! timestamp (`generated_at` of the spec's example would make two runs
//! differ; `source_hash` says which source a mirror reflects). A file whose
//! mirror text is unchanged is not rewritten; writes are atomic.
//!
//! The optional semantic drift check (`model_routing`) is never run here.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;
use sha2::{Digest, Sha256};

use agents_uko::lang::signature::signatures;
use agents_uko::model::NodeKind;

use crate::bounded::{self, Cap, ReadError};
use crate::diag::{AkmsError, Diagnostic, ProblemKind};
use crate::drift::{self, Drift};
use crate::vault::{Escape, confine, confine_lexically};

/// What the caller adds to every mirror node.
#[derive(Debug, Clone, Default)]
pub struct MirrorOptions {
    /// `generated_by_phase` of the nodes, when a phase is known.
    pub phase: Option<u32>,
}

/// A file that was not mirrored, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub file: String,
    pub reason: String,
}

/// The drift found in one source file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDrift {
    pub file: String,
    pub mirror: String,
    pub symbols: Vec<Drift>,
}

/// What a mirror run did; every list sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MirrorReport {
    /// Mirror files written (created or changed), relative to the repository.
    pub written: Vec<String>,
    /// Mirror files already up to date.
    pub unchanged: Vec<String>,
    /// Mirror files removed because their source is gone.
    pub removed: Vec<String>,
    pub skipped: Vec<Skipped>,
    /// Files whose mirror node was set to `status: draft` by drift.
    pub drift: Vec<FileDrift>,
}

/// A mirror file's text and the drift it records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    pub drift: Vec<Drift>,
}

/// The symbol kinds that get an entry: functions and classes (with the
/// other type declarations a class stands for in each language).
fn mirrored(kind: NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::Function
            | NodeKind::Method
            | NodeKind::Test
            | NodeKind::Class
            | NodeKind::Interface
            | NodeKind::Trait
            | NodeKind::Struct
            | NodeKind::Enum
    )
}

/// The mirror's path relative to `knowledge/` (its `content_ref`).
pub fn mirror_ref(source_file: &str) -> String {
    format!("code-mirror/{source_file}.md")
}

/// The mirror node's id.
pub fn mirror_id(source_file: &str) -> String {
    let lower = source_file.to_lowercase();
    let slug: String = lower
        .chars()
        .map(|c| match c {
            '/' => '-',
            c if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.') => c,
            _ => '-',
        })
        .collect();
    let lossless = source_file.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_./".contains(c));
    if lossless {
        format!("mirror-{slug}")
    } else {
        let hash = Sha256::digest(source_file.as_bytes());
        let short = agents_core::digest::hex(&hash[..4]);
        format!("mirror-{slug}-{short}")
    }
}

/// The language of `path` when the tree-sitter analyzers understand it
/// (prose aside: Markdown has no functions to mirror).
pub fn mirror_language(path: &str, text: &str) -> Option<&'static str> {
    use agents_uko::language::{detect_language, needs_first_line};
    let first = needs_first_line(path).then(|| text.lines().next().unwrap_or(""));
    let language = detect_language(path, first);
    (language != "markdown" && agents_uko::lang::structured_languages().contains(&language)).then_some(language)
}

/// Renders the mirror of `source_file` (its `text` in `language`).
pub fn render(source_file: &str, language: &str, text: &str, options: &MirrorOptions) -> Rendered {
    let analysis = agents_uko::lang::analyze(language, source_file, text);
    let mut symbols: Vec<usize> = (1..analysis.nodes.len()).filter(|&i| mirrored(analysis.nodes[i].kind)).collect();
    symbols.sort_by_key(|&i| (analysis.nodes[i].span.start_byte, i));
    let callables: Vec<usize> = symbols
        .iter()
        .copied()
        .filter(|&i| analysis.nodes[i].kind.is_callable() && analysis.nodes[i].doc.is_some())
        .collect();
    let spans: Vec<_> = callables.iter().map(|&i| analysis.nodes[i].span).collect();
    let mut drift = Vec::new();
    for (&i, signature) in callables.iter().zip(signatures(language, source_file, text, &spans)) {
        let node = &analysis.nodes[i];
        if let (Some(signature), Some(doc)) = (signature, &node.doc)
            && let Some(d) = drift::check(language, &node.symbol_path, node.span.start.line, doc, &signature)
        {
            drift.push(d);
        }
    }

    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let list = |names: &[String]| format!("[{}]", names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", "));
    let mut out = String::from("---\n");
    out.push_str(&format!("id: {}\n", mirror_id(source_file)));
    out.push_str(&format!("title: {}\n", quote(&format!("Code Mirror: {source_file}"))));
    out.push_str("domain: code-mirror\n");
    out.push_str(if drift.is_empty() { "status: established\n" } else { "status: draft\n" });
    out.push_str("confidence: 1.0\nsource: generated\nauto_update: true\n");
    out.push_str(&format!("content_ref: {}\n", quote(&mirror_ref(source_file))));
    out.push_str(&format!("source_file: {}\n", quote(source_file)));
    out.push_str(&format!("source_hash: sha256:{}\n", agents_core::digest::sha256_hex(text.as_bytes())));
    out.push_str(&format!("language: {language}\n"));
    if let Some(phase) = options.phase {
        out.push_str(&format!("generated_by_phase: {phase}\n"));
    }
    if !drift.is_empty() {
        out.push_str("docstring_drift:\n");
        for d in &drift {
            out.push_str(&format!("  - symbol: {}\n    line: {}\n", quote(&d.symbol), d.line));
            out.push_str(&format!("    extra_params: {}\n", list(&d.extra_params)));
            out.push_str(&format!("    missing_params: {}\n", list(&d.missing_params)));
            if let Some(returns) = &d.returns {
                out.push_str(&format!("    returns: {}\n", quote(returns)));
            }
        }
    }
    out.push_str("akms_schema: v2\n---\n\n");
    out.push_str(&format!("# Code Mirror: `{source_file}`\n\n"));
    out.push_str(&format!(
        "Generated from `{source_file}` ({language}) by `agents knowledge mirror`: per function and class, \
         the docstring, then the full source. Do not edit; it is regenerated.\n"
    ));
    if !drift.is_empty() {
        out.push_str("\n## Docstring drift\n\n");
        for d in &drift {
            out.push_str(&format!("- {}\n", d.describe()));
        }
    }
    for &i in &symbols {
        let node = &analysis.nodes[i];
        let (start, end) = (node.span.start.line, node.span.start.line + node.span.line_count() - 1);
        out.push_str(&format!("\n## `{}` ({}, lines {start}-{end})\n\n", node.symbol_path, node.kind.as_str()));
        if let Some(doc) = &node.doc {
            out.push_str(&doc_markdown(doc));
            out.push_str("\n\n");
        }
        let code = source_block(text, node.span.start_byte, node.span.end_byte);
        let fence = "`".repeat(longest_backtick_run(&code).max(2) + 1);
        out.push_str(&format!("{fence}{language}\n{}\n{fence}\n", code.trim_end()));
    }
    Rendered { text: out, drift }
}

/// A docstring as Markdown inside a `##` entry: its headings (outside code
/// fences) moved below the entry's level.
fn doc_markdown(doc: &str) -> String {
    let mut fence = false;
    let lines: Vec<String> = doc
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                fence = !fence;
            }
            if !fence && line.starts_with('#') { format!("##{line}") } else { line.to_owned() }
        })
        .collect();
    lines.join("\n").trim_end().to_owned()
}

/// The source of `start..end` as a block: from the start of its first line
/// when only indentation precedes it, with that indentation removed from
/// every line that has it (a method reads as written, one level out).
fn source_block(text: &str, start: usize, end: usize) -> String {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let lead = &text[line_start..start];
    let (from, indent) = if lead.chars().all(|c| c == ' ' || c == '\t') { (line_start, lead) } else { (start, "") };
    let code = text.get(from..end).unwrap_or("");
    let lines: Vec<&str> = code.lines().map(|line| line.strip_prefix(indent).unwrap_or(line)).collect();
    lines.join("\n")
}

fn longest_backtick_run(text: &str) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AkmsError + '_ {
    move |source| AkmsError::Io { path: path.to_path_buf(), source }
}

/// A listed path as a clean repository-relative path, or the problem.
fn normalise(path: &str) -> Result<String, Escape> {
    confine_lexically(path)?;
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.is_empty() {
        return Err(Escape::Empty);
    }
    if parts.contains(&"..") {
        return Err(Escape::ClimbsOut);
    }
    Ok(parts.join("/"))
}

/// The largest source file mirrored; a larger one is skipped, not read.
pub const MAX_SOURCE_BYTES: u64 = 4 * bounded::MIB;
const SOURCE_CAP: Cap = Cap::new(MAX_SOURCE_BYTES, "a fixed limit for mirrored source files");

/// Mirrors `files` (paths relative to `repo`, e.g. a PCD's `files_modified`,
/// FR-M07): writes or refreshes the mirror of each existing source file,
/// removes the mirror of each file that is gone. Every path is checked
/// before anything is written; a path that is absolute or leaves the
/// repository is bad input.
pub fn mirror_files(repo: &Path, files: &[String], options: &MirrorOptions) -> Result<MirrorReport, AkmsError> {
    let mut problems = Vec::new();
    let mut clean = Vec::new();
    for file in files {
        match normalise(file).and_then(|p| confine(repo, &p).map(|found| (p, found))) {
            Ok((path, found)) => clean.push((path, found)),
            Err(e) => problems.push(Diagnostic::error(
                ProblemKind::PathEscape,
                Path::new(file),
                None,
                Some("files"),
                escape_message(&e, repo),
            )),
        }
    }
    if !problems.is_empty() {
        return Err(AkmsError::Invalid { problems });
    }
    clean.sort();
    clean.dedup();
    let root = repo.join("knowledge").join("code-mirror");
    let mut report = MirrorReport::default();
    for (source, found) in clean {
        if source == "knowledge" || source.starts_with("knowledge/") {
            report.skipped.push(Skipped { file: source, reason: "inside knowledge/".into() });
            continue;
        }
        let mirror_rel = format!("knowledge/{}", mirror_ref(&source));
        let mirror = repo.join(&mirror_rel);
        let Some(path) = found.filter(|p| p.is_file()) else {
            if found_dir(repo, &source) {
                report.skipped.push(Skipped { file: source, reason: "a directory".into() });
            } else if repo.join(&source).exists() {
                // A FIFO, socket or device: never opened.
                report.skipped.push(Skipped { file: source, reason: "not a regular file".into() });
            } else if mirror.is_file() {
                std::fs::remove_file(&mirror).map_err(io(&mirror))?;
                prune_empty_dirs(&mirror, &root);
                report.removed.push(mirror_rel);
            }
            continue;
        };
        let bytes = match bounded::read_bytes(&path, Some(repo), SOURCE_CAP) {
            Ok(bytes) => bytes,
            Err(e @ (ReadError::TooLarge { .. } | ReadError::NotRegular(_))) => {
                report.skipped.push(Skipped { file: source, reason: e.to_string() });
                continue;
            }
            Err(ReadError::Io(e)) => return Err(io(&path)(e)),
            Err(e) => {
                let problem = e.diagnostic(Path::new(&source), None, Some("files"));
                return Err(AkmsError::Invalid { problems: vec![problem] });
            }
        };
        let Ok(text) = String::from_utf8(bytes) else {
            report.skipped.push(Skipped { file: source, reason: "not UTF-8 text".into() });
            continue;
        };
        let Some(language) = mirror_language(&source, &text) else {
            report.skipped.push(Skipped { file: source, reason: "no code analyzer for its language".into() });
            continue;
        };
        let rendered = render(&source, language, &text, options);
        if !rendered.drift.is_empty() {
            report.drift.push(FileDrift { file: source.clone(), mirror: mirror_rel.clone(), symbols: rendered.drift });
        }
        let old = bounded::read_bytes(&mirror, None, Cap::new(rendered.text.len() as u64, "the new mirror's size"));
        if old.is_ok_and(|old| old == rendered.text.as_bytes()) {
            report.unchanged.push(mirror_rel);
        } else {
            agents_fs::atomic_write(&mirror, rendered.text.as_bytes()).map_err(io(&mirror))?;
            report.written.push(mirror_rel);
        }
    }
    Ok(report)
}

fn found_dir(repo: &Path, source: &str) -> bool {
    repo.join(source).is_dir()
}

fn escape_message(e: &Escape, repo: &Path) -> String {
    match e {
        Escape::Empty => "an empty path".into(),
        Escape::Absolute => format!("is absolute; give it relative to {}", repo.display()),
        Escape::ClimbsOut => format!("leads outside {} with `..`", repo.display()),
        Escape::SymlinkOut => format!("leads outside {} through a symbolic link", repo.display()),
    }
}

/// Removes the directories left empty between `file` and `root`.
fn prune_empty_dirs(file: &Path, root: &Path) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// The files changed in `repo` against `base` (NFR-B02): everything that
/// differs between the merge base of `base` and `HEAD` and the working tree
/// (committed, staged or not), plus untracked files git does not ignore;
/// repository-relative, sorted, `knowledge/` left out.
pub fn changed_files(repo: &Path, base: &str) -> Result<Vec<String>, AkmsError> {
    if base.starts_with('-') || base.trim().is_empty() {
        return Err(git_error(repo, format!("`{base}` is not a branch name")));
    }
    git(repo, &["rev-parse", "--show-toplevel"])
        .map_err(|_| git_error(repo, "not a git repository; name the files to mirror instead".into()))?;
    git(repo, &["rev-parse", "--verify", "--quiet", &format!("{base}^{{commit}}")])
        .map_err(|_| git_error(repo, format!("base branch `{base}` not found")))?;
    let merge_base = git(repo, &["merge-base", base, "HEAD"])?;
    let merge_base = String::from_utf8_lossy(&merge_base).trim().to_owned();
    let mut files = Vec::new();
    for args in [
        &["diff", "--name-only", "--no-renames", "--relative", "-z", merge_base.as_str(), "--"][..],
        &["ls-files", "--others", "--exclude-standard", "-z"][..],
    ] {
        let out = git(repo, args)?;
        files.extend(out.split(|&b| b == 0).filter(|p| !p.is_empty()).map(|p| String::from_utf8_lossy(p).into_owned()));
    }
    files.retain(|f| !f.starts_with("knowledge/"));
    files.sort();
    files.dedup();
    Ok(files)
}

fn git_error(repo: &Path, message: String) -> AkmsError {
    AkmsError::Git { repo: repo.to_path_buf(), message }
}

/// Runs git in `repo`; stdout, or an error with git's own message.
fn git(repo: &Path, args: &[&str]) -> Result<Vec<u8>, AkmsError> {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .map_err(|source| AkmsError::Io { path: PathBuf::from("git"), source })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let message = stderr.lines().next().unwrap_or("failed").trim().to_owned();
        return Err(git_error(repo, format!("git {}: {message}", args.first().copied().unwrap_or(""))));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Layer, parse_node};

    const PY: &str = "\"\"\"Module.\"\"\"\n\n\nclass Greeter:\n    \"\"\"Greets people.\"\"\"\n\n    def greet(self, name: str) -> str:\n        \"\"\"Greets.\n\n        Args:\n            name: who.\n\n        Returns:\n            The greeting.\n        \"\"\"\n        return f\"hi {name}\"\n\n\ndef helper(x):\n    return x\n";

    #[test]
    fn fr_c02_mirror_holds_docstring_and_full_source_in_source_order() {
        let r = render("src/greet.py", "python", PY, &MirrorOptions { phase: Some(2) });
        assert!(r.drift.is_empty());
        let (node, problems) = parse_node(Path::new("m.md"), &r.text, Layer::CodeMirror);
        assert!(problems.is_empty(), "{problems:?}\n{}", r.text);
        let node = node.unwrap();
        assert_eq!(node.id, "mirror-src-greet.py");
        assert_eq!(node.attributes["status"], "established");
        assert_eq!(node.attributes["generated_by_phase"], 2);
        assert_eq!(node.attributes["content_ref"], "code-mirror/src/greet.py.md");
        assert!(!node.attributes.contains_key("tags"));
        let class = r.text.find("## `Greeter` (class, lines 4-16)").unwrap();
        let method = r.text.find("## `Greeter.greet` (method, lines 7-16)").unwrap();
        let helper = r.text.find("## `helper` (function, lines 19-20)").unwrap();
        assert!(class < method && method < helper);
        assert!(r.text.contains("Greets.\n\nArgs:\n    name: who."));
        assert!(r.text.contains("```python\ndef helper(x):\n    return x\n```\n"));
    }

    #[test]
    fn fr_c03_drift_sets_draft_and_is_recorded() {
        let drifted = PY.replace("name: who.", "person: who.");
        let r = render("src/greet.py", "python", &drifted, &MirrorOptions::default());
        assert_eq!(r.drift.len(), 1);
        assert_eq!(r.drift[0].symbol, "Greeter.greet");
        let (node, problems) = parse_node(Path::new("m.md"), &r.text, Layer::CodeMirror);
        assert!(problems.is_empty(), "{problems:?}");
        let node = node.unwrap();
        assert_eq!(node.attributes["status"], "draft");
        let recorded = &node.attributes["docstring_drift"][0];
        assert_eq!(recorded["extra_params"], serde_json::json!(["person"]));
        assert_eq!(recorded["missing_params"], serde_json::json!(["name"]));
        assert!(r.text.contains("## Docstring drift\n\n- `Greeter.greet` (line 7): documents `person`"));
    }

    /// Drift found end to end (analyzer doc, signature, convention) in a
    /// small file per language: `(language, path, in sync, drifted)`.
    const LANGUAGES: &[(&str, &str, &str, &str)] = &[
        (
            "typescript",
            "a.ts",
            "/**\n * Adds.\n * @param a first\n * @param b second\n * @returns the sum\n */\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n",
            "/**\n * Adds.\n * @param a first\n * @param c second\n * @returns the sum\n */\nexport function add(a: number, b: number): void {\n  a + b;\n}\n",
        ),
        (
            "javascript",
            "a.js",
            "class C {\n  /**\n   * Runs.\n   * @param {string} task what\n   */\n  run(task) {}\n}\n",
            "class C {\n  /**\n   * Runs.\n   * @param {string} job what\n   */\n  run(task) {}\n}\n",
        ),
        (
            "java",
            "A.java",
            "class A {\n    /**\n     * Runs.\n     * @param task what\n     * @return the code\n     */\n    int run(String task) { return 0; }\n}\n",
            "class A {\n    /**\n     * Runs.\n     * @param task what\n     * @return the code\n     */\n    void run(String task) { }\n}\n",
        ),
        (
            "rust",
            "a.rs",
            "/// Adds.\n///\n/// # Arguments\n///\n/// * `a` - first\npub fn add(a: i32) -> i32 {\n    a\n}\n",
            "/// Adds.\n///\n/// # Arguments\n///\n/// * `x` - first\npub fn add(a: i32) -> i32 {\n    a\n}\n",
        ),
        (
            "c",
            "a.c",
            "/**\n * Copies.\n * @param dst target\n */\nvoid copy(char *dst) {}\n",
            "/**\n * Copies.\n * @param to target\n */\nvoid copy(char *dst) {}\n",
        ),
        (
            "python",
            "a.py",
            "def f(a, b):\n    \"\"\"Does.\n\n    :param a: one\n    :param b: two\n    \"\"\"\n",
            "def f(a, c):\n    \"\"\"Does.\n\n    :param a: one\n    :param b: two\n    \"\"\"\n",
        ),
    ];

    #[test]
    fn fr_c03_drift_end_to_end_per_language() {
        for (language, path, in_sync, drifted) in LANGUAGES {
            let ok = render(path, language, in_sync, &MirrorOptions::default());
            assert!(ok.drift.is_empty(), "{language}: {:?}", ok.drift);
            let bad = render(path, language, drifted, &MirrorOptions::default());
            assert_eq!(bad.drift.len(), 1, "{language}: no drift found in\n{}", bad.text);
            assert!(bad.text.contains("status: draft\n"), "{language}");
            assert!(ok.text.contains(&format!("```{language}\n")), "{language}");
        }
        let ts = render("a.ts", "typescript", LANGUAGES[0].3, &MirrorOptions::default());
        assert_eq!(ts.drift[0].extra_params, ["c"]);
        assert_eq!(ts.drift[0].missing_params, ["b"]);
        assert!(ts.drift[0].returns.is_some());
        // Go's doc convention names no parameters: never drift.
        let go = "package p\n\n// Run runs with x.\n//\n// @param y not Go's convention\nfunc Run(x int) {}\n";
        let r = render("a.go", "go", go, &MirrorOptions::default());
        assert!(r.drift.is_empty() && r.text.contains("```go\nfunc Run(x int) {}\n```"), "{}", r.text);
    }

    #[test]
    fn broken_or_odd_sources_render_without_panicking() {
        let nasty = [
            "",
            "def f(:\n  \"\"\"x\n",
            "fn f( -> {\n/// ü\n",
            "/** @param {{{ x */ function f(a) {",
            "\u{feff}é = 1\r\ndef g(a):\r\n    \"\"\"Args:\r\n        b: x\r\n    \"\"\"\r\n",
            "class A { /** @param */ void m(int... ) {} }",
            "int f(void (*cb)(int), ...) { return 0; }",
            "func (s *S) M(, b) {}",
        ];
        for language in ["python", "javascript", "typescript", "tsx", "rust", "go", "java", "c", "cpp"] {
            for text in nasty {
                let r = render("a", language, text, &MirrorOptions::default());
                assert!(r.text.starts_with("---\nid: mirror-a\n"), "{language}");
                let (node, problems) = parse_node(Path::new("m.md"), &r.text, Layer::CodeMirror);
                assert!(node.is_some(), "{language} {text:?}: {problems:?}");
            }
        }
    }

    #[test]
    fn ids_and_paths() {
        assert_eq!(mirror_id("src/solvers/fft/green.py"), "mirror-src-solvers-fft-green.py");
        let upper = mirror_id("src/Main.java");
        assert!(upper.starts_with("mirror-src-main.java-") && upper.len() == "mirror-src-main.java-".len() + 8);
        assert_ne!(mirror_id("src/Main.java"), mirror_id("src/main.java"));
        assert!(crate::schema::valid_id(&mirror_id("a b/ü.rs")));
        assert_eq!(mirror_ref("src/a.rs"), "code-mirror/src/a.rs.md");
        assert_eq!(mirror_language("a.py", ""), Some("python"));
        assert_eq!(mirror_language("README.md", ""), None);
        assert_eq!(mirror_language("data.csv", ""), None);
    }

    #[test]
    fn a_fence_outlasts_backticks_in_the_source() {
        let rs = "/// Prints.\n///\n/// ```\n/// # let x = 1;\n/// ```\n///\n/// # Panics\n/// never\npub fn f() { let _s = \"````\"; }\n";
        let r = render("src/lib.rs", "rust", rs, &MirrorOptions::default());
        assert!(r.text.contains("`````rust\npub fn f()"), "{}", r.text);
        assert!(r.text.contains("### Panics"), "{}", r.text);
        assert!(r.text.contains("# let x = 1;"), "fenced lines are kept as written");
    }

    #[test]
    fn bad_paths_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "def f():\n    pass\n").unwrap();
        let err = mirror_files(
            dir.path(),
            &["a.py".into(), "../x.py".into(), "/etc/passwd".into()],
            &MirrorOptions::default(),
        )
        .unwrap_err();
        let AkmsError::Invalid { problems } = err else { panic!("{err}") };
        assert_eq!(problems.len(), 2);
        assert!(problems[0].to_string().starts_with("../x.py: files: leads outside"), "{}", problems[0]);
        assert!(!dir.path().join("knowledge").exists());
    }

    #[test]
    fn mirror_files_writes_skips_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.py"), "def f():\n    pass\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let files = vec!["./src/a.py".to_owned(), "notes.txt".to_owned(), "src/a.py".to_owned()];
        let report = mirror_files(dir.path(), &files, &MirrorOptions::default()).unwrap();
        assert_eq!(report.written, ["knowledge/code-mirror/src/a.py.md"]);
        assert_eq!(report.skipped[0].file, "notes.txt");
        let again = mirror_files(dir.path(), &files, &MirrorOptions::default()).unwrap();
        assert_eq!(again.unchanged, ["knowledge/code-mirror/src/a.py.md"]);
        std::fs::remove_file(dir.path().join("src/a.py")).unwrap();
        let gone = mirror_files(dir.path(), &files, &MirrorOptions::default()).unwrap();
        assert_eq!(gone.removed, ["knowledge/code-mirror/src/a.py.md"]);
        assert!(!dir.path().join("knowledge/code-mirror/src").exists());
        assert!(dir.path().join("knowledge/code-mirror").is_dir());
    }

    #[cfg(unix)]
    #[test]
    fn fifos_and_oversized_sources_are_skipped_unread() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        crate::bounded::tests::mkfifo(&dir.path().join("src/pipe.py"));
        std::fs::File::create(dir.path().join("src/huge.py")).unwrap().set_len(1 << 30).unwrap();
        let files = vec!["src/pipe.py".to_owned(), "src/huge.py".to_owned()];
        let root = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(mirror_files(&root, &files, &MirrorOptions::default())).unwrap());
        let report = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("no hang").unwrap();
        let skipped: Vec<(&str, &str)> = report.skipped.iter().map(|s| (s.file.as_str(), s.reason.as_str())).collect();
        assert_eq!(
            skipped,
            [
                (
                    "src/huge.py",
                    "is 1.0 GiB (1073741824 bytes), over the limit of 4 MiB (4194304 bytes; a fixed limit for mirrored source files); it was not read"
                ),
                ("src/pipe.py", "not a regular file"),
            ]
        );
        assert!(report.written.is_empty());
    }
}
