//! What the AKMS benches share: a synthetic vault from `scripts/gen-vault.py`
//! and the median timer.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agents_akms::{CompileOptions, Layout};

/// A generated vault of `n` nodes (global vault and repository) in a
/// temporary directory, with its layout and the default compile options.
pub fn generated_vault(n: usize) -> (tempfile::TempDir, Layout, CompileOptions) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/gen-vault.py");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let status = Command::new("python3")
        .arg(&script)
        .arg(dir.path())
        .arg(n.to_string())
        .status()
        .expect("python3 runs scripts/gen-vault.py");
    assert!(status.success(), "gen-vault.py failed");
    let layout = Layout::new(dir.path().join("repo"), dir.path().join("global"));
    let options = CompileOptions { global_vault_display: "~/.claude/akms/nodes".into() };
    (dir, layout, options)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median of `runs` timed calls, after one untimed call that warms the
/// page cache.
pub fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    median_cold(runs, f)
}

/// The median of `runs` timed calls, with no warm-up call (for work that
/// must not run once more than asked).
pub fn median_cold(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}
