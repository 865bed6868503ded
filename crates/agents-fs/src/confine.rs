//! Path confinement: whether a path, once `..` and every symbolic link are
//! resolved, lies inside a root. One check for the walk of a repository, the
//! knowledge reader and the MCP server's allowed roots.

use std::path::{Component, Path, PathBuf};

/// Why a path could not be checked.
#[derive(Debug, thiserror::Error)]
#[error("cannot resolve {}: {source}", path.display())]
pub struct ConfineError {
    /// The path that did not resolve.
    pub path: PathBuf,
    /// What resolving it failed with (`NotFound` for a missing path or a
    /// broken link).
    #[source]
    pub source: std::io::Error,
}

fn canonical(path: &Path) -> Result<PathBuf, ConfineError> {
    path.canonicalize().map_err(|source| ConfineError { path: path.to_path_buf(), source })
}

/// Whether `path` resolves (all symbolic links followed) to a place inside
/// `canonical_root`, which the caller has canonicalized once. A path that
/// cannot be resolved is not inside.
pub fn is_within(path: &Path, canonical_root: &Path) -> bool {
    path.canonicalize().is_ok_and(|real| real.starts_with(canonical_root))
}

/// Whether `path`'s canonical form lies inside `root`'s; `Ok(false)` when it
/// leads out, an error when either does not resolve.
pub fn within(path: &Path, root: &Path) -> Result<bool, ConfineError> {
    Ok(canonical(path)?.starts_with(canonical(root)?))
}

/// Whether the canonical path `canonical` lies inside one of `roots` (each
/// canonical too).
pub fn under_any<P: AsRef<Path>>(canonical: &Path, roots: impl IntoIterator<Item = P>) -> bool {
    roots.into_iter().any(|root| canonical.starts_with(root))
}

/// Where a path that does not exist (so cannot be canonicalized) would be:
/// `.` and `..` resolved by its text, then its longest existing ancestor
/// canonicalized (so a symbolic link on the way is followed).
pub fn resolve_missing(path: &Path) -> PathBuf {
    let mut lexical = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other.as_os_str()),
        }
    }
    let mut rest = Vec::new();
    let mut base = lexical.as_path();
    loop {
        if let Ok(mut resolved) = base.canonicalize() {
            resolved.extend(rest.iter().rev());
            return resolved;
        }
        match (base.parent(), base.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                base = parent;
            }
            _ => return lexical,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_under_the_root_is_within_and_dot_dot_out_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "").unwrap();
        std::fs::write(dir.path().join("secret"), "").unwrap();
        assert!(within(&root.join("src/a.rs"), &root).unwrap());
        assert!(!within(&root.join("src/../../secret"), &root).unwrap());
        let canonical_root = root.canonicalize().unwrap();
        assert!(is_within(&root.join("src"), &canonical_root));
        assert!(!is_within(&root.join("missing"), &canonical_root), "an unresolvable path is not inside");
        let err = within(&root.join("missing"), &root).unwrap_err();
        assert_eq!(err.source.kind(), std::io::ErrorKind::NotFound);
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_leading_out_of_the_root_is_not_within() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        assert!(!within(&root.join("link"), &root).unwrap());
        let canonical_root = root.canonicalize().unwrap();
        assert!(!is_within(&root.join("up"), &canonical_root));
        assert!(!is_within(&root.join("up/root/link"), &canonical_root));
        // A link that stays inside is followed and admitted.
        std::fs::write(root.join("real"), "r").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).unwrap();
        assert!(within(&root.join("alias"), &root).unwrap());
    }

    #[test]
    fn several_roots_and_missing_paths() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let roots = [a.canonicalize().unwrap(), b.canonicalize().unwrap()];
        assert!(under_any(&b.canonicalize().unwrap().join("x"), &roots));
        assert!(!under_any(&dir.path().canonicalize().unwrap(), &roots));
        let missing = resolve_missing(&a.join("new/../new/file.rs"));
        assert_eq!(missing, roots[0].join("new/file.rs"));
        assert!(under_any(&missing, &roots));
        assert!(!under_any(&resolve_missing(&a.join("../../elsewhere")), &roots));
    }
}
