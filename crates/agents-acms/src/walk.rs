//! Walking a resource: which files exist, with their size and mtime.
//!
//! Uses ripgrep's `ignore` walker in parallel, so `.gitignore`, `.ignore`
//! and git's global excludes are honoured and `.git` is never entered.
//! Nothing is read here beyond directory entries and `stat`; problems
//! (broken or looping symlinks, unreadable directories, special files) are
//! returned as skips, never as errors, so one bad entry cannot stop a run.
//!
//! Confinement: a file is listed only if its canonical path lies inside the
//! canonical root. A symlink leading out (to a file, or with
//! `follow_symlinks` to a directory) is skipped as `outside_root` and
//! reported, so a cloned repository cannot make the index read and serve
//! `/etc/passwd` or a private key. Directory loops are cut by the walker,
//! which tracks the directories it is inside (reported as broken symlinks).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use agents_core::ids::to_iso;
use agents_core::indexing::SkipReason;
use agents_fs::confine::is_within;
use chrono::{DateTime, Utc};
use ignore::{WalkBuilder, WalkState};

/// A regular file found under the root.
#[derive(Clone, Debug)]
pub struct WalkEntry {
    /// Path relative to the root, `/`-separated.
    pub rel_path: String,
    pub abs_path: PathBuf,
    pub size: u64,
    /// ISO-8601 UTC with nanoseconds.
    pub modified: String,
}

/// Everything a walk found, sorted by path.
#[derive(Debug, Default)]
pub struct WalkResult {
    pub files: Vec<WalkEntry>,
    /// (reason, path relative to root) for entries that could not be used.
    pub skipped: Vec<(SkipReason, String)>,
}

pub struct WalkOptions {
    pub hidden: bool,
    pub follow_symlinks: bool,
    pub threads: usize,
}

pub fn walk(root: &Path, options: &WalkOptions) -> WalkResult {
    let result = Mutex::new(WalkResult::default());
    // The root as the kernel resolves it; a root that cannot be resolved
    // confines to itself lexically (the walk then finds nothing anyway).
    let canonical_root = Arc::new(root.canonicalize().unwrap_or_else(|_| root.to_path_buf()));
    // Directory symlinks leading out, cut before the walker descends (only
    // reachable with `follow_symlinks`; otherwise a directory link is a leaf).
    let escaped_dirs: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
    let walker = {
        let canonical_root = Arc::clone(&canonical_root);
        let escaped_dirs = Arc::clone(&escaped_dirs);
        WalkBuilder::new(root)
            .hidden(!options.hidden)
            .follow_links(options.follow_symlinks)
            .require_git(false)
            .filter_entry(move |e| {
                if e.file_name() == ".git" {
                    return false;
                }
                let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                if is_dir && e.path_is_symlink() && !is_within(e.path(), &canonical_root) {
                    escaped_dirs.lock().unwrap_or_else(|p| p.into_inner()).push(e.path().to_path_buf());
                    return false;
                }
                true
            })
            .threads(options.threads)
            .build_parallel()
    };
    walker.run(|| {
        let mut local = Buffer { shared: &result, local: WalkResult::default() };
        let canonical_root = Arc::clone(&canonical_root);
        Box::new(move |entry| {
            match entry {
                Ok(entry) => visit(root, &canonical_root, &entry, &mut local.local),
                Err(err) => local.local.skipped.push(classify_error(root, &err)),
            }
            if local.local.files.len() + local.local.skipped.len() >= 256 {
                local.flush();
            }
            WalkState::Continue
        })
    });
    // Each thread's buffer flushed itself when its visitor was dropped.
    let mut result = result.into_inner().unwrap_or_else(|p| p.into_inner());
    let escaped = std::mem::take(&mut *escaped_dirs.lock().unwrap_or_else(|p| p.into_inner()));
    result.skipped.extend(escaped.iter().map(|p| (SkipReason::OutsideRoot, relative(root, p))));
    result.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path).then_with(|| a.abs_path.cmp(&b.abs_path)));
    // Names that are not UTF-8 are stored lossily; two that collide would
    // share one record, so only the first (by raw name) is indexed.
    let mut collisions = Vec::new();
    result.files.dedup_by(|later, first| {
        let same = later.rel_path == first.rel_path;
        if same {
            collisions.push(later.rel_path.clone());
        }
        same
    });
    result.skipped.extend(collisions.into_iter().map(|p| (SkipReason::Unreadable, p)));
    result.skipped.sort();
    result
}

/// A walker thread's private batch, moved into the shared result when full
/// and when the thread's visitor is dropped at the end of the walk.
struct Buffer<'a> {
    shared: &'a Mutex<WalkResult>,
    local: WalkResult,
}

impl Buffer<'_> {
    fn flush(&mut self) {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        shared.files.append(&mut self.local.files);
        shared.skipped.append(&mut self.local.skipped);
    }
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

fn visit(root: &Path, canonical_root: &Path, entry: &ignore::DirEntry, local: &mut WalkResult) {
    let Some(file_type) = entry.file_type() else { return }; // stdin, never here
    if file_type.is_dir() {
        return;
    }
    let rel_path = relative(root, entry.path());
    // Only a symlink can lead out: a plain entry under a directory the walk
    // entered is inside, because directory links leading out are cut above.
    if entry.path_is_symlink() && entry.path().exists() && !is_within(entry.path(), canonical_root) {
        local.skipped.push((SkipReason::OutsideRoot, rel_path));
        return;
    }
    // For a symlink (not followed), stat the target: a file target is indexed
    // through the link, a missing or looping target is a broken symlink, a
    // directory target is not descended into.
    let metadata = if file_type.is_symlink() {
        match std::fs::metadata(entry.path()) {
            Ok(m) if m.is_dir() => return,
            Ok(m) => m,
            Err(_) => {
                local.skipped.push((SkipReason::BrokenSymlink, rel_path));
                return;
            }
        }
    } else {
        match entry.metadata() {
            Ok(m) => m,
            Err(_) => {
                local.skipped.push((SkipReason::Unreadable, rel_path));
                return;
            }
        }
    };
    if !metadata.is_file() {
        // FIFOs, sockets, devices: reading them could block or never end.
        local.skipped.push((SkipReason::Unreadable, rel_path));
        return;
    }
    let modified = metadata.modified().map(iso_mtime).unwrap_or_default();
    local.files.push(WalkEntry { rel_path, abs_path: entry.path().to_path_buf(), size: metadata.len(), modified });
}

fn iso_mtime(t: SystemTime) -> String {
    to_iso(DateTime::<Utc>::from(t))
}

fn relative(root: &Path, path: &Path) -> String {
    // What the walk passes: the root, a separator and a clean UTF-8 rest,
    // which the components below would give back as it is. Taken apart
    // only otherwise (a stat-bound walk spent a tenth of its CPU here).
    if cfg!(unix)
        && !root.as_os_str().is_empty()
        && let Some(rest) = path.as_os_str().as_encoded_bytes().strip_prefix(root.as_os_str().as_encoded_bytes())
        && let Some(rest) = rest.strip_prefix(b"/")
        && let Ok(rest) = std::str::from_utf8(rest)
        && is_clean(rest)
    {
        return rest.to_owned();
    }
    relative_by_components(root, path)
}

/// `path` relative to `root`, `/`-separated, component by component.
fn relative_by_components(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut out = String::new();
    for (i, part) in rel.components().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(&part.as_os_str().to_string_lossy());
    }
    out
}

/// Whether `rest` is a relative path that [`Path::components`] keeps as it
/// is: not empty, no empty or `.` component.
fn is_clean(rest: &str) -> bool {
    !rest.is_empty() && rest.split('/').all(|part| !part.is_empty() && part != ".")
}

fn classify_error(root: &Path, err: &ignore::Error) -> (SkipReason, String) {
    fn inner(err: &ignore::Error) -> (bool, Option<&Path>) {
        match err {
            ignore::Error::Loop { child, .. } => (true, Some(child.as_path())),
            ignore::Error::WithPath { path, err } => {
                let (is_loop, p) = inner(err);
                (is_loop || !path.exists(), p.or(Some(path.as_path())))
            }
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => inner(err),
            _ => (false, None),
        }
    }
    let (broken_link, path) = inner(err);
    let path = path.map(|p| relative(root, p)).unwrap_or_else(|| err.to_string());
    let reason = if broken_link { SkipReason::BrokenSymlink } else { SkipReason::Unreadable };
    (reason, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 2000, ..Default::default() })]

        /// The shortcut gives what taking the paths apart gives, for roots
        /// and paths with empty, `.` and `..` components and trailing or
        /// doubled separators.
        #[test]
        fn relative_paths_are_those_of_the_components(
            root in "(/|[a./]{0,3})[ab./]{0,6}",
            rest in "[ab./é]{0,8}",
            join in proptest::bool::ANY,
        ) {
            let path = if join { format!("{root}/{rest}") } else { format!("{root}{rest}") };
            let (root, path) = (Path::new(&root), Path::new(&path));
            proptest::prop_assert_eq!(relative(root, path), relative_by_components(root, path));
        }
    }

    fn opts() -> WalkOptions {
        WalkOptions { hidden: false, follow_symlinks: false, threads: 2 }
    }

    #[test]
    fn honours_gitignore_and_skips_dot_git_and_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref").unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n*.log\n").unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::write(root.join("build/out.txt"), "x").unwrap();
        std::fs::write(root.join("debug.log"), "x").unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/deep/a.py"), "x").unwrap();
        std::fs::write(root.join("README.md"), "x").unwrap();
        let r = walk(root, &opts());
        let paths: Vec<_> = r.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(paths, ["README.md", "src/deep/a.py"]);
        let r = walk(root, &WalkOptions { hidden: true, ..opts() });
        let paths: Vec<_> = r.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(paths, [".gitignore", "README.md", "src/deep/a.py"]);
    }

    #[test]
    fn broken_and_looping_symlinks_are_skipped_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("real.txt"), "hello").unwrap();
        std::os::unix::fs::symlink("missing.txt", root.join("dangling.txt")).unwrap();
        std::os::unix::fs::symlink("real.txt", root.join("alias.txt")).unwrap();
        std::os::unix::fs::symlink("self", root.join("self")).unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        std::os::unix::fs::symlink("..", root.join("d/up")).unwrap();
        for follow in [false, true] {
            let r = walk(root, &WalkOptions { follow_symlinks: follow, ..opts() });
            let paths: Vec<_> = r.files.iter().map(|f| f.rel_path.as_str()).collect();
            assert_eq!(paths, ["alias.txt", "real.txt"], "follow={follow}");
            let broken: Vec<_> = r
                .skipped
                .iter()
                .filter(|(reason, _)| *reason == SkipReason::BrokenSymlink)
                .map(|(_, p)| p.as_str())
                .collect();
            assert!(broken.contains(&"dangling.txt"), "follow={follow}: {:?}", r.skipped);
            assert!(broken.contains(&"self"), "follow={follow}: {:?}", r.skipped);
        }
    }

    #[test]
    fn symlinks_leading_out_of_the_root_are_skipped_and_reported() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "private key").unwrap();
        std::fs::create_dir(outside.path().join("home")).unwrap();
        std::fs::write(outside.path().join("home/id_rsa"), "private key").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn main() {}").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("leak.txt")).unwrap();
        std::os::unix::fs::symlink("../../repo/src/lib.rs", root.join("src/alias.rs")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("home"), root.join("linked_home")).unwrap();
        std::os::unix::fs::symlink("src", root.join("src_again")).unwrap();
        for follow in [false, true] {
            let r = walk(&root, &WalkOptions { follow_symlinks: follow, ..opts() });
            let paths: Vec<_> = r.files.iter().map(|f| f.rel_path.as_str()).collect();
            let mut expected = vec!["src/alias.rs", "src/lib.rs"];
            if follow {
                expected.extend(["src_again/alias.rs", "src_again/lib.rs"]);
            }
            assert_eq!(paths, expected, "follow={follow}");
            let out: Vec<_> = r
                .skipped
                .iter()
                .filter(|(reason, _)| *reason == SkipReason::OutsideRoot)
                .map(|(_, p)| p.as_str())
                .collect();
            assert_eq!(out, ["leak.txt", "linked_home"], "follow={follow}: {:?}", r.skipped);
        }
        // A root reached through a symlink confines to its target.
        let via = dir.path().join("via");
        std::os::unix::fs::symlink(&root, &via).unwrap();
        let r = walk(&via, &opts());
        let paths: Vec<_> = r.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(paths, ["src/alias.rs", "src/lib.rs"]);
    }

    #[test]
    fn fifo_is_skipped_as_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        let r = walk(dir.path(), &opts());
        assert!(r.files.is_empty());
        assert_eq!(r.skipped, [(SkipReason::Unreadable, "pipe".to_string())]);
    }
}
