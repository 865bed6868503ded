//! Where knowledge lives on disk, and the rule that no path read from a node
//! leaves its layer's root.
//!
//! Layout of a repository (spec 1.2): `knowledge/local-nodes/`,
//! `knowledge/code-mirror/`, `knowledge/sessions/`, `knowledge/loadouts/`,
//! `knowledge/graph/{graph.json, local_state.yaml, propagation_config.yaml}`.
//! The global vault is a directory of `*.md` nodes that this crate only reads.
//!
//! Confinement: a `content_ref` (and every other path taken from a node or the
//! overlay) is relative; it may not be absolute, may not climb above its root
//! with `..`, and, when it exists, its canonical path must lie under the
//! canonical root, so a symbolic link cannot lead out either.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use crate::diag::{Diagnostic, ProblemKind};

/// The directories and files of one repository's knowledge, and the global
/// vault it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub repo_root: PathBuf,
    pub global_vault: PathBuf,
}

impl Layout {
    pub fn new(repo_root: impl Into<PathBuf>, global_vault: impl Into<PathBuf>) -> Layout {
        Layout { repo_root: repo_root.into(), global_vault: global_vault.into() }
    }
    pub fn knowledge(&self) -> PathBuf {
        self.repo_root.join("knowledge")
    }
    pub fn local_nodes(&self) -> PathBuf {
        self.knowledge().join("local-nodes")
    }
    pub fn code_mirror(&self) -> PathBuf {
        self.knowledge().join("code-mirror")
    }
    pub fn graph_dir(&self) -> PathBuf {
        self.knowledge().join("graph")
    }
    pub fn graph_json(&self) -> PathBuf {
        self.graph_dir().join("graph.json")
    }
    pub fn local_state(&self) -> PathBuf {
        self.graph_dir().join("local_state.yaml")
    }
    pub fn propagation_config(&self) -> PathBuf {
        self.graph_dir().join("propagation_config.yaml")
    }
    /// `path` relative to the repository when it is inside it, for messages.
    pub fn display(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.repo_root).map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
    }
}

/// The nearest ancestor of `start` (itself included) with a `knowledge/`
/// directory, else the nearest with `.git`.
pub fn find_repo_root(start: &Path) -> Option<PathBuf> {
    let found = |marker: &str| start.ancestors().find(|dir| dir.join(marker).exists()).map(Path::to_path_buf);
    found("knowledge").filter(|dir| dir.join("knowledge").is_dir()).or_else(|| found(".git"))
}

/// Expands a leading `~/` with `home`.
pub fn expand_home(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if path == "~" && home.is_some() => home.map(Path::to_path_buf).unwrap_or_default(),
        _ => PathBuf::from(path),
    }
}

/// Why a relative path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Escape {
    Empty,
    Absolute,
    ClimbsOut,
    SymlinkOut,
}

impl Escape {
    fn message(&self, path: &str, root: &Path) -> String {
        match self {
            Escape::Empty => "must not be empty".into(),
            Escape::Absolute => format!("`{path}` is absolute; it must be relative to {}", root.display()),
            Escape::ClimbsOut => format!("`{path}` leads outside {} with `..`", root.display()),
            Escape::SymlinkOut => format!("`{path}` leads outside {} through a symbolic link", root.display()),
        }
    }
}

/// Resolves `relative` under `root`: `Ok(Some(path))` when it exists inside
/// the root, `Ok(None)` when it does not exist, `Err` when it escapes.
pub fn confine(root: &Path, relative: &str) -> Result<Option<PathBuf>, Escape> {
    confine_lexically(relative)?;
    let joined = root.join(relative);
    if std::fs::symlink_metadata(&joined).is_err() {
        return Ok(None);
    }
    let (Ok(real), Ok(real_root)) = (joined.canonicalize(), root.canonicalize()) else {
        return Ok(None);
    };
    if real.starts_with(&real_root) { Ok(Some(joined)) } else { Err(Escape::SymlinkOut) }
}

/// The lexical half of [`confine`]: relative, never above its start.
pub fn confine_lexically(relative: &str) -> Result<(), Escape> {
    if relative.trim().is_empty() {
        return Err(Escape::Empty);
    }
    let mut depth = 0usize;
    for component in Path::new(relative).components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return Err(Escape::Absolute),
            Component::CurDir => {}
            Component::ParentDir => depth = depth.checked_sub(1).ok_or(Escape::ClimbsOut)?,
            Component::Normal(_) => depth += 1,
        }
    }
    Ok(())
}

/// A confinement problem as a diagnostic.
pub(crate) fn escape_diagnostic(
    file: &Path,
    line: Option<usize>,
    field: &str,
    path: &str,
    root: &Path,
    e: &Escape,
) -> Diagnostic {
    Diagnostic::error(ProblemKind::PathEscape, file, line, Some(field), e.message(path, root))
}

/// Every `*.md` file under `root`, recursively, sorted; hidden entries are
/// skipped and a symbolic link is followed only when it stays inside `root`.
/// A missing `root` is empty.
///
/// Each directory is walked once, by its canonical path: the tree's own
/// directories first, then those reached only through symbolic links, in
/// path order, so links to `.` or between siblings cannot make the walk
/// loop or grow exponentially, and the listing does not depend on the order
/// the file system returns entries in. A link to a directory already walked
/// is reported as a warning and skipped.
pub fn markdown_files(root: &Path) -> (Vec<PathBuf>, Vec<Diagnostic>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let Ok(real_root) = root.canonicalize() else { return (files, problems) };
    let mut visited: BTreeSet<PathBuf> = BTreeSet::from([real_root.clone()]);
    // Directories to walk: (path as found, canonical path).
    let mut stack = vec![(root.to_path_buf(), real_root.clone())];
    // Symbolic links to directories inside the root, walked after the tree.
    let mut links: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    loop {
        let Some((dir, real_dir)) = stack.pop() else {
            let Some((link, real)) = links.pop_first() else { break };
            if visited.insert(real.clone()) {
                stack.push((link, real));
            } else {
                problems.push(Diagnostic::warning(
                    ProblemKind::RepeatedDirectory,
                    &link,
                    None,
                    None,
                    format!("symbolic link to `{}`, a directory already walked; skipped", shown(&real, &real_root)),
                ));
            }
            continue;
        };
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                problems.push(Diagnostic::error(
                    ProblemKind::Io,
                    &dir,
                    None,
                    None,
                    format!("cannot read directory: {e}"),
                ));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_symlink() {
                match path.canonicalize() {
                    Ok(real) if real.starts_with(&real_root) => {
                        if real.is_dir() {
                            links.insert(path, real);
                        } else if path.extension().is_some_and(|e| e == "md") {
                            files.push(path);
                        }
                    }
                    // A link out matters when it would be walked or read as a node.
                    Ok(real) if real.is_dir() || path.extension().is_some_and(|e| e == "md") => {
                        problems.push(Diagnostic::error(
                            ProblemKind::PathEscape,
                            &path,
                            None,
                            None,
                            format!("symbolic link leads outside {}", root.display()),
                        ))
                    }
                    Ok(_) => {}
                    Err(_) => {}
                }
            } else if kind.is_dir() {
                let real = real_dir.join(entry.file_name());
                if visited.insert(real.clone()) {
                    stack.push((path, real));
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                // Anything but a regular file is refused when read, with a
                // diagnostic naming it (crate::bounded).
                files.push(path);
            }
        }
    }
    files.sort();
    (files, problems)
}

/// `real` relative to `real_root` for messages (`.` for the root itself).
fn shown(real: &Path, real_root: &Path) -> String {
    match real.strip_prefix(real_root) {
        Ok(inside) if inside.as_os_str().is_empty() => ".".into(),
        Ok(inside) => inside.to_string_lossy().replace('\\', "/"),
        Err(_) => real.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ref_cannot_escape_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("vault");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/a.md"), "a").unwrap();
        assert_eq!(confine(&root, "docs/a.md"), Ok(Some(root.join("docs/a.md"))));
        assert_eq!(confine(&root, "docs/../docs/a.md"), Ok(Some(root.join("docs/../docs/a.md"))));
        assert_eq!(confine(&root, "docs/missing.md"), Ok(None));
        assert_eq!(confine(&root, "../../etc/passwd"), Err(Escape::ClimbsOut));
        assert_eq!(confine(&root, "docs/../../x"), Err(Escape::ClimbsOut));
        assert_eq!(confine(&root, "/etc/passwd"), Err(Escape::Absolute));
        #[cfg(unix)]
        {
            std::fs::write(dir.path().join("secret"), "s").unwrap();
            std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
            assert_eq!(confine(&root, "link"), Err(Escape::SymlinkOut));
        }
    }

    #[test]
    fn lists_markdown_sorted_and_skips_hidden() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.md", "a/c.md", "a/d.txt", ".hidden/e.md"] {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let (files, problems) = markdown_files(dir.path());
        assert!(problems.is_empty());
        let names: Vec<_> = files.iter().map(|f| f.strip_prefix(dir.path()).unwrap().to_path_buf()).collect();
        assert_eq!(names, [PathBuf::from("a/c.md"), PathBuf::from("b.md")]);
        assert!(markdown_files(&dir.path().join("missing")).0.is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_layer_is_refused_and_one_inside_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("vault"), dir.path().join("outside"));
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("real/a.md"), "x").unwrap();
        std::fs::write(outside.join("b.md"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).unwrap();
        std::fs::create_dir_all(root.join("linked")).unwrap();
        std::fs::write(root.join("linked/c.md"), "x").unwrap();
        let hidden = root.join(".store");
        std::fs::create_dir_all(&hidden).unwrap();
        std::fs::write(hidden.join("d.md"), "x").unwrap();
        std::os::unix::fs::symlink(&hidden, root.join("shown")).unwrap();
        let (files, problems) = markdown_files(&root);
        let names: Vec<_> = files.iter().map(|f| f.strip_prefix(&root).unwrap().to_path_buf()).collect();
        // `alias` leads to `real`, walked already: its files are listed once.
        assert_eq!(names, [PathBuf::from("linked/c.md"), PathBuf::from("real/a.md"), PathBuf::from("shown/d.md")]);
        let kinds: Vec<_> = problems.iter().map(|p| (p.kind, p.file.file_name().unwrap().to_owned())).collect();
        assert_eq!(
            kinds,
            [(ProblemKind::PathEscape, "out".into()), (ProblemKind::RepeatedDirectory, "alias".into())],
            "{problems:?}"
        );
        assert!(!problems[1].is_error());
    }

    #[cfg(unix)]
    #[test]
    fn links_to_walked_directories_are_walked_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("local-nodes");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.md"), "x").unwrap();
        std::fs::write(root.join("sub/b.md"), "x").unwrap();
        // Without a visited set these make the walk loop, or grow as 2^depth.
        for (name, target) in [("l1", "."), ("l2", "."), ("sub/up1", ".."), ("sub/up2", "..")] {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let walked = root.clone();
        std::thread::spawn(move || tx.send(markdown_files(&walked)).unwrap());
        let (files, problems) = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the walk ends");
        let names: Vec<_> = files.iter().map(|f| f.strip_prefix(&root).unwrap().to_path_buf()).collect();
        assert_eq!(names, [PathBuf::from("a.md"), PathBuf::from("sub/b.md")]);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems.iter().all(|p| p.kind == ProblemKind::RepeatedDirectory && !p.is_error()));
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "symbolic link to `.`, a directory already walked; skipped",
                "symbolic link to `.`, a directory already walked; skipped",
                "symbolic link to `.`, a directory already walked; skipped",
                "symbolic link to `.`, a directory already walked; skipped",
            ]
        );
    }
}
