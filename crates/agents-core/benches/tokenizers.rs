//! Tokenizer throughput: `bpe-openai` against `tiktoken-rs` on real files.
//!
//! `cargo bench -p agents-core --bench tokenizers [-- DIR]` reads every text
//! file under DIR (default: the Python standard library of this machine),
//! counts tokens with each implementation and encoding, and prints MB/s.
//! Both implementations must produce the same total, or the bench fails.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agents_core::tokens::{Encoding, TokenCounter, Tokenizer, TokenizerImpl};

fn collect(dir: &Path, out: &mut Vec<String>, budget: &mut usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if *budget == 0 {
            return;
        }
        if path.is_dir() {
            collect(&path, out, budget);
        } else if let Ok(text) = std::fs::read_to_string(&path)
            && text.len() < 1 << 20
        {
            *budget = budget.saturating_sub(text.len());
            out.push(text);
        }
    }
}

fn main() {
    let dir = std::env::args().skip(1).find(|a| !a.starts_with('-')).map(PathBuf::from).unwrap_or_else(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"])
            .output()
            .expect("python3 to locate a corpus; pass a directory instead");
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    });
    let mut texts = Vec::new();
    let mut budget = 40usize << 20; // 40 MB of text is plenty for a stable figure
    collect(&dir, &mut texts, &mut budget);
    let bytes: usize = texts.iter().map(String::len).sum();
    println!("corpus: {} files, {:.1} MB from {}", texts.len(), bytes as f64 / 1e6, dir.display());
    println!("{:<14} {:<12} {:>12} {:>10} {:>8}", "crate", "encoding", "tokens", "MB/s", "ratio");
    for encoding in Encoding::ALL {
        let mut baseline = None;
        let mut totals = Vec::new();
        for imp in [TokenizerImpl::Tiktoken, TokenizerImpl::BpeOpenai] {
            let tok = Tokenizer::with_impl(encoding, imp);
            tok.count("warm up the tables");
            let start = Instant::now();
            let total: usize = texts.iter().map(|t| tok.count(t)).sum();
            let secs = start.elapsed().as_secs_f64();
            let mbs = bytes as f64 / 1e6 / secs;
            let ratio = mbs / *baseline.get_or_insert(mbs);
            println!("{:<14} {:<12} {:>12} {:>10.1} {:>7.2}x", imp.name(), encoding.name(), total, mbs, ratio);
            totals.push(total);
        }
        assert!(totals.windows(2).all(|w| w[0] == w[1]), "implementations disagree: {totals:?}");
    }
}
