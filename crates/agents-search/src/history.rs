//! The git history of a resource, read with gix: which commits touched which files.
//!
//! Temporal retrieval asks "what changed here, and why?". [`GitHistory::commits`] walks
//! the history from `HEAD` newest first and lists each commit's message and the files it
//! changed against its first parent (no rename detection: a rename is a deletion and an
//! addition). Paths are made relative to the indexed root, which may be a subdirectory
//! of the work tree; changes outside it are dropped, and commits left with none are
//! skipped.

use std::path::{Path, PathBuf};

use crate::SearchError;

/// One commit and the files it touched under the indexed root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitInfo {
    /// Full hex id.
    pub id: String,
    /// Committer time, seconds since the epoch.
    pub time: i64,
    pub author: String,
    /// The whole message, subject first.
    pub message: String,
    /// Touched paths relative to the root, sorted.
    pub paths: Vec<String>,
}

/// A repository found above an indexed root.
pub struct GitHistory {
    /// Shareable across the threads strategies run on; each call takes a local handle.
    repo: gix::ThreadSafeRepository,
    /// The indexed root relative to the work tree, with `/` separators; empty at the top.
    prefix: String,
}

impl GitHistory {
    /// The repository holding `root`, or `None` when `root` is not inside a git work tree.
    pub fn discover(root: &Path) -> Result<Option<GitHistory>, SearchError> {
        let repo = match gix::discover(root) {
            Ok(repo) => repo,
            Err(_) => return Ok(None),
        };
        let Some(workdir) = repo.workdir().map(Path::to_path_buf) else { return Ok(None) };
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let relative: PathBuf =
            canonical(root).strip_prefix(canonical(&workdir)).map(Path::to_path_buf).unwrap_or_default();
        let prefix =
            relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/");
        Ok(Some(GitHistory { repo: repo.into_sync(), prefix }))
    }

    fn error(&self, action: &'static str, error: impl std::fmt::Display) -> SearchError {
        SearchError::Git { path: self.repo.git_dir().to_path_buf(), action, message: error.to_string() }
    }

    /// Up to `limit` commits reachable from `HEAD` that touched the root, newest first.
    /// A repository without commits has no history.
    pub fn commits(&self, limit: usize) -> Result<Vec<CommitInfo>, SearchError> {
        let repo = self.repo.to_thread_local();
        let Ok(head) = repo.head_id() else { return Ok(Vec::new()) };
        let walk = repo
            .rev_walk([head.detach()])
            .sorting(gix::revision::walk::Sorting::ByCommitTime(Default::default()))
            .all()
            .map_err(|e| self.error("walk the history of", e))?;
        let mut options = gix::diff::Options::default();
        options.track_path();
        let options = options.with_rewrites(None);
        let empty = repo.empty_tree();
        let mut out = Vec::new();
        for info in walk {
            if out.len() >= limit {
                break;
            }
            let info = info.map_err(|e| self.error("walk the history of", e))?;
            let commit = info.object().map_err(|e| self.error("read a commit of", e))?;
            let tree = commit.tree().map_err(|e| self.error("read a tree of", e))?;
            let parent_tree = match info.parent_ids().next() {
                Some(parent) => parent
                    .object()
                    .map_err(|e| self.error("read a commit of", e))?
                    .into_commit()
                    .tree()
                    .map_err(|e| self.error("read a tree of", e))?,
                None => empty.clone(),
            };
            let changes = repo
                .diff_tree_to_tree(Some(&parent_tree), Some(&tree), options)
                .map_err(|e| self.error("diff a commit of", e))?;
            let mut paths: Vec<String> = changes
                .iter()
                .filter(|change| !change.entry_mode().is_tree())
                .filter_map(|change| self.relative(&change.location().to_string()))
                .collect();
            if paths.is_empty() {
                continue;
            }
            paths.sort();
            paths.dedup();
            let message = commit.message_raw_sloppy().to_string();
            let author = commit.author().map(|a| a.name.to_string()).unwrap_or_default();
            let time = commit.time().map(|t| t.seconds).unwrap_or_default();
            out.push(CommitInfo { id: info.id.to_string(), time, author, message: message.trim().to_owned(), paths });
        }
        Ok(out)
    }

    fn relative(&self, path: &str) -> Option<String> {
        if self.prefix.is_empty() {
            return Some(path.to_owned());
        }
        path.strip_prefix(&self.prefix)?.strip_prefix('/').map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "A")
            .env("GIT_AUTHOR_EMAIL", "a@example.com")
            .env("GIT_COMMITTER_NAME", "A")
            .env("GIT_COMMITTER_EMAIL", "a@example.com")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn lists_commits_newest_first_with_paths_under_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "a = 1\n").unwrap();
        std::fs::write(root.join("top.txt"), "x\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "Add the parser", "--date", "2020-01-01T00:00:00"]);
        std::fs::write(root.join("src/b.py"), "b = 2\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "Fix header parsing\n\nLonger body.", "--date", "2021-01-01T00:00:00"]);
        std::fs::write(root.join("top.txt"), "y\n").unwrap();
        git(root, &["commit", "-q", "-am", "Touch only the top"]);

        let all = GitHistory::discover(root).unwrap().unwrap().commits(10).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].message, "Touch only the top");
        assert_eq!(all[1].paths, vec!["src/b.py"]);
        assert_eq!(all[2].paths, vec!["src/a.py", "top.txt"]);

        let sub = GitHistory::discover(&root.join("src")).unwrap().unwrap().commits(10).unwrap();
        assert_eq!(sub.len(), 2, "the commit touching only top.txt is outside src/");
        assert_eq!(sub[0].paths, vec!["b.py"]);
        assert!(sub[0].message.starts_with("Fix header parsing"));
        assert_eq!(GitHistory::discover(root).unwrap().unwrap().commits(1).unwrap().len(), 1);
    }

    #[test]
    fn a_plain_directory_has_no_history() {
        let dir = tempfile::tempdir().unwrap();
        assert!(GitHistory::discover(dir.path()).unwrap().is_none());
    }
}
