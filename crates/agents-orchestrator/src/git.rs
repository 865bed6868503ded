//! The git operations an orchestration needs, through the git CLI (the one
//! every developer already has, with their configuration and hooks): phase
//! branches, committing a phase's work, what a phase changed, and merging
//! that never leaves a repository half-merged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A git command that failed: where, which command, what git said.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// git could not be started.
    #[error("cannot run git in {}: {source}", repo.display())]
    Spawn { repo: PathBuf, source: std::io::Error },
    /// The command (`args`) exited with an error; `stderr` is git's message.
    #[error("git {args} failed in {}: {stderr}", repo.display())]
    Failed { repo: PathBuf, args: String, stderr: String },
    /// A merge conflicted in `files`; it was aborted, `into` left as it was.
    #[error("merging {branch} into {into} conflicts in {}; the merge was undone and {into} is as it was", files.join(", "))]
    Conflict { branch: String, into: String, files: Vec<String> },
}

/// A repository's work tree.
#[derive(Debug, Clone)]
pub struct Git {
    pub repo: PathBuf,
}

/// The lines a path gained and lost; `None` for a binary file.
pub type LineCounts = (Option<u64>, Option<u64>);

/// One path a range of commits touched.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    Added(String),
    Modified(String),
    Deleted(String),
}

impl Git {
    pub fn new(repo: &Path) -> Git {
        Git { repo: repo.to_owned() }
    }

    fn run(&self, args: &[&str]) -> Result<String, GitError> {
        let output = Command::new("git")
            .arg("-C")
            .arg(&self.repo)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .map_err(|source| GitError::Spawn { repo: self.repo.clone(), source })?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(GitError::Failed {
                repo: self.repo.clone(),
                args: args.join(" "),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            })
        }
    }

    pub fn is_repository(&self) -> bool {
        self.run(&["rev-parse", "--is-inside-work-tree"]).is_ok_and(|s| s.trim() == "true")
    }

    pub fn head(&self) -> Result<String, GitError> {
        Ok(self.run(&["rev-parse", "HEAD"])?.trim().to_owned())
    }

    pub fn branch_exists(&self, name: &str) -> bool {
        self.run(&["rev-parse", "--verify", "--quiet", &format!("refs/heads/{name}")]).is_ok()
    }

    /// Paths with uncommitted changes (untracked included), sorted.
    pub fn dirty(&self) -> Result<Vec<String>, GitError> {
        let out = self.run(&["status", "--porcelain", "--untracked-files=all"])?;
        let mut paths: Vec<String> = out.lines().filter(|l| l.len() > 3).map(|l| l[3..].to_owned()).collect();
        paths.sort();
        Ok(paths)
    }

    /// Checks out `name`, creating it from `from` when it does not exist.
    pub fn switch_to(&self, name: &str, from: &str) -> Result<(), GitError> {
        if self.branch_exists(name) {
            self.run(&["checkout", "--quiet", name])?;
        } else {
            self.run(&["checkout", "--quiet", "-b", name, from])?;
        }
        Ok(())
    }

    /// Commits every change in the work tree; false when there was none.
    pub fn commit_all(&self, message: &str) -> Result<bool, GitError> {
        self.run(&["add", "--all"])?;
        if self.run(&["diff", "--cached", "--quiet"]).is_ok() {
            return Ok(false);
        }
        self.committing(&["commit", "--quiet", "--no-verify", "-m", message])?;
        Ok(true)
    }

    /// Runs a command that writes commits; a machine without a git identity
    /// still gets its phases committed, under a named stand-in.
    fn committing(&self, args: &[&str]) -> Result<String, GitError> {
        let named = self.run(&["config", "user.email"]).is_ok_and(|s| !s.trim().is_empty());
        let mut all = Vec::new();
        if !named {
            all.extend(["-c", "user.name=agents orchestrate", "-c", "user.email=agents@localhost"]);
        }
        all.extend_from_slice(args);
        self.run(&all)
    }

    /// What the commits `from..HEAD` changed, sorted by path.
    pub fn changes_since(&self, from: &str) -> Result<Vec<Change>, GitError> {
        let out = self.run(&["diff", "--name-status", "--no-renames", &format!("{from}..HEAD")])?;
        let mut changes: Vec<Change> = out
            .lines()
            .filter_map(|line| {
                let (status, path) = line.split_once('\t')?;
                let path = path.to_owned();
                Some(match status.chars().next()? {
                    'A' => Change::Added(path),
                    'D' => Change::Deleted(path),
                    _ => Change::Modified(path),
                })
            })
            .collect();
        changes.sort_by(|a, b| a.path().cmp(b.path()));
        Ok(changes)
    }

    /// The lines each path gained and lost in `from..HEAD` (`None` for a
    /// binary file).
    pub fn line_counts_since(&self, from: &str) -> Result<BTreeMap<String, LineCounts>, GitError> {
        let out = self.run(&["diff", "--numstat", "--no-renames", &format!("{from}..HEAD")])?;
        Ok(out
            .lines()
            .filter_map(|line| {
                let mut parts = line.splitn(3, '\t');
                let (added, removed, path) = (parts.next()?, parts.next()?, parts.next()?);
                Some((path.to_owned(), (added.parse().ok(), removed.parse().ok())))
            })
            .collect())
    }

    /// Sets the uncommitted changes of `paths` (untracked files included)
    /// aside in a stash entry, leaving them as in HEAD; returns the stash
    /// commit (`git stash apply <it>` brings them back), or `None` when none
    /// of the paths had a change.
    pub fn set_aside(&self, paths: &[String], message: &str) -> Result<Option<String>, GitError> {
        if paths.is_empty() {
            return Ok(None);
        }
        let mut args = vec!["status", "--porcelain", "--untracked-files=all", "--"];
        args.extend(paths.iter().map(String::as_str));
        if self.run(&args)?.trim().is_empty() {
            return Ok(None);
        }
        let mut args = vec!["stash", "push", "--quiet", "--include-untracked", "-m", message, "--"];
        args.extend(paths.iter().map(String::as_str));
        self.committing(&args)?;
        Ok(Some(self.run(&["rev-parse", "stash@{0}"])?.trim().to_owned()))
    }

    /// Merges `branch` into `into` (checked out first); on a conflict the
    /// merge is aborted, so `into` is left as it was, and the conflicting
    /// files are named.
    pub fn merge(&self, branch: &str, into: &str, message: &str) -> Result<(), GitError> {
        self.run(&["checkout", "--quiet", into])?;
        match self.committing(&["merge", "--no-ff", "--no-edit", "-m", message, branch]) {
            Ok(_) => Ok(()),
            Err(error) => {
                let files = self
                    .run(&["diff", "--name-only", "--diff-filter=U"])
                    .map(|s| s.lines().map(str::to_owned).collect::<Vec<_>>())
                    .unwrap_or_default();
                let _ = self.run(&["merge", "--abort"]);
                if files.is_empty() {
                    Err(error)
                } else {
                    Err(GitError::Conflict { branch: branch.into(), into: into.into(), files })
                }
            }
        }
    }
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Added(p) | Change::Modified(p) | Change::Deleted(p) => p,
        }
    }
}
