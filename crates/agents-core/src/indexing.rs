//! Index records: what the repository indexer knows about files.
//!
//! These are the spec's `FileRecord`, `IndexMetadata` and `RepoIndex`, plus
//! the per-run report ([`IndexReport`]) that says what a run did: how many
//! files were added, changed, removed or unchanged, and why others were
//! skipped. All collections that reach a user are sorted (`BTreeMap`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Validated, ValidationError};
use crate::ids::check_ulid;

/// Lifecycle of a repository index: pending -> indexing -> ready, or error;
/// `stale` marks a run that was interrupted (its process died).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexStatus {
    Pending,
    Indexing,
    Ready,
    Stale,
    Error,
}

impl IndexStatus {
    pub const ALL: [IndexStatus; 5] =
        [IndexStatus::Pending, IndexStatus::Indexing, IndexStatus::Ready, IndexStatus::Stale, IndexStatus::Error];

    pub fn as_str(self) -> &'static str {
        match self {
            IndexStatus::Pending => "pending",
            IndexStatus::Indexing => "indexing",
            IndexStatus::Ready => "ready",
            IndexStatus::Stale => "stale",
            IndexStatus::Error => "error",
        }
    }
}

impl fmt::Display for IndexStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for IndexStatus {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IndexStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| ValidationError::new("IndexMetadata", "status", format!("unknown status `{s}`")))
    }
}

/// Per-file metadata stored during indexing (one `indexed_files` row).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Path relative to the resource root, `/`-separated.
    pub path: String,
    /// SHA-256 of the file's bytes, lowercase hex (64 chars).
    pub content_hash: String,
    pub token_count: u64,
    pub size_bytes: u64,
    pub language: String,
    /// Modification time as ISO-8601 UTC with nanoseconds.
    pub last_modified: String,
}

impl FileRecord {
    pub fn new(
        path: String,
        content_hash: String,
        token_count: u64,
        size_bytes: u64,
        language: String,
        last_modified: String,
    ) -> Validated<FileRecord> {
        const M: &str = "FileRecord";
        if path.is_empty() || path.len() > 1024 {
            return Err(ValidationError::new(M, "path", format!("must be 1-1024 bytes, got {}", path.len())));
        }
        if content_hash.len() != 64 || !content_hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ValidationError::new(M, "content_hash", "must be 64 hex characters (sha-256)"));
        }
        if language.is_empty() || language.len() > 50 {
            return Err(ValidationError::new(M, "language", "must be 1-50 characters"));
        }
        if last_modified.len() > 40 {
            return Err(ValidationError::new(M, "last_modified", "must be at most 40 characters"));
        }
        Ok(FileRecord { path, content_hash, token_count, size_bytes, language, last_modified })
    }
}

/// Summary record for a repository index (one `repo_indexes` row).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexMetadata {
    pub index_id: String,
    pub resource_id: String,
    pub indexed_at: DateTime<Utc>,
    pub file_count: u64,
    pub token_estimate: u64,
    pub primary_language: String,
    pub status: IndexStatus,
    pub error_message: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl IndexMetadata {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        index_id: String,
        resource_id: String,
        indexed_at: DateTime<Utc>,
        file_count: u64,
        token_estimate: u64,
        primary_language: String,
        status: IndexStatus,
        error_message: Option<String>,
        created_at: DateTime<Utc>,
    ) -> Validated<IndexMetadata> {
        check_ulid("IndexMetadata", "index_id", &index_id)?;
        check_ulid("IndexMetadata", "resource_id", &resource_id)?;
        if primary_language.is_empty() || primary_language.len() > 50 {
            return Err(ValidationError::new("IndexMetadata", "primary_language", "must be 1-50 characters"));
        }
        if status == IndexStatus::Error && error_message.is_none() {
            return Err(ValidationError::new("IndexMetadata", "error_message", "required when status is error"));
        }
        Ok(IndexMetadata {
            index_id,
            resource_id,
            indexed_at,
            file_count,
            token_estimate,
            primary_language,
            status,
            error_message,
            created_at,
        })
    }
}

/// Why a file under a resource was not indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Contains NUL bytes in its first block: not text.
    Binary,
    /// Larger than `max_file_size`.
    TooLarge,
    /// Would push the index past `max_total_size`.
    TotalSizeLimit,
    /// Could not be opened or read (permissions, vanished mid-walk).
    Unreadable,
    /// A symlink whose target is missing, or that loops.
    BrokenSymlink,
    /// Excluded by the include/exclude globs.
    Excluded,
    /// A symlink (or a file under a followed directory symlink) whose target
    /// lies outside the resource root: never read, so a cloned repository
    /// cannot make the index serve files from elsewhere on the machine.
    OutsideRoot,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Binary => "binary",
            SkipReason::TooLarge => "too_large",
            SkipReason::TotalSizeLimit => "total_size_limit",
            SkipReason::Unreadable => "unreadable",
            SkipReason::BrokenSymlink => "broken_symlink",
            SkipReason::Excluded => "excluded",
            SkipReason::OutsideRoot => "outside_root",
        }
    }
}

impl FromStr for SkipReason {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const ALL: [SkipReason; 7] = [
            SkipReason::Binary,
            SkipReason::TooLarge,
            SkipReason::TotalSizeLimit,
            SkipReason::Unreadable,
            SkipReason::BrokenSymlink,
            SkipReason::Excluded,
            SkipReason::OutsideRoot,
        ];
        ALL.into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| ValidationError::new("SkippedFile", "reason", format!("unknown skip reason `{s}`")))
    }
}

/// What one indexing or refresh run did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexReport {
    pub added: u64,
    pub changed: u64,
    pub removed: u64,
    pub unchanged: u64,
    /// Files skipped, by reason.
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Up to a few example paths per skip reason, for the user to check.
    pub skipped_examples: BTreeMap<SkipReason, Vec<String>>,
    /// Files whose content was read in this run (wholly, or a first block
    /// to recognise a binary).
    pub files_read: u64,
    /// Bytes read in this run.
    pub bytes_read: u64,
    /// Wall time of the run in milliseconds.
    pub duration_ms: u64,
    /// What the run did to the code graph.
    #[serde(default)]
    pub graph: GraphReport,
    /// The version of the analyzers that built the graph this run left
    /// (`agents_uko::lang::ANALYZER_VERSION`); 0 in the reports of builds
    /// that did not record it.
    #[serde(default)]
    pub analyzer_version: u32,
    /// Whether the run re-analysed every file because the graph was built
    /// by another analyzer version.
    #[serde(default)]
    pub reanalysed: bool,
}

/// The code-graph (UKO) part of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphReport {
    /// Files parsed by an analyzer in this run.
    pub files_analyzed: u64,
    /// Nodes written for those files.
    pub nodes: u64,
    /// References written for those files.
    pub references: u64,
    /// Of those, bound to a file or symbol of the resource.
    pub references_resolved: u64,
    /// References in other files whose binding changed.
    pub re_resolved: u64,
    /// Syntax problems met (the trees were partial).
    pub parse_warnings: u64,
    /// The first warning of each of the first few files that had one
    /// (`src/x.sh: line 12: syntax error; the tree is partial`), in the
    /// order the run met them, for the user to check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warning_examples: Vec<String>,
}

impl IndexReport {
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }
}

/// Composite value returned by index and refresh operations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepoIndex {
    pub metadata: IndexMetadata,
    /// Every indexed file, sorted by path.
    pub files: Vec<FileRecord>,
    /// Token count per language, sorted by language name.
    pub languages: BTreeMap<String, LanguageStats>,
    /// What the run that produced this index did (`None` when read back from the store).
    pub report: Option<IndexReport>,
}

/// Files and tokens of one language in an index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LanguageStats {
    pub files: u64,
    pub tokens: u64,
}

impl RepoIndex {
    /// Builds the per-language table from file records.
    pub fn language_stats(files: &[FileRecord]) -> BTreeMap<String, LanguageStats> {
        let mut map: BTreeMap<String, LanguageStats> = BTreeMap::new();
        for f in files {
            let entry = map.entry(f.language.clone()).or_default();
            entry.files += 1;
            entry.tokens += f.token_count;
        }
        map
    }

    /// The language with the most tokens; ties go to the alphabetically first.
    /// `unknown` when there are no files.
    pub fn primary_language(stats: &BTreeMap<String, LanguageStats>) -> String {
        stats
            .iter()
            .max_by(|a, b| a.1.tokens.cmp(&b.1.tokens).then_with(|| b.0.cmp(a.0)))
            .map(|(lang, _)| lang.clone())
            .unwrap_or_else(|| "unknown".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(path: &str, lang: &str, tokens: u64) -> FileRecord {
        FileRecord::new(path.into(), "a".repeat(64), tokens, 10, lang.into(), "2026-01-01T00:00:00Z".into()).unwrap()
    }

    #[test]
    fn primary_language_is_most_tokens_with_stable_ties() {
        let files = vec![rec("a.py", "python", 10), rec("b.rs", "rust", 10), rec("c.py", "python", 1)];
        let stats = RepoIndex::language_stats(&files);
        assert_eq!(RepoIndex::primary_language(&stats), "python");
        let tie = vec![rec("a.py", "python", 5), rec("b.rs", "rust", 5)];
        assert_eq!(RepoIndex::primary_language(&RepoIndex::language_stats(&tie)), "python");
        assert_eq!(RepoIndex::primary_language(&BTreeMap::new()), "unknown");
    }

    #[test]
    fn file_record_rejects_bad_hash_and_path() {
        let e = FileRecord::new("a".into(), "xyz".into(), 0, 0, "text".into(), String::new()).unwrap_err();
        assert_eq!(e.field, "content_hash");
        let e = FileRecord::new(String::new(), "a".repeat(64), 0, 0, "text".into(), String::new()).unwrap_err();
        assert_eq!(e.field, "path");
    }

    #[test]
    fn status_round_trips() {
        for s in IndexStatus::ALL {
            assert_eq!(s.as_str().parse::<IndexStatus>().unwrap(), s);
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
        }
        assert!("done".parse::<IndexStatus>().is_err());
    }

    #[test]
    fn error_status_requires_message() {
        let now = chrono::Utc::now();
        let id = crate::ids::new_ulid();
        let e =
            IndexMetadata::new(id.clone(), id, now, 0, 0, "unknown".into(), IndexStatus::Error, None, now).unwrap_err();
        assert_eq!(e.field, "error_message");
    }
}
