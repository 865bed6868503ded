//! The file-index role: one index per resource, its file list, the files
//! skipped for their content, and the transaction an indexing run writes in.

use agents_core::indexing::{FileRecord, IndexMetadata, IndexReport, IndexStatus, SkipReason};
use serde::{Deserialize, Serialize};

use crate::{StoreError, UkoCommit, UkoNode, UkoRef};

/// A file left out of an index because of its content (e.g. binary),
/// remembered so a refresh need not read it again while its stat is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    pub path: String,
    pub size_bytes: u64,
    pub last_modified: String,
    pub reason: SkipReason,
}

/// A symbol whose definition a file's new nodes changed in shape: one the
/// file defines anew, no longer defines, or defines with another signature.
/// What other files' references bind to may change with it (a name defined
/// twice binds nothing until one definition goes; `f().m` binds through
/// what `f` is declared to return).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reshaped {
    pub name: String,
    /// The node kind (`function`, `class`, ...).
    pub kind: String,
    /// The file that defines it (or did).
    pub path: String,
    pub change: Change,
}

/// How a [`Reshaped`] symbol changed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    /// The file defines it anew.
    Added,
    /// The file no longer defines it.
    Removed,
    /// The file defines it with another signature.
    Signature { before: Option<String>, after: Option<String> },
}

impl Reshaped {
    /// What a file's new node `n` reshapes, given the signature its stored
    /// node had (`None` when the file did not define it): nothing for the
    /// file's own node or an unchanged signature.
    pub fn of_node(n: &UkoNode, stored: Option<&Option<String>>) -> Option<Reshaped> {
        let change = match stored {
            None => Change::Added,
            Some(before) if *before != n.signature => {
                Change::Signature { before: before.clone(), after: n.signature.clone() }
            }
            Some(_) => return None,
        };
        (!n.symbol_path.is_empty()).then(|| Reshaped {
            name: n.name.clone(),
            kind: n.kind.clone(),
            path: n.path.clone(),
            change,
        })
    }
}

/// Which references [`IndexWrite::refs_naming`] finds: those whose target
/// names one of `names` as its last name (`echo` of `pkg.echo`: what it
/// binds to by name), and those naming one of `unbound_names` that bind
/// nothing; the imports that bring one of `names` in ([`brings`]:
/// `from . import mod`, `from m import b as c`); those whose target reads
/// through one of `through` ([`reads_through`]: `Engine.GET`, `Type::new`
/// and `p->f` through their first name, `New().GET` through the call); and
/// the imports whose target holds one of `imports_holding` or that bring one
/// in, compared without case, `_` and `-` (`./mod.js`, `../cJSON.h`,
/// `from . import mod`, Elixir's `alias Plug.BasicAuth` for `mod`, `cJSON`,
/// `basic_auth`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Naming<'a> {
    pub names: &'a [String],
    pub unbound_names: &'a [String],
    pub through: &'a [String],
    pub imports_holding: &'a [String],
}

impl Naming<'_> {
    /// Whether nothing is asked for.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
            && self.unbound_names.is_empty()
            && self.through.is_empty()
            && self.imports_holding.is_empty()
    }

    /// Whether a reference is one of those asked for, given its kind,
    /// target, last name, whether it binds, and (for an import) the names
    /// it brings.
    pub fn matches(&self, sets: &NamingSets<'_>, r: RefFacts<'_>) -> bool {
        let RefFacts { kind, target, target_name, bound, names } = r;
        sets.names.contains(target_name)
            || (!bound && sets.unbound_names.contains(target_name))
            || reads_through(target, &sets.through)
            || (kind == "import"
                && (brings(names, &sets.names) || (!sets.holding.is_empty() && holds(&sets.holding, target, names))))
    }

    /// The lists as sets, for [`Naming::matches`].
    pub fn sets(&self) -> NamingSets<'_> {
        NamingSets {
            names: self.names.iter().map(String::as_str).collect(),
            unbound_names: self.unbound_names.iter().map(String::as_str).collect(),
            through: self.through.iter().map(String::as_str).collect(),
            holding: self.imports_holding.iter().map(|w| loose(w)).filter(|w| !w.is_empty()).collect(),
        }
    }
}

/// What [`Naming::matches`] reads of a reference.
#[derive(Clone, Copy, Debug)]
pub struct RefFacts<'a> {
    pub kind: &'a str,
    pub target: &'a str,
    pub target_name: &'a str,
    /// Whether it resolved to a node.
    pub bound: bool,
    /// What an import brings in (empty for other kinds).
    pub names: &'a [String],
}

/// A [`Naming`]'s lists as sets.
pub struct NamingSets<'a> {
    names: std::collections::HashSet<&'a str>,
    unbound_names: std::collections::HashSet<&'a str>,
    through: std::collections::HashSet<&'a str>,
    holding: Vec<String>,
}

/// `s` lowercased, without `_` and `-`: how a file's stem and the module
/// names importing it are compared (`basic_auth` in `Plug.BasicAuth`).
pub fn loose(s: &str) -> String {
    s.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect()
}

/// Whether an import's target or one of the names it brings holds one of
/// `holding` (loosely: see [`loose`]).
fn holds(holding: &[String], target: &str, names: &[String]) -> bool {
    let target = loose(target);
    let names: Vec<String> =
        names.iter().map(|n| loose(n.split_once(" as ").map_or(n, |(original, _)| original))).collect();
    holding.iter().any(|w| target.contains(w.as_str()) || names.iter().any(|n| n == w))
}

/// The open write transaction of an indexing run.
pub trait IndexWrite {
    /// Replaces the current nodes of one file (keeping revisions). Returns
    /// the symbols (not the file's own node) it defines anew, no longer
    /// defines, or defines with another signature, sorted, each once; with
    /// no nodes, every symbol the file defined.
    fn write_nodes(&mut self, path: &str, nodes: &[UkoNode]) -> Result<Vec<Reshaped>, StoreError>;
    /// Replaces the references written in one file.
    fn write_refs(&mut self, path: &str, refs: &[UkoRef]) -> Result<(), StoreError>;
    /// Retires the nodes and deletes the references of files that left the index.
    fn retire_paths(&mut self, paths: &[String]) -> Result<(), StoreError>;
    /// Calls `f(path, symbol_path, name, kind, signature)` for every current
    /// node (the signature empty when it has none), sorted by path, as the
    /// transaction sees them.
    fn for_each_symbol(&mut self, f: &mut dyn FnMut(&str, &str, &str, &str, &str)) -> Result<(), StoreError>;
    /// Like [`IndexWrite::for_each_symbol`], for current nodes named one of `names`.
    fn for_each_symbol_named(
        &mut self,
        names: &[String],
        f: &mut dyn FnMut(&str, &str, &str, &str, &str),
    ) -> Result<(), StoreError>;
    /// References written in `path`, as the transaction sees them.
    fn file_refs(&mut self, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// See [`crate::CodeGraphStore::uko_refs_affected_by`], as the transaction sees it.
    fn refs_affected_by(&mut self, paths: &[String], names: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// See [`crate::CodeGraphStore::uko_refs_importing`], as the transaction sees it.
    fn refs_importing(&mut self, paths: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// References, resolved or not, that the [`Naming`] asks for, by ref id.
    fn refs_naming(&mut self, naming: &Naming<'_>) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// Every import reference of the graph, by ref id: where an import
    /// leads may change when files come or go.
    fn import_refs(&mut self) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// Names of the current functions and methods whose signature names one
    /// of `words` as a whole identifier (what may be declared to return one
    /// of them), sorted, each once.
    fn functions_mentioning(&mut self, words: &[String]) -> Result<Vec<String>, StoreError>;
    /// Applies the rest of the commit, marks the index `ready` and commits.
    fn finish(self: Box<Self>, commit: &IndexCommit) -> Result<IndexMetadata, StoreError>;
}

/// The changes of one indexing run, applied in one transaction.
#[derive(Clone, Debug, Default)]
pub struct IndexCommit {
    /// New or changed files (replaced whole).
    pub upserts: Vec<FileRecord>,
    /// Files whose only change is their modification time.
    pub touched: Vec<(String, String)>,
    /// Paths that are gone.
    pub removed: Vec<String>,
    /// The complete list of content-skipped files (replaces the stored one).
    pub skipped: Vec<SkippedFile>,
    /// Code-graph changes.
    pub uko: UkoCommit,
    pub file_count: u64,
    pub token_estimate: u64,
    pub primary_language: String,
    /// What the run did, kept in `index_runs` for `status`.
    pub report: IndexReport,
}

/// Repository indexes: the index row of each resource, its status, the file
/// records and skipped files of the last run, and the run's report.
/// Every method is one transaction.
///
/// Guarantees (checked by `conformance::file_index`):
/// - [`FileIndexStore::ensure_index`] creates one `pending` index per
///   resource and returns the same one afterwards;
/// - a run's changes ([`FileIndexStore::commit_index`], or an
///   [`IndexWrite`] and its [`IndexWrite::finish`]) are applied atomically
///   with the index's move to `ready`: a rejected commit changes nothing,
///   and an [`IndexWrite`] dropped without `finish` leaves nothing of the
///   run visible (readers never see half a run);
/// - file records and skipped files are sorted by path; the skipped list is
///   replaced whole by each commit;
/// - [`FileIndexStore::last_report`] is the latest commit's report;
/// - unknown ids read as `None` or an empty list; setting the status of an
///   unknown index is [`StoreError::NotFound`].
pub trait FileIndexStore: Send + Sync {
    /// The index of a resource.
    fn index_metadata(&self, resource_id: &str) -> Result<Option<IndexMetadata>, StoreError>;
    /// Creates the index row (status `pending`) if the resource has none.
    fn ensure_index(&self, resource_id: &str) -> Result<IndexMetadata, StoreError>;
    /// Sets the status (and error message) of an index.
    fn set_index_status(
        &self,
        index_id: &str,
        status: IndexStatus,
        error_message: Option<&str>,
    ) -> Result<(), StoreError>;
    /// Index rows in a given status.
    fn indexes_with_status(&self, status: IndexStatus) -> Result<Vec<IndexMetadata>, StoreError>;
    /// Every file record of an index, sorted by path.
    fn file_records(&self, index_id: &str) -> Result<Vec<FileRecord>, StoreError>;
    /// Files the last run skipped for their content, sorted by path.
    fn skipped_files(&self, index_id: &str) -> Result<Vec<SkippedFile>, StoreError>;
    /// Opens the write transaction of an indexing run: graph rows can be
    /// written file by file (bounded memory), and nothing is visible until
    /// [`IndexWrite::finish`]; dropping the writer rolls everything back.
    /// Other writers wait while it is open.
    fn begin_index_write(&self, index_id: &str) -> Result<Box<dyn IndexWrite + '_>, StoreError>;
    /// Applies a run's changes and marks the index `ready`, atomically.
    fn commit_index(&self, index_id: &str, commit: &IndexCommit) -> Result<IndexMetadata, StoreError>;
    /// The report of the latest completed run of an index.
    fn last_report(&self, index_id: &str) -> Result<Option<IndexReport>, StoreError>;
    /// Deletes an index and its files. Returns whether it existed.
    fn remove_index(&self, resource_id: &str) -> Result<bool, StoreError>;
}

/// Whether a reference's `target` reads through one of `names`: it starts
/// with the name and a separator (`.`, `:` or `-`, as in `Engine.GET`,
/// `Type::new`, `p->f`), or calls the name and reads on (`New().GET`,
/// `pkg.session().get`: the identifier before a `()`). Resolution looks
/// such a name up to bind the reference, so a change of what it names may
/// change the binding.
pub fn reads_through(target: &str, names: &std::collections::HashSet<&str>) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    if let Some(end) = target.find(['.', ':', '-'])
        && end > 0
        && names.contains(&target[..end])
    {
        return true;
    }
    target.match_indices("()").any(|(at, _)| {
        let before = &target[..at];
        let start =
            before.rfind(|c: char| !ident(c)).map_or(0, |i| i + before[i..].chars().next().map_or(1, char::len_utf8));
        start < at && names.contains(&before[start..])
    })
}

/// Whether an import's `names` (as stored: `b`, or `b as c` for one it
/// renames) bring one of `wanted` in.
pub fn brings(names: &[String], wanted: &std::collections::HashSet<&str>) -> bool {
    names.iter().any(|n| wanted.contains(n.split_once(" as ").map_or(n.as_str(), |(original, _)| original)))
}

/// Whether `text` holds one of `words` as a whole identifier.
pub fn names_word(text: &str, words: &std::collections::HashSet<&str>) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')).any(|w| !w.is_empty() && words.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn what_a_target_reads_through() {
        let names: HashSet<&str> = ["Engine", "New", "session", "get"].into_iter().collect();
        for target in ["Engine.GET", "Engine::new", "Engine->x", "New().GET", "gin.New().Use", "requests.session().get"]
        {
            assert!(reads_through(target, &names), "{target}");
        }
        for target in ["Engine", "get", "forget().x", "x.Engine.GET", "NewEngine().GET", "news().get", "sessions.get"] {
            assert!(!reads_through(target, &names), "{target}");
        }
    }

    #[test]
    fn what_an_import_brings() {
        let wanted: HashSet<&str> = ["mod", "b"].into_iter().collect();
        assert!(brings(&["x".into(), "mod".into()], &wanted));
        assert!(brings(&["b as c".into()], &wanted));
        assert!(!brings(&["c".into(), "a as b".into()], &wanted));
    }

    #[test]
    fn what_an_import_holds() {
        let holding = vec![loose("basic_auth"), loose("cJSON")];
        assert!(holds(&holding, "Plug.BasicAuth", &[]));
        assert!(holds(&holding, "../cJSON.h", &[]));
        assert!(holds(&holding, ".", &["basic_auth as b".to_owned()]));
        assert!(!holds(&holding, "Plug.Basic", &["auth".to_owned()]));
    }

    #[test]
    fn whole_words_only() {
        let words: HashSet<&str> = ["Engine"].into_iter().collect();
        assert!(names_word("func New() *Engine", &words));
        assert!(names_word("def make() -> Optional[Engine]:", &words));
        assert!(!names_word("func NewEngine() *EngineX", &words));
    }
}
