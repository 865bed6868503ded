//! Diagnostics and errors: every problem names its file, its line when it is
//! known, and the field it concerns.
//!
//! Loading collects [`Diagnostic`]s instead of stopping at the first one, so
//! `agents knowledge validate` reports every problem of a tree at once; the
//! compiler turns the errors among them into an [`AkmsError`] and writes
//! nothing.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// How bad a problem is: errors stop a build, warnings are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// What kind of problem a diagnostic reports; stable names for `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// `akms_schema` is missing or not `v2` (a `SchemaVersionError`).
    SchemaVersion,
    /// The file is not valid YAML, or has no frontmatter.
    Yaml,
    /// A required field is absent.
    MissingField,
    /// A field has the wrong type, range or enum value, or is not allowed here.
    InvalidValue,
    /// Two nodes of one layer share an id.
    DuplicateId,
    /// An edge points at a node that is in no source.
    UnknownEdgeTarget,
    /// A `pitfall` edge points at a node that is not a session node.
    PitfallTarget,
    /// Two edges join the same pair of nodes.
    DuplicateEdge,
    /// `suppressed_edges` is not empty.
    SuppressedEdges,
    /// A path read from a node leaves its layer's root.
    PathEscape,
    /// A local node has the id of a global node (the global one wins).
    IdCollision,
    /// An overlay entry names a node that is in no source.
    OrphanedOverlay,
    /// A `content_ref` names a file that is not there.
    MissingContentRef,
    /// A file could not be read.
    Io,
    /// A symbolic link to a directory already walked: skipped.
    RepeatedDirectory,
    /// A FIFO, socket, device or directory where a file was expected: not read.
    NotRegularFile,
    /// A file or field over its size limit: not read, or refused.
    TooLarge,
}

/// One problem in one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub kind: ProblemKind,
    pub file: PathBuf,
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
    /// The field, as a path such as `edges[1].type`, when there is one.
    pub field: Option<String>,
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn error(
        kind: ProblemKind,
        file: &Path,
        line: Option<usize>,
        field: Option<&str>,
        message: String,
    ) -> Self {
        Diagnostic {
            severity: Severity::Error,
            kind,
            file: file.to_path_buf(),
            line,
            field: field.map(str::to_owned),
            message,
        }
    }

    pub(crate) fn warning(
        kind: ProblemKind,
        file: &Path,
        line: Option<usize>,
        field: Option<&str>,
        message: String,
    ) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(kind, file, line, field, message) }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    /// `file:line: field: message`, leaving out what is unknown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Sorts diagnostics by file, line, field and message, errors and warnings
/// together, so reports are stable.
pub(crate) fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (&a.file, a.line, &a.field, &a.message, a.severity).cmp(&(&b.file, b.line, &b.field, &b.message, b.severity))
    });
}

/// The errors of the AKMS library.
#[derive(Debug, thiserror::Error)]
pub enum AkmsError {
    /// A source carries a schema version other than `v2`: compilation halts.
    #[error("SchemaVersionError: {0}")]
    SchemaVersion(Diagnostic),
    /// The sources have errors; the first is shown, all are in `problems`.
    #[error("{}{}", problems[0], more(problems.len()))]
    Invalid { problems: Vec<Diagnostic> },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// git refused (an unknown base branch, not a repository).
    #[error("{}: {message}", repo.display())]
    Git { repo: PathBuf, message: String },
}

/// How to see every problem when a message shows the first.
pub const LIST_ALL: &str = "`agents knowledge validate [FILE...]` lists them all";

fn more(count: usize) -> String {
    match count {
        0 | 1 => String::new(),
        2 => format!(" (and 1 more problem: {LIST_ALL})"),
        n => format!(" (and {} more problems: {LIST_ALL})", n - 1),
    }
}

impl AkmsError {
    /// The error for a set of diagnostics, if any of them is an error: a
    /// schema-version problem wins, as it halts compilation.
    pub(crate) fn from_diagnostics(diagnostics: &[Diagnostic]) -> Option<AkmsError> {
        let errors: Vec<Diagnostic> = diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
        if let Some(schema) = errors.iter().find(|d| d.kind == ProblemKind::SchemaVersion) {
            return Some(AkmsError::SchemaVersion(schema.clone()));
        }
        (!errors.is_empty()).then_some(AkmsError::Invalid { problems: errors })
    }

    /// Whether the error comes from the user's files (bad input) rather than
    /// from the system.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, AkmsError::Io { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 18 item 8: a message showing the first of several problems says
    /// how to see them all.
    #[test]
    fn item_8_and_n_more_problems_says_how_to_see_them_all() {
        let d = Diagnostic::error(ProblemKind::InvalidValue, Path::new("a.md"), None, None, "bad".into());
        let e = AkmsError::Invalid { problems: vec![d.clone(), d.clone(), d] };
        assert_eq!(
            e.to_string(),
            "a.md: bad (and 2 more problems: `agents knowledge validate [FILE...]` lists them all)"
        );
    }

    #[test]
    fn renders_file_line_field_and_message() {
        let d = Diagnostic::error(
            ProblemKind::InvalidValue,
            Path::new("k/a.md"),
            Some(4),
            Some("status"),
            "`done` is not one of draft, tentative, established, deprecated".into(),
        );
        assert_eq!(d.to_string(), "k/a.md:4: status: `done` is not one of draft, tentative, established, deprecated");
        let e = AkmsError::Invalid { problems: vec![d.clone(), d] };
        assert!(e.to_string().ends_with("(and 1 more problem: `agents knowledge validate [FILE...]` lists them all)"));
    }
}
