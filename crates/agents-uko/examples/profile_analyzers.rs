//! Profiles the analyzers over a tree: total time per language and the
//! slowest files. A development tool for finding pathological inputs.
//!
//!     cargo run --release -p agents-uko --example profile_analyzers -- DIR [LANG-BY-EXT...]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

fn language_of(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "py" | "pyi" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "ts" => "typescript",
        "tsx" => "tsx",
        "rs" => "rust",
        "go" => "go",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "hpp" | "cxx" => "cpp",
        "md" => "markdown",
        _ => "text",
    }
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let root = std::env::args().nth(1).expect("usage: profile_analyzers DIR");
    let mut files = Vec::new();
    walk(Path::new(&root), &mut files);
    files.sort();
    let mut per_lang: BTreeMap<&str, (usize, usize, Duration, usize)> = BTreeMap::new();
    let mut slow: Vec<(Duration, String, usize, usize)> = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        if text.len() > 1 << 20 {
            continue;
        }
        let rel = f.strip_prefix(&root).unwrap().to_string_lossy().to_string();
        let lang = language_of(&rel);
        let start = Instant::now();
        let a = agents_uko::lang::analyze(lang, &rel, &text);
        let took = start.elapsed();
        let e = per_lang.entry(lang).or_default();
        e.0 += 1;
        e.1 += text.len();
        e.2 += took;
        e.3 += a.nodes.len();
        slow.push((took, rel, text.len(), a.nodes.len()));
    }
    for (lang, (n, bytes, t, nodes)) in &per_lang {
        println!(
            "{lang:<12} {n:>6} files {:>8.1} MB {:>8.2} s {:>7.1} MB/s {nodes:>8} nodes",
            *bytes as f64 / 1e6,
            t.as_secs_f64(),
            *bytes as f64 / 1e6 / t.as_secs_f64().max(1e-9)
        );
    }
    slow.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (t, p, bytes, nodes) in slow.iter().take(15) {
        println!("{:>8.1} ms {bytes:>9} B {nodes:>6} nodes  {p}", t.as_secs_f64() * 1000.0);
    }
}
