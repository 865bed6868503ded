//! Parse throughput per language on real repositories (docs/languages.md).
//!
//! `cargo bench -p agents-uko --bench parse [-- [--passes N] REPO...]` reads
//! each REPO's files at `HEAD` straight from git (a checkout or a bare
//! mirror: `git ls-tree` and `git cat-file --batch`, nothing is written), keeps
//! the files of every language with a structural analyzer, and times per
//! (language, repository), in one thread:
//!
//! * `parse`: tree-sitter alone, the grammar the analyzer uses (the
//!   reference: what any tree-sitter indexer pays);
//! * `analyze`: the analyzer (`lang::analyzer_for(language).analyze`), which
//!   parses and then walks or queries the tree into nodes and references.
//!
//! Each is the median of N passes (default 5) over the same files, so noise
//! from a shared machine shows in the spread, not the figure; `ratio` is
//! analyze / parse time, the analyzer's overhead, which stays comparable
//! across machines. MB/s is per core (one thread). Without REPO arguments
//! it takes every `/work/.mirror/*/repo` (the `fetch` mirrors) or
//! `$AGENTS_BENCH_MIRRORS/*/repo`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use agents_uko::lang::analyzer_for;
use agents_uko::language::detect_language;
use tree_sitter::{Language, Parser};

/// The grammar each analyzer parses with (C headers may be re-parsed as C++
/// by the analyzer; the reference parses them once, as C).
fn grammar(language: &str) -> Option<Language> {
    Some(match language {
        "python" => tree_sitter_python::LANGUAGE.into(),
        "javascript" => tree_sitter_javascript::LANGUAGE.into(),
        "typescript" => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        "tsx" => tree_sitter_typescript::LANGUAGE_TSX.into(),
        "rust" => tree_sitter_rust::LANGUAGE.into(),
        "go" => tree_sitter_go::LANGUAGE.into(),
        "java" => tree_sitter_java::LANGUAGE.into(),
        "c" => tree_sitter_c::LANGUAGE.into(),
        "cpp" => tree_sitter_cpp::LANGUAGE.into(),
        "ruby" => tree_sitter_ruby::LANGUAGE.into(),
        "shell" => tree_sitter_bash::LANGUAGE.into(),
        "lua" => tree_sitter_lua::LANGUAGE.into(),
        "csharp" => tree_sitter_c_sharp::LANGUAGE.into(),
        "php" => tree_sitter_php::LANGUAGE_PHP.into(),
        "kotlin" => tree_sitter_kotlin_ng::LANGUAGE.into(),
        "scala" => tree_sitter_scala::LANGUAGE.into(),
        "swift" => tree_sitter_swift::LANGUAGE.into(),
        "zig" => tree_sitter_zig::LANGUAGE.into(),
        "haskell" => tree_sitter_haskell::LANGUAGE.into(),
        "elixir" => tree_sitter_elixir::LANGUAGE.into(),
        _ => return None,
    })
}

/// `(path, text)` of every file at HEAD under 1 MiB that is UTF-8.
fn files_at_head(repo: &Path) -> Vec<(String, String)> {
    let git = |args: &[&str]| {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(repo).args(args);
        cmd
    };
    let Ok(listing) = git(&["ls-tree", "-r", "-l", "-z", "HEAD"]).output() else { return Vec::new() };
    let mut paths = Vec::new();
    for entry in listing.stdout.split(|&b| b == 0) {
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, path)) = entry.split_once('\t') else { continue };
        let meta: Vec<&str> = meta.split_whitespace().collect();
        if meta.get(1) == Some(&"blob")
            && meta.get(3).and_then(|s| s.parse::<usize>().ok()).is_some_and(|n| n < 1 << 20)
        {
            paths.push(path.to_string());
        }
    }
    let Ok(mut child) = git(&["cat-file", "--batch"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn() else {
        return Vec::new();
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else { return Vec::new() };
    let request: String = paths.iter().map(|p| format!("HEAD:{p}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(request.as_bytes()));
    let mut reader = BufReader::new(stdout);
    let mut out = Vec::new();
    for path in paths {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            break;
        }
        let Some(size) = header.split_whitespace().nth(2).and_then(|s| s.parse::<usize>().ok()) else { continue };
        let mut body = vec![0; size + 1];
        if reader.read_exact(&mut body).is_err() {
            break;
        }
        body.pop();
        if let Ok(text) = String::from_utf8(body) {
            out.push((path, text));
        }
    }
    let _ = writer.join();
    let _ = child.wait();
    out
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

struct Row {
    language: &'static str,
    repo: String,
    files: usize,
    bytes: usize,
    nodes: usize,
    references: usize,
    parse_secs: f64,
    analyze_secs: f64,
}

fn measure(language: &'static str, grammar: Language, repo: String, files: &[(String, String)], passes: usize) -> Row {
    let mut parser = Parser::new();
    parser.set_language(&grammar).expect("the grammar matches the tree-sitter version");
    let analyzer = analyzer_for(language);
    let (mut nodes, mut references) = (0, 0);
    for (path, text) in files {
        let a = analyzer.analyze(language, path, text);
        nodes += a.nodes.len().saturating_sub(1);
        references += a.references.len();
    }
    let (mut parse, mut analyze) = (Vec::new(), Vec::new());
    for _ in 0..passes {
        let start = Instant::now();
        for (_, text) in files {
            std::hint::black_box(parser.parse(text, None));
        }
        parse.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        for (path, text) in files {
            std::hint::black_box(analyzer.analyze(language, path, text));
        }
        analyze.push(start.elapsed().as_secs_f64());
    }
    Row {
        language,
        repo,
        files: files.len(),
        bytes: files.iter().map(|(_, t)| t.len()).sum(),
        nodes,
        references,
        parse_secs: median(parse),
        analyze_secs: median(analyze),
    }
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench").peekable();
    let mut passes = 5;
    let mut repos = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "--passes" {
            passes = args.next().and_then(|n| n.parse().ok()).unwrap_or(passes).max(1);
        } else {
            repos.push(PathBuf::from(arg));
        }
    }
    if repos.is_empty() {
        let root = std::env::var("AGENTS_BENCH_MIRRORS").unwrap_or_else(|_| "/work/.mirror".into());
        let mut dirs: Vec<PathBuf> =
            std::fs::read_dir(&root).into_iter().flatten().flatten().map(|e| e.path().join("repo")).collect();
        dirs.retain(|d| d.is_dir());
        dirs.sort();
        repos = dirs;
    }
    println!("passes: {passes} (median); MB/s on one core");
    println!(
        "| language | repository | files | MB | nodes | references | parse MB/s | analyze MB/s | ratio | nodes/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    for repo in &repos {
        let name = repo
            .parent()
            .filter(|_| repo.ends_with("repo"))
            .unwrap_or(repo)
            .file_name()
            .map_or_else(|| repo.display().to_string(), |n| n.to_string_lossy().replace('+', "/"));
        let mut by_language: BTreeMap<&'static str, Vec<(String, String)>> = BTreeMap::new();
        for (path, text) in files_at_head(repo) {
            let language = detect_language(&path, text.lines().next());
            if grammar(language).is_some() {
                by_language.entry(language).or_default().push((path, text));
            }
        }
        for (language, files) in by_language {
            let Some(grammar) = grammar(language) else { continue };
            let row = measure(language, grammar, name.clone(), &files, passes);
            let mb = row.bytes as f64 / 1e6;
            println!(
                "| {} | {} | {} | {:.2} | {} | {} | {:.1} | {:.1} | {:.2} | {:.0} |",
                row.language,
                row.repo,
                row.files,
                mb,
                row.nodes,
                row.references,
                mb / row.parse_secs,
                mb / row.analyze_secs,
                row.analyze_secs / row.parse_secs,
                row.nodes as f64 / row.analyze_secs,
            );
            rows.push(row);
        }
    }
    // Per language over every repository.
    println!("\n| language | repositories | files | MB | nodes | parse MB/s | analyze MB/s | ratio |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut totals: BTreeMap<&str, (usize, usize, usize, usize, f64, f64)> = BTreeMap::new();
    for r in &rows {
        let t = totals.entry(r.language).or_default();
        *t = (t.0 + 1, t.1 + r.files, t.2 + r.bytes, t.3 + r.nodes, t.4 + r.parse_secs, t.5 + r.analyze_secs);
    }
    for (language, (repos, files, bytes, nodes, parse, analyze)) in totals {
        let mb = bytes as f64 / 1e6;
        println!(
            "| {language} | {repos} | {files} | {mb:.2} | {nodes} | {:.1} | {:.1} | {:.2} |",
            mb / parse,
            mb / analyze,
            analyze / parse
        );
    }
}
